//! Distributed batches: `[engine] kind = "ballista"` (see `tributary-ballista`).
//!
//! - [`spec`]: the `[engine]` section.
//! - `payload`: the pipeline's spec as executors receive it (no secret inside).
//! - `handler`: the executor's task (`tributary executor`): the core assembles the pipeline
//!   from the spec and moves one input partition into the sinks' staging.
//! - `driver`: the driver's batch (plan partitions, run the job, hand the staged outputs to
//!   the core's commit).

pub mod spec;

#[cfg(feature = "ballista")]
pub(crate) mod driver;
#[cfg(feature = "ballista")]
pub mod handler;
#[cfg(feature = "ballista")]
pub mod payload;

pub use spec::{EngineSection, EngineSpec};
