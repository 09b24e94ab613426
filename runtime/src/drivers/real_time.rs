//! The real-time driver: long batches in which records reach the sinks as they arrive.
//!
//! For each long batch `n` (the trigger's checkpoint `interval`, five minutes by default):
//!
//! 1. The sinks begin batch `n` and the source's streaming read starts at the batch's start
//!    offset, with a bounded queue of [`QUEUE_CHUNKS`] chunks between its readers and this loop
//!    (back-pressure).
//! 2. Each chunk goes through the core (`core::batch::push`: the stages, then every sink). A
//!    sink that acknowledges records as they come returns its acknowledgement (up to
//!    [`IN_FLIGHT_CHUNKS`] chunks are in flight, awaited in order); the others stage the chunk
//!    until the commit. When every acknowledgement resolved, the chunk's position counts as
//!    delivered and its latencies are recorded.
//! 3. Every `progressInterval` an interim progress event reports the rows, the offsets delivered
//!    so far and the latency percentiles.
//! 4. At the end of the interval, or on a clean stop (Ctrl-C ends the batch early), the readers
//!    stop, queued chunks are delivered, and the batch's end offset is computed from what was
//!    delivered. Only now is `offsets/<n>` written (the end was not known at the start); then
//!    the core's commit sequence runs: the sinks publish batch `n`, `commits/<n>` is written and
//!    the source commits.
//!
//! A crash before `commits/<n>` replays batch `n` through the micro-batch path (the logged range,
//! read again exactly) or, when `offsets/<n>` was not written yet, from the last committed end.
//! Streaming sinks may therefore see records twice (at-least-once); staged sinks write each batch
//! once per batch id (exactly-once when the sink is idempotent).
//!
//! A batch that delivered nothing logs nothing: the next one starts at the same offset with the
//! same id.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use futures::stream::{FuturesOrdered, StreamExt};
use tributary_sdk::{chunk_queue, Error, ErrorCode, Offset, Result, StreamChunk};

use crate::core::batch::{push, Moved};
use crate::core::report::BatchReport;
use crate::core::sinks::local_outputs;
use crate::core::{commit, next_id, Pipeline, RunSummary};
use crate::latency::LatencyRecorder;
use crate::progress::Durations;

/// Chunks queued between the source's readers and the sinks.
pub const QUEUE_CHUNKS: usize = 64;
/// Chunks written to the sinks and not acknowledged yet; more waits (back-pressure).
pub const IN_FLIGHT_CHUNKS: usize = 64;

/// What is known of a chunk once its records are handed to the sinks.
struct ChunkMeta {
    partition: String,
    position: serde_json::Value,
    rows: usize,
    read_at_us: i64,
    appended_ms: Vec<i64>,
    created_ms: Vec<i64>,
}

/// What one long batch has delivered so far.
struct LongBatch {
    batch_id: u64,
    start: Offset,
    started: Instant,
    delivered: BTreeMap<String, serde_json::Value>,
    moved: Moved,
    latencies: LatencyRecorder,
    /// When every sink stages until the commit, the acknowledgement is the commit: chunk
    /// times wait here.
    pending_times: Vec<ChunkMeta>,
    /// Chunks whose acknowledgements are awaited, in order.
    in_flight: FuturesOrdered<BoxFuture<'static, Result<ChunkMeta>>>,
}

impl LongBatch {
    fn new(batch_id: u64, start: Offset) -> Self {
        LongBatch {
            batch_id,
            start,
            started: Instant::now(),
            delivered: BTreeMap::new(),
            moved: Moved::default(),
            latencies: LatencyRecorder::new(),
            pending_times: Vec::new(),
            in_flight: FuturesOrdered::new(),
        }
    }

    /// A chunk every sink acknowledged (at `ack_us`): its position counts as delivered.
    fn acknowledged(&mut self, meta: ChunkMeta, ack_us: i64) {
        self.latencies.record_chunk(
            meta.rows,
            meta.read_at_us,
            ack_us,
            &meta.appended_ms,
            &meta.created_ms,
        );
        self.delivered.insert(meta.partition, meta.position);
    }

    /// Waits for every acknowledgement in flight.
    async fn drain_acks(&mut self) -> Result<()> {
        while let Some(done) = self.in_flight.next().await {
            self.acknowledged(done?, now_us());
        }
        Ok(())
    }
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

fn not_streaming(source: &str) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!(
            "source '{source}' has no streaming read: it cannot run with trigger kind realTime"
        ),
    )
    .with_context("option", "trigger.kind")
}

impl Pipeline {
    /// Runs long batches until a shutdown is asked (real-time triggers never stop by themselves).
    pub(crate) async fn run_real_time(
        &mut self,
        checkpoint_every: Duration,
        progress_every: Duration,
        mut batch_id: u64,
        mut start: Offset,
        mut summary: RunSummary,
    ) -> Result<RunSummary> {
        let label = self.source_label.clone();
        if self.source.as_streaming().is_none() {
            return Err(not_streaming(&label));
        }
        let mut last_end = Instant::now();
        while !self.shutdown.is_triggered() {
            let mut long = LongBatch::new(batch_id, start.clone());
            let schema = self.output_schema();
            self.sinks.begin(batch_id, 0, &schema).await?;
            let (tx, mut rx) = chunk_queue(QUEUE_CHUNKS);
            self.source
                .as_streaming()
                .ok_or_else(|| not_streaming(&label))?
                .start_stream(&start, tx)
                .await?;
            let deadline = tokio::time::Instant::now() + checkpoint_every;
            let mut next_progress = tokio::time::Instant::now() + progress_every;
            let outcome: Result<()> = loop {
                let shutdown = self.shutdown.clone();
                tokio::select! {
                    biased;
                    _ = shutdown.wait() => break Ok(()),
                    _ = tokio::time::sleep_until(deadline) => break Ok(()),
                    _ = tokio::time::sleep_until(next_progress) => {
                        next_progress += progress_every;
                        if let Err(e) = self.interim_progress(&long) {
                            break Err(e);
                        }
                    }
                    Some(done) = long.in_flight.next(), if !long.in_flight.is_empty() => match done {
                        Ok(meta) => long.acknowledged(meta, now_us()),
                        Err(e) => break Err(e),
                    },
                    chunk = rx.recv(), if long.in_flight.len() < IN_FLIGHT_CHUNKS => match chunk {
                        Some(Ok(chunk)) => {
                            if let Err(e) = self.deliver(&mut long, chunk).await {
                                break Err(e);
                            }
                        }
                        Some(Err(e)) => break Err(e),
                        None => break Ok(()),
                    },
                }
            };
            // Stop the readers (a reader blocked on a full queue sees it closed), then deliver
            // what they had already queued.
            rx.close();
            let stopped = match self.source.as_streaming() {
                Some(s) => s.stop_stream().await,
                None => Err(not_streaming(&label)),
            };
            outcome?;
            stopped?;
            while let Some(chunk) = rx.try_recv() {
                self.deliver(&mut long, chunk?).await?;
            }
            long.drain_acks().await?;
            if long.moved.rows == 0 && long.delivered.is_empty() {
                continue;
            }
            let end = self.end_batch(long, &mut last_end).await?;
            summary.batches += 1;
            summary.last_batch_id = Some(batch_id);
            batch_id = next_id(batch_id)?;
            start = end;
        }
        Ok(summary)
    }

    /// Step 2: the chunk through the core; its acknowledgements join the in-flight queue.
    #[tracing::instrument(name = "batch", skip_all, fields(pipeline = %self.name, batch_id = long.batch_id))]
    async fn deliver(&mut self, long: &mut LongBatch, chunk: StreamChunk) -> Result<()> {
        let before = long.moved.rows;
        let acks = push(
            &mut self.stages,
            &mut self.sinks,
            chunk.batch,
            &mut long.moved,
        )
        .await?;
        let meta = ChunkMeta {
            partition: chunk.partition,
            position: chunk.position,
            rows: (long.moved.rows - before) as usize,
            read_at_us: chunk.read_at_us,
            appended_ms: chunk.appended_ms,
            created_ms: chunk.created_ms,
        };
        if self.sinks.all_staged() {
            long.delivered
                .insert(meta.partition.clone(), meta.position.clone());
            long.pending_times.push(meta);
        } else {
            long.in_flight.push_back(
                async move {
                    futures::future::try_join_all(acks).await?;
                    Ok(meta)
                }
                .boxed(),
            );
        }
        Ok(())
    }

    /// Step 3: an interim progress event of the running long batch.
    #[tracing::instrument(name = "batch", skip_all, fields(pipeline = %self.name, batch_id = long.batch_id))]
    fn interim_progress(&mut self, long: &LongBatch) -> Result<()> {
        let end = match self.source.as_streaming() {
            Some(s) => s.end_offset(&long.start, &long.delivered)?,
            None => long.start.clone(),
        };
        let elapsed = long.started.elapsed();
        let mut report = BatchReport::new(long.batch_id, long.start.clone(), end);
        report.rows_in = long.moved.rows_in;
        report.rows = long.moved.rows;
        report.durations = Durations {
            add_batch: long.moved.write.as_millis() as u64,
            trigger_execution: elapsed.as_millis() as u64,
            ..Durations::default()
        };
        report.since_last = elapsed;
        report.elapsed = elapsed;
        // Staged-only pipelines acknowledge at the checkpoint: no latency is known yet.
        report.latencies = (!self.sinks.all_staged()).then(|| long.latencies.latencies());
        report.interim = true;
        self.report(report);
        Ok(())
    }

    /// Step 4: log, commit, report. Returns the batch's end offset.
    #[tracing::instrument(name = "batch", skip_all, fields(pipeline = %self.name, batch_id = long.batch_id))]
    async fn end_batch(&mut self, mut long: LongBatch, last_end: &mut Instant) -> Result<Offset> {
        let end = match self.source.as_streaming() {
            Some(s) => s.end_offset(&long.start, &long.delivered)?,
            None => return Err(not_streaming(&self.source_label)),
        };
        let mut wal = commit::log(&self.checkpoint, long.batch_id, &long.start, &end)?;
        let outputs = local_outputs(self.sinks.finish().await?);
        let times = commit::commit(
            &self.checkpoint,
            self.source.as_mut(),
            &mut self.sinks,
            long.batch_id,
            &end,
            long.moved.rows,
            outputs,
        )
        .await?;
        wal += times.wal;
        let ack = now_us();
        for meta in std::mem::take(&mut long.pending_times) {
            long.latencies.record_chunk(
                meta.rows,
                meta.read_at_us,
                ack,
                &meta.appended_ms,
                &meta.created_ms,
            );
        }
        let since_last = last_end.elapsed();
        *last_end = Instant::now();
        let mut report = BatchReport::new(long.batch_id, long.start.clone(), end.clone());
        report.rows_in = long.moved.rows_in;
        report.rows = long.moved.rows;
        report.durations = Durations {
            wal_commit: wal.as_millis() as u64,
            add_batch: (long.moved.write + times.sinks).as_millis() as u64,
            trigger_execution: long.started.elapsed().as_millis() as u64,
            ..Durations::default()
        };
        report.since_last = since_last;
        report.elapsed = long.started.elapsed();
        report.latencies = Some(long.latencies.latencies());
        self.report(report);
        Ok(end)
    }
}
