//! Real-time mode across the plugin boundary: [`ForeignSource`] as a `StreamingSource` and
//! [`ForeignSink`] as a `StreamingSink`, through the plugin's optional
//! [`FfiStreamingTable`](tributary_sdk::plugin::abi::FfiStreamingTable).
//!
//! Source: `start_stream` starts the plugin's readers (they run on the plugin's own runtime and
//! fill a bounded queue inside the plugin), then a pump on the host's blocking pool calls
//! `next_chunk` with a short timeout ([`PUMP_WAIT_MS`]) and forwards each chunk into the host's
//! [`ChunkSender`]. The pump waits while the host's queue is full (the plugin's queue then fills
//! and its readers wait: back-pressure end to end), ends when the queue is closed, the stream
//! ends, a reader fails (the error is forwarded) or `stop_stream` raises its flag. `next_chunk`
//! runs without the handle's lock — the plugin guards its queue apart from the source — so
//! `end_offset`, metrics and `stop_stream` never wait for a chunk.
//!
//! Sink: `write_records` lends the batch and an acknowledgement slot (a boxed oneshot sender)
//! with a C callback; the plugin returns once it holds the records and calls back when they
//! are acknowledged, from its own runtime. The returned [`Ack`] awaits the oneshot: many
//! acknowledgements overlap without a host thread each and without polling (a token the host
//! polled would cost either a blocked thread per pending chunk or a polling delay).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tokio::sync::oneshot;
use tributary_sdk::plugin::abi::{
    FfiAck, FfiBatch, FfiBytes, FfiChunk, FfiSlice, FfiSource, FfiStatus, STATUS_END, STATUS_OK,
    STATUS_TIMEOUT, TIME_UNKNOWN,
};
use tributary_sdk::plugin::batches::{export_batch, import_batch};
use tributary_sdk::{
    Ack, ChunkSender, Error, ErrorCode, Offset, Result, StreamChunk, StreamingSink, StreamingSource,
};

use crate::plugin::call::{blocking, PluginShared, StreamingRef};
use crate::plugin::foreign_sink::ForeignSink;
use crate::plugin::foreign_source::{ForeignSource, Pump, SourceHandle};

/// How long one `next_chunk` call waits before the pump checks its stop flag again.
pub const PUMP_WAIT_MS: u64 = 50;

/// A bitwise copy of a source table for the pump: it calls only `next_chunk`, which reads the
/// table's `private_data`. The original stays in the handle (kept alive by the pump's clone of
/// the handle) and is the only one ever released.
struct TableCopy(FfiSource);

fn not_streaming(plugin: &PluginShared, what: &str) -> Error {
    Error::new(
        ErrorCode::Plugin,
        format!(
            "the {what} of plugin '{}' has no streaming extension",
            plugin.name
        ),
    )
    .with_context("plugin", &plugin.name)
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Per-record times from native-endian `i64`s.
fn times(plugin: &PluginShared, what: &str, mut bytes: FfiBytes) -> Result<Vec<i64>> {
    // SAFETY: the plugin filled the buffer; we release it through its own function.
    let bytes = unsafe { bytes.take() };
    if bytes.len() % 8 != 0 {
        return Err(Error::new(
            ErrorCode::Plugin,
            format!(
                "plugin '{}' returned {what} of {} bytes, not a multiple of 8",
                plugin.name,
                bytes.len()
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            i64::from_ne_bytes(a)
        })
        .collect())
}

/// Takes a chunk the plugin wrote.
///
/// # Safety
/// `chunk` must have been written by the plugin's `next_chunk` with [`STATUS_OK`].
unsafe fn import_chunk(
    plugin: &PluginShared,
    chunk: FfiChunk,
    schema: &SchemaRef,
) -> Result<StreamChunk> {
    let FfiChunk {
        batch,
        mut partition,
        mut position,
        read_at_us,
        appended_ms,
        created_ms,
    } = chunk;
    // SAFETY: the plugin exported the batch and the buffers for us to take.
    let (batch, partition, position) = unsafe {
        (
            import_batch(batch, Some(schema))?,
            partition.take(),
            position.take(),
        )
    };
    let partition = String::from_utf8(partition).map_err(|_| {
        Error::new(
            ErrorCode::Plugin,
            format!(
                "plugin '{}' returned a partition key that is not UTF-8",
                plugin.name
            ),
        )
    })?;
    Ok(StreamChunk {
        batch,
        partition,
        position: plugin.json("chunk position", &position)?,
        read_at_us: if read_at_us == TIME_UNKNOWN {
            now_us()
        } else {
            read_at_us
        },
        appended_ms: times(plugin, "append times", appended_ms)?,
        created_ms: times(plugin, "creation times", created_ms)?,
    })
}

/// The pump's loop (see the module docs); runs on the host's blocking pool.
fn pump(
    plugin: Arc<PluginShared>,
    table: StreamingRef,
    source: TableCopy,
    _alive: Arc<Mutex<SourceHandle>>,
    schema: SchemaRef,
    queue: ChunkSender,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) && !queue.is_closed() {
        let mut out = MaybeUninit::<FfiChunk>::uninit();
        let mut err = FfiBytes::empty();
        // SAFETY: the table copy points to the plugin state kept alive by `_alive`; `next_chunk`
        // may run concurrently with the handle's other calls (the extension's contract).
        let status: FfiStatus = unsafe {
            (table.get().next_chunk)(&source.0, PUMP_WAIT_MS, out.as_mut_ptr(), &mut err)
        };
        let item = match status {
            STATUS_TIMEOUT => continue,
            STATUS_END => break,
            STATUS_OK => {
                // SAFETY: on STATUS_OK the plugin wrote a chunk and an empty error.
                unsafe {
                    drop(err.take());
                    import_chunk(&plugin, out.assume_init(), &schema)
                }
            }
            // A stopped stream may answer its last call with an error: nobody wants it.
            _ if stop.load(Ordering::SeqCst) => break,
            // SAFETY: `err` was filled by the plugin.
            other => match unsafe { plugin.finish(other, &mut err) } {
                Err(e) => Err(e),
                Ok(_) => Err(Error::new(
                    ErrorCode::Plugin,
                    format!(
                        "plugin '{}' returned next_chunk status {other}",
                        plugin.name
                    ),
                )),
            },
        };
        let failed = item.is_err();
        // Waits while the host's queue is full; false once the runtime stopped receiving.
        if !queue.blocking_send(item) || failed {
            break;
        }
    }
}

impl ForeignSource {
    fn streaming_table(&self) -> Result<StreamingRef> {
        self.streaming
            .ok_or_else(|| not_streaming(&self.plugin, "source"))
    }

    /// Stops the pump and waits for it: one `next_chunk` wait, unless it waits on a full queue
    /// nobody reads (the runtime closes its queue before stopping, so this is a caller that did
    /// not): then it is left to end when that queue closes or goes.
    async fn stop_pump(&mut self) -> Result<()> {
        if let Some(mut p) = self.pump.take() {
            p.stop();
            let wait = Duration::from_millis(PUMP_WAIT_MS * 20);
            match tokio::time::timeout(wait, &mut p.task).await {
                Ok(joined) => joined.map_err(|e| {
                    Error::new(
                        ErrorCode::Internal,
                        format!(
                            "the stream pump of plugin '{}' failed: {e}",
                            self.plugin.name
                        ),
                    )
                })?,
                Err(_) => tracing::debug!(
                    plugin = %self.plugin.name,
                    "stream pump still waits on a full queue; left to end when it closes"
                ),
            }
        }
        Ok(())
    }

    /// Runs a call of the streaming table that answers with an error buffer only.
    async fn table_call(
        &self,
        call: &'static str,
        f: impl FnOnce(StreamingRef, &mut FfiSource, &mut FfiBytes) -> FfiStatus + Send + 'static,
    ) -> Result<Vec<u8>> {
        let table = self.streaming_table()?;
        let plugin = self.plugin.clone();
        blocking(&self.handle, call, move |h| {
            let mut err = FfiBytes::empty();
            let status = f(table, &mut h.table, &mut err);
            // SAFETY: `err` was filled by the plugin.
            unsafe { plugin.finish(status, &mut err) }
        })
        .await
    }
}

#[async_trait]
impl StreamingSource for ForeignSource {
    async fn start_stream(&mut self, start: &Offset, queue: ChunkSender) -> Result<()> {
        self.stop_pump().await?;
        let table = self.streaming_table()?;
        let start = start.to_json_string();
        // SAFETY: a live table; the slice outlives the call.
        self.table_call("start_stream", move |t, source, err| unsafe {
            (t.get().start_stream)(source, FfiSlice::text(&start), err)
        })
        .await?;
        let copy = {
            let guard = self.handle.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: `FfiSource` has no destructor; the copy is never released (see TableCopy).
            TableCopy(unsafe { std::ptr::read(&guard.table) })
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (plugin, alive, schema, flag) = (
            self.plugin.clone(),
            self.handle.clone(),
            self.schema.clone(),
            stop.clone(),
        );
        let task = tokio::task::spawn_blocking(move || {
            pump(plugin, table, copy, alive, schema, queue, flag)
        });
        self.pump = Some(Pump { stop, task });
        Ok(())
    }

    async fn stop_stream(&mut self) -> Result<()> {
        let pumped = self.stop_pump().await;
        // SAFETY: a live table.
        let stopped = self
            .table_call("stop_stream", |t, source, err| unsafe {
                (t.get().stop_stream)(source, err)
            })
            .await;
        pumped?;
        stopped.map(|_| ())
    }

    fn end_offset(
        &self,
        start: &Offset,
        delivered: &BTreeMap<String, serde_json::Value>,
    ) -> Result<Offset> {
        let table = self.streaming_table()?;
        let start = start.to_json_string();
        let delivered = serde_json::to_string(delivered).map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot serialise delivered positions").with_cause(e)
        })?;
        let mut guard = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = FfiBytes::empty();
        // SAFETY: a live table, calls serialised by the handle's lock; slices outlive the call.
        let status = unsafe {
            (table.get().end_offset)(
                &mut guard.table,
                FfiSlice::text(&start),
                FfiSlice::text(&delivered),
                &mut out,
            )
        };
        drop(guard);
        // SAFETY: `out` was filled by the plugin.
        let bytes = unsafe { self.plugin.finish(status, &mut out) }?;
        self.plugin.json("end offset", &bytes)
    }
}

/// What the host lends with one `write_records`: where the acknowledgement goes.
struct AckContext {
    plugin: Arc<PluginShared>,
    tx: oneshot::Sender<Result<()>>,
}

/// A raw acknowledgement context, moved to the blocking call.
struct ContextPtr(*mut AckContext);

// SAFETY: the context is owned by whoever holds the pointer: the plugin once `write_records`
// succeeded, this side otherwise; `AckContext` itself is `Send`.
unsafe impl Send for ContextPtr {}

/// [`FfiAck::done`]: delivers the plugin's answer to the awaiting [`Ack`].
unsafe extern "C" fn ack_done(context: *mut c_void, status: FfiStatus, err: *mut FfiBytes) {
    if context.is_null() {
        return;
    }
    // SAFETY: `context` came from `Box::into_raw` in `write_records`; the plugin calls this once.
    let context = unsafe { Box::from_raw(context as *mut AckContext) };
    let bytes = if err.is_null() {
        Vec::new()
    } else {
        // SAFETY: the plugin lends its error buffer for the call; we release it.
        unsafe { (*err).take() }
    };
    let result = if status == STATUS_OK {
        Ok(())
    } else {
        Err(context.plugin.error(&bytes))
    };
    // The receiver is gone when the runtime no longer waits for this acknowledgement.
    let _ = context.tx.send(result);
}

#[async_trait]
impl StreamingSink for ForeignSink {
    async fn write_records(&mut self, batch_id: u64, batch: &RecordBatch) -> Result<Ack> {
        let table = self
            .streaming
            .ok_or_else(|| not_streaming(&self.plugin, "sink"))?;
        let mut exported: FfiBatch = export_batch(batch)?;
        let (tx, rx) = oneshot::channel();
        let plugin = self.plugin.clone();
        let context = ContextPtr(Box::into_raw(Box::new(AckContext {
            plugin: plugin.clone(),
            tx,
        })));
        blocking(&self.handle, "write_records", move |h| {
            let context = context;
            let ack = FfiAck {
                context: context.0 as *mut c_void,
                done: ack_done,
            };
            let mut err = FfiBytes::empty();
            // SAFETY: a live table; the plugin moves the batch out and owns `ack` on success.
            let status = unsafe {
                (table.get().write_records)(&mut h.table, batch_id, &mut exported, ack, &mut err)
            };
            drop(exported);
            if status != STATUS_OK {
                // SAFETY: on failure the plugin never calls `done`: the context is still ours.
                drop(unsafe { Box::from_raw(context.0) });
            }
            // SAFETY: `err` was filled by the plugin.
            unsafe { plugin.finish(status, &mut err) }.map(|_| ())
        })
        .await?;
        let name = self.plugin.name.clone();
        Ok(Box::pin(async move {
            rx.await.map_err(|_| {
                Error::new(
                    ErrorCode::Plugin,
                    format!("plugin '{name}' dropped an acknowledgement"),
                )
            })?
        }))
    }

    async fn end_batch(&mut self, batch_id: u64) -> Result<()> {
        let table = self
            .streaming
            .ok_or_else(|| not_streaming(&self.plugin, "sink"))?;
        let plugin = self.plugin.clone();
        blocking(&self.handle, "end_batch", move |h| {
            let mut err = FfiBytes::empty();
            // SAFETY: a live table.
            let status = unsafe { (table.get().end_batch)(&mut h.table, batch_id, &mut err) };
            // SAFETY: `err` was filled by the plugin.
            unsafe { plugin.finish(status, &mut err) }.map(|_| ())
        })
        .await
    }
}
