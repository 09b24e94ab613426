//! The source's Arrow rows: the records fetched from shards, in the connector's schema
//! (`crate::schema`), shard after shard and each shard in sequence order, in parts of bounded
//! size.

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

/// Most records in one part.
pub(crate) const PART_ROWS: usize = 16 * 1024;
/// Most partition-key and data bytes in one part (a larger record is a part of its own).
pub(crate) const PART_BYTES: usize = 4 * 1024 * 1024;

/// `shards`' records as parts, shard after shard, each shard's cut at [`PART_ROWS`] records or
/// [`PART_BYTES`] bytes (none when there is no record). The cuts depend on the records alone,
/// so the same records always give the same parts.
pub(crate) fn to_batches(schema: &SchemaRef, shards: &[ShardRecords]) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    for s in shards {
        out.extend(shard_parts(schema, &s.stream, &s.shard, &s.records)?);
    }
    Ok(out)
}

/// The parts of one shard's records (see [`to_batches`]).
pub(crate) fn shard_parts(
    schema: &SchemaRef,
    stream: &str,
    shard: &str,
    records: &[FetchedRecord],
) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    let mut begin = 0;
    let mut bytes = 0;
    for (i, r) in records.iter().enumerate() {
        bytes += r.data.len() + r.partition_key.len();
        if i + 1 - begin >= PART_ROWS || bytes >= PART_BYTES {
            out.push(batch(schema, stream, shard, &records[begin..=i])?);
            begin = i + 1;
            bytes = 0;
        }
    }
    if begin < records.len() {
        out.push(batch(schema, stream, shard, &records[begin..])?);
    }
    Ok(out)
}

fn batch(
    schema: &SchemaRef,
    stream: &str,
    shard: &str,
    records: &[FetchedRecord],
) -> Result<RecordBatch> {
    let n = records.len();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            records.iter().map(|r| r.partition_key.as_str()),
        )),
        Arc::new(BinaryArray::from_iter_values(
            records.iter().map(|r| r.data.as_slice()),
        )),
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            stream, n,
        ))),
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(shard, n))),
        Arc::new(StringArray::from_iter_values(
            records.iter().map(|r| r.sequence.as_str()),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter(records.iter().map(|r| r.arrival_ms))
                .with_timezone("UTC"),
        ),
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}
