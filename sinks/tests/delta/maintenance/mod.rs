//! Table maintenance beside ingestion and as manual commands: auto-compaction keeps rows and
//! `txn` versions exact, log clean-up, vacuum, refused options, and processes killed with
//! SIGKILL in the middle of a compaction and of a vacuum.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use tributary_sdk::{OptionSpec, Options, Result};
use tributary_sinks::delta::config::{option_specs, parse};
use tributary_sinks::delta::deltalake::datafusion::prelude::SessionContext;
use tributary_sinks::delta::deltalake::{ensure_table_uri, DeltaTable};
use tributary_sinks::delta::{DeltaConfig, DeltaSink};

mod compaction;
mod crash;
mod logs;
mod options;
mod vacuum;
mod vacuum_kill;

/// The parsed config of `options` for the table at `path`.
pub fn config(path: &Path, options: &[(&str, &str)]) -> Result<DeltaConfig> {
    let mut o = Options::new().with("path", path.display().to_string());
    for (k, v) in options {
        o.set(*k, *v);
    }
    parse(&OptionSpec::validate_all(&option_specs(), &o, "delta")?)
}

/// A sink with `options` whose commits carry `app`.
pub fn sink(path: &Path, app: &str, options: &[(&str, &str)]) -> DeltaSink {
    DeltaSink::new(
        config(path, options).unwrap(),
        HashMap::new(),
        Some(app.into()),
    )
}

/// The table at `path`, latest version (deltalake's own loader).
pub async fn open(path: &Path) -> DeltaTable {
    let url = ensure_table_uri(path.display().to_string()).unwrap();
    tributary_sinks::delta::deltalake::open_table(url)
        .await
        .unwrap()
}

/// Every `id` of the table, sorted.
pub async fn ids(path: &Path) -> Vec<i64> {
    let table = open(path).await;
    let ctx = SessionContext::new();
    ctx.register_table("t", table.table_provider().await.unwrap())
        .unwrap();
    let batches = ctx
        .sql("SELECT id FROM t ORDER BY id")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    batches
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect()
}

/// The `txn` version of `app` in the table.
pub async fn txn(path: &Path, app: &str) -> Option<i64> {
    let table = open(path).await;
    table
        .snapshot()
        .unwrap()
        .transaction_version(table.log_store().as_ref(), app)
        .await
        .unwrap()
}

/// The data files the latest version references (paths relative to the table).
pub async fn active_files(path: &Path) -> BTreeSet<String> {
    let table = open(path).await;
    table
        .get_file_uris()
        .unwrap()
        .map(|uri| {
            let p = uri.trim_start_matches("file://").to_string();
            p.strip_prefix(&format!("{}/", path.display()))
                .map(str::to_string)
                .unwrap_or(p)
        })
        .collect()
}

/// The files on disk under the table outside `_delta_log/` (relative paths): data files and
/// anything an interrupted write left (an object store's staging files included).
pub fn files_on_disk(path: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("_delta_log") {
                    stack.push(p);
                }
            } else {
                out.insert(p.strip_prefix(path).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// The JSON commit files in `_delta_log/`.
pub fn json_commits(path: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(path.join("_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    v.sort();
    v
}

/// `0..n`.
pub fn expected(n: i64) -> Vec<i64> {
    (0..n).collect()
}
