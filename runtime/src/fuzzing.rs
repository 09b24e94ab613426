//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`; not an API).
//!
//! Each takes arbitrary input and must return: an `Err` is a refusal, which is fine; a panic,
//! an abort or a hang is a finding. They reach the readers the host runs on untrusted bytes:
//! the pipeline file, the checkpoint's logs (through [`crate::checkpoint::verify::inspect`] and
//! the recovery the engine does), a plugin file before it is mapped, and a plugin's manifest.

use std::ffi::c_char;
use std::path::Path;

use tributary_sdk::plugin::abi::{
    FfiBytes, FfiConnector, FfiContext, FfiManifest, FfiSink, FfiSlice, FfiSource, FfiStatus,
    STATUS_ERROR,
};

use crate::checkpoint::Checkpoint;
use crate::pipeline::PipelineSpec;
use crate::plugin::manifest::PluginManifest;

/// Parses `text` as a pipeline file, then reads what the engine reads of a parsed spec.
pub fn pipeline_file(text: &str) {
    if let Ok(spec) = PipelineSpec::parse(text, "fuzz.toml") {
        let _ = spec.trigger.to_string();
        let _ = format!("{spec:?}");
    }
}

/// Writes `files` (a relative path and its bytes each) into the emptied directory `dir`, then
/// runs the checkpoint's verification and recovery over it.
pub fn checkpoint_logs(dir: &Path, files: &[(String, Vec<u8>)]) {
    let _ = std::fs::remove_dir_all(dir);
    for (name, bytes) in files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&p, bytes);
    }
    if let Ok(inspection) = crate::checkpoint::verify::inspect(dir) {
        let _ = inspection.into_result(dir);
    }
    if let Ok(ck) = Checkpoint::open_existing(dir) {
        let _ = ck.metadata();
        let _ = ck.recovery();
        let _ = ck.logged_batches();
    }
}

/// The checks a plugin file passes before it is mapped, on `bytes` as the file.
pub fn plugin_file(bytes: &[u8]) {
    let _ = crate::plugin::precheck::check_library_bytes(Path::new("fuzz.so"), bytes);
}

/// One connector of a fuzzed manifest.
#[derive(Debug)]
pub struct FuzzConnector {
    /// The kind as the plugin declares it (any `u32`).
    pub kind: u32,
    /// The name's bytes (a NUL is appended; one inside ends the string early).
    pub name: Vec<u8>,
    /// The option list's bytes.
    pub options: Vec<u8>,
}

/// A manifest as a plugin could hand it over: every string arbitrary bytes, the connector count
/// declared independently of the list (only counts the list can back, or ones the reader must
/// refuse before it reads anything, are passed on: a larger count would point past the list,
/// which no reader can detect behind a C pointer).
pub fn plugin_manifest(
    abi_version: u32,
    strings: [Vec<u8>; 4],
    connectors: &[FuzzConnector],
    declared: usize,
) {
    let c = |b: &[u8]| {
        let mut v = b.to_vec();
        v.push(0);
        v
    };
    let texts: Vec<Vec<u8>> = strings.iter().map(|s| c(s)).collect();
    let names: Vec<Vec<u8>> = connectors.iter().map(|x| c(&x.name)).collect();
    let options: Vec<Vec<u8>> = connectors.iter().map(|x| c(&x.options)).collect();
    let list: Vec<FfiConnector> = connectors
        .iter()
        .enumerate()
        .map(|(i, x)| FfiConnector {
            kind: x.kind,
            name: names[i].as_ptr() as *const c_char,
            options_json: options[i].as_ptr() as *const c_char,
        })
        .collect();
    let len = if declared <= list.len() || declared > crate::plugin::manifest::MAX_CONNECTORS {
        declared
    } else {
        list.len()
    };
    let m = FfiManifest {
        abi_version,
        sdk_version: texts[0].as_ptr() as *const c_char,
        plugin_name: texts[1].as_ptr() as *const c_char,
        plugin_version: texts[2].as_ptr() as *const c_char,
        target: texts[3].as_ptr() as *const c_char,
        connectors: if list.is_empty() {
            std::ptr::null()
        } else {
            list.as_ptr()
        },
        connectors_len: len,
        validate,
        create_source,
        create_sink,
    };
    // SAFETY: every pointer points into a NUL-terminated buffer above, and `len` is at most the
    // list's length unless the reader must refuse it before reading (it is over the maximum).
    let _ = unsafe { PluginManifest::read("fuzz.so".into(), &m) };
}

unsafe extern "C" fn validate(_: u32, _: FfiSlice, _: FfiSlice, _: *mut FfiBytes) -> FfiStatus {
    STATUS_ERROR
}

unsafe extern "C" fn create_source(
    _: FfiSlice,
    _: FfiSlice,
    _: *const FfiContext,
    _: *mut FfiSource,
    _: *mut FfiBytes,
) -> FfiStatus {
    STATUS_ERROR
}

unsafe extern "C" fn create_sink(
    _: FfiSlice,
    _: FfiSlice,
    _: *const FfiContext,
    _: *mut FfiSink,
    _: *mut FfiBytes,
) -> FfiStatus {
    STATUS_ERROR
}
