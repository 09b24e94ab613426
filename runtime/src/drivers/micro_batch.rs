//! The micro-batch driver: plan, log, read, write, commit — with replay after a crash.
//!
//! For each batch `n`:
//!
//! 1. `end = source.latest_offset(start, limit)`; `end == start` means no new data (then a
//!    stateful stage whose watermark moved still gets a batch over the empty range, Spark's
//!    no-data batch, so the groups it made final are emitted and evicted).
//! 2. `offsets/<n> = {start, end}` is written atomically (the write-ahead log).
//! 3. The range's parts go through the stages into every sink — here, or on a cluster's
//!    executors (`[engine] kind = "ballista"`).
//! 4. The sinks publish batch `n` (idempotently keyed by `n`), `commits/<n>` is written, then
//!    `source.commit(end)`.
//!
//! On restart, an `offsets/<n>` without `commits/<n>` is replayed first with exactly the logged
//! range. With deterministic sources and exactly-once sinks every row lands once.

use std::time::Instant;

use tributary_sdk::{Offset, ReadLimit, Result, StagedOutput};

use crate::core::batch::{pump, Moved};
use crate::core::report::BatchReport;
use crate::core::sinks::local_outputs;
use crate::core::{commit, next_id, Pipeline, RunSummary};
use crate::progress::{Durations, TaskProgress};
use crate::trigger::Trigger;

/// Where a batch's parts were moved, and what the sinks staged.
struct Executed {
    moved: Moved,
    outputs: Vec<Vec<StagedOutput>>,
    tasks: Vec<TaskProgress>,
    scheduling_ms: Option<u64>,
}

impl Pipeline {
    /// Runs micro-batches from `batch_id` at `start` until the trigger or a shutdown stops.
    pub(crate) async fn run_micro_batches(
        &mut self,
        mut batch_id: u64,
        mut start: Offset,
        mut summary: RunSummary,
        mut last_end: Instant,
    ) -> Result<RunSummary> {
        let limit = match self.trigger {
            Trigger::Once => ReadLimit::All,
            _ => self.source.default_read_limit(),
        };
        if self.trigger.is_bounded() {
            self.source.prepare_available_now().await?;
        }
        loop {
            if self.shutdown.is_triggered() {
                return Ok(summary);
            }
            let t0 = Instant::now();
            let end = self.source.latest_offset(&start, &limit).await?;
            let latest_ms = t0.elapsed().as_millis() as u64;
            if end == start && self.stages.needs_no_data_batch() {
                // Spark's no-data batch: the watermark moved, so state may now be final; the
                // batch is logged like any other, over an empty range.
                let durations = Durations {
                    latest_offset: latest_ms,
                    ..Durations::default()
                };
                self.execute(batch_id, &start, &end, durations, false, &mut last_end)
                    .await?;
                summary.batches += 1;
                summary.last_batch_id = Some(batch_id);
                batch_id = next_id(batch_id)?;
                continue;
            }
            if end == start {
                if self.trigger.is_bounded() {
                    return Ok(summary);
                }
                self.report_idle();
                let wait = match self.trigger {
                    Trigger::ProcessingTime(i) if !i.is_zero() => i,
                    _ => self.idle_poll,
                };
                self.shutdown.sleep(wait).await;
                continue;
            }
            let durations = Durations {
                latest_offset: latest_ms,
                ..Durations::default()
            };
            let rows = self
                .execute(batch_id, &start, &end, durations, false, &mut last_end)
                .await?;
            summary.batches += 1;
            summary.rows += rows;
            summary.last_batch_id = Some(batch_id);
            batch_id = next_id(batch_id)?;
            start = end;
            match self.trigger {
                Trigger::Once => return Ok(summary),
                Trigger::ProcessingTime(interval) => {
                    self.shutdown
                        .sleep(interval.saturating_sub(t0.elapsed()))
                        .await
                }
                Trigger::AvailableNow | Trigger::RealTime { .. } => {}
            }
        }
    }

    /// Runs one batch: log its range (unless replaying), move its parts, commit, report.
    /// Returns the rows read (the summary counts what the events count as `numInputRows`).
    #[tracing::instrument(name = "batch", skip_all, fields(pipeline = %self.name, batch_id = batch_id))]
    pub(crate) async fn execute(
        &mut self,
        batch_id: u64,
        start: &Offset,
        end: &Offset,
        mut durations: Durations,
        replayed: bool,
        last_end: &mut Instant,
    ) -> Result<u64> {
        let t_batch = Instant::now();
        let mut wal = std::time::Duration::ZERO;
        if !replayed {
            wal += commit::log(&self.checkpoint, batch_id, start, end)?;
        }
        let executed = self.move_batch(batch_id, start, end).await?;
        let rows = executed.moved.rows;
        let rows_in = executed.moved.rows_in;
        let times = commit::commit(
            &self.checkpoint,
            self.source.as_mut(),
            &mut self.sinks,
            &mut self.stages,
            batch_id,
            end,
            rows,
            executed.outputs,
        )
        .await?;
        wal += times.wal;
        durations.get_batch = executed.moved.read.as_millis() as u64;
        durations.add_batch = (executed.moved.write + times.sinks).as_millis() as u64;
        durations.wal_commit = wal.as_millis() as u64;
        durations.trigger_execution =
            t_batch.elapsed().as_millis() as u64 + durations.latest_offset;
        let since_last = last_end.elapsed();
        *last_end = Instant::now();
        let mut report = BatchReport::new(batch_id, start.clone(), end.clone());
        report.replayed = replayed;
        report.moved(&executed.moved);
        report.elapsed = std::time::Duration::from_millis(durations.trigger_execution);
        report.durations = durations;
        report.since_last = since_last;
        report.tasks = executed.tasks;
        report.scheduling_ms = executed.scheduling_ms;
        self.report(report);
        Ok(rows_in)
    }

    /// Step 3: the batch's parts into the sinks' staging, on the cluster or here.
    async fn move_batch(
        &mut self,
        batch_id: u64,
        start: &Offset,
        end: &Offset,
    ) -> Result<Executed> {
        #[cfg(feature = "ballista")]
        if let Some(d) = &mut self.distributed {
            if let Some(b) = d
                .run_batch(self.source.as_mut(), self.sinks.len(), batch_id, start, end)
                .await?
            {
                return Ok(Executed {
                    moved: b.moved,
                    outputs: b.outputs,
                    tasks: b.tasks,
                    scheduling_ms: Some(b.scheduling_ms),
                });
            }
        }
        let schema = self.output_schema();
        self.sinks.begin(batch_id, 0, &schema).await?;
        let t = Instant::now();
        let parts = self.source.read_stream(start, end).await?;
        let opened = t.elapsed();
        let mut moved = pump(parts, &mut self.stages, &mut self.sinks).await?;
        moved.read += opened;
        let outputs = self.sinks.finish().await?;
        Ok(Executed {
            moved,
            outputs: local_outputs(outputs),
            tasks: Vec::new(),
            scheduling_ms: None,
        })
    }
}
