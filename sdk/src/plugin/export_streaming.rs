//! The plugin side of the streaming extension: [`FfiStreamingTable`], exported by
//! [`crate::export_plugin!`] as [`crate::plugin::abi::STREAMING_SYMBOL`].
//!
//! Sources: `start_stream` runs the source's [`crate::StreamingSource::start_stream`] on the
//! plugin's own runtime with a bounded [`chunk_queue`] of [`PLUGIN_QUEUE_CHUNKS`] chunks whose
//! receiver is kept apart from the source's lock; the host's pump calls `next_chunk`, which waits
//! on that receiver with the host's timeout. A full queue blocks the plugin's readers, and the
//! host stops calling `next_chunk` while its own queue is full: back-pressure crosses the
//! boundary. `stop_stream` closes the queue first (a reader blocked on it sees it closed), then
//! stops the readers.
//!
//! Sinks: `write_records` hands the records to the sink's [`crate::StreamingSink::write_records`]
//! and returns at once; the [`crate::Ack`] it got runs as a task of the plugin's runtime that
//! calls the host's [`FfiAck::done`] exactly once — also when the task is dropped or panics
//! (then with an error). Acknowledgements therefore overlap, as with a built-in sink.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::error::{Error, ErrorCode, Result};
use crate::offset::Offset;
use crate::plugin::abi::{
    FfiAck, FfiBatch, FfiBytes, FfiChunk, FfiSink, FfiSlice, FfiSource, FfiStatus,
    FfiStreamingTable, STATUS_END, STATUS_ERROR, STATUS_OK, STATUS_TIMEOUT, STREAMING_VERSION,
};
use crate::plugin::batches::{export_batch, import_batch};
use crate::plugin::export_sink::with_sink;
use crate::plugin::export_source::{source_state, with_source};
use crate::plugin::guest::{
    block_on, error_bytes, guard, parse_json, plugin_name, spawn, to_json_bytes, write_out,
};
use crate::streaming::{chunk_queue, ChunkReceiver, StreamChunk};

/// Chunks queued inside the plugin between its readers and the host's pump.
pub const PLUGIN_QUEUE_CHUNKS: usize = 16;

/// The table [`crate::export_plugin!`] exports.
pub static STREAMING_TABLE: FfiStreamingTable = FfiStreamingTable {
    version: STREAMING_VERSION,
    source_streams,
    start_stream,
    next_chunk,
    stop_stream,
    end_offset,
    sink_streams,
    write_records,
    end_batch,
};

/// The body of the generated streaming symbol.
pub fn streaming_entry() -> *const FfiStreamingTable {
    &STREAMING_TABLE
}

fn no_streaming_read() -> Error {
    Error::new(
        ErrorCode::Plugin,
        format!(
            "a source of plugin '{}' has no streaming read (the host asked for one)",
            plugin_name()
        ),
    )
    .with_context("plugin", plugin_name())
}

fn no_streaming_write() -> Error {
    Error::new(
        ErrorCode::Plugin,
        format!(
            "a sink of plugin '{}' has no acknowledged write (the host asked for one)",
            plugin_name()
        ),
    )
    .with_context("plugin", plugin_name())
}

fn lock(stream: &Mutex<Option<ChunkReceiver>>) -> MutexGuard<'_, Option<ChunkReceiver>> {
    stream.lock().unwrap_or_else(|p| p.into_inner())
}

/// Per-record times as native-endian `i64`s.
fn times_bytes(times: &[i64]) -> FfiBytes {
    if times.is_empty() {
        return FfiBytes::empty();
    }
    FfiBytes::from_vec(times.iter().flat_map(|t| t.to_ne_bytes()).collect())
}

fn export_chunk(chunk: StreamChunk) -> Result<FfiChunk> {
    Ok(FfiChunk {
        batch: export_batch(&chunk.batch)?,
        partition: FfiBytes::from_string(chunk.partition),
        position: FfiBytes::from_vec(to_json_bytes(&chunk.position)?),
        read_at_us: chunk.read_at_us,
        appended_ms: times_bytes(&chunk.appended_ms),
        created_ms: times_bytes(&chunk.created_ms),
    })
}

unsafe extern "C" fn source_streams(this: *mut FfiSource) -> u32 {
    // SAFETY: `this` is live for the call.
    let r = unsafe { with_source(this, "source_streams", |s| Ok(s.as_streaming().is_some())) };
    u32::from(r.unwrap_or(false))
}

unsafe extern "C" fn start_stream(
    this: *mut FfiSource,
    start: FfiSlice,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: all arguments are valid for the call.
    unsafe {
        let r = with_source(this, "start_stream", |s| {
            let start: Offset = parse_json("start offset", start)?;
            let streaming = s.as_streaming().ok_or_else(no_streaming_read)?;
            let (tx, rx) = chunk_queue(PLUGIN_QUEUE_CHUNKS);
            block_on(streaming.start_stream(&start, tx))??;
            Ok(rx)
        })
        .map(|rx| {
            *lock(&source_state(this).stream) = Some(rx);
            Vec::new()
        });
        write_out(err, r)
    }
}

/// What one `next_chunk` found.
enum Next {
    Chunk(Box<FfiChunk>),
    Timeout,
    End,
}

unsafe extern "C" fn next_chunk(
    this: *const FfiSource,
    timeout_ms: u64,
    out: *mut FfiChunk,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: `this` is live for the call; only its queue is touched, not the source.
    let state = unsafe { source_state(this) };
    let result = guard("next_chunk", || {
        let mut stream = lock(&state.stream);
        let Some(rx) = stream.as_mut() else {
            return Err(Error::new(
                ErrorCode::Plugin,
                "next_chunk called on a source whose stream is not running",
            ));
        };
        let wait = Duration::from_millis(timeout_ms);
        // The timer is created inside the runtime (it needs the runtime's clock).
        match block_on(async { tokio::time::timeout(wait, rx.recv()).await })? {
            Err(_elapsed) => Ok(Next::Timeout),
            Ok(None) => Ok(Next::End),
            Ok(Some(Err(e))) => Err(e),
            Ok(Some(Ok(chunk))) => Ok(Next::Chunk(Box::new(export_chunk(chunk)?))),
        }
    });
    // SAFETY: out-parameters provided by the caller; `out` is written only with a chunk.
    unsafe {
        match result {
            Ok(Next::Chunk(chunk)) => {
                std::ptr::write(out, *chunk);
                std::ptr::write(err, FfiBytes::empty());
                STATUS_OK
            }
            Ok(Next::Timeout) => {
                std::ptr::write(err, FfiBytes::empty());
                STATUS_TIMEOUT
            }
            Ok(Next::End) => {
                std::ptr::write(err, FfiBytes::empty());
                STATUS_END
            }
            Err(e) => write_out(err, Err(e)),
        }
    }
}

unsafe extern "C" fn stop_stream(this: *mut FfiSource, err: *mut FfiBytes) -> FfiStatus {
    // SAFETY: all arguments are valid for the call.
    unsafe {
        let state = source_state(this);
        // Closed first: a reader blocked on a full queue sees it closed and ends.
        if let Some(rx) = lock(&state.stream).as_mut() {
            rx.close();
        }
        let r = with_source(this, "stop_stream", |s| match s.as_streaming() {
            Some(streaming) => block_on(streaming.stop_stream())?,
            None => Ok(()),
        });
        *lock(&state.stream) = None;
        write_out(err, r.map(|()| Vec::new()))
    }
}

unsafe extern "C" fn end_offset(
    this: *mut FfiSource,
    start: FfiSlice,
    delivered: FfiSlice,
    out: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: all arguments are valid for the call.
    unsafe {
        let r = with_source(this, "end_offset", |s| {
            let start: Offset = parse_json("start offset", start)?;
            let delivered: BTreeMap<String, serde_json::Value> =
                parse_json("delivered positions", delivered)?;
            let streaming = s.as_streaming().ok_or_else(no_streaming_read)?;
            to_json_bytes(&streaming.end_offset(&start, &delivered)?)
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn sink_streams(this: *mut FfiSink) -> u32 {
    // SAFETY: `this` is live for the call.
    let r = unsafe { with_sink(this, "sink_streams", |s| Ok(s.as_streaming().is_some())) };
    u32::from(r.unwrap_or(false))
}

/// The host's acknowledgement slot: `done` is called exactly once, with an error when the slot
/// is dropped unanswered (the ack task panicked or the runtime went away).
struct AckSlot(Option<FfiAck>);

impl AckSlot {
    fn complete(mut self, result: Result<()>) {
        if let Some(ack) = self.0.take() {
            let (status, mut bytes) = match result {
                Ok(()) => (STATUS_OK, FfiBytes::empty()),
                Err(e) => (STATUS_ERROR, error_bytes(&e)),
            };
            // SAFETY: the host's callback, called once; it takes (releases) the bytes, and a
            // buffer it left is released by our drop.
            unsafe { (ack.done)(ack.context, status, &mut bytes) };
        }
    }
}

impl Drop for AckSlot {
    fn drop(&mut self) {
        if self.0.is_some() {
            let e = Error::new(
                ErrorCode::Internal,
                format!(
                    "plugin '{}' dropped an acknowledgement unanswered (its sink panicked or \
                     stopped)",
                    plugin_name()
                ),
            );
            AckSlot(self.0.take()).complete(Err(e));
        }
    }
}

unsafe extern "C" fn write_records(
    this: *mut FfiSink,
    batch_id: u64,
    batch: *mut FfiBatch,
    ack: FfiAck,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: `batch` is lent for the call for us to move out; `this` is live.
    let result = unsafe {
        let b = std::ptr::replace(batch, FfiBatch::empty());
        import_batch(b, None).and_then(|records| {
            with_sink(this, "write_records", |s| {
                let streaming = s.as_streaming().ok_or_else(no_streaming_write)?;
                block_on(streaming.write_records(batch_id, &records))?
            })
        })
    };
    match result {
        Ok(pending) => {
            let slot = AckSlot(Some(ack));
            // When the runtime is gone the future (and the slot in it) is dropped here, which
            // answers the host with an error: the call itself succeeded.
            let _ = spawn(async move {
                let r = pending.await;
                slot.complete(r);
            });
            // SAFETY: out-parameter provided by the caller.
            unsafe { std::ptr::write(err, FfiBytes::empty()) };
            STATUS_OK
        }
        // SAFETY: out-parameter provided by the caller; `ack` is never called.
        Err(e) => unsafe { write_out(err, Err(e)) },
    }
}

unsafe extern "C" fn end_batch(this: *mut FfiSink, batch_id: u64, err: *mut FfiBytes) -> FfiStatus {
    // SAFETY: all arguments are valid for the call.
    unsafe {
        let r = with_sink(this, "end_batch", |s| {
            let streaming = s.as_streaming().ok_or_else(no_streaming_write)?;
            block_on(streaming.end_batch(batch_id))??;
            Ok(Vec::new())
        });
        write_out(err, r)
    }
}
