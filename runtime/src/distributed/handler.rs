//! What an executor does with one task: rebuild the pipeline, read a partition, stage it.
//!
//! The executor's registry holds the connectors compiled into its `tributary` binary and the
//! plugins of its plugin path. A connector the job names but the executor lacks is one error
//! naming the connector and the executor.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use tributary_ballista::{JobSpec, TaskHandler};
use tributary_sdk::{
    ConnectorContext, Error, ErrorCode, InputPartition, Result, SecretStore, StagedOutput,
};

use super::payload::{to_options, TaskPayload};
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

    fn missing(&self, kind: &str, name: &str, e: Error) -> Error {
        if e.code() == ErrorCode::UnknownConnector {
            Error::new(
                ErrorCode::UnknownConnector,
                format!(
                    "executor {} has no {kind} connector '{name}' (not built in, and no plugin in its plugin path provides it)",
                    self.executor
                ),
            )
        } else {
            e
        }
    }
}

/// What a task returns to the driver.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TaskOutput {
    /// Rows after the stages.
    pub rows: u64,
    /// One staged output per sink, in the pipeline's sink order.
    pub sinks: Vec<StagedOutput>,
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
        let ctx = ConnectorContext {
            state_dir: None,
            secrets: self.secrets.clone(),
            pipeline: p.pipeline.clone(),
            checkpoint_id: Some(p.checkpoint_id.clone()),
        };
        let factory = self
            .registry
            .source(&p.source)
            .map_err(|e| self.missing("source", &p.source, e))?;
        let prepared = factory.prepare(&to_options(&p.source_options))?;
        let description = prepared.description().clone();
        let mut source = prepared.build(&ctx)?;
        let mut stages = Vec::new();
        for (name, options) in &p.stages {
            let f = self.registry.stage(name)?;
            stages.push(f.create(&to_options(options), &description, self.secrets.as_ref())?);
        }
        if let Some(t) = &p.transform {
            let section: toml::Value = serde_json::from_value(t.clone()).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("[transform] from the job: {e}"),
                )
            })?;
            stages.push(crate::transform::stage(&section, &p.origin)?);
        }
        let mut schema = source.schema();
        for s in &mut stages {
            schema = s.open(schema).await?;
        }
        let mut sinks = Vec::new();
        for (name, options) in &p.sinks {
            let f = self
                .registry
                .sink(name)
                .map_err(|e| self.missing("sink", name, e))?;
            let mut sink = f.prepare(&to_options(options))?.build(&ctx)?;
            let stager = sink.as_stager().ok_or_else(|| no_stager(name))?;
            stager
                .begin_partition(job.batch_id, partition.index, schema.clone())
                .await?;
            sinks.push((name.clone(), sink));
        }
        let mut rows = 0u64;
        {
            let mut parts = source.read_partition(partition).await?;
            while let Some(part) = parts.next().await {
                let mut part = part?;
                for s in &mut stages {
                    part = s.apply(&part)?;
                }
                rows += part.num_rows() as u64;
                for (name, sink) in &mut sinks {
                    let stager = sink.as_stager().ok_or_else(|| no_stager(name))?;
                    stager.stage_part(&part).await?;
                }
            }
        }
        let mut outputs = Vec::new();
        for (name, sink) in &mut sinks {
            let stager = sink.as_stager().ok_or_else(|| no_stager(name))?;
            outputs.push(stager.finish_partition().await?);
            sink.stop().await?;
        }
        source.stop().await?;
        serde_json::to_value(TaskOutput {
            rows,
            sinks: outputs,
        })
        .map_err(|e| Error::new(ErrorCode::Internal, format!("task output: {e}")))
    }
}

pub(crate) fn no_stager(name: &str) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!("sink '{name}' cannot run on engine kind \"ballista\": it has no staged write (parquet and delta have one)"),
    )
    .with_context("option", "engine.kind")
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
        let payload = TaskPayload {
            pipeline: "p".into(),
            checkpoint_id: "ck".into(),
            source: "kafka".into(),
            source_options: Default::default(),
            stages: Vec::new(),
            transform: None,
            sinks: Vec::new(),
            origin: "p.toml".into(),
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
