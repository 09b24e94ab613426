//! Calling into a plugin: status codes to `Result`, and running calls off the executor.
//!
//! Plugin calls block (the plugin runs its own runtime with `block_on`), so the host never runs
//! them as plain code on an executor thread: on a multi-thread runtime it uses `block_in_place`
//! (the worker's other tasks move to another thread; no thread hop per call), on a current-thread
//! runtime the blocking pool (`spawn_blocking`). A handle's state sits behind an `Arc<Mutex<..>>`
//! that the blocking task owns a clone of: if the awaiting future is dropped mid-call, the handle
//! is released only after the call returned.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use libloading::Library;

use tributary_sdk::plugin::abi::{
    FfiBytes, FfiContext, FfiManifest, FfiSlice, FfiStatus, FfiStreamingTable, ABI_VERSION,
    STATUS_OK,
};
use tributary_sdk::plugin::error_from_bytes;
use tributary_sdk::plugin::secrets::export_secret_store;
use tributary_sdk::{ConnectorContext, Error, ErrorCode, Options, Result};

/// A pointer to a plugin's static manifest.
#[derive(Clone, Copy)]
pub(crate) struct ManifestRef(pub(crate) *const FfiManifest);

// SAFETY: the manifest is immutable static data of a library that is never unloaded.
unsafe impl Send for ManifestRef {}
// SAFETY: see above.
unsafe impl Sync for ManifestRef {}

impl ManifestRef {
    pub(crate) fn get(&self) -> &FfiManifest {
        // SAFETY: non-null (checked at load), static in a pinned library.
        unsafe { &*self.0 }
    }
}

/// What every handle of one plugin shares: its identity and the library that must stay loaded.
#[derive(Debug)]
pub(crate) struct PluginShared {
    pub(crate) name: String,
    pub(crate) file: PathBuf,
    // Never unloaded while a handle exists; batches may point into the plugin's memory, so
    // loaded libraries are also pinned for the life of the process (see `loader`).
    pub(crate) _library: Arc<Library>,
    /// The plugin's streaming extension, or why it has none (the plugin stays micro-batch only).
    pub(crate) streaming: std::result::Result<StreamingRef, String>,
}

/// A pointer to a plugin's static streaming table (its version already checked).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamingRef(pub(crate) *const FfiStreamingTable);

// SAFETY: the table is immutable static data of a library that is never unloaded.
unsafe impl Send for StreamingRef {}
// SAFETY: see above.
unsafe impl Sync for StreamingRef {}

impl StreamingRef {
    pub(crate) fn get(&self) -> &FfiStreamingTable {
        // SAFETY: non-null and of the host's version (checked at load), static in a pinned library.
        unsafe { &*self.0 }
    }
}

/// The signature of a plugin's `create_source` / `create_sink`.
pub(crate) type CreateFn<T> =
    unsafe extern "C" fn(FfiSlice, FfiSlice, *const FfiContext, *mut T, *mut FfiBytes) -> FfiStatus;

/// Lends the connector context to one call (the secret store handle is released afterwards).
fn with_context<T>(context: &ConnectorContext, f: impl FnOnce(*const FfiContext) -> T) -> T {
    let state_dir = context
        .state_dir
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut secrets = export_secret_store(context.secrets.clone());
    let ctx = FfiContext {
        state_dir: FfiSlice::text(&state_dir),
        pipeline: FfiSlice::text(&context.pipeline),
        secrets: &secrets,
    };
    let out = f(&ctx);
    // SAFETY: our own table, released once; the plugin took its own clone if it keeps one.
    unsafe { (secrets.release)(&mut secrets) };
    out
}

impl PluginShared {
    /// Builds a source or sink (`what`) through the plugin's create function: lends the
    /// context, turns a failure into the plugin's error, takes ownership of the table it wrote
    /// with `own` (whose drop releases it) and refuses a table of another ABI version.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create_table<T, H>(
        &self,
        create: CreateFn<T>,
        what: &str,
        name: &str,
        options: &Options,
        context: &ConnectorContext,
        own: impl FnOnce(T) -> H,
        version: impl Fn(&H) -> u32,
    ) -> Result<H> {
        let opts = options.to_json().to_string();
        let mut table = std::mem::MaybeUninit::<T>::uninit();
        let mut err = FfiBytes::empty();
        let status = with_context(context, |ctx| {
            // SAFETY: the manifest is alive; the out-parameters are written by the plugin.
            unsafe {
                create(
                    FfiSlice::text(name),
                    FfiSlice::text(&opts),
                    ctx,
                    table.as_mut_ptr(),
                    &mut err,
                )
            }
        });
        // SAFETY: `err` was filled by the plugin.
        unsafe { self.finish(status, &mut err) }?;
        // SAFETY: on success the plugin wrote a complete table.
        let handle = own(unsafe { table.assume_init() });
        let found = version(&handle);
        if found != ABI_VERSION {
            return Err(Error::new(
                ErrorCode::Plugin,
                format!(
                    "plugin '{}' returned a {what} table of ABI version {found}, host ABI version is {ABI_VERSION}",
                    self.name
                ),
            ));
        }
        Ok(handle)
    }

    /// Turns a call's status and output into a result; errors name the plugin.
    ///
    /// # Safety
    /// `out` must have been filled by the plugin (or still be empty).
    pub(crate) unsafe fn finish(&self, status: FfiStatus, out: &mut FfiBytes) -> Result<Vec<u8>> {
        // SAFETY: forwarded from the caller.
        let bytes = unsafe { out.take() };
        if status == STATUS_OK {
            Ok(bytes)
        } else {
            Err(self.error(&bytes))
        }
    }

    /// Asks the plugin to validate the options of its connector `kind`/`name` (no I/O there).
    /// A source answers with its description as JSON; a sink with nothing.
    pub(crate) fn validate(
        &self,
        manifest: &ManifestRef,
        kind: u32,
        name: &str,
        options: &tributary_sdk::Options,
    ) -> Result<Vec<u8>> {
        let opts = options.to_json().to_string();
        let mut err = FfiBytes::empty();
        // SAFETY: the manifest is alive while the library is; arguments outlive the call.
        let status = unsafe {
            (manifest.get().validate)(kind, FfiSlice::text(name), FfiSlice::text(&opts), &mut err)
        };
        // SAFETY: `err` was filled by the plugin.
        unsafe { self.finish(status, &mut err) }
    }

    /// An error that crossed the boundary, with the plugin named in its context.
    pub(crate) fn error(&self, bytes: &[u8]) -> Error {
        let e = error_from_bytes(bytes);
        if e.context_value("plugin").is_some() {
            e
        } else {
            e.with_context("plugin", &self.name)
        }
    }

    /// Parses a JSON result.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        bytes: &[u8],
    ) -> Result<T> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::new(
                ErrorCode::Plugin,
                format!(
                    "plugin '{}' returned an invalid {what}: {}",
                    self.name,
                    String::from_utf8_lossy(bytes)
                ),
            )
            .with_context("plugin", &self.name)
            .with_cause(e)
        })
    }
}

/// Runs `f` on the handle behind `state`, on the blocking pool when inside a tokio runtime.
pub(crate) async fn blocking<S, T, F>(state: &Arc<Mutex<S>>, call: &'static str, f: F) -> Result<T>
where
    S: Send + 'static,
    T: Send + 'static,
    F: FnOnce(&mut S) -> Result<T> + Send + 'static,
{
    let state = state.clone();
    let run = move || {
        let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    };
    match tokio::runtime::Handle::try_current() {
        // On a multi-thread runtime the call runs right here, with this worker's other tasks
        // handed to another thread: no thread hop per call, and the future cannot be dropped
        // mid-call.
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(run)
        }
        Ok(handle) => handle.spawn_blocking(run).await.map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("plugin call {call} did not complete: {e}"),
            )
        })?,
        Err(_) => run(),
    }
}
