//! Table maintenance beside ingestion, measured: the same 200-row micro-batches written into
//! tables with maintenance off and on, side by side in one run (each batch goes to every table
//! in turn, so the tables share the machine's noise).
//!
//! - `off`: the sink's defaults (one commit and one small file per batch; deltalake's
//!   checkpoint every 100 commits).
//! - `on`: `delta.autoOptimize.autoCompact = true` (compaction at 50 small files into files of
//!   up to 128 MB) and `autoVacuum = true`, retentions at Delta's defaults (7 days for removed
//!   files, 30 days for the log): within a short run nothing is old enough to delete, so the
//!   log and the removed files' tombstones keep growing, as in a table's first week.
//! - `on, retention elapsed`: the same with `delta.deletedFileRetentionDuration = interval 0
//!   seconds` (retention check off) and `delta.logRetentionDuration = interval 0 seconds`: the
//!   steady state of a table older than its retention windows, where vacuum deletes what
//!   compaction removed and the log is cleaned after every checkpoint.
//!
//! At each report point it prints, per table: the time a table takes to open (median of three)
//! with `deltalake::open_table`, with the sink's own reload (a new sink's `open`, what a
//! restarted pipeline does) and with Python's `deltalake` (`DeltaTable(path)`, timed inside one
//! interpreter; printed as `-` when `python3 -c 'import deltalake'` fails), the active data files, the Parquet files on storage, the files in `_delta_log/`, and
//! the ingestion rate so far (write time only). After the run every table is read back and
//! checked outside the timing: every id once, `txn` version = last batch id.
//!
//! `BATCHES` (default 5000) and `REPORT` (default `1000,5000`) set the run's length; `TABLES`
//! (default `off,on,elapsed`) which tables are written (the `off` table's batches slow down
//! as its files pile up, so a long debug run may leave it out; the ratios then compare
//! against the first table written).
//! `CARGO_TARGET_DIR=... cargo bench -p tributary-sinks --features delta --bench delta_maintenance`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::{OptionSpec, Options, Sink};
use tributary_sinks::delta::config::{option_specs, parse};
use tributary_sinks::delta::deltalake::datafusion::prelude::SessionContext;
use tributary_sinks::delta::deltalake::{ensure_table_uri, open_table, DeltaTable};
use tributary_sinks::delta::maintenance::count_log_files;
use tributary_sinks::delta::{DeltaConfig, DeltaSink};

const ROWS: i64 = 200;
const APP: &str = "bench-maintenance";

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("payload", DataType::Utf8, false),
    ]))
}

fn batch(b: i64) -> RecordBatch {
    let ids: Vec<i64> = (b * ROWS..(b + 1) * ROWS).collect();
    let payload: Vec<String> = ids
        .iter()
        .map(|i| {
            format!(
                "{{\"id\":{i},\"amount\":{:.2},\"currency\":\"EUR\"}}",
                (i % 1000) as f64 * 1.25
            )
        })
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids)),
        Arc::new(StringArray::from(payload)),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

struct Table {
    name: &'static str,
    path: PathBuf,
    config: DeltaConfig,
    sink: DeltaSink,
    write_time: Duration,
}

fn table(root: &Path, name: &'static str, dir: &str, options: &[(&str, &str)]) -> Table {
    let path = root.join(dir);
    let mut o = Options::new().with("path", path.display().to_string());
    for (k, v) in options {
        o.set(*k, *v);
    }
    let config = parse(&OptionSpec::validate_all(&option_specs(), &o, "delta").unwrap()).unwrap();
    Table {
        name,
        path,
        sink: DeltaSink::new(config.clone(), HashMap::new(), Some(APP.into())),
        config,
        write_time: Duration::ZERO,
    }
}

async fn load(path: &Path) -> DeltaTable {
    open_table(ensure_table_uri(path.display().to_string()).unwrap())
        .await
        .unwrap()
}

fn parquet_on_disk(path: &Path) -> usize {
    std::fs::read_dir(path)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".parquet")
        })
        .count()
}

/// Python `deltalake`'s open time in ms (median of three in one interpreter), if it is installed.
fn python_open_ms(path: &Path) -> Option<f64> {
    let script = "import sys, time\nfrom deltalake import DeltaTable\nts = []\nfor _ in range(3):\n    s = time.perf_counter(); t = DeltaTable(sys.argv[1]); ts.append(time.perf_counter() - s)\n    assert t.version() >= 0\nprint(sorted(ts)[1] * 1e3)";
    let out = std::process::Command::new("python3")
        .args(["-c", script, &path.display().to_string()])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

async fn report(t: &Table, batches: i64) {
    let mut opens = Vec::new();
    let mut reloads = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let table = load(&t.path).await;
        opens.push(start.elapsed());
        assert!(table.version().is_some());
        let start = Instant::now();
        let mut sink = DeltaSink::new(t.config.clone(), HashMap::new(), Some(APP.into()));
        sink.open(schema()).await.unwrap();
        reloads.push(start.elapsed());
        assert_eq!(sink.committed_batch(), Some(batches - 1));
    }
    opens.sort();
    reloads.sort();
    let python = python_open_ms(&t.path).map_or("-".to_string(), |ms| format!("{ms:.1} ms"));
    let table = load(&t.path).await;
    let active = table.snapshot().unwrap().log_data().num_files();
    let log_files = count_log_files(&table).await.unwrap();
    let rows = (batches * ROWS) as f64;
    println!(
        "  {:<24} open {:>8.1} ms   sink reload {:>8.1} ms   python {:>10}   data files {:>6}   on storage {:>6}   log files {:>6}   {:>8.0} rows/s",
        t.name,
        opens[1].as_secs_f64() * 1e3,
        reloads[1].as_secs_f64() * 1e3,
        python,
        active,
        parquet_on_disk(&t.path),
        log_files,
        rows / t.write_time.as_secs_f64(),
    );
}

async fn check(t: &Table, batches: i64) {
    let table = load(&t.path).await;
    let ctx = SessionContext::new();
    ctx.register_table("t", table.table_provider().await.unwrap())
        .unwrap();
    let out = ctx
        .sql("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let col = |i: usize| {
        out[0]
            .column(i)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0)
    };
    let n = batches * ROWS;
    assert_eq!(
        (col(0), col(1), col(2), col(3)),
        (n, n, 0, n - 1),
        "{}",
        t.name
    );
    let txn = table
        .snapshot()
        .unwrap()
        .transaction_version(table.log_store().as_ref(), APP)
        .await
        .unwrap();
    assert_eq!(txn, Some(batches - 1), "{}", t.name);
}

fn main() {
    let batches: i64 = std::env::var("BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let points: Vec<i64> = std::env::var("REPORT")
        .unwrap_or_else(|_| "1000,5000".into())
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .filter(|p| *p <= batches)
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let on = [
        ("delta.autoOptimize.autoCompact", "true"),
        ("autoVacuum", "true"),
    ];
    let elapsed = [
        ("delta.autoOptimize.autoCompact", "true"),
        ("autoVacuum", "true"),
        ("delta.deletedFileRetentionDuration", "interval 0 seconds"),
        (
            "spark.databricks.delta.retentionDurationCheck.enabled",
            "false",
        ),
        ("delta.logRetentionDuration", "interval 0 seconds"),
    ];
    let wanted = std::env::var("TABLES").unwrap_or_else(|_| "off,on,elapsed".into());
    let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
    let mut tables: Vec<Table> = [
        ("off", "off", &[][..]),
        ("on", "on", &on[..]),
        ("on, retention elapsed", "elapsed", &elapsed[..]),
    ]
    .into_iter()
    .filter(|(_, dir, _)| wanted.contains(dir))
    .map(|(name, d, options)| table(dir.path(), name, d, options))
    .collect();
    rt.block_on(async {
        for t in tables.iter_mut() {
            t.sink.open(schema()).await.unwrap();
        }
        for b in 0..batches {
            let data = batch(b);
            let n = tables.len();
            for k in 0..n {
                // Rotate who goes first.
                let t = &mut tables[(usize::try_from(b).unwrap() + k) % n];
                let start = Instant::now();
                t.sink
                    .write(u64::try_from(b).unwrap(), std::slice::from_ref(&data))
                    .await
                    .unwrap();
                t.write_time += start.elapsed();
            }
            if points.contains(&(b + 1)) {
                println!("after {} batches of {ROWS} rows:", b + 1);
                for t in &tables {
                    report(t, b + 1).await;
                }
                let rate = |t: &Table| (b + 1) as f64 / t.write_time.as_secs_f64();
                for t in &tables[1..] {
                    let s = t.sink.stats();
                    println!(
                        "  {:<24} rows/s vs {}: {:.3}x (goal >= 0.9x vs off); {} compactions of {} files, {} vacuumed, {} log files removed, maintenance {:.1} s in total, longest run {:.0} ms, {} failures",
                        t.name,
                        tables[0].name,
                        rate(t) / rate(&tables[0]),
                        s.compactions,
                        s.files_compacted,
                        s.files_vacuumed,
                        s.log_files_removed,
                        s.maintenance_time.as_secs_f64(),
                        s.longest_maintenance.as_secs_f64() * 1e3,
                        s.maintenance_failures,
                    );
                }
            }
        }
        // Outside the timing: every table holds every row once and the last batch's txn.
        for t in &tables {
            check(t, batches).await;
        }
        println!("checked: every table holds ids 0..{} once, txn = {}", batches * ROWS, batches - 1);
    });
}
