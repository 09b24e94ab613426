//! # tributary-ballista
//!
//! Scale-out for Tributary pipelines on Apache Ballista: one pipeline's batches read and
//! written on several machines, the way Spark's driver hands offset ranges to executors.
//!
//! - The driver (the pipeline's process) plans each batch and writes `offsets/N` as always,
//!   splits the range into input partitions ([`tributary_sdk::Source::plan_partitions`]) and
//!   submits them as one Ballista job ([`BallistaDriver`]).
//! - Ballista's scheduler ([`run_scheduler`]) places one task per partition on executors
//!   ([`run_executor`]); each task runs the host's [`TaskHandler`]: it builds the source from
//!   the connector's name and options (secrets resolved by the executor), reads its partition,
//!   runs the stages and stages the sinks' output ([`tributary_sdk::PartitionStager`]).
//! - The driver collects one manifest per partition and commits them once per batch id, then
//!   writes `commits/N`. A task retried after its executor died, or a batch replayed after the
//!   driver died, never duplicates a row: only the collected manifests are committed.
//!
//! Plans travel through [`TributaryLogicalCodec`] and [`TributaryPhysicalCodec`]; a
//! [`JobSpec`] holds no secret. This crate knows no connector: the host supplies the handler.

pub mod codec;
pub mod driver;
pub mod exec;
pub mod executor;
pub mod handler;
pub mod job;
pub mod scheduler;
pub mod table;

pub use codec::{TributaryLogicalCodec, TributaryPhysicalCodec};
pub use driver::{scheduler_address, BallistaDriver};
pub use executor::{run_executor, ExecutorOptions};
pub use handler::{ExecutorIdentity, TaskHandler};
pub use job::{result_schema, JobSpec, TaskResult};
pub use scheduler::{run_scheduler, SchedulerOptions};
