//! The C types that cross the plugin boundary (ABI version [`ABI_VERSION`]).
//!
//! Everything here is `#[repr(C)]`: plain integers, raw pointers, `extern "C"` function
//! pointers and the Arrow C Data Interface structures. No Rust-native type (`String`, `Vec`,
//! `Arc`, trait objects, tokio handles) crosses. The rules:
//!
//! - Inputs are borrowed for the duration of one call ([`FfiSlice`]: UTF-8 JSON or text).
//! - Outputs are owned by the side that allocated them and carry their own `release`
//!   function ([`FfiBytes`], [`FfiBatches`], the Arrow structures); the receiver calls it once.
//! - Every fallible call returns an [`FfiStatus`]; on [`STATUS_ERROR`] the output buffer holds
//!   the error as JSON ([`crate::Error::to_json`]), which keeps the stable error code.
//! - Handles ([`FfiSource`], [`FfiSink`], [`FfiSecretStore`]) are function tables with a
//!   `version`, opaque `private_data` and a `release` entry, after
//!   `datafusion-ffi`'s `FFI_TableProvider`.
//!
//! The streaming extension of real-time mode ([`FfiStreamingTable`], [`FfiChunk`], [`FfiAck`])
//! is optional and found through its own symbol ([`STREAMING_SYMBOL`]); its first field is its
//! own version ([`STREAMING_VERSION`]), so adding it left [`ABI_VERSION`] and the layouts of
//! [`FfiSource`] and [`FfiSink`] unchanged. The functions extension ([`FfiFunctionTable`],
//! user-defined SQL functions, [`FUNCTIONS_SYMBOL`]) is optional and versioned the same way.
//!
//! Layout changes bump [`ABI_VERSION`]. The first field of [`FfiManifest`] is the ABI version
//! and never moves, so a host can read it from a plugin of any version and refuse a mismatch
//! before it touches anything else.

use std::ffi::{c_char, c_void};

pub use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};

/// The version of the layout of every type in this module. A host refuses a plugin whose
/// manifest reports another version.
pub const ABI_VERSION: u32 = 1;

/// The symbol every plugin exports: `extern "C" fn() -> *const FfiManifest`.
/// The `_v1` suffix is the generation of the entry contract (the manifest's first field is the
/// ABI version); it changes only if that contract itself changes.
pub const ENTRY_SYMBOL: &str = "tributary_plugin_entry_v1";

/// The prefix shared by every generation of the entry symbol (used to name what a foreign
/// plugin exports when the expected symbol is missing).
pub const ENTRY_SYMBOL_PREFIX: &str = "tributary_plugin_entry_v";

/// The signature of [`ENTRY_SYMBOL`]. Returns null when the plugin cannot describe itself
/// (its definition panicked).
pub type EntryFn = unsafe extern "C" fn() -> *const FfiManifest;

/// The result of a fallible call.
pub type FfiStatus = i32;
/// The call succeeded; the output holds the result.
pub const STATUS_OK: FfiStatus = 0;
/// The call failed; the error buffer holds [`crate::Error::to_json`] output.
pub const STATUS_ERROR: FfiStatus = 1;

/// [`FfiConnector::kind`] of a source.
pub const KIND_SOURCE: u32 = 0;
/// [`FfiConnector::kind`] of a sink.
pub const KIND_SINK: u32 = 1;

/// Borrowed bytes (UTF-8 text or JSON), valid only during the call they are passed to.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiSlice {
    /// First byte; may be null when `len` is 0.
    pub ptr: *const u8,
    /// Number of bytes.
    pub len: usize,
}

impl FfiSlice {
    /// Borrows a byte slice.
    pub fn new(bytes: &[u8]) -> Self {
        FfiSlice {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    /// Borrows a string.
    pub fn text(text: &str) -> Self {
        Self::new(text.as_bytes())
    }

    /// The bytes.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes that outlive the returned slice.
    pub unsafe fn as_bytes<'a>(&self) -> &'a [u8] {
        if self.ptr.is_null() || self.len == 0 {
            &[]
        } else {
            // SAFETY: the caller guarantees ptr/len describe live memory.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// Bytes owned by the side that allocated them; the receiver calls `release` once.
#[repr(C)]
#[derive(Debug)]
pub struct FfiBytes {
    /// First byte (null when empty).
    pub ptr: *mut u8,
    /// Number of bytes.
    pub len: usize,
    /// Allocation size, private to the allocator side.
    pub cap: usize,
    /// Frees the bytes; `None` when there is nothing to free.
    pub release: Option<unsafe extern "C" fn(*mut FfiBytes)>,
}

unsafe extern "C" fn release_bytes(bytes: *mut FfiBytes) {
    if bytes.is_null() {
        return;
    }
    // SAFETY: `bytes` was filled by `FfiBytes::from_vec` in this same library, so ptr/len/cap
    // come from a `Vec<u8>` allocated by this library's allocator.
    unsafe {
        let b = &mut *bytes;
        if !b.ptr.is_null() {
            drop(Vec::from_raw_parts(b.ptr, b.len, b.cap));
        }
        b.ptr = std::ptr::null_mut();
        b.len = 0;
        b.cap = 0;
        b.release = None;
    }
}

impl FfiBytes {
    /// An empty buffer that needs no release.
    pub fn empty() -> Self {
        FfiBytes {
            ptr: std::ptr::null_mut(),
            len: 0,
            cap: 0,
            release: None,
        }
    }

    /// Hands a vector across the boundary.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        let mut bytes = std::mem::ManuallyDrop::new(bytes);
        FfiBytes {
            ptr: bytes.as_mut_ptr(),
            len: bytes.len(),
            cap: bytes.capacity(),
            release: Some(release_bytes),
        }
    }

    /// Hands a string across the boundary.
    pub fn from_string(text: String) -> Self {
        Self::from_vec(text.into_bytes())
    }

    /// Copies the bytes out and releases the buffer through its own `release`.
    ///
    /// # Safety
    /// The buffer must have been produced by [`FfiBytes::from_vec`] (on either side) or be empty.
    pub unsafe fn take(&mut self) -> Vec<u8> {
        let out = if self.ptr.is_null() || self.len == 0 {
            Vec::new()
        } else {
            // SAFETY: ptr/len describe the live buffer until release is called below.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
        };
        if let Some(release) = self.release.take() {
            // SAFETY: release belongs to the allocator side of this buffer and is called once.
            unsafe { release(self) };
        }
        self.ptr = std::ptr::null_mut();
        self.len = 0;
        out
    }
}

impl Drop for FfiBytes {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            // SAFETY: a buffer that was never taken is released once by its owner's function.
            unsafe { release(self) };
        }
    }
}

/// One record batch as an Arrow C Data Interface struct array and its schema.
#[repr(C)]
#[derive(Debug)]
pub struct FfiBatch {
    /// The batch as a struct array.
    pub array: FFI_ArrowArray,
    /// The struct type of `array`.
    pub schema: FFI_ArrowSchema,
}

impl FfiBatch {
    /// A released (empty) batch, left behind when a batch is moved out of a list.
    pub fn empty() -> Self {
        FfiBatch {
            array: FFI_ArrowArray::empty(),
            schema: FFI_ArrowSchema::empty(),
        }
    }
}

/// A list of batches owned by the side that produced it. The receiver moves every batch out
/// (leaving [`FfiBatch::empty`] behind) and then calls `release` once.
#[repr(C)]
#[derive(Debug)]
pub struct FfiBatches {
    /// First batch.
    pub ptr: *mut FfiBatch,
    /// Number of batches.
    pub len: usize,
    /// Allocation size, private to the producer.
    pub cap: usize,
    /// Frees the list (and any batch not moved out).
    pub release: Option<unsafe extern "C" fn(*mut FfiBatches)>,
}

/// The description of one connector in a manifest.
#[repr(C)]
#[derive(Debug)]
pub struct FfiConnector {
    /// [`KIND_SOURCE`] or [`KIND_SINK`].
    pub kind: u32,
    /// NUL-terminated UTF-8 connector name.
    pub name: *const c_char,
    /// NUL-terminated UTF-8 JSON array of [`crate::OptionSpec`]s.
    pub options_json: *const c_char,
}

/// What [`ENTRY_SYMBOL`] returns. Static for the life of the loaded library.
#[repr(C)]
#[derive(Debug)]
pub struct FfiManifest {
    /// [`ABI_VERSION`] of the plugin. Always the first field.
    pub abi_version: u32,
    /// NUL-terminated tributary-sdk version the plugin was built with.
    pub sdk_version: *const c_char,
    /// NUL-terminated plugin name.
    pub plugin_name: *const c_char,
    /// NUL-terminated plugin version.
    pub plugin_version: *const c_char,
    /// NUL-terminated `<arch>-<os>` the plugin was built for.
    pub target: *const c_char,
    /// The connectors the plugin offers.
    pub connectors: *const FfiConnector,
    /// Number of connectors.
    pub connectors_len: usize,
    /// Validates options for a connector without I/O: `(kind, name, options_json, err)`.
    pub validate: unsafe extern "C" fn(u32, FfiSlice, FfiSlice, *mut FfiBytes) -> FfiStatus,
    /// Builds a source: `(name, options_json, context, out, err)`.
    pub create_source: unsafe extern "C" fn(
        FfiSlice,
        FfiSlice,
        *const FfiContext,
        *mut FfiSource,
        *mut FfiBytes,
    ) -> FfiStatus,
    /// Builds a sink: `(name, options_json, context, out, err)`.
    pub create_sink: unsafe extern "C" fn(
        FfiSlice,
        FfiSlice,
        *const FfiContext,
        *mut FfiSink,
        *mut FfiBytes,
    ) -> FfiStatus,
}

/// The connector context handed to `create_source` / `create_sink`, borrowed for the call.
#[repr(C)]
#[derive(Debug)]
pub struct FfiContext {
    /// The connector's state directory (UTF-8 path); empty for none.
    pub state_dir: FfiSlice,
    /// The pipeline name.
    pub pipeline: FfiSlice,
    /// The host's secret store; the plugin clones it to keep it.
    pub secrets: *const FfiSecretStore,
}

/// A host secret store as a function table.
#[repr(C)]
#[derive(Debug)]
pub struct FfiSecretStore {
    /// [`ABI_VERSION`].
    pub version: u32,
    /// Host-private state.
    pub private_data: *mut c_void,
    /// Resolves `(scope, key)`: the secret bytes, or an error JSON, in `out`.
    pub resolve:
        unsafe extern "C" fn(*const FfiSecretStore, FfiSlice, FfiSlice, *mut FfiBytes) -> FfiStatus,
    /// A new handle to the same store.
    pub clone: unsafe extern "C" fn(*const FfiSecretStore) -> FfiSecretStore,
    /// Drops this handle.
    pub release: unsafe extern "C" fn(*mut FfiSecretStore),
}

/// A plugin source as a function table. JSON in, JSON out; batches through Arrow C structures.
#[repr(C)]
#[derive(Debug)]
pub struct FfiSource {
    /// [`ABI_VERSION`].
    pub version: u32,
    /// Plugin-private state.
    pub private_data: *mut c_void,
    /// The Arrow schema of the batches.
    pub schema:
        unsafe extern "C" fn(*const FfiSource, *mut FFI_ArrowSchema, *mut FfiBytes) -> FfiStatus,
    /// `SourceIdentity` as JSON.
    pub identity: unsafe extern "C" fn(*const FfiSource, *mut FfiBytes) -> FfiStatus,
    /// `ReadLimit` as JSON.
    pub default_read_limit: unsafe extern "C" fn(*const FfiSource, *mut FfiBytes) -> FfiStatus,
    /// The initial offset as JSON.
    pub initial_offset: unsafe extern "C" fn(*mut FfiSource, *mut FfiBytes) -> FfiStatus,
    /// Fixes the available-now snapshot; `out` is empty on success.
    pub prepare_available_now: unsafe extern "C" fn(*mut FfiSource, *mut FfiBytes) -> FfiStatus,
    /// `(start offset JSON, read limit JSON)` -> end offset JSON.
    pub latest_offset:
        unsafe extern "C" fn(*mut FfiSource, FfiSlice, FfiSlice, *mut FfiBytes) -> FfiStatus,
    /// `(start, end)` -> batches (or an error JSON in the last argument).
    pub read: unsafe extern "C" fn(
        *mut FfiSource,
        FfiSlice,
        FfiSlice,
        *mut FfiBatches,
        *mut FfiBytes,
    ) -> FfiStatus,
    /// Commits up to an offset; `out` is empty on success.
    pub commit: unsafe extern "C" fn(*mut FfiSource, FfiSlice, *mut FfiBytes) -> FfiStatus,
    /// Metrics as a JSON object.
    pub metrics: unsafe extern "C" fn(*const FfiSource, *mut FfiBytes) -> FfiStatus,
    /// Stops the source; `out` is empty on success.
    pub stop: unsafe extern "C" fn(*mut FfiSource, *mut FfiBytes) -> FfiStatus,
    /// The plugin-side `Debug` text (secrets already hidden).
    pub debug: unsafe extern "C" fn(*const FfiSource, *mut FfiBytes) -> FfiStatus,
    /// Drops the source.
    pub release: unsafe extern "C" fn(*mut FfiSource),
}

/// A plugin sink as a function table.
#[repr(C)]
#[derive(Debug)]
pub struct FfiSink {
    /// [`ABI_VERSION`].
    pub version: u32,
    /// Plugin-private state.
    pub private_data: *mut c_void,
    /// `Delivery` as JSON.
    pub delivery: unsafe extern "C" fn(*const FfiSink, *mut FfiBytes) -> FfiStatus,
    /// Opens the sink with the schema of the batches to come.
    pub open: unsafe extern "C" fn(*mut FfiSink, *mut FFI_ArrowSchema, *mut FfiBytes) -> FfiStatus,
    /// `(batch id, batches, count, err)`: the plugin moves every batch out of the array.
    pub write:
        unsafe extern "C" fn(*mut FfiSink, u64, *mut FfiBatch, usize, *mut FfiBytes) -> FfiStatus,
    /// Flushes and stops the sink.
    pub stop: unsafe extern "C" fn(*mut FfiSink, *mut FfiBytes) -> FfiStatus,
    /// The plugin-side `Debug` text.
    pub debug: unsafe extern "C" fn(*const FfiSink, *mut FfiBytes) -> FfiStatus,
    /// Drops the sink.
    pub release: unsafe extern "C" fn(*mut FfiSink),
}

// SAFETY: the tables are plain data plus function pointers; the plugin side guards its private
// state with a mutex and the host serialises calls, so moving a handle between threads is sound.
unsafe impl Send for FfiSource {}
// SAFETY: see `FfiSource`.
unsafe impl Send for FfiSink {}
// SAFETY: the host store behind the table is `Send + Sync`.
unsafe impl Send for FfiSecretStore {}
// SAFETY: the host store behind the table is `Send + Sync`.
unsafe impl Sync for FfiSecretStore {}

// ---------------------------------------------------------------------------------------------
// The streaming extension (real-time mode), optional and versioned on its own.
// ---------------------------------------------------------------------------------------------

/// The optional symbol of the streaming extension:
/// `extern "C" fn() -> *const FfiStreamingTable`. A plugin without it (built with an older
/// tributary-sdk) still loads; its connectors run micro-batch only.
pub const STREAMING_SYMBOL: &str = "tributary_plugin_streaming_v1";

/// The layout version of [`FfiStreamingTable`] (its first field). A host ignores a table of
/// another version (the plugin stays micro-batch only, and real-time mode says why). Adding
/// entries at the end of the table bumps it.
pub const STREAMING_VERSION: u32 = 1;

/// The signature of [`STREAMING_SYMBOL`]. Returns a table static for the life of the library,
/// or null when the plugin cannot offer one.
pub type StreamingEntryFn = unsafe extern "C" fn() -> *const FfiStreamingTable;

/// [`FfiStreamingTable::next_chunk`]: no chunk arrived within the timeout; ask again.
pub const STATUS_TIMEOUT: FfiStatus = 2;
/// [`FfiStreamingTable::next_chunk`]: the stream ended (every reader is gone); no chunk follows.
pub const STATUS_END: FfiStatus = 3;

/// [`FfiChunk::read_at_us`] when the source cannot tell (the host uses the time of receipt).
pub const TIME_UNKNOWN: i64 = i64::MIN;

/// One [`crate::StreamChunk`] across the boundary, owned by the plugin that wrote it: the host
/// moves the batch out and takes (releases) every [`FfiBytes`].
#[repr(C)]
#[derive(Debug)]
pub struct FfiChunk {
    /// The records, in the source's schema.
    pub batch: FfiBatch,
    /// The partition or shard key (UTF-8).
    pub partition: FfiBytes,
    /// The partition's position after the chunk (JSON), read back by `end_offset`.
    pub position: FfiBytes,
    /// When the source read the records (Unix microseconds), or [`TIME_UNKNOWN`].
    pub read_at_us: i64,
    /// Per record, broker append times (Unix ms) as native-endian `i64`s (8 bytes each);
    /// empty when the source cannot tell.
    pub appended_ms: FfiBytes,
    /// Per record, producer creation times (Unix ms), same encoding; empty when unknown.
    pub created_ms: FfiBytes,
}

/// Completes one [`FfiStreamingTable::write_records`]: `(context, status, error)`. Called
/// exactly once by the plugin, from any thread, possibly before `write_records` returned;
/// `error` holds an error JSON when `status` is [`STATUS_ERROR`] and is released by the host.
pub type AckFn = unsafe extern "C" fn(*mut c_void, FfiStatus, *mut FfiBytes);

/// The acknowledgement slot the host lends to [`FfiStreamingTable::write_records`].
#[repr(C)]
#[derive(Debug)]
pub struct FfiAck {
    /// Host-private state, handed back to `done`.
    pub context: *mut c_void,
    /// Called once when the records are acknowledged (or failed).
    pub done: AckFn,
}

/// The streaming calls of a plugin's sources and sinks (real-time mode, see
/// [`crate::streaming`]). Every entry takes a table built by the plugin's `create_source` /
/// `create_sink`; the host uses an entry only when the matching `*_streams` answered 1.
///
/// Concurrency: [`FfiStreamingTable::next_chunk`] may run on one host thread while any other
/// call runs on the same source on another (the plugin guards the queue apart from the source);
/// every other call is serialised by the host, as for [`FfiSource`] and [`FfiSink`].
#[repr(C)]
#[derive(Debug)]
pub struct FfiStreamingTable {
    /// [`STREAMING_VERSION`]. Always the first field.
    pub version: u32,
    /// 1 when the built source has a streaming read, 0 otherwise (a panic counts as 0).
    pub source_streams: unsafe extern "C" fn(*mut FfiSource) -> u32,
    /// Starts the readers at an offset (JSON); `err` is empty on success.
    pub start_stream: unsafe extern "C" fn(*mut FfiSource, FfiSlice, *mut FfiBytes) -> FfiStatus,
    /// Waits up to `timeout_ms` for the next chunk: [`STATUS_OK`] with `out` written,
    /// [`STATUS_TIMEOUT`], [`STATUS_END`], or [`STATUS_ERROR`] with `err` written (a reader's
    /// fatal error). `out` is written only on [`STATUS_OK`].
    pub next_chunk:
        unsafe extern "C" fn(*const FfiSource, u64, *mut FfiChunk, *mut FfiBytes) -> FfiStatus,
    /// Stops the readers and drops the queue; `err` is empty on success.
    pub stop_stream: unsafe extern "C" fn(*mut FfiSource, *mut FfiBytes) -> FfiStatus,
    /// `(start offset JSON, delivered positions as a JSON object by partition)` -> end offset
    /// JSON.
    pub end_offset:
        unsafe extern "C" fn(*mut FfiSource, FfiSlice, FfiSlice, *mut FfiBytes) -> FfiStatus,
    /// 1 when the built sink acknowledges records as they come, 0 otherwise.
    pub sink_streams: unsafe extern "C" fn(*mut FfiSink) -> u32,
    /// `(batch id, batch, ack, err)`: the plugin moves the batch out and returns once it holds
    /// the records; `ack.done` follows when they are acknowledged. On [`STATUS_ERROR`] (`err`
    /// written) `ack.done` is never called.
    pub write_records:
        unsafe extern "C" fn(*mut FfiSink, u64, *mut FfiBatch, FfiAck, *mut FfiBytes) -> FfiStatus,
    /// The long batch ends: flush what was written; `err` is empty on success.
    pub end_batch: unsafe extern "C" fn(*mut FfiSink, u64, *mut FfiBytes) -> FfiStatus,
}

// SAFETY: the table is immutable static data of the plugin library.
unsafe impl Sync for FfiStreamingTable {}
// SAFETY: see above.
unsafe impl Send for FfiStreamingTable {}
// SAFETY: the context is host state built to be completed from any thread.
unsafe impl Send for FfiAck {}

// ---------------------------------------------------------------------------------------------
// The functions extension (user-defined SQL functions), optional and versioned on its own.
// ---------------------------------------------------------------------------------------------

/// The optional symbol of the functions extension:
/// `extern "C" fn() -> *const FfiFunctionTable`. A plugin without it (built with an older
/// tributary-sdk) still loads and exports no function.
pub const FUNCTIONS_SYMBOL: &str = "tributary_plugin_functions_v1";

/// The layout version of [`FfiFunctionTable`] (its first field). A host ignores a table of
/// another version (and says so in `plugins inspect`).
pub const FUNCTIONS_VERSION: u32 = 1;

/// The signature of [`FUNCTIONS_SYMBOL`]. Returns a table static for the life of the library.
pub type FunctionsEntryFn = unsafe extern "C" fn() -> *const FfiFunctionTable;

/// The plugin's scalar functions ([`crate::ScalarFunction`]), by index `0..count()`.
///
/// Calls may come from any host thread, concurrently: functions are `Sync`.
#[repr(C)]
#[derive(Debug)]
pub struct FfiFunctionTable {
    /// [`FUNCTIONS_VERSION`]. Always the first field.
    pub version: u32,
    /// How many functions the plugin exports.
    pub count: unsafe extern "C" fn() -> usize,
    /// Function `index`'s signature: `json` gets `{"name", "description", "deterministic"}`
    /// and `schema` a struct type whose fields are the argument types in order followed by
    /// the return type (named `return`); on [`STATUS_ERROR`] `json` holds the error.
    pub describe: unsafe extern "C" fn(usize, *mut FfiBytes, *mut FFI_ArrowSchema) -> FfiStatus,
    /// Evaluates function `index`: `args` is a struct array with one column per argument
    /// (its length is the row count; the plugin moves it out), `out` receives a one-column
    /// batch with the result. On [`STATUS_ERROR`] `err` holds the error and `out` is untouched.
    pub invoke:
        unsafe extern "C" fn(usize, *mut FfiBatch, *mut FfiBatch, *mut FfiBytes) -> FfiStatus,
}
