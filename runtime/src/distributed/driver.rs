//! The driver's side of a distributed batch: plan partitions, run the job, commit once.
//!
//! The pipeline's process keeps what it always did: it plans the batch and writes
//! `offsets/N` before, and writes `commits/N` after. In between, instead of reading the range
//! itself, it asks the source for input partitions, submits them as one Ballista job, and
//! commits the staged outputs of every sink with the batch id (see
//! [`tributary_sdk::PartitionStager`]). A source that does not plan partitions is read here as
//! with the embedded engine (said once in the log).

use std::time::{Duration, Instant};

use tributary_ballista::{BallistaDriver, JobSpec};
use tributary_sdk::{Error, ErrorCode, Offset, Result, Sink, Source};

use super::handler::{no_stager, TaskOutput};
use super::DistributedBatch;
use crate::batch_io::BatchIo;
use crate::progress::TaskProgress;

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
        }
    }

    /// Checks that every sink can be written by executors.
    pub(crate) fn check_sinks(sinks: &mut [(String, Box<dyn Sink>)]) -> Result<()> {
        for (name, sink) in sinks.iter_mut() {
            if sink.as_stager().is_none() {
                return Err(no_stager(name));
            }
        }
        Ok(())
    }

    /// Runs batch `batch_id` on the cluster; `None` when the source reads whole ranges only.
    pub(crate) async fn run_batch(
        &mut self,
        source: &mut dyn Source,
        sinks: &mut [(String, Box<dyn Sink>)],
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
        let mut rows = 0;
        for r in &results {
            let out: TaskOutput = serde_json::from_value(r.output.clone()).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("task {} returned no task output: {e}", r.partition),
                )
            })?;
            if out.sinks.len() != sinks.len() {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "task {} staged {} sinks, the pipeline has {}",
                        r.partition,
                        out.sinks.len(),
                        sinks.len()
                    ),
                ));
            }
            rows += out.rows;
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
        let t = Instant::now();
        for (i, (name, sink)) in sinks.iter_mut().enumerate() {
            let staged = outputs.iter().map(|o| o.sinks[i].clone()).collect();
            let stager = sink.as_stager().ok_or_else(|| no_stager(name))?;
            stager.commit_staged(batch_id, staged).await?;
        }
        Ok(Some(DistributedBatch {
            io: BatchIo {
                rows,
                read,
                write: t.elapsed(),
            },
            tasks,
            scheduling_ms: job_ms.saturating_sub(span),
        }))
    }
}
