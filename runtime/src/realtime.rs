//! The real-time engine: long batches in which records reach the sinks as they arrive.
//!
//! For each long batch `n` (the trigger's checkpoint `interval`, five minutes by default):
//!
//! 1. The source's streaming read starts at the batch's start offset, with a bounded queue of
//!    [`QUEUE_CHUNKS`] chunks between its readers and this loop (back-pressure).
//! 2. Each chunk goes through the stages, then to every sink: a streaming sink takes it at once
//!    and returns its acknowledgement (up to [`IN_FLIGHT_CHUNKS`] chunks are in flight, awaited
//!    in order), any other sink gets it at the checkpoint (step 4). When every sink acknowledged
//!    it, the chunk's position counts as delivered and its latencies are recorded.
//! 3. Every `progressInterval` an interim progress event reports the rows, the offsets delivered
//!    so far and the latency percentiles.
//! 4. At the end of the interval, or on a clean stop (Ctrl-C ends the batch early), the readers
//!    stop, queued chunks are delivered, and the batch's end offset is computed from what was
//!    delivered. Only now is `offsets/<n>` written (the end was not known at the start); then
//!    the staged sinks write batch `n` (those with a part writer staged its chunks as they
//!    came and now publish them), streaming sinks flush, `commits/<n>` is written and the
//!    source commits.
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

use arrow::array::RecordBatch;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::{FuturesOrdered, StreamExt};
use tributary_sdk::{chunk_queue, Error, ErrorCode, Offset, Result, StreamChunk};

use crate::engine::{Pipeline, RunSummary};
use crate::latency::LatencyRecorder;
use crate::progress::{Durations, ProgressEvent, SinkProgress, SourceProgress};

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
    /// Rows for the sinks that write at the checkpoint.
    staged: Vec<RecordBatch>,
    rows: u64,
    sink_ms: u64,
    latencies: LatencyRecorder,
    /// For staged-only pipelines the acknowledgement is the checkpoint: chunk times wait here.
    pending_times: Vec<(usize, i64, Vec<i64>, Vec<i64>)>,
    /// Chunks whose acknowledgements are awaited, in order.
    in_flight: FuturesOrdered<BoxFuture<'static, Result<ChunkMeta>>>,
}

impl LongBatch {
    /// A chunk every sink acknowledged: its position counts as delivered.
    fn acknowledged(&mut self, meta: ChunkMeta) {
        self.delivered.insert(meta.partition, meta.position);
        self.latencies.record_chunk(
            meta.rows,
            meta.read_at_us,
            now_us(),
            &meta.appended_ms,
            &meta.created_ms,
        );
    }

    /// Waits for every acknowledgement in flight.
    async fn drain_acks(&mut self) -> Result<()> {
        while let Some(done) = self.in_flight.next().await {
            self.acknowledged(done?);
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
        let staged_only = self
            .sinks
            .iter_mut()
            .all(|(_, s)| s.as_streaming().is_none());
        let mut last_end = Instant::now();
        while !self.shutdown.is_triggered() {
            let mut long = LongBatch {
                batch_id,
                start: start.clone(),
                started: Instant::now(),
                delivered: BTreeMap::new(),
                staged: Vec::new(),
                rows: 0,
                sink_ms: 0,
                latencies: LatencyRecorder::new(),
                pending_times: Vec::new(),
                in_flight: FuturesOrdered::new(),
            };
            // Staged sinks with a part writer stage the chunks as they come (memory bounded by
            // a chunk, not the long batch) and publish them at the checkpoint.
            let schema = self
                .output_schema
                .clone()
                .unwrap_or_else(|| self.source.schema());
            for (_, sink) in &mut self.sinks {
                if sink.as_streaming().is_none() {
                    if let Some(w) = sink.as_part_writer() {
                        w.begin_batch(batch_id, schema.clone()).await?;
                    }
                }
            }
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
                        if let Err(e) = self.interim_progress(&long, staged_only) {
                            break Err(e);
                        }
                    }
                    Some(done) = long.in_flight.next(), if !long.in_flight.is_empty() => match done {
                        Ok(meta) => long.acknowledged(meta),
                        Err(e) => break Err(e),
                    },
                    chunk = rx.recv(), if long.in_flight.len() < IN_FLIGHT_CHUNKS => match chunk {
                        Some(Ok(chunk)) => {
                            if let Err(e) = self.deliver(&mut long, chunk, staged_only).await {
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
                self.deliver(&mut long, chunk?, staged_only).await?;
            }
            long.drain_acks().await?;
            if long.rows == 0 && long.delivered.is_empty() {
                continue;
            }
            let end = self.end_batch(long, staged_only, &mut last_end).await?;
            summary.batches += 1;
            summary.last_batch_id = Some(batch_id);
            batch_id += 1;
            start = end;
        }
        Ok(summary)
    }

    /// Step 2: stages, then the sinks: streaming sinks get the records now and their
    /// acknowledgements join the in-flight queue; staged sinks get them at the checkpoint.
    async fn deliver(
        &mut self,
        long: &mut LongBatch,
        chunk: StreamChunk,
        staged_only: bool,
    ) -> Result<()> {
        let mut batch = chunk.batch;
        for stage in &mut self.stages {
            batch = stage.apply(&batch)?;
        }
        let rows = batch.num_rows();
        let t = Instant::now();
        let mut staged = false;
        let mut acks = Vec::new();
        for (_, sink) in &mut self.sinks {
            if let Some(s) = sink.as_streaming() {
                acks.push(s.write_records(long.batch_id, &batch).await?);
            } else if let Some(w) = sink.as_part_writer() {
                w.write_part(&batch).await?;
            } else {
                staged = true;
            }
        }
        long.sink_ms += t.elapsed().as_millis() as u64;
        if staged && rows > 0 {
            long.staged.push(batch);
        }
        long.rows += rows as u64;
        let meta = ChunkMeta {
            partition: chunk.partition,
            position: chunk.position,
            rows,
            read_at_us: chunk.read_at_us,
            appended_ms: chunk.appended_ms,
            created_ms: chunk.created_ms,
        };
        if staged_only {
            long.pending_times
                .push((rows, meta.read_at_us, meta.appended_ms, meta.created_ms));
            long.delivered.insert(meta.partition, meta.position);
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
    fn interim_progress(&mut self, long: &LongBatch, staged_only: bool) -> Result<()> {
        let end = match self.source.as_streaming() {
            Some(s) => s.end_offset(&long.start, &long.delivered)?,
            None => long.start.clone(),
        };
        let elapsed = long.started.elapsed();
        let durations = Durations {
            add_batch: long.sink_ms,
            trigger_execution: elapsed.as_millis() as u64,
            ..Durations::default()
        };
        // Staged-only pipelines acknowledge at the checkpoint: no latency is known yet.
        let latencies = (!staged_only).then(|| long.latencies.latencies());
        let event = self.event(long, end, durations, elapsed, latencies, true);
        for l in &mut self.listeners {
            l.on_progress(&event);
        }
        Ok(())
    }

    /// Step 4: log, commit, report. Returns the batch's end offset.
    async fn end_batch(
        &mut self,
        mut long: LongBatch,
        staged_only: bool,
        last_end: &mut Instant,
    ) -> Result<Offset> {
        let end = match self.source.as_streaming() {
            Some(s) => s.end_offset(&long.start, &long.delivered)?,
            None => return Err(not_streaming(&self.source_label)),
        };
        let t = Instant::now();
        self.checkpoint
            .write_offsets(long.batch_id, &long.start, &end)?;
        let mut wal_ms = t.elapsed().as_millis() as u64;
        let t = Instant::now();
        let staged = std::mem::take(&mut long.staged);
        for (_, sink) in &mut self.sinks {
            if let Some(s) = sink.as_streaming() {
                s.end_batch(long.batch_id).await?;
            } else if let Some(w) = sink.as_part_writer() {
                w.commit_batch().await?;
            } else {
                sink.write(long.batch_id, &staged).await?;
            }
        }
        long.sink_ms += t.elapsed().as_millis() as u64;
        if staged_only {
            let ack = now_us();
            for (rows, read_at, appended, created) in std::mem::take(&mut long.pending_times) {
                long.latencies
                    .record_chunk(rows, read_at, ack, &appended, &created);
            }
        }
        let t = Instant::now();
        self.checkpoint.write_commit(long.batch_id, long.rows)?;
        wal_ms += t.elapsed().as_millis() as u64;
        self.source.commit(&end).await?;
        let elapsed = last_end.elapsed();
        *last_end = Instant::now();
        let durations = Durations {
            wal_commit: wal_ms,
            add_batch: long.sink_ms,
            trigger_execution: long.started.elapsed().as_millis() as u64,
            ..Durations::default()
        };
        let latencies = Some(long.latencies.latencies());
        let event = self.event(&long, end.clone(), durations, elapsed, latencies, false);
        for l in &mut self.listeners {
            l.on_progress(&event);
        }
        Ok(end)
    }

    fn event(
        &self,
        long: &LongBatch,
        end: Offset,
        duration_ms: Durations,
        wall: Duration,
        latencies: Option<crate::latency::Latencies>,
        interim: bool,
    ) -> ProgressEvent {
        let exec_s = long.started.elapsed().as_secs_f64().max(1e-3);
        ProgressEvent {
            id: self.checkpoint_id.clone(),
            name: self.name.clone(),
            batch_id: long.batch_id,
            replayed: false,
            timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            num_input_rows: long.rows,
            input_rows_per_second: long.rows as f64 / wall.as_secs_f64().max(1e-3),
            processed_rows_per_second: long.rows as f64 / exec_s,
            duration_ms,
            sources: vec![SourceProgress {
                description: self.source_label.clone(),
                start_offset: long.start.clone(),
                end_offset: end,
                num_input_rows: long.rows,
                metrics: self.metrics(),
            }],
            sinks: self
                .sinks
                .iter()
                .map(|(name, _)| SinkProgress {
                    description: name.clone(),
                    num_output_rows: long.rows,
                })
                .collect(),
            latencies,
            interim,
            tasks: Vec::new(),
            scheduling_ms: None,
        }
    }
}
