//! # tributary-sinks
//!
//! Sinks that have no source twin:
//!
//! - [`console`]: prints each micro-batch as JSON lines or a table (for development; at-least-once,
//!   a replayed batch is printed again).
//! - [`parquet`]: a directory of Parquet files, one file per micro-batch, committed atomically
//!   (temp file, fsync, rename) and named after the batch id, so a replayed batch replaces its
//!   earlier attempt: exactly-once end to end with a deterministic source. On a distributed
//!   engine, executors stage one file per input partition and the driver publishes them once
//!   per batch ([`parquet::stager`]).
//! - `delta` (feature `delta`): Delta Lake tables on deltalake 1.1, one commit per micro-batch
//!   with a `txn` action keyed by the checkpoint id and batch id (exactly-once), plus the backfill
//!   MERGE of named streams. On a distributed engine, executors write data files and the driver
//!   commits them in one transaction per batch. Table maintenance beside ingestion
//!   (auto-compaction, vacuum, expired-log clean-up) and as manual commands lives in
//!   `delta::maintenance`.
//!
//! ## Example
//!
//! ```
//! # tokio_test_block_on(async {
//! use std::sync::Arc;
//! use arrow::array::{Int64Array, RecordBatch};
//! use arrow::datatypes::{DataType, Field, Schema};
//! use tributary_sdk::{Sink, Delivery};
//! use tributary_sinks::parquet::ParquetSink;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2]))]).unwrap();
//! let mut sink = ParquetSink::new(dir.path());
//! assert_eq!(sink.delivery(), Delivery::ExactlyOnce);
//! sink.open(schema).await.unwrap();
//! sink.write(0, &[batch.clone()]).await.unwrap();
//! sink.write(0, &[batch]).await.unwrap(); // a replay replaces, never duplicates
//! assert_eq!(tributary_sinks::parquet::read_dir_rows(dir.path()).unwrap(), 2);
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

#[cfg(feature = "conformance")]
pub mod conformance;
pub mod console;
#[cfg(feature = "delta")]
pub mod delta;
pub mod parquet;

pub use console::{ConsoleConfig, ConsoleSink, ConsoleSinkFactory};
#[cfg(feature = "delta")]
pub use delta::{DeltaSink, DeltaSinkFactory};
pub use parquet::{ParquetConfig, ParquetSink, ParquetSinkFactory};
