//! # tributary-kinesis
//!
//! Amazon Kinesis Data Streams for Tributary: a polling and enhanced fan-out source, a sink and
//! the consumer manager, on `aws-sdk-kinesis`, with the option names of the Databricks Kinesis
//! connector.
//!
//! ## Guarantees
//!
//! - **Source: replayable, exactly-once capable.** Offsets are per-shard sequence numbers plus
//!   the shard lineage ([`offsets::KinesisOffsets`]); `read(start, end)` returns exactly the
//!   records after `start` up to and including `end` of every shard, so a replayed batch has
//!   the same records. Children of a split or merge are read only after their parents.
//! - **Scale-out.** `plan_partitions` splits a range into per-shard sequence-number ranges
//!   (input partitions, `partitions.rs`) that an executor's source reads by polling with
//!   `read_partition`; together they are exactly what `read` returns.
//! - **Data loss is never silent.** Trimmed records, recreated streams and streams removed on
//!   restart fail with `KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET` /
//!   `KINESIS_SOURCE_STREAMS_REMOVED_ON_RESTART`, or with `failOnDataLoss=false` are logged,
//!   counted (`dataLoss.*` metrics) and skipped. Every read also checks where it resumes: a
//!   position after a record the shard no longer holds (aged out while the pipeline was
//!   stopped) is `DATA_LOSS.START_OFFSET_RESET`, or counted and read on from the trim horizon.
//! - **Sink: at-least-once.** A batch replayed after a crash is written again.
//!
//! ## Example
//!
//! ```
//! use tributary_kinesis::KinesisSourceFactory;
//! use tributary_sdk::{ErrorCode, Options, SourceFactoryExt};
//!
//! let options: Options = [("streamName", "events"), ("region", "eu-west-1")].into_iter().collect();
//! let d = KinesisSourceFactory.describe(&options).unwrap();
//! assert_eq!(d.streams, vec!["events".to_string()]);
//! assert_eq!(d.payload_column.as_deref(), Some("data"));
//! let both = options.clone().with("streamARN", "arn:aws:kinesis:eu-west-1:1:stream/events");
//! assert_eq!(KinesisSourceFactory.validate(&both).unwrap_err().code(), ErrorCode::ConflictingOptions);
//! ```

pub mod client;
mod coalesce;
pub mod commands;
pub mod config;
mod connector;
pub mod efo;
mod error;
mod loss;
mod metrics;
pub mod offsets;
pub mod options;
mod partitions;
pub mod planner;
pub mod position;
mod prefetch;
mod range_stream;
mod reader;
pub mod registered;
mod rows;
pub mod schema;
pub mod sink;
pub mod source;
pub mod stream_binding;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use client::build_client;
pub use connector::KinesisSourceFactory;
pub use sink::KinesisSinkFactory;
pub use source::KinesisSource;
