//! # tributary-runtime
//!
//! The host that runs Tributary pipelines, and the `tributary` command.
//!
//! A pipeline is one source, one or more sinks and a trigger, described in a TOML file
//! ([`pipeline`]). The [`engine`] runs micro-batches with a write-ahead log in the checkpoint
//! ([`checkpoint`]): a batch's offset range is logged before it is read and committed after the
//! sinks wrote it, so a crash replays exactly the same range. With the built-in files source and
//! the Parquet sink this is exactly-once end to end. Every batch emits a [`progress`] event.
//!
//! ## Layout
//!
//! - [`core`]: the one batch core — assembling a pipeline, the stage loop, the sink protocol,
//!   the commit sequence and the progress-event builder.
//! - [`drivers`]: when and where batches run — micro-batch, real-time, distributed (Ballista)
//!   and the executor's task.
//! - around them: the pipeline file ([`pipeline`], [`trigger`], [`transform`]), the
//!   [`checkpoint`], [`progress`] events and [`latency`], [`logging`], the connector [`registry`] and
//!   [`plugin`] loading, named [`streams`] (a product built on the engine), [`state`] and
//!   [`conformance`] commands.
//!
//! ## Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use tributary_runtime::{engine::Pipeline, pipeline::PipelineSpec, registry::Registry};
//!
//! # async fn run() -> tributary_sdk::Result<()> {
//! let spec = PipelineSpec::load("examples/quickstart.toml".as_ref())?;
//! let mut pipeline = Pipeline::build(&spec, &Registry::builtin(), Arc::new(tributary_sdk::EnvSecretStore))?;
//! let summary = pipeline.run().await?;
//! println!("{} rows in {} batches", summary.rows, summary.batches);
//! # Ok(()) }
//! ```

pub mod checkpoint;
pub mod conformance;
pub mod core;
#[cfg(feature = "delta")]
pub mod delta_cli;
pub mod drivers;
pub mod engine;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod latency;
pub mod logging;
pub mod monitor;
pub mod options_reference;
pub mod pipeline;
pub mod plugin;
pub mod progress;
pub mod registry;
mod serde_options;
pub mod state;
pub mod streams;
pub mod transform;
pub mod trigger;
pub mod verify;

/// `[engine]`: where a pipeline's batches run (see [`drivers::distributed`]).
pub use drivers::distributed;
