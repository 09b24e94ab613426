//! The host's owned copy of a plugin manifest.
//!
//! Read once from the plugin's `#[repr(C)]` [`FfiManifest`] after the ABI version check, and
//! kept as plain Rust data for listing, inspection and registration.

use std::ffi::{c_char, CStr};
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

fn text(file: &std::path::Path, what: &str, p: *const c_char) -> Result<String> {
    if p.is_null() {
        return Err(bad(file, &format!("its manifest has no {what}")));
    }
    // SAFETY: the plugin promises NUL-terminated strings that live as long as the library.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(str::to_string)
        .map_err(|_| bad(file, &format!("its manifest {what} is not UTF-8")))
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
            let options_json = text(&file, "option list", c.options_json)?;
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
            file,
        })
    }

    /// The connectors of one kind.
    pub fn connectors_of(&self, kind: ConnectorKind) -> impl Iterator<Item = &ConnectorInfo> {
        self.connectors.iter().filter(move |c| c.kind == kind)
    }
}
