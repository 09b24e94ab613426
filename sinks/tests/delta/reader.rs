//! The independent reader: Python `deltalake` (delta-rs's Python package, with pyarrow) from the
//! venv of `scripts/services/registry-python.sh`, run as a subprocess that prints the table as
//! JSON.

use std::process::Command;

use serde_json::Value;

const READ_TABLE: &str = r#"
import json, os, sys
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1])
table = dt.to_pyarrow_table()
meta = dt.metadata()
print(json.dumps({
    "version": dt.version(),
    "rows": table.to_pylist(),
    "columns": [[f.name, str(f.type)] for f in table.schema],
    "partition_columns": list(meta.partition_columns),
    "configuration": dict(meta.configuration),
    "files": list(dt.file_uris()),
    "txn": {app: dt.transaction_version(app) for app in sys.argv[2:]},
}, default=str))
# deltalake's runtime threads can abort the interpreter's shutdown ("terminate called without
# an active exception") after the answer is printed: leave without finalising.
sys.stdout.flush()
os._exit(0)
"#;

/// The Python interpreter with `deltalake`, or `None` after recording the skip.
pub fn python() -> Option<String> {
    tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    )
}

/// The table at `path` as Python deltalake sees it (with the `txn` versions of `apps`).
pub fn read(python: &str, path: &std::path::Path, apps: &[&str]) -> Value {
    let out = Command::new(python)
        .arg("-c")
        .arg(READ_TABLE)
        .arg(path)
        .args(apps)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python deltalake failed to read {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("reader prints JSON")
}

/// The values of `column` in every row, sorted.
pub fn column<T: serde::de::DeserializeOwned + Ord>(table: &Value, column: &str) -> Vec<T> {
    let mut values: Vec<T> = table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| serde_json::from_value(r[column].clone()).expect("column value"))
        .collect();
    values.sort();
    values
}

/// The `[name, type]` pairs of the table's columns.
pub fn columns(table: &Value) -> Vec<(String, String)> {
    serde_json::from_value(table["columns"].clone()).expect("columns")
}
