//! The host's owned copy of a plugin manifest.
//!
//! Read once from the plugin's `#[repr(C)]` [`FfiManifest`] after the ABI version check, and
//! kept as plain Rust data for listing, inspection and registration. Every count and length is
//! checked before anything is allocated or read past it: at most [`MAX_CONNECTORS`] connectors,
//! names and versions of at most [`MAX_NAME_BYTES`], option lists of at most
//! [`MAX_OPTIONS_BYTES`] (a string is scanned for its NUL only that far).

use std::ffi::c_char;
use std::path::PathBuf;

use serde::Serialize;
use tributary_sdk::plugin::abi::{FfiManifest, KIND_SINK, KIND_SOURCE};
use tributary_sdk::{ConnectorKind, Error, ErrorCode, OptionSpec, Result};

/// What a plugin says about itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginManifest {
    /// The library file.
    pub file: PathBuf,
    /// The plugin ABI version (equal to the host's once loaded).
    pub abi_version: u32,
    /// The tributary-sdk version the plugin was built with.
    pub sdk_version: String,
    /// The plugin name.
    pub name: String,
    /// The plugin version.
    pub version: String,
    /// `<arch>-<os>` the plugin was built for.
    pub target: String,
    /// The connectors it offers.
    pub connectors: Vec<ConnectorInfo>,
    /// The SQL functions it exports (the functions extension).
    pub functions: Vec<crate::plugin::foreign_function::FunctionInfo>,
    /// Why it exports none, when it has no functions extension the host can use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions_note: Option<String>,
}

/// One connector of a plugin.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorInfo {
    /// Source or sink.
    pub kind: ConnectorKind,
    /// The name pipelines use.
    pub name: String,
    /// Its options.
    pub options: Vec<OptionSpec>,
}

/// The most connectors a manifest may declare.
pub const MAX_CONNECTORS: usize = 1024;
/// The longest name, version or target in a manifest, in bytes.
pub const MAX_NAME_BYTES: usize = 4096;
/// The longest option list (JSON) of one connector, in bytes.
pub const MAX_OPTIONS_BYTES: usize = 1 << 20;

/// A NUL-terminated string of the manifest, scanned for its NUL at most `max` bytes far.
///
/// # Safety
/// `p` is null or points to memory of the library readable up to its NUL or `max` bytes.
unsafe fn text_within(
    file: &std::path::Path,
    what: &str,
    p: *const c_char,
    max: usize,
) -> Result<String> {
    if p.is_null() {
        return Err(bad(file, &format!("its manifest has no {what}")));
    }
    let mut len = 0;
    // SAFETY: the caller's promise; the scan stops at the NUL or at `max`.
    while unsafe { *p.add(len) } != 0 {
        len += 1;
        if len > max {
            return Err(bad(
                file,
                &format!("its manifest {what} is longer than {max} bytes"),
            ));
        }
    }
    // SAFETY: `len` bytes before the NUL were just read.
    let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|_| bad(file, &format!("its manifest {what} is not UTF-8")))
}

fn text(file: &std::path::Path, what: &str, p: *const c_char) -> Result<String> {
    // SAFETY: the plugin promises NUL-terminated strings that live as long as the library.
    unsafe { text_within(file, what, p, MAX_NAME_BYTES) }
}

pub(crate) fn bad(file: &std::path::Path, why: &str) -> Error {
    Error::new(
        ErrorCode::Plugin,
        format!("plugin {} is refused: {why}", file.display()),
    )
    .with_context("plugin", file.display())
}

impl PluginManifest {
    /// Copies a manifest whose ABI version was already checked.
    ///
    /// # Safety
    /// `m` must point to a manifest of the host's ABI version that lives as long as the library.
    pub(crate) unsafe fn read(file: PathBuf, m: &FfiManifest) -> Result<PluginManifest> {
        if m.connectors_len > MAX_CONNECTORS {
            return Err(bad(
                &file,
                &format!(
                    "its manifest declares {} connectors, more than the {MAX_CONNECTORS} a plugin may offer",
                    m.connectors_len
                ),
            ));
        }
        let mut connectors = Vec::with_capacity(m.connectors_len);
        if m.connectors_len > 0 && m.connectors.is_null() {
            return Err(bad(
                &file,
                "its manifest lists connectors at a null address",
            ));
        }
        for i in 0..m.connectors_len {
            // SAFETY: i < connectors_len, checked non-null above.
            let c = unsafe { &*m.connectors.add(i) };
            let kind = match c.kind {
                KIND_SOURCE => ConnectorKind::Source,
                KIND_SINK => ConnectorKind::Sink,
                other => return Err(bad(&file, &format!("connector kind {other} is unknown"))),
            };
            let name = text(&file, "connector name", c.name)?;
            // SAFETY: as for `text`.
            let options_json =
                unsafe { text_within(&file, "option list", c.options_json, MAX_OPTIONS_BYTES) }?;
            let options: Vec<OptionSpec> = serde_json::from_str(&options_json).map_err(|e| {
                bad(
                    &file,
                    &format!("the options of connector '{name}' are not valid option specs: {e}"),
                )
            })?;
            connectors.push(ConnectorInfo {
                kind,
                name,
                options,
            });
        }
        Ok(PluginManifest {
            abi_version: m.abi_version,
            sdk_version: text(&file, "SDK version", m.sdk_version)?,
            name: text(&file, "name", m.plugin_name)?,
            version: text(&file, "version", m.plugin_version)?,
            target: text(&file, "target", m.target)?,
            connectors,
            functions: Vec::new(),
            functions_note: None,
            file,
        })
    }

    /// The connectors of one kind.
    pub fn connectors_of(&self, kind: ConnectorKind) -> impl Iterator<Item = &ConnectorInfo> {
        self.connectors.iter().filter(move |c| c.kind == kind)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use tributary_sdk::plugin::abi::{
        FfiBytes, FfiConnector, FfiContext, FfiSink, FfiSlice, FfiSource, FfiStatus, ABI_VERSION,
    };

    use super::*;

    unsafe extern "C" fn validate(_: u32, _: FfiSlice, _: FfiSlice, _: *mut FfiBytes) -> FfiStatus {
        unreachable!("never called by the manifest reader")
    }
    unsafe extern "C" fn create_source(
        _: FfiSlice,
        _: FfiSlice,
        _: *const FfiContext,
        _: *mut FfiSource,
        _: *mut FfiBytes,
    ) -> FfiStatus {
        unreachable!("never called by the manifest reader")
    }
    unsafe extern "C" fn create_sink(
        _: FfiSlice,
        _: FfiSlice,
        _: *const FfiContext,
        _: *mut FfiSink,
        _: *mut FfiBytes,
    ) -> FfiStatus {
        unreachable!("never called by the manifest reader")
    }

    fn manifest(connectors: &[FfiConnector], len: usize) -> FfiManifest {
        FfiManifest {
            abi_version: ABI_VERSION,
            sdk_version: c"0.1.0".as_ptr(),
            plugin_name: c"hostile".as_ptr(),
            plugin_version: c"1".as_ptr(),
            target: c"x86_64-linux".as_ptr(),
            connectors: connectors.as_ptr(),
            connectors_len: len,
            validate,
            create_source,
            create_sink,
        }
    }

    fn connector(name: *const c_char, options: *const c_char) -> FfiConnector {
        FfiConnector {
            kind: KIND_SOURCE,
            name,
            options_json: options,
        }
    }

    #[test]
    fn a_huge_connector_count_is_refused_before_anything_is_allocated() {
        let one = [connector(c"gen".as_ptr(), c"[]".as_ptr())];
        let m = manifest(&one, 1 << 60);
        let e = unsafe { PluginManifest::read(Path::new("p.so").into(), &m) }.unwrap_err();
        assert!(
            e.to_string().contains("1152921504606846976 connectors"),
            "{e}"
        );
        let ok = unsafe { PluginManifest::read(Path::new("p.so").into(), &manifest(&one, 1)) };
        assert_eq!(ok.unwrap().connectors[0].name, "gen");
    }

    #[test]
    fn a_string_without_its_nul_within_the_bound_is_refused() {
        let long = vec![b'a'; MAX_NAME_BYTES + 10];
        let mut with_nul = long.clone();
        with_nul.push(0);
        let one = [connector(
            with_nul.as_ptr() as *const c_char,
            c"[]".as_ptr(),
        )];
        let e = unsafe { PluginManifest::read(Path::new("p.so").into(), &manifest(&one, 1)) }
            .unwrap_err();
        assert!(e.to_string().contains("longer than 4096 bytes"), "{e}");
        let bad_utf8 = [0xff_u8, 0xfe, 0];
        let one = [connector(
            bad_utf8.as_ptr() as *const c_char,
            c"[]".as_ptr(),
        )];
        let e = unsafe { PluginManifest::read(Path::new("p.so").into(), &manifest(&one, 1)) }
            .unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }
}
