//! Human-readable plugin listings for `tributary plugins list` and `tributary plugins inspect`.

use std::fmt::Write;
use std::path::PathBuf;

use tributary_sdk::{OptionKind, Result};

use crate::plugin::loader::LoadedPlugin;
use crate::plugin::manifest::PluginManifest;

/// Left-aligned columns separated by two spaces; the last column is not padded.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = width.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let n = cells.len();
        let mut l = String::new();
        for (i, c) in cells.into_iter().enumerate() {
            if i + 1 < n {
                let _ = write!(l, "{c:<w$}  ", w = width[i]);
            } else {
                l.push_str(c);
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
    out
}

fn connectors(m: &PluginManifest) -> String {
    m.connectors
        .iter()
        .map(|c| format!("{}:{}", serde_kind(c.kind), c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn serde_kind(k: tributary_sdk::ConnectorKind) -> &'static str {
    match k {
        tributary_sdk::ConnectorKind::Source => "source",
        tributary_sdk::ConnectorKind::Sink => "sink",
    }
}

/// One line per plugin file: name, version, ABI, SDK, connectors — or why it was refused.
pub fn plugins_list_table(scanned: &[(PathBuf, Result<LoadedPlugin>)]) -> String {
    let rows: Vec<Vec<String>> = scanned
        .iter()
        .map(|(path, r)| match r {
            Ok(p) => {
                let m = p.manifest();
                vec![
                    m.name.clone(),
                    m.version.clone(),
                    m.abi_version.to_string(),
                    m.sdk_version.clone(),
                    connectors(m),
                    path.display().to_string(),
                ]
            }
            Err(e) => vec![
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                format!("REFUSED: {}", e.message()),
                path.display().to_string(),
            ],
        })
        .collect();
    if rows.is_empty() {
        return "no plugins found\n".to_string();
    }
    table(
        &["PLUGIN", "VERSION", "ABI", "SDK", "CONNECTORS", "FILE"],
        &rows,
    )
}

fn kind_text(k: &OptionKind) -> String {
    match k {
        OptionKind::String => "string".into(),
        OptionKind::Bool => "bool".into(),
        OptionKind::Int { min, max } if *max == i64::MAX => format!("int >= {min}"),
        OptionKind::Int { min, max } => format!("int {min}..{max}"),
        OptionKind::Duration => "duration".into(),
        OptionKind::Bytes => "bytes".into(),
        OptionKind::Enum { values } => values.join("|"),
        OptionKind::Json => "json".into(),
        OptionKind::Prefix => "prefix".into(),
    }
}

/// A full description of one plugin: identity, then every connector with its options.
pub fn inspect(plugin: &LoadedPlugin) -> String {
    let m = plugin.manifest();
    let mut out = String::new();
    let _ = writeln!(out, "plugin      {} {}", m.name, m.version);
    let _ = writeln!(out, "file        {}", m.file.display());
    let _ = writeln!(out, "abi         {}", m.abi_version);
    let _ = writeln!(out, "sdk         {}", m.sdk_version);
    let _ = writeln!(out, "target      {}", m.target);
    for c in &m.connectors {
        let _ = writeln!(out, "\n{} '{}'", serde_kind(c.kind), c.name);
        let rows: Vec<Vec<String>> = c
            .options
            .iter()
            .map(|o| {
                vec![
                    o.name.clone(),
                    kind_text(&o.kind),
                    o.default.clone().unwrap_or_else(|| "-".into()),
                    if o.required {
                        "yes".into()
                    } else {
                        "no".into()
                    },
                    o.doc.clone(),
                ]
            })
            .collect();
        if rows.is_empty() {
            out.push_str("  (no options)\n");
        } else {
            for l in table(
                &["OPTION", "TYPE", "DEFAULT", "REQUIRED", "DESCRIPTION"],
                &rows,
            )
            .lines()
            {
                let _ = writeln!(out, "  {l}");
            }
        }
    }
    let _ = writeln!(out, "\nfunctions");
    if let Some(why) = &m.functions_note {
        let _ = writeln!(out, "  (none: the plugin {why})");
    } else if m.functions.is_empty() {
        out.push_str("  (none)\n");
    } else {
        let rows: Vec<Vec<String>> = m
            .functions
            .iter()
            .map(|f| {
                vec![
                    f.signature.clone(),
                    if f.deterministic { "yes" } else { "no" }.into(),
                    f.description.clone(),
                ]
            })
            .collect();
        for l in table(&["FUNCTION", "DETERMINISTIC", "DESCRIPTION"], &rows).lines() {
            let _ = writeln!(out, "  {l}");
        }
    }
    out
}

/// The manifest as pretty JSON (for `--format json`).
pub fn inspect_json(plugin: &LoadedPlugin) -> String {
    serde_json::to_string_pretty(plugin.manifest())
        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
