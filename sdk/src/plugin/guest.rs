//! The plugin side's shared machinery, used by every exported function table: the exported
//! definition (and the lookups of its connectors), the plugin's own async runtime, the panic
//! guard and the connector wrapper it poisons, and the reading of arguments and writing of
//! results across the C boundary.
//!
//! A leaf below [`crate::plugin::export`] (the manifest and the entry symbol),
//! `export_source`, `export_sink` and [`crate::plugin::export_streaming`]: each of those
//! uses this module, and this module uses none of them.

use std::any::Any;
use std::ffi::{c_void, CString};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::connector::{ConnectorContext, SinkFactory, SourceFactory};
use crate::error::{Error, ErrorCode, Result};
use crate::options::Options;
use crate::plugin::abi::{
    FfiBytes, FfiConnector, FfiContext, FfiManifest, FfiSlice, FfiStatus, STATUS_ERROR, STATUS_OK,
};
use crate::plugin::secrets::ForeignSecretStore;
pub(crate) use crate::plugin::wire_error::error_bytes;

/// What a plugin offers: its name, version, connector factories and SQL functions.
pub struct PluginDefinition {
    /// The plugin name (shown by `tributary plugins list`).
    pub name: &'static str,
    /// The plugin version.
    pub version: &'static str,
    /// Source factories.
    pub sources: Vec<Arc<dyn SourceFactory>>,
    /// Sink factories.
    pub sinks: Vec<Arc<dyn SinkFactory>>,
    /// Scalar functions for the `[transform]` SQL (the functions extension).
    pub functions: Vec<Arc<dyn crate::function::ScalarFunction>>,
}

/// The definition and the manifest built from it, kept for the life of the library.
pub(crate) struct Exported {
    pub(crate) definition: PluginDefinition,
    pub(crate) manifest: FfiManifest,
    // Owns the memory the manifest points to.
    pub(crate) _connectors: Vec<FfiConnector>,
    pub(crate) _strings: Vec<CString>,
}

// SAFETY: after construction the manifest and the strings it points to are never mutated.
unsafe impl Send for Exported {}
// SAFETY: see above.
unsafe impl Sync for Exported {}

/// The exported definition, built once by [`crate::plugin::export::entry`].
pub(crate) static EXPORTED: OnceLock<std::result::Result<Exported, String>> = OnceLock::new();
static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();

pub(crate) fn definition() -> Result<&'static PluginDefinition> {
    match EXPORTED.get() {
        Some(Ok(e)) => Ok(&e.definition),
        _ => Err(Error::new(
            ErrorCode::Plugin,
            "plugin called before its entry symbol succeeded",
        )),
    }
}

pub(crate) fn plugin_name() -> &'static str {
    match EXPORTED.get() {
        Some(Ok(e)) => e.definition.name,
        _ => "unknown",
    }
}

/// The plugin's own runtime, created on first use.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    let rt = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("tributary-plugin-{}", plugin_name()))
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    match rt {
        Ok(rt) => Ok(rt),
        Err(why) => Err(Error::new(
            ErrorCode::Plugin,
            format!(
                "plugin '{}' cannot start its async runtime: {why}",
                plugin_name()
            ),
        )),
    }
}

/// Runs a future to completion on the plugin's own runtime.
pub(crate) fn block_on<F: Future>(future: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(future))
}

/// Runs a future as a task of the plugin's own runtime (it outlives the call that spawned it).
pub(crate) fn spawn<F>(future: F) -> Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    drop(runtime()?.spawn(future));
    Ok(())
}

/// Text of a panic payload.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// Runs `f`, turning a panic into an `INTERNAL_ERROR` that names the plugin and the call.
pub(crate) fn guard<T>(call: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(panicked(call, &panic_text(payload.as_ref()))),
    }
}

pub(crate) fn panicked(call: &str, text: &str) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("plugin '{}' panicked in {call}: {text}", plugin_name()),
    )
    .with_context("plugin", plugin_name())
}

/// Writes a JSON result or an error into an out-parameter.
///
/// # Safety
/// `out` must be a valid out-parameter.
pub(crate) unsafe fn write_out(out: *mut FfiBytes, result: Result<Vec<u8>>) -> FfiStatus {
    let (status, bytes) = match result {
        Ok(b) => (STATUS_OK, FfiBytes::from_vec(b)),
        Err(e) => (STATUS_ERROR, error_bytes(&e)),
    };
    // SAFETY: forwarded from the caller; `write` does not drop the old (empty) value.
    unsafe { std::ptr::write(out, bytes) };
    status
}

/// Serialises a value into JSON bytes.
pub(crate) fn to_json_bytes<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| {
        Error::new(ErrorCode::Internal, "cannot serialise a plugin result").with_cause(e)
    })
}

/// Parses a borrowed JSON argument.
///
/// # Safety
/// The slice must be valid for the call.
pub(crate) unsafe fn parse_json<T: serde::de::DeserializeOwned>(
    what: &str,
    slice: FfiSlice,
) -> Result<T> {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { slice.as_bytes() };
    serde_json::from_slice(bytes).map_err(|e| {
        Error::new(
            ErrorCode::Plugin,
            format!(
                "the host passed an invalid {what}: {}",
                String::from_utf8_lossy(bytes)
            ),
        )
        .with_cause(e)
    })
}

/// Parses the options argument.
///
/// # Safety
/// The slice must be valid for the call.
pub(crate) unsafe fn parse_options(slice: FfiSlice) -> Result<Options> {
    // SAFETY: forwarded from the caller.
    let value: serde_json::Value = unsafe { parse_json("option map", slice) }?;
    Options::from_json(&value)
}

/// Text of a borrowed UTF-8 argument.
///
/// # Safety
/// The slice must be valid for the call.
pub(crate) unsafe fn parse_text(what: &str, slice: FfiSlice) -> Result<String> {
    // SAFETY: forwarded from the caller.
    String::from_utf8(unsafe { slice.as_bytes() }.to_vec()).map_err(|_| {
        Error::new(
            ErrorCode::Plugin,
            format!("the host passed a {what} that is not UTF-8"),
        )
    })
}

/// Rebuilds the connector context the host lent.
///
/// # Safety
/// `context` must point to a live context for the call.
pub(crate) unsafe fn parse_context(context: *const FfiContext) -> Result<ConnectorContext> {
    if context.is_null() {
        return Err(Error::new(
            ErrorCode::Plugin,
            "the host passed no connector context",
        ));
    }
    // SAFETY: forwarded from the caller.
    let c = unsafe { &*context };
    // SAFETY: the slices are valid for the call.
    let state_dir = unsafe { parse_text("state directory", c.state_dir) }?;
    let pipeline = unsafe { parse_text("pipeline name", c.pipeline) }?;
    if c.secrets.is_null() {
        return Err(Error::new(
            ErrorCode::Plugin,
            "the host passed no secret store",
        ));
    }
    // SAFETY: the host's table is alive for the call; we take our own handle.
    let secrets = unsafe { ForeignSecretStore::clone_from(c.secrets) };
    Ok(ConnectorContext {
        state_dir: (!state_dir.is_empty()).then(|| state_dir.into()),
        secrets: Arc::new(secrets),
        pipeline,
        // ABI v1's context has no checkpoint id; a plugin sees none.
        checkpoint_id: None,
    })
}

pub(crate) fn find_source<'a>(
    def: &'a PluginDefinition,
    name: &str,
) -> Result<&'a Arc<dyn SourceFactory>> {
    def.sources
        .iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            Error::new(
                ErrorCode::UnknownConnector,
                format!("plugin '{}' has no source named '{name}'", def.name),
            )
            .with_context("connector", name)
        })
}

pub(crate) fn find_sink<'a>(
    def: &'a PluginDefinition,
    name: &str,
) -> Result<&'a Arc<dyn SinkFactory>> {
    def.sinks.iter().find(|s| s.name() == name).ok_or_else(|| {
        Error::new(
            ErrorCode::UnknownConnector,
            format!("plugin '{}' has no sink named '{name}'", def.name),
        )
        .with_context("connector", name)
    })
}

/// A connector (source or sink) behind a function table: locked for each call, run inside the
/// panic guard, and poisoned after a panic so later calls fail with a clear error instead of
/// touching state the panic may have left half-updated.
pub(crate) struct Guarded<T: ?Sized> {
    kind: &'static str,
    inner: Mutex<Box<T>>,
    poisoned: AtomicBool,
}

impl<T: ?Sized> Guarded<T> {
    /// Wraps a connector; `kind` ("source" or "sink") names it in errors.
    pub(crate) fn new(kind: &'static str, inner: Box<T>) -> Self {
        Guarded {
            kind,
            inner: Mutex::new(inner),
            poisoned: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the connector, guarded against panics and poisoning.
    pub(crate) fn call<R>(
        &self,
        call: &str,
        f: impl FnOnce(&mut Box<T>) -> Result<R>,
    ) -> Result<R> {
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "{} of plugin '{}' panicked earlier and cannot be used ({call} refused)",
                    self.kind,
                    plugin_name()
                ),
            )
            .with_context("plugin", plugin_name()));
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut inner = self.inner.lock().map_err(|_| {
                Error::new(
                    ErrorCode::Internal,
                    format!("plugin {} lock poisoned", self.kind),
                )
            })?;
            f(&mut inner)
        }));
        match outcome {
            Ok(result) => result,
            Err(payload) => {
                self.poisoned.store(true, Ordering::SeqCst);
                Err(panicked(call, &panic_text(payload.as_ref())))
            }
        }
    }
}

/// Drops the connector behind a function table's `private_data` (`kind`: "source", "sink"),
/// once: the pointer is nulled after the drop, so a second release is harmless. A panic in the
/// connector's destructors is reported, never unwound into the host.
///
/// # Safety
/// `*private_data` is null or came from `Box::into_raw` of a `Box<T>`.
pub(crate) unsafe fn release_boxed<T>(private_data: &mut *mut c_void, kind: &str) {
    if private_data.is_null() {
        return;
    }
    // SAFETY: forwarded from the caller.
    let state = unsafe { Box::from_raw(*private_data as *mut T) };
    *private_data = std::ptr::null_mut();
    if catch_unwind(AssertUnwindSafe(|| drop(state))).is_err() {
        eprintln!(
            "tributary plugin '{}': a {kind} panicked while being dropped",
            plugin_name()
        );
    }
}
