//! The plugin side: the manifest and the entry symbol's body.
//!
//! [`crate::export_plugin!`] expands to one `extern "C"` function that calls [`entry`]. Everything
//! it needs is compiled into the plugin library: a process-wide (per library) definition, the
//! manifest built from it, and (in `guest`) a tokio runtime owned by the plugin on which every
//! async connector call runs (`block_on`, on the host's calling thread). The host calls from its
//! blocking pool, never from an executor thread.

use std::ffi::{c_char, CString};
use std::panic::catch_unwind;

use crate::error::{Error, ErrorCode, Result};
use crate::plugin::abi::{
    FfiBytes, FfiConnector, FfiManifest, FfiSlice, FfiStatus, KIND_SINK, KIND_SOURCE,
};
pub use crate::plugin::guest::PluginDefinition;
use crate::plugin::guest::{
    definition, find_sink, find_source, guard, panic_text, parse_options, parse_text,
    to_json_bytes, write_out, Exported, EXPORTED,
};

/// The body of the generated entry symbol: builds the manifest once and returns it, or null
/// when the definition cannot be built (a panic, a name with a NUL byte).
pub fn entry(abi_version: u32, define: fn() -> PluginDefinition) -> *const FfiManifest {
    let exported = EXPORTED.get_or_init(|| {
        catch_unwind(|| build(abi_version, define()))
            .map_err(|p| panic_text(p.as_ref()))
            .and_then(|r| r.map_err(|e| e.to_string()))
    });
    match exported {
        Ok(e) => &e.manifest,
        Err(why) => {
            eprintln!("tributary plugin: cannot build the plugin manifest: {why}");
            std::ptr::null()
        }
    }
}

fn cstring(text: impl Into<Vec<u8>>) -> Result<CString> {
    CString::new(text).map_err(|e| {
        Error::new(
            ErrorCode::Plugin,
            "plugin manifest text contains a NUL byte",
        )
        .with_cause(e)
    })
}

fn build(abi_version: u32, definition: PluginDefinition) -> Result<Exported> {
    let mut strings = Vec::new();
    let mut keep = |s: CString| -> *const c_char {
        let p = s.as_ptr();
        strings.push(s);
        p
    };
    let sdk_version = keep(cstring(crate::SDK_VERSION)?);
    let plugin_name = keep(cstring(definition.name)?);
    let plugin_version = keep(cstring(definition.version)?);
    let target = keep(cstring(target())?);
    let mut connectors = Vec::new();
    for s in &definition.sources {
        let options = serde_json::to_string(&s.options())
            .map_err(|e| Error::new(ErrorCode::Internal, "option specs").with_cause(e))?;
        connectors.push(FfiConnector {
            kind: KIND_SOURCE,
            name: keep(cstring(s.name())?),
            options_json: keep(cstring(options)?),
        });
    }
    for s in &definition.sinks {
        let options = serde_json::to_string(&s.options())
            .map_err(|e| Error::new(ErrorCode::Internal, "option specs").with_cause(e))?;
        connectors.push(FfiConnector {
            kind: KIND_SINK,
            name: keep(cstring(s.name())?),
            options_json: keep(cstring(options)?),
        });
    }
    let manifest = FfiManifest {
        abi_version,
        sdk_version,
        plugin_name,
        plugin_version,
        target,
        connectors: connectors.as_ptr(),
        connectors_len: connectors.len(),
        validate: validate_options,
        create_source: crate::plugin::export_source::create_source,
        create_sink: crate::plugin::export_sink::create_sink,
    };
    Ok(Exported {
        definition,
        manifest,
        _connectors: connectors,
        _strings: strings,
    })
}

/// `<arch>-<os>` of the running code; host and plugin must agree.
pub fn target() -> String {
    format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS)
}

unsafe extern "C" fn validate_options(
    kind: u32,
    name: FfiSlice,
    options: FfiSlice,
    err: *mut FfiBytes,
) -> FfiStatus {
    let result = guard("validate", || {
        // SAFETY: the slices are valid for this call.
        let name = unsafe { parse_text("connector name", name) }?;
        let options = unsafe { parse_options(options) }?;
        let def = definition()?;
        // A source answers with its description (JSON) so the host can bind the checkpoint and
        // configure stages before building it; sinks answer with nothing. Hosts that predate
        // descriptions ignore the bytes of a successful call.
        match kind {
            KIND_SOURCE => {
                let prepared = find_source(def, &name)?.prepare(&options)?;
                to_json_bytes(prepared.description())
            }
            KIND_SINK => find_sink(def, &name)?.prepare(&options).map(|_| Vec::new()),
            other => Err(Error::new(
                ErrorCode::Plugin,
                format!("unknown connector kind {other}"),
            )),
        }
    });
    // SAFETY: `err` is the caller's out-parameter.
    unsafe { write_out(err, result) }
}
