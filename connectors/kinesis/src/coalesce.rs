//! Coalescing the blocks of a planned batch (`coalesceThresholdBlockSize`, `coalesceBinSize`).
//!
//! A planned batch's records come as blocks: per shard, parts of at most `PART_ROWS` records
//! or `PART_BYTES` bytes (`crate::rows`). Many shards with few records each make many small
//! Arrow batches, and every stage and sink after the source pays per batch. As in the
//! Databricks connector, when the blocks average fewer bytes (data + partition keys) than
//! `coalesceThresholdBlockSize`, the records are packed instead into batches of about
//! `coalesceBinSize` bytes across shards (a batch is cut after the record that reaches the
//! size), in the same row order: shard after shard, each in sequence order. The `stream` and
//! `shardId` columns still name every row's shard. Nothing is copied twice: the batches are
//! built from the held records directly. Replays of logged ranges stream bounded parts
//! (`crate::range_stream`) and are not coalesced.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch, StringArray, TimestampMillisecondArray};
use arrow_schema::SchemaRef;
use tributary_sdk::Result;

use crate::config::Coalesce;
use crate::reader::FetchedRecord;
use crate::rows::{to_batches, ShardRecords, PART_BYTES, PART_ROWS};

fn record_bytes(r: &FetchedRecord) -> usize {
    r.data.len() + r.partition_key.len()
}

/// How many blocks `to_batches` cuts from these records, and their bytes.
fn blocks(shards: &[ShardRecords]) -> (usize, usize) {
    let (mut count, mut total) = (0, 0);
    for s in shards {
        let (mut rows, mut bytes) = (0, 0);
        for r in &s.records {
            rows += 1;
            bytes += record_bytes(r);
            total += record_bytes(r);
            if rows >= PART_ROWS || bytes >= PART_BYTES {
                count += 1;
                rows = 0;
                bytes = 0;
            }
        }
        if rows > 0 {
            count += 1;
        }
    }
    (count, total)
}

/// The Arrow batches of a planned batch: its blocks, or coalesced when they average fewer
/// bytes than the threshold (see the module documentation).
pub(crate) fn planned_batches(
    schema: &SchemaRef,
    shards: &[ShardRecords],
    coalesce: Coalesce,
) -> Result<Vec<RecordBatch>> {
    let (count, total) = blocks(shards);
    if coalesce.threshold == 0 || count <= 1 || (total / count) as u64 >= coalesce.threshold {
        return to_batches(schema, shards);
    }
    let bin = usize::try_from(coalesce.bin).unwrap_or(usize::MAX).max(1);
    let mut out = Vec::new();
    let mut rows: Vec<(&str, &str, &FetchedRecord)> = Vec::new();
    let mut bytes = 0;
    for s in shards {
        for r in &s.records {
            rows.push((&s.stream, &s.shard, r));
            bytes += record_bytes(r);
            if bytes >= bin {
                out.push(mixed_batch(schema, &rows)?);
                rows.clear();
                bytes = 0;
            }
        }
    }
    if !rows.is_empty() {
        out.push(mixed_batch(schema, &rows)?);
    }
    Ok(out)
}

/// One batch of records from several shards, each row with its own stream and shard.
fn mixed_batch(schema: &SchemaRef, rows: &[(&str, &str, &FetchedRecord)]) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|(_, _, r)| r.partition_key.as_str()),
        )),
        Arc::new(BinaryArray::from_iter_values(
            rows.iter().map(|(_, _, r)| r.data.as_slice()),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|(s, _, _)| *s),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|(_, h, _)| *h),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|(_, _, r)| r.sequence.as_str()),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter(rows.iter().map(|(_, _, r)| r.arrival_ms))
                .with_timezone("UTC"),
        ),
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::schema::kinesis_schema;
    use arrow_array::Array;

    fn shard(name: &str, n: usize, size: usize) -> ShardRecords {
        ShardRecords {
            stream: "events".into(),
            shard: name.into(),
            records: (0..n)
                .map(|i| FetchedRecord {
                    partition_key: format!("k{i}"),
                    data: vec![b'x'; size],
                    sequence: format!("{}{i:04}", name.len()),
                    arrival_ms: Some(i as i64),
                })
                .collect(),
        }
    }

    fn column(b: &RecordBatch, name: &str) -> Vec<String> {
        let a = b
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        (0..a.len()).map(|i| a.value(i).to_string()).collect()
    }

    fn rows(batches: &[RecordBatch]) -> Vec<(String, String)> {
        batches
            .iter()
            .flat_map(|b| {
                column(b, "shardId")
                    .into_iter()
                    .zip(column(b, "sequenceNumber"))
            })
            .collect()
    }

    #[test]
    fn small_blocks_are_coalesced_across_shards_in_the_same_order() {
        let schema = kinesis_schema();
        let shards: Vec<ShardRecords> = (0..5).map(|i| shard(&format!("s{i}"), 3, 10)).collect();
        let off = Coalesce {
            threshold: 0,
            bin: 128_000_000,
        };
        let plain = planned_batches(&schema, &shards, off).unwrap();
        assert_eq!(plain.len(), 5, "one block per shard without coalescing");
        let defaults = Coalesce {
            threshold: 10_000_000,
            bin: 128_000_000,
        };
        let merged = planned_batches(&schema, &shards, defaults).unwrap();
        assert_eq!(merged.len(), 1, "15 small records in one batch");
        assert_eq!(rows(&merged), rows(&plain), "same rows, same order");
        // A bin of 40 bytes: records of 12 bytes reach it after 4.
        let small_bin = Coalesce {
            threshold: 10_000_000,
            bin: 40,
        };
        let binned = planned_batches(&schema, &shards, small_bin).unwrap();
        assert_eq!(
            binned.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            [4, 4, 4, 3]
        );
        assert_eq!(rows(&binned), rows(&plain));
    }

    #[test]
    fn large_blocks_stay_as_they_are() {
        let schema = kinesis_schema();
        let shards: Vec<ShardRecords> = (0..3).map(|i| shard(&format!("s{i}"), 2, 1000)).collect();
        // Blocks of ~2 KB against a 1 KB threshold: not coalesced.
        let c = Coalesce {
            threshold: 1000,
            bin: 128_000_000,
        };
        assert_eq!(planned_batches(&schema, &shards, c).unwrap().len(), 3);
        assert_eq!(blocks(&shards), (3, 3 * 2 * 1002));
    }
}
