//! How `streams get` and `streams list` show a stream: JSON with every secret masked (registry
//! key and secret, sensitive connector options), and a one-line-per-stream table.

use serde_json::{json, Value};

use super::catalog::{Catalog, StreamEntry};
use super::pipeline::printable_options;
use crate::registry::Registry;

/// A stream as JSON, secrets masked; the resolved table path and checkpoint added.
pub fn describe(entry: &StreamEntry, catalog: &Catalog, registry: &Registry) -> Value {
    let spec = &entry.spec;
    let mut v = serde_json::to_value(entry).unwrap_or(Value::Null);
    if let Some(s) = v.pointer_mut("/spec/source/options") {
        *s = printable_options(spec, registry, &spec.source.options);
    }
    if let Some(c) = v.pointer_mut("/spec/connection") {
        if let Some(obj) = c.as_object_mut() {
            obj.insert(
                "options".into(),
                printable_options(spec, registry, &spec.connection.options),
            );
            for k in ["schema_registry_api_key", "schema_registry_api_secret"] {
                if obj.contains_key(k) {
                    obj.insert(k.into(), json!("***"));
                }
            }
            if let Some(Value::String(url)) = obj.get("schema_registry_url") {
                let shown = tributary_sdk::options::redact_embedded(url).into_owned();
                obj.insert("schema_registry_url".into(), json!(shown));
            }
        }
    }
    if let Some(obj) = v.as_object_mut() {
        if let Ok(t) = spec.table_name() {
            obj.insert(
                "table_path".into(),
                json!(catalog.table_path(&t).display().to_string()),
            );
        }
        if let Ok(n) = spec.stream_name() {
            obj.insert(
                "checkpoint".into(),
                json!(catalog.checkpoint_path(&n).display().to_string()),
            );
        }
    }
    v
}

/// One line per stream: name, source, ingestion table, backfill state, creation time.
pub fn table(entries: &[StreamEntry]) -> String {
    let rows: Vec<[String; 5]> = entries
        .iter()
        .map(|e| {
            let s = &e.spec.source;
            let names: Vec<&str> = s
                .names
                .values()
                .filter_map(|v| v.as_array())
                .flatten()
                .filter_map(|n| n.as_str())
                .collect();
            [
                e.name.clone(),
                format!("{} {}", s.kind, names.join(",")),
                e.spec.ingestion.table.clone(),
                serde_json::to_value(e.backfill.state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                e.created_at.clone(),
            ]
        })
        .collect();
    let header = ["NAME", "SOURCE", "TABLE", "BACKFILL", "CREATED"];
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: [&str; 5]| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
            + "\n"
    };
    let mut out = line(header);
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    out
}
