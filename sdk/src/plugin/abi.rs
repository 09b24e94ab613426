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
