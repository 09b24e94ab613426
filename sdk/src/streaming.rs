//! Real-time mode: records flow from source to sink as they arrive, inside long batches.
//!
//! A pipeline whose trigger is `realTime` runs long batches (the checkpoint interval, five
//! minutes by default). Within one, a source that opts in ([`Source::as_streaming`]) streams
//! records as it reads them, and sinks that opt in ([`Sink::as_streaming`]) write and acknowledge
//! them as they come. The runtime drives a streaming source like this:
//!
//! 1. [`StreamingSource::start_stream`] starts reading at the batch's start offset — one reader
//!    per partition or shard, all at once — and returns. Readers push [`StreamChunk`]s into the
//!    bounded [`ChunkSender`]; a full queue blocks them (back-pressure). A partition that appears
//!    while running gets a reader too.
//! 2. The runtime hands each chunk to the sinks ([`StreamingSink::write_records`] returns an
//!    [`Ack`] at once; a bounded number of chunks is in flight) and, once every sink
//!    acknowledged it, records the chunk's `position` as delivered for its partition.
//! 3. At the end of the interval (or on a clean stop) [`StreamingSource::stop_stream`] stops the
//!    readers; the runtime delivers what is still queued.
//! 4. [`StreamingSource::end_offset`] turns the start offset and the delivered positions into
//!    the batch's end offset. The runtime logs `offsets/N` = `[start, end)` only now (the end of a
//!    real-time batch is not known when it starts), commits the staged sinks, writes
//!    `commits/N` and calls [`Source::commit`].
//! 5. A crash before `commits/N` replays: a logged range through [`Source::read_stream`] (the
//!    micro-batch contract, which a streaming source keeps), an unlogged batch from the last
//!    committed offsets. Records delivered before the crash are delivered again: at-least-once to
//!    sinks that acknowledge records as they come, exactly-once to sinks that stage their writes
//!    until the checkpoint.
//!
//! Sinks that do not opt in receive the long batch's records in one [`Sink::write`] at the
//! checkpoint (Parquet, Delta: staged and committed atomically).
//!
//! [`Source::as_streaming`]: crate::Source::as_streaming
//! [`Source::read_stream`]: crate::Source::read_stream
//! [`Source::commit`]: crate::Source::commit
//! [`Sink::as_streaming`]: crate::Sink::as_streaming
//! [`Sink::write`]: crate::Sink::write

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use arrow_array::RecordBatch;
use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::error::Result;
use crate::offset::Offset;

/// Records of one partition, in arrival order, with the partition's position after them.
#[derive(Debug, Clone)]
pub struct StreamChunk {
    /// The records, in the source's schema.
    pub batch: RecordBatch,
    /// The partition or shard they come from, a key stable for the run (`topic/3`).
    pub partition: String,
    /// The partition's position after the last record of this chunk, in the source's own form;
    /// [`StreamingSource::end_offset`] reads it back.
    pub position: serde_json::Value,
    /// When the source read the records (Unix microseconds).
    pub read_at_us: i64,
    /// Per record, when the broker appended it (Unix ms); empty when the source cannot tell.
    pub appended_ms: Vec<i64>,
    /// Per record, when its producer created it (Unix ms); empty when the source cannot tell.
    pub created_ms: Vec<i64>,
}

/// The sending half of a real-time batch's bounded queue (held by the source's readers).
#[derive(Debug, Clone)]
pub struct ChunkSender {
    tx: mpsc::Sender<Result<StreamChunk>>,
}

/// The receiving half (held by the runtime).
#[derive(Debug)]
pub struct ChunkReceiver {
    rx: mpsc::Receiver<Result<StreamChunk>>,
}

/// A bounded queue of `capacity` chunks.
pub fn chunk_queue(capacity: usize) -> (ChunkSender, ChunkReceiver) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (ChunkSender { tx }, ChunkReceiver { rx })
}

impl ChunkSender {
    /// Sends a chunk (or a reader's fatal error), waiting while the queue is full. Returns
    /// `false` once the runtime stopped receiving: the reader should stop.
    pub async fn send(&self, chunk: Result<StreamChunk>) -> bool {
        self.tx.send(chunk).await.is_ok()
    }

    /// [`ChunkSender::send`] for readers running on a blocking thread.
    pub fn blocking_send(&self, chunk: Result<StreamChunk>) -> bool {
        self.tx.blocking_send(chunk).is_ok()
    }

    /// True once the runtime stopped receiving.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl ChunkReceiver {
    /// The next chunk; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<Result<StreamChunk>> {
        self.rx.recv().await
    }

    /// A chunk already queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Result<StreamChunk>> {
        self.rx.try_recv().ok()
    }

    /// Stops accepting chunks; queued ones can still be received.
    pub fn close(&mut self) {
        self.rx.close()
    }
}

/// The streaming read of a source that supports real-time mode.
#[async_trait]
pub trait StreamingSource: Send {
    /// Starts the readers at `start` (step 1 of the module docs).
    async fn start_stream(&mut self, start: &Offset, queue: ChunkSender) -> Result<()>;

    /// Stops the readers; they drop their senders (step 3).
    async fn stop_stream(&mut self) -> Result<()>;

    /// `start` advanced by the delivered positions, by partition (step 4). Partitions without a
    /// delivered chunk keep their start position.
    fn end_offset(
        &self,
        start: &Offset,
        delivered: &BTreeMap<String, serde_json::Value>,
    ) -> Result<Offset>;
}

/// Resolves once the records of one [`StreamingSink::write_records`] call are acknowledged
/// (durable as far as the sink's [`crate::Delivery`] goes).
pub type Ack = Pin<Box<dyn Future<Output = Result<()>> + Send + 'static>>;

/// The streaming write of a sink that acknowledges records as they come.
#[async_trait]
pub trait StreamingSink: Send {
    /// Hands records of the running long batch `batch_id` to the sink and returns at once with
    /// their acknowledgement, so that the next records can be written while these are in
    /// flight. Acknowledgements may resolve in any order (a bounded number is in flight); the
    /// runtime counts a chunk's position as delivered only once its acknowledgement and those
    /// of every earlier chunk of its partition resolved ([`crate::AckFrontier`]). An
    /// acknowledgement must not resolve before its records are durable: a failed batch may be
    /// committed at the acknowledged frontier, and records acknowledged early would be lost.
    async fn write_records(&mut self, batch_id: u64, batch: &RecordBatch) -> Result<Ack>;

    /// The long batch ends: everything written is flushed before `commits/N` is written.
    async fn end_batch(&mut self, batch_id: u64) -> Result<()>;
}

/// Whether a configured source can run in real-time mode, known before it is built.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", tag = "support")]
pub enum RealTimeSupport {
    /// The source implements [`StreamingSource`].
    Supported,
    /// It does not; `reason` says why and what to change (shown as the refusal).
    Unsupported {
        /// The message, e.g. "polling cannot stream: set consumerMode = efo".
        reason: String,
    },
}

impl Default for RealTimeSupport {
    fn default() -> Self {
        RealTimeSupport::Unsupported {
            reason: "the source has no streaming read".to_string(),
        }
    }
}
