//! Delta Lake tables: the `delta` sink and the backfill MERGE (feature `delta`, on deltalake 1.1
//! with DataFusion 55).
//!
//! - [`DeltaSinkFactory`] / [`DeltaSink`]: each micro-batch is one Delta commit carrying a `txn`
//!   action (app id = the pipeline's checkpoint id, version = batch id), so a batch replayed
//!   after a crash is skipped when the table already has it: exactly-once end to end. Creates
//!   the table from the first batch's schema; `partitionBy`, `mergeSchema`, `targetFileSize`,
//!   `checkpointInterval`, `compression`, `storage.*` (see [`config`]). The sink is also a
//!   [`tributary_sdk::PartWriter`]: the runtime streams a batch's parts into Parquet files as
//!   they arrive and the batch is committed once, so memory is bounded by a part and the open
//!   files' row groups, not by the batch.
//!   On a distributed engine it is a [`tributary_sdk::PartitionStager`]: executors write data
//!   files per input partition and the driver commits their `add` actions in one commit with the
//!   batch's `txn` (files of failed task attempts stay unreferenced until `VACUUM`).
//! - S3 tables (feature `delta-s3`) commit with S3 conditional put; configurations that would
//!   commit without it are refused unless `allowUnsafeRename` is set (see [`s3_commit`]).
//! - [`maintenance`]: auto-compaction, vacuum and log clean-up beside ingestion
//!   (`delta.autoOptimize.autoCompact`, `autoVacuum`, `delta.logRetentionDuration`, ...), and
//!   the same steps as public functions for a manual `optimize` / `vacuum` / `checkpoint`.
//! - [`merge_backfill`]: the one-time, idempotent backfill MERGE of a named stream's ingestion
//!   table (insert the backfill rows the table lacks, with `record_source = 'backfill'`).
//!
//! ```no_run
//! # async fn demo() -> tributary_sdk::Result<()> {
//! use std::sync::Arc;
//! use arrow::array::{Int64Array, RecordBatch};
//! use arrow::datatypes::{DataType, Field, Schema};
//! use tributary_sdk::Sink;
//! use tributary_sinks::delta::{DeltaConfig, DeltaSink};
//!
//! let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2]))])?;
//! let mut sink = DeltaSink::new(DeltaConfig::new("/tmp/t"), Default::default(), Some("ckpt-1".into()));
//! sink.open(schema).await?;
//! sink.write(0, &[batch.clone()]).await?;
//! sink.write(0, &[batch]).await?; // already in the table: skipped
//! # Ok(()) }
//! ```

pub mod config;
mod conform;
#[cfg(feature = "conformance")]
pub mod conformance;
mod connector;
pub mod error;
pub mod maintenance;
pub mod merge;
pub mod s3_commit;
pub mod schema;
mod sink;
pub mod table;

pub use config::DeltaConfig;
pub use connector::DeltaSinkFactory;
pub use merge::{merge_backfill, merge_backfill_with, MergeOptions, MergeReport};
pub use sink::{DeltaSink, DeltaSinkStats};

/// The deltalake crate this sink is built on (its DataFusion and Arrow are the workspace's).
pub use deltalake;
