//! Distributed batches: `[engine] kind = "ballista"` (see `tributary-ballista`).
//!
//! - [`spec`]: the `[engine]` section.
//! - `payload`: the pipeline as executors rebuild it (no secret inside).
//! - `handler`: the executor's task (`tributary executor`).
//! - `driver`: the driver's batch (plan partitions, run the job, commit once).

pub mod spec;

#[cfg(feature = "ballista")]
pub(crate) mod driver;
#[cfg(feature = "ballista")]
pub mod handler;
#[cfg(feature = "ballista")]
pub mod payload;

pub use spec::{EngineSection, EngineSpec};

/// What a distributed batch did.
#[derive(Debug)]
pub(crate) struct DistributedBatch {
    pub io: crate::batch_io::BatchIo,
    pub tasks: Vec<crate::progress::TaskProgress>,
    pub scheduling_ms: u64,
}
