//! The drivers: they decide when a batch starts and ends and where its pieces run, and leave
//! everything a batch does to the core (`crate::core`).
//!
//! - `micro_batch.rs`: the `processingTime`, `availableNow` and `once` triggers.
//! - `real_time.rs`: the `realTime` trigger's long batches.
//! - [`distributed`]: `[engine] kind = "ballista"` — the driver's batch on a cluster and the
//!   executor's task.
//! - [`shutdown`]: the stop flag every driver watches.

pub mod distributed;
mod micro_batch;
mod real_time;
pub mod shutdown;

pub use real_time::{IN_FLIGHT_CHUNKS, QUEUE_CHUNKS};
pub use shutdown::Shutdown;
