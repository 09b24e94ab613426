//! The source's Arrow rows: the records fetched from shards, in the connector's schema
//! (`crate::schema`), shard after shard and each shard in sequence order.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch, StringArray, TimestampMillisecondArray};
use arrow_schema::SchemaRef;
use tributary_sdk::Result;

use crate::reader::FetchedRecord;

/// Records of one shard in a planned batch.
#[derive(Debug, Clone)]
pub(crate) struct ShardRecords {
    pub stream: String,
    pub shard: String,
    pub records: Vec<FetchedRecord>,
}

/// One record batch of `shards`' records, shard after shard (none when there is no record).
pub(crate) fn to_batches(schema: &SchemaRef, shards: &[ShardRecords]) -> Result<Vec<RecordBatch>> {
    let n: usize = shards.iter().map(|s| s.records.len()).sum();
    if n == 0 {
        return Ok(Vec::new());
    }
    let rows = shards
        .iter()
        .flat_map(|s| s.records.iter().map(move |r| (s, r)));
    let mut keys = Vec::with_capacity(n);
    let mut data: Vec<&[u8]> = Vec::with_capacity(n);
    let mut streams = Vec::with_capacity(n);
    let mut shard_ids = Vec::with_capacity(n);
    let mut seqs = Vec::with_capacity(n);
    let mut times = Vec::with_capacity(n);
    for (s, r) in rows {
        keys.push(r.partition_key.as_str());
        data.push(r.data.as_slice());
        streams.push(s.stream.as_str());
        shard_ids.push(s.shard.as_str());
        seqs.push(r.sequence.as_str());
        times.push(r.arrival_ms);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(keys)),
        Arc::new(BinaryArray::from_vec(data)),
        Arc::new(StringArray::from(streams)),
        Arc::new(StringArray::from(shard_ids)),
        Arc::new(StringArray::from(seqs)),
        Arc::new(TimestampMillisecondArray::from(times).with_timezone("UTC")),
    ];
    Ok(vec![RecordBatch::try_new(schema.clone(), columns)?])
}
