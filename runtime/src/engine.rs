//! The pipeline engine as embedders use it: build a [`Pipeline`] from its spec and run it.
//!
//! The engine is the batch core (`crate::core`: assembly, the stage loop, the sink protocol,
//! the commit sequence, progress events) driven by the trigger's driver (`crate::drivers`:
//! micro-batch, real-time, distributed). This module gathers what an embedding crate needs.

pub use crate::core::{check_checkpoint, plan, validate, Pipeline, Plan, RunSummary};
pub use crate::drivers::Shutdown;
