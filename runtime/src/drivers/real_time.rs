//! The real-time driver: long batches in which records reach the sinks as they arrive.
//!
//! For each long batch `n` (the trigger's checkpoint `interval`, five minutes by default):
//!
//! 1. The sinks begin batch `n` and the source's streaming read starts at the batch's start
//!    offset, with a bounded queue of [`QUEUE_CHUNKS`] chunks between its readers and this loop
//!    (back-pressure).
//! 2. Each chunk goes through the core (`core::batch::push`: the stages, then every sink). A
//!    sink that acknowledges records as they come returns its acknowledgement (up to
//!    [`IN_FLIGHT_CHUNKS`] deliveries are in flight); the others stage the chunk until the
//!    commit. A stateful pipeline takes the chunks already queued behind the one received (up
//!    to [`COALESCE_CHUNKS`], never waiting for more) as one input: its operators run once for
//!    them rather than once each, so a queue that built up under load drains in one pass
//!    instead of growing the latency of every chunk behind it. Each chunk keeps its own place
//!    in the frontier; the one acknowledgement of their output acknowledges them all.
//!    Acknowledgements may resolve in any order: a chunk's latencies are recorded when its own
//!    acknowledgement resolves, and its position counts as delivered once every chunk before
//!    it in its partition is acknowledged too ([`tributary_sdk::AckFrontier`]): a position is
//!    never delivered past an unacknowledged or failed chunk.
//! 3. Every `progressInterval` an interim progress event reports the rows, the offsets delivered
//!    so far and the latency percentiles.
//! 4. At the end of the interval, or on a clean stop (Ctrl-C ends the batch early), the readers
//!    stop, queued chunks are delivered, and the batch's end offset is computed from what was
//!    delivered. Only now is `offsets/<n>` written (the end was not known at the start); then
//!    the core's commit sequence runs: the sinks publish batch `n`, `commits/<n>` is written and
//!    the source commits.
//!
//! A failure inside the batch (an acknowledgement that fails, a source or stage error) ends it.
//! When every sink acknowledges as it goes, the driver first commits batch `n` at its
//! acknowledged frontier (only acknowledged records, which the sinks already hold), so the
//! restart begins at the first unacknowledged record: acknowledgements A, B and D with C failed
//! restart at C. When a sink stages, nothing is committed and the restart replays the whole
//! long batch. Either way no record is skipped.
//!
//! A crash before `commits/<n>` replays batch `n` through the micro-batch path (the logged range,
//! read again exactly) or, when `offsets/<n>` was not written yet, from the last committed end.
//! Streaming sinks may therefore see records twice (at-least-once); staged sinks write each batch
//! once per batch id (exactly-once when the sink is idempotent).
//!
//! A batch that delivered nothing logs nothing: the next one starts at the same offset with the
//! same id.

use std::time::{Duration, Instant};

use arrow::compute::concat_batches;
use arrow::record_batch::RecordBatch;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};
use tributary_sdk::{
    chunk_queue, AckFrontier, Error, ErrorCode, Offset, Result, StreamChunk, Ticket,
};

use crate::core::batch::{push_chunk, Moved};
use crate::core::report::BatchReport;
use crate::core::sinks::local_outputs;
use crate::core::{commit, next_id, Pipeline, RunSummary};
use crate::latency::LatencyRecorder;
use crate::progress::Durations;

/// Chunks queued between the source's readers and the sinks.
pub const QUEUE_CHUNKS: usize = 64;
/// Deliveries (a chunk, or the chunks a stateful pipeline took together) written to the sinks
/// and not acknowledged yet; more waits (back-pressure).
pub const IN_FLIGHT_CHUNKS: usize = 64;
/// The most queued chunks a stateful pipeline takes as one input.
pub const COALESCE_CHUNKS: usize = 64;

/// What is known of a chunk once its records are handed to the sinks.
struct ChunkMeta {
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
    /// The positions delivered per partition (acknowledged, or staged when every sink stages).
    frontier: AckFrontier<ChunkMeta>,
    moved: Moved,
    latencies: LatencyRecorder,
    /// When every sink stages until the commit, the acknowledgement is the commit: chunk
    /// times wait here.
    pending_times: Vec<ChunkMeta>,
    /// Deliveries whose acknowledgements are awaited (each with its chunks' tickets),
    /// resolving in any order.
    in_flight: FuturesUnordered<BoxFuture<'static, (Vec<Ticket>, Result<()>)>>,
}

impl LongBatch {
    fn new(batch_id: u64, start: Offset) -> Self {
        LongBatch {
            batch_id,
            start,
            started: Instant::now(),
            frontier: AckFrontier::new(),
            moved: Moved::default(),
            latencies: LatencyRecorder::new(),
            pending_times: Vec::new(),
            in_flight: FuturesUnordered::new(),
        }
    }

    /// Chunks every sink acknowledged (at `ack_us`): their latencies count now, each one's
    /// position once the chunks before it in its partition are acknowledged.
    fn acknowledged(&mut self, tickets: Vec<Ticket>, ack_us: i64) -> Result<()> {
        for ticket in tickets {
            let meta = self.frontier.acked(ticket)?;
            self.latencies.record_chunk(
                meta.rows,
                meta.read_at_us,
                ack_us,
                &meta.appended_ms,
                &meta.created_ms,
            );
        }
        Ok(())
    }

    /// Waits for every acknowledgement in flight; the first failure is returned after the
    /// others resolved (so the frontier holds every chunk that did get acknowledged).
    async fn settle(&mut self) -> Result<()> {
        let mut first = Ok(());
        while let Some((tickets, done)) = self.in_flight.next().await {
            match done {
                Ok(()) => self.acknowledged(tickets, now_us())?,
                Err(e) if first.is_ok() => first = Err(e),
                Err(e) => {
                    tracing::warn!(batch = self.batch_id, "another acknowledgement failed: {e}")
                }
            }
        }
        first
    }

    /// Whether the batch delivered anything (a batch that did not logs nothing).
    fn is_empty(&self) -> bool {
        self.moved.rows == 0 && self.frontier.delivered().is_empty()
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
                    Some((tickets, done)) = long.in_flight.next(), if !long.in_flight.is_empty() => {
                        if let Err(e) = done.and_then(|()| long.acknowledged(tickets, now_us())) {
                            break Err(e);
                        }
                    }
                    chunk = rx.recv(), if long.in_flight.len() < IN_FLIGHT_CHUNKS => match chunk {
                        Some(Ok(chunk)) => {
                            let (chunks, failed) = self.take_queued(chunk, &mut rx);
                            if let Err(e) = self.deliver(&mut long, chunks).await {
                                break Err(e);
                            }
                            if let Some(e) = failed {
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
            let mut outcome = outcome.and(stopped);
            while outcome.is_ok() {
                let Some(chunk) = rx.try_recv() else { break };
                outcome = match chunk {
                    Ok(chunk) => {
                        let (chunks, failed) = self.take_queued(chunk, &mut rx);
                        let delivered = self.deliver(&mut long, chunks).await;
                        delivered.and(failed.map_or(Ok(()), Err))
                    }
                    Err(e) => Err(e),
                };
            }
            let settled = long.settle().await;
            if let Err(e) = outcome.and(settled) {
                return Err(self.fail_batch(long, e, &mut last_end).await);
            }
            if long.is_empty() {
                continue;
            }
            let rows = long.moved.rows_in;
            let end = self.end_batch(long, &mut last_end).await?;
            summary.batches += 1;
            summary.rows += rows;
            summary.last_batch_id = Some(batch_id);
            batch_id = next_id(batch_id)?;
            start = end;
        }
        Ok(summary)
    }

    /// `first` and, for a stateful pipeline, the chunks queued behind it (up to
    /// [`COALESCE_CHUNKS`], without waiting). A reader's error met on the way is returned beside
    /// the chunks before it, which are still delivered.
    fn take_queued(
        &self,
        first: StreamChunk,
        rx: &mut tributary_sdk::ChunkReceiver,
    ) -> (Vec<StreamChunk>, Option<Error>) {
        let mut chunks = vec![first];
        if !self.stages.is_stateful() {
            return (chunks, None);
        }
        while chunks.len() < COALESCE_CHUNKS {
            match rx.try_recv() {
                Some(Ok(chunk)) => chunks.push(chunk),
                Some(Err(e)) => return (chunks, Some(e)),
                None => break,
            }
        }
        (chunks, None)
    }

    /// Step 2: the chunks through the core as one input (one chunk unless a stateful pipeline
    /// took several, see [`Self::take_queued`]); the acknowledgements of their output join the
    /// in-flight queue with every chunk's ticket.
    #[tracing::instrument(name = "batch", skip_all, fields(pipeline = %self.name, batch_id = long.batch_id, chunks = chunks.len()))]
    async fn deliver(&mut self, long: &mut LongBatch, chunks: Vec<StreamChunk>) -> Result<()> {
        let input = match chunks.as_slice() {
            [one] => one.batch.clone(),
            [first, ..] => {
                let batches: Vec<&RecordBatch> = chunks.iter().map(|c| &c.batch).collect();
                concat_batches(&first.batch.schema(), batches).map_err(|e| {
                    Error::new(
                        ErrorCode::Internal,
                        format!("joining {} queued chunks into one input: {e}", chunks.len()),
                    )
                })?
            }
            [] => return Ok(()),
        };
        let before = long.moved.rows;
        let acks = push_chunk(&mut self.stages, &mut self.sinks, input, &mut long.moved).await?;
        let out_rows = (long.moved.rows - before) as usize;
        let single = chunks.len() == 1;
        let staged = self.sinks.all_staged();
        let mut tickets = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            // the processing latency is weighted by rows: a chunk's own output rows, or, for
            // chunks that went through together, each one's input rows when they emitted any
            let rows = match (single, out_rows) {
                (true, n) => n,
                (false, 0) => 0,
                (false, _) => chunk.batch.num_rows(),
            };
            let meta = ChunkMeta {
                rows,
                read_at_us: chunk.read_at_us,
                appended_ms: chunk.appended_ms,
                created_ms: chunk.created_ms,
            };
            if staged {
                let meta = long
                    .frontier
                    .staged(chunk.partition, chunk.position, meta)?;
                long.pending_times.push(meta);
            } else {
                tickets.push(long.frontier.sent(chunk.partition, chunk.position, meta));
            }
        }
        if !tickets.is_empty() {
            long.in_flight.push(
                async move {
                    let done = futures::future::try_join_all(acks).await.map(|_| ());
                    (tickets, done)
                }
                .boxed(),
            );
        }
        Ok(())
    }

    /// A long batch failed with `error`. When every sink acknowledges as it goes, the batch is
    /// first committed at its acknowledged frontier (those records are in the sinks already),
    /// so the restart begins at the first record not acknowledged; otherwise nothing is
    /// committed and the restart replays the whole batch. Returns the error.
    async fn fail_batch(&mut self, long: LongBatch, error: Error, last_end: &mut Instant) -> Error {
        if !self.sinks.none_staged() || long.frontier.delivered().is_empty() {
            return error;
        }
        let batch_id = long.batch_id;
        match self.end_batch(long, last_end).await {
            Ok(end) => tracing::warn!(
                batch = batch_id,
                "batch {batch_id} failed; its acknowledged records were committed up to {end:?}, so a restart continues after them: {error}"
            ),
            Err(e) => tracing::warn!(
                batch = batch_id,
                "batch {batch_id} failed and committing its acknowledged records failed too ({e}); a restart replays the whole batch: {error}"
            ),
        }
        error
    }

    /// Step 3: an interim progress event of the running long batch.
    #[tracing::instrument(name = "batch", skip_all, fields(pipeline = %self.name, batch_id = long.batch_id))]
    fn interim_progress(&mut self, long: &LongBatch) -> Result<()> {
        let end = match self.source.as_streaming() {
            Some(s) => s.end_offset(&long.start, long.frontier.delivered())?,
            None => long.start.clone(),
        };
        let elapsed = long.started.elapsed();
        let mut report = BatchReport::new(long.batch_id, long.start.clone(), end);
        report.moved(&long.moved);
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
            Some(s) => s.end_offset(&long.start, long.frontier.delivered())?,
            None => return Err(not_streaming(&self.source_label)),
        };
        let mut wal = commit::log(&self.checkpoint, long.batch_id, &long.start, &end)?;
        let outputs = local_outputs(self.sinks.finish().await?);
        let times = commit::commit(
            &self.checkpoint,
            self.source.as_mut(),
            &mut self.sinks,
            &mut self.stages,
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
        report.moved(&long.moved);
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
