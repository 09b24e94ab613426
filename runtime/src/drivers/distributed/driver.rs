//! The driver's side of a distributed batch: plan partitions, run the job, commit once.
//!
//! The pipeline's process keeps what it always did: it plans the batch and writes
//! `offsets/N` before, and the core's commit sequence after. In between, instead of reading the
//! range itself, it asks the source for input partitions, submits them as one Ballista job, and
//! returns every task's staged outputs, which the core commits once per batch id (see
//! [`tributary_sdk::PartitionStager`]). A source that does not plan partitions is read here,
//! staged and committed the same way as one partition (said once in the log).

use std::time::{Duration, Instant};

use tributary_ballista::{BallistaDriver, JobSpec};
use tributary_sdk::{Error, ErrorCode, Offset, Result, Source, SourceMetrics, StagedOutput};

use super::handler::TaskOutput;
use super::payload::TaskPayload;
use super::spec::EngineSpec;
use crate::core::batch::Moved;
use crate::pipeline::PipelineSpec;
use crate::progress::TaskProgress;
use crate::registry::Registry;

/// What a distributed batch did.
#[derive(Debug)]
pub(crate) struct DistributedBatch {
    /// Rows, and the time of the job (read) — the commit is the core's.
    pub moved: Moved,
    /// Per sink, the staged outputs of every task.
    pub outputs: Vec<Vec<StagedOutput>>,
    pub tasks: Vec<TaskProgress>,
    pub scheduling_ms: u64,
}

/// Adds the integer counters of `from` to `into` (other values are not counts: left alone).
fn add_counts(into: &mut SourceMetrics, from: &SourceMetrics) {
    for (k, v) in from {
        let Some(n) = v.as_u64() else { continue };
        let sum = into.get(k).and_then(|v| v.as_u64()).unwrap_or(0) + n;
        into.insert(k.clone(), sum.into());
    }
}

/// A pipeline's connection to its Ballista cluster.
#[derive(Debug)]
pub(crate) struct Distributed {
    scheduler: String,
    parallelism: usize,
    timeout: Duration,
    pipeline: String,
    payload: serde_json::Value,
    driver: Option<BallistaDriver>,
    said_fallback: bool,
    /// The executors' counters over the run (summed over every task of every batch).
    executed: SourceMetrics,
}

impl Distributed {
    pub(crate) fn new(
        scheduler: String,
        parallelism: usize,
        timeout: Duration,
        pipeline: String,
        payload: serde_json::Value,
    ) -> Self {
        Distributed {
            scheduler,
            parallelism,
            timeout,
            pipeline,
            payload,
            driver: None,
            said_fallback: false,
            executed: SourceMetrics::new(),
        }
    }

    /// The connection of a pipeline whose `[engine]` is a cluster (`None` for the embedded
    /// engine); the job's payload is made now, so a literal secret is refused before any batch.
    pub(crate) fn for_spec(
        spec: &PipelineSpec,
        registry: &Registry,
        checkpoint_id: &str,
    ) -> Result<Option<Self>> {
        let EngineSpec::Ballista {
            scheduler,
            parallelism,
            batch_timeout,
        } = &spec.engine
        else {
            return Ok(None);
        };
        let payload = TaskPayload::new(spec, registry, checkpoint_id)?;
        let payload = serde_json::to_value(payload)
            .map_err(|e| Error::new(ErrorCode::Internal, format!("pipeline payload: {e}")))?;
        Ok(Some(Distributed::new(
            scheduler.clone(),
            *parallelism,
            *batch_timeout,
            spec.name.clone(),
            payload,
        )))
    }

    /// The source metrics of the run with the executors' counts: a counter the executors
    /// report (non-zero) replaces the driver's own, whose source and stages read nothing; the
    /// rest (backlog, files tracked: the driver's planning) stays the driver's.
    pub(crate) fn with_executed(&self, mut driver: SourceMetrics) -> SourceMetrics {
        for (k, v) in &self.executed {
            if v.as_u64().is_some_and(|n| n > 0) {
                driver.insert(k.clone(), v.clone());
            }
        }
        driver
    }

    /// Runs batch `batch_id` on the cluster; `None` when the source reads whole ranges only.
    pub(crate) async fn run_batch(
        &mut self,
        source: &mut dyn Source,
        sinks: usize,
        batch_id: u64,
        start: &Offset,
        end: &Offset,
    ) -> Result<Option<DistributedBatch>> {
        let t = Instant::now();
        let Some(partitions) = source.plan_partitions(start, end, self.parallelism).await? else {
            if !self.said_fallback {
                self.said_fallback = true;
                tracing::warn!(
                    source = %source.identity().connector,
                    "the source does not split its batches into input partitions; they are read by the driver"
                );
            }
            return Ok(None);
        };
        let driver = match &mut self.driver {
            Some(d) => d,
            None => self
                .driver
                .insert(BallistaDriver::connect(&self.scheduler, &self.pipeline).await?),
        };
        let labels: Vec<String> = partitions.iter().map(|p| p.label.clone()).collect();
        let job = JobSpec {
            name: format!("{} batch {batch_id}", self.pipeline),
            batch_id,
            payload: self.payload.clone(),
            partitions,
        };
        let submitted = Instant::now();
        let results = driver.run(job, self.timeout).await?;
        let job_ms = submitted.elapsed().as_millis() as u64;
        let read = t.elapsed();
        let mut outputs = Vec::with_capacity(results.len());
        let mut tasks = Vec::with_capacity(results.len());
        let mut moved = Moved::default();
        for r in &results {
            let out: TaskOutput = serde_json::from_value(r.output.clone()).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("task {} returned no task output: {e}", r.partition),
                )
            })?;
            if out.sinks.len() != sinks {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "task {} staged {} sinks, the pipeline has {}",
                        r.partition,
                        out.sinks.len(),
                        sinks
                    ),
                ));
            }
            moved.add(&Moved {
                rows_in: out.rows_in,
                rows: out.rows,
                bytes_in: out.bytes_in,
                bytes: out.bytes,
                stages: out
                    .stage_us
                    .iter()
                    .map(|us| std::time::Duration::from_micros(*us))
                    .collect(),
                ..Moved::default()
            });
            add_counts(&mut self.executed, &out.metrics);
            tasks.push(TaskProgress {
                partition: r.partition,
                label: labels.get(r.partition).cloned().unwrap_or_default(),
                executor: r.executor.clone(),
                host: r.host.clone(),
                rows: out.rows,
                duration_ms: r.millis,
                started_ms: r.started_ms,
            });
            outputs.push(out);
        }
        // The span in which tasks ran, from the executors' clocks (skew between machines
        // shifts it; on one machine it is exact).
        let first = results.iter().map(|r| r.started_ms).min().unwrap_or(0);
        let last = results
            .iter()
            .map(|r| r.started_ms + r.millis)
            .max()
            .unwrap_or(0);
        let span = last.saturating_sub(first);
        let mut per_sink: Vec<Vec<StagedOutput>> = vec![Vec::with_capacity(outputs.len()); sinks];
        for out in outputs {
            for (i, staged) in out.sinks.into_iter().enumerate() {
                per_sink[i].push(staged);
            }
        }
        Ok(Some(DistributedBatch {
            moved: Moved { read, ..moved },
            outputs: per_sink,
            tasks,
            scheduling_ms: job_ms.saturating_sub(span),
        }))
    }
}
