//! The generator's streaming read (real-time mode, `tributary_sdk::streaming`).
//!
//! One reader task — the generator's offset is a single row position, so it is one "partition"
//! for the runtime, keyed [`STREAM_PARTITION`] — produces a chunk of at most `rowsPerBatch`
//! assigned rows as soon as they exist, with the row position after it as the chunk's position.
//! When no row is available (`totalRows` reached, or the `controlFile` not yet raised) it looks
//! again every [`POLL`]; an unbounded generator always has rows and is paced by the bounded queue
//! alone (back-pressure). Trimmed rows follow `failOnDataLoss` (fail the stream, or skip them).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tokio::task::JoinHandle;
use tributary_sdk::{
    ChunkSender, DataLossEvent, DataLossKind, Error, ErrorCode, Result, StreamChunk,
};

use crate::config::GeneratorConfig;
use crate::control::bounds_of;
use crate::rows::{build_batches, Partitioning};

/// The runtime's partition key of the generator's single position.
pub const STREAM_PARTITION: &str = "rows";

/// How often a reader without rows to read looks again.
pub const POLL: Duration = Duration::from_millis(20);

/// What a reader needs, owned (it outlives the call that started it).
pub(crate) struct ReaderSetup {
    pub(crate) config: GeneratorConfig,
    pub(crate) target: String,
    pub(crate) schema: SchemaRef,
    pub(crate) partitioning: Partitioning,
    /// Rows read by the stream, shared with the source's metrics.
    pub(crate) rows_read: Arc<AtomicU64>,
}

/// A running streaming read.
#[derive(Debug)]
pub(crate) struct RunningStream {
    stop: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl RunningStream {
    /// Starts the reader at row `from` on the current tokio runtime.
    pub(crate) fn start(setup: ReaderSetup, from: u64, queue: ChunkSender) -> RunningStream {
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(read(setup, from, queue, stop.clone()));
        RunningStream { stop, task }
    }

    /// Stops the reader and waits for it.
    pub(crate) async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.abort();
        // A cancelled reader is the expected outcome; a reader that panicked already sent
        // nothing more, and the runtime sees its stream end.
        let _ = self.task.await;
    }
}

async fn read(setup: ReaderSetup, mut at: u64, queue: ChunkSender, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) && !queue.is_closed() {
        match next_chunk(&setup, &mut at) {
            Ok(Some(chunk)) => {
                if !queue.send(Ok(chunk)).await {
                    return;
                }
            }
            Ok(None) => tokio::time::sleep(POLL).await,
            Err(e) => {
                queue.send(Err(e)).await;
                return;
            }
        }
    }
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The next chunk from row `at` (advanced past it), or `None` when no row exists yet.
fn next_chunk(setup: &ReaderSetup, at: &mut u64) -> Result<Option<StreamChunk>> {
    let config = &setup.config;
    let bounds = bounds_of(config)?;
    if *at < bounds.earliest {
        if config.fail_on_data_loss {
            return Err(DataLossEvent::new(
                DataLossKind::OffsetOutOfRange,
                setup.target.clone(),
                format!(
                    "rows {}..{} were trimmed before they were read",
                    *at, bounds.earliest
                ),
            )
            .with_positions(*at, bounds.earliest)
            .into_error());
        }
        *at = bounds.earliest;
    }
    let cap = bounds.latest.unwrap_or(u64::MAX);
    let to = setup
        .partitioning
        .end_after(*at, config.rows_per_batch)
        .min(cap);
    if to <= *at {
        return Ok(None);
    }
    // At most `rowsPerBatch` assigned rows: one batch (none when the range holds no assigned
    // row; an empty chunk still advances the position).
    let built = build_batches(
        &setup.schema,
        &setup.partitioning,
        (*at, to),
        config.rows_per_batch,
        &bounds.malformed,
        config.mode,
    )?;
    let mut batches = built.batches.into_iter();
    let batch = batches
        .next()
        .unwrap_or_else(|| RecordBatch::new_empty(setup.schema.clone()));
    if batches.next().is_some() {
        return Err(Error::new(
            ErrorCode::Internal,
            format!("rows {}..{to} built more than one batch", *at),
        ));
    }
    setup.rows_read.fetch_add(built.rows, Ordering::Relaxed);
    *at = to;
    Ok(Some(StreamChunk {
        batch,
        partition: STREAM_PARTITION.to_string(),
        position: serde_json::Value::from(to),
        read_at_us: now_us(),
        appended_ms: Vec::new(),
        created_ms: Vec::new(),
    }))
}
