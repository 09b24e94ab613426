//! What an executor does with one task: the core assembles the pipeline from the spec the job
//! carries, and moves one input partition through the stages into the sinks' staging (the
//! same `core::batch::pump` a micro-batch uses); the staged outputs go back to the driver.
//!
//! The executor's registry holds the connectors compiled into its `tributary` binary and the
//! plugins of its plugin path. A connector the job names but the executor lacks is one error
//! naming the connector and the executor.

use std::sync::Arc;

use async_trait::async_trait;
use tributary_ballista::{JobSpec, TaskHandler};
use tributary_sdk::{
    ConnectorContext, Error, ErrorCode, InputPartition, Result, SecretStore, StagedOutput,
    WriteMode,
};

use super::payload::TaskPayload;
use crate::core::assemble::prepare;
use crate::core::batch::pump;
use crate::core::sinks::SinkSet;
use crate::pipeline::PipelineSpec;
use crate::registry::Registry;

/// The runtime's [`TaskHandler`].
#[derive(Debug)]
pub struct RuntimeTaskHandler {
    executor: String,
    registry: Arc<Registry>,
    secrets: Arc<dyn SecretStore>,
}

impl RuntimeTaskHandler {
    /// A handler for executor `executor` with these connectors and secrets.
    pub fn new(executor: &str, registry: Arc<Registry>, secrets: Arc<dyn SecretStore>) -> Self {
        RuntimeTaskHandler {
            executor: executor.to_string(),
            registry,
            secrets,
        }
    }

    /// An unknown connector named as the one this executor lacks.
    fn missing(&self, spec: &PipelineSpec, e: Error) -> Error {
        if e.code() != ErrorCode::UnknownConnector {
            return e;
        }
        let (kind, name) = if self.registry.source(&spec.source).is_err() {
            ("source", spec.source.as_str())
        } else {
            match spec
                .sinks
                .iter()
                .find(|(n, _)| self.registry.sink(n).is_err())
            {
                Some((n, _)) => ("sink", n.as_str()),
                None => return e,
            }
        };
        {
            Error::new(
                ErrorCode::UnknownConnector,
                format!(
                    "executor {} has no {kind} connector '{name}' (not built in, and no plugin in its plugin path provides it)",
                    self.executor
                ),
            )
        }
    }
}

/// What a task returns to the driver.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TaskOutput {
    /// Rows after the stages.
    pub rows: u64,
    /// Rows read from the partition (before the stages).
    #[serde(default)]
    pub rows_in: u64,
    /// Bytes read from the partition (Arrow buffers, before the stages).
    #[serde(default)]
    pub bytes_in: u64,
    /// Bytes after the stages.
    #[serde(default)]
    pub bytes: u64,
    /// Microseconds spent in each stage, in the pipeline's stage order.
    #[serde(default)]
    pub stage_us: Vec<u64>,
    /// One staged output per sink, in the pipeline's sink order.
    pub sinks: Vec<StagedOutput>,
    /// The task's source and stage counters (files read, malformed records, ...): the driver
    /// adds them up, since its own source reads nothing.
    #[serde(default)]
    pub metrics: tributary_sdk::SourceMetrics,
}

#[async_trait]
impl TaskHandler for RuntimeTaskHandler {
    async fn run_task(
        &self,
        job: &JobSpec,
        partition: &InputPartition,
    ) -> Result<serde_json::Value> {
        let p: TaskPayload = serde_json::from_value(job.payload.clone()).map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("the job's payload is not a Tributary pipeline (driver and executor of different versions?): {e}"),
            )
        })?;
        let spec = &p.spec;
        let ctx = ConnectorContext {
            state_dir: None,
            secrets: self.secrets.clone(),
            pipeline: spec.name.clone(),
            checkpoint_id: Some(p.checkpoint_id.clone()),
        };
        let prepared = prepare(spec, &self.registry).map_err(|e| self.missing(spec, e))?;
        let built = prepared.build(&spec.source, &self.secrets, &ctx, &ctx)?;
        let mut source = built.source;
        let mut stages = built.stages;
        let mut sinks = SinkSet::new(built.sinks, WriteMode::Partition)?;
        let schema = stages.open(source.schema()).await?;
        if stages.is_stateful() {
            // The driver refuses such a pipeline before any job; an executor never merges state.
            return Err(tributary_sdk::Error::new(
                tributary_sdk::ErrorCode::InvalidPipeline,
                "a [transform] query with state (an aggregation) cannot run as a distributed task",
            )
            .with_context("option", "engine.kind"));
        }
        sinks.begin(job.batch_id, partition.index, &schema).await?;
        let moved = {
            let parts = source.read_partition(partition).await?;
            pump(parts, &mut stages, &mut sinks).await?
        };
        let outputs = sinks.finish().await?;
        let mut metrics = source.metrics();
        metrics.extend(stages.metrics());
        sinks.stop().await?;
        source.stop().await?;
        serde_json::to_value(TaskOutput {
            rows: moved.rows,
            rows_in: moved.rows_in,
            bytes_in: moved.bytes_in,
            bytes: moved.bytes,
            stage_us: moved.stages.iter().map(|d| d.as_micros() as u64).collect(),
            sinks: outputs,
            metrics,
        })
        .map_err(|e| Error::new(ErrorCode::Internal, format!("task output: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_executor_without_the_connector_names_it_and_itself() {
        let handler = RuntimeTaskHandler::new(
            "exec-7",
            Arc::new(Registry::new()),
            Arc::new(tributary_sdk::EnvSecretStore),
        );
        let spec = PipelineSpec::parse(
            "checkpoint = \"ck\"\n[source]\nconnector = \"kafka\"\n[[sink]]\nconnector = \"parquet\"\n",
            "p.toml",
        )
        .unwrap();
        let payload = TaskPayload {
            checkpoint_id: "ck".into(),
            spec,
        };
        let job = JobSpec {
            name: "p batch 0".into(),
            batch_id: 0,
            payload: serde_json::to_value(payload).unwrap(),
            partitions: vec![InputPartition::new(0, "t-0 [0, 5)", serde_json::json!({}))],
        };
        let e = handler
            .run_task(&job, &job.partitions[0])
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownConnector);
        assert!(
            e.message().contains("exec-7") && e.message().contains("'kafka'"),
            "{}",
            e.message()
        );
    }
}
