//! The executor side's hook: what a task does, supplied by the host.
//!
//! This crate moves [`crate::JobSpec`]s between processes; it knows no connector. The host (the
//! `tributary executor` command) gives the executor a [`TaskHandler`] that builds the pipeline's
//! source from the job's payload, reads one input partition, runs the stages and stages the
//! sinks' output, and returns the manifests.

use std::fmt::Debug;

use async_trait::async_trait;
use tributary_sdk::{InputPartition, Result};

use crate::job::JobSpec;

/// Runs one task of a job on an executor.
#[async_trait]
pub trait TaskHandler: Send + Sync + Debug {
    /// Reads `partition` of `job` and stages its output; returns the sinks' manifests.
    async fn run_task(
        &self,
        job: &JobSpec,
        partition: &InputPartition,
    ) -> Result<serde_json::Value>;
}

/// Who runs the tasks of this process: reported with every task result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorIdentity {
    /// The executor's id.
    pub id: String,
    /// The host it advertises.
    pub host: String,
}
