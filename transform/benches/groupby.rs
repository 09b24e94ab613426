//! A stream's `GROUP BY` against DataFusion aggregating the same rows once, and the state of a
//! windowed aggregation over a moving key space staying bounded.
//!
//! `cargo bench -p tributary-transform --features bench --bench groupby`
//!
//! 1. **throughput**: 10,000,000 rows (`k` = one of 10,000 keys, `v`) in 100 batches of
//!    100,000, through `SELECT k, count(*), sum(v) FROM source GROUP BY k` in update mode, as a
//!    micro-batch stream runs it: every batch applied, ended (its changed groups emitted) and
//!    its state saved to disk (the changelog), against DataFusion's own `GROUP BY` over the
//!    same 100 batches in a `MemTable`, collected once; then the same over 1,000,000 keys (each
//!    batch touching 100,000 groups of a state that grows to 1,000,000); then both again in 10
//!    batches of 1,000,000 rows. The stream runs four ways: merging into its group table with
//!    the state saved every batch, the same with the state kept in memory only (as between a
//!    real-time batch's chunks), regrouping the whole state every batch through the merge
//!    plan (as before the group table; `bench_regroup`), and in memory with the partial plan
//!    executed cold for every part (as before the warm partial tables; `bench_cold_partial`).
//!    Each runs three times in turn (`GROUPBY_RUNS` sets how many); medians
//!    and ratios are printed. Outside the timing the stream's last emitted value of every group
//!    is checked against DataFusion's result.
//! 2. **plateau**: 10,000,000 rows whose event time advances 1 s every 1,000 rows over 1,000
//!    keys, `GROUP BY window(ts, '1 minute'), k` in append mode with a 10 s watermark, state
//!    saved every batch: the groups held (`numRowsTotal`), the process's RSS and the state
//!    directory's size at 25 %, 50 % and 100 % of the rows, which stay flat as windows close.
//! 3. **spill** (`... --bench groupby -- spill memory` and `-- spill disk`, one process
//!    each, so each RSS is its own): 10,000,000 rows over 5,000,000 keys (each key once in the first half of
//!    the rows and once in the second, scattered over the batches), `GROUP BY k` in update
//!    mode with the state saved every batch, its groups in memory or on disk
//!    (`stateStore.providerClass`): RSS and groups held at 25 %, 50 % and 100 %, the peak RSS,
//!    and the median time a batch takes. Checked outside the timing: every batch emits its
//!    100,000 groups with count 1 (first half) or 2 (second), and 5,000,000 groups are held.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use tributary_sdk::{OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

const ROWS: usize = 10_000_000;
const BATCH: usize = 100_000;
const KEYS: i64 = 10_000;
/// Runs of each way, in turn (`GROUPBY_RUNS` overrides it: on a noisy machine more runs
/// steady the medians).
const RUNS: usize = 3;

fn runs() -> usize {
    std::env::var("GROUPBY_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(RUNS)
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]))
}

/// Rows `from..from + BATCH`: key `i % keys`, event time `i / 1000` s, `v = i % 97`.
fn batch(from: usize, keys: i64) -> RecordBatch {
    sized(from, BATCH, keys)
}

/// Rows `from..from + n`: key `i % keys`, event time `i / 1000` s, `v = i % 97`.
fn sized(from: usize, n: usize, keys: i64) -> RecordBatch {
    rows_of(from, n, |i| i % keys)
}

/// Rows `from..from + BATCH`: key `key(i)`, event time `i / 1000` s, `v = i % 97`.
fn rows(from: usize, key: impl Fn(i64) -> i64) -> RecordBatch {
    rows_of(from, BATCH, key)
}

/// Rows `from..from + n`: key `key(i)`, event time `i / 1000` s, `v = i % 97`.
fn rows_of(from: usize, n: usize, key: impl Fn(i64) -> i64) -> RecordBatch {
    let ids = from as i64..(from + n) as i64;
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(
                TimestampMillisecondArray::from_iter_values(ids.clone().map(|i| i / 1000 * 1000))
                    .with_timezone("UTC"),
            ),
            Arc::new(Int64Array::from_iter_values(ids.clone().map(key))),
            Arc::new(Int64Array::from_iter_values(ids.map(|i| i % 97))),
        ],
    )
    .unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// key → (count, sum) of a result with columns k, n, total.
fn groups(into: &mut HashMap<i64, (i64, i64)>, b: &RecordBatch) {
    let k = b.column(0).as_primitive::<Int64Type>();
    let n = b.column(1).as_primitive::<Int64Type>();
    let t = b.column(2).as_primitive::<Int64Type>();
    for i in 0..b.num_rows() {
        into.insert(k.value(i), (n.value(i), t.value(i)));
    }
}

const SQL: &str = "SELECT k, count(*) AS n, sum(v) AS total FROM source GROUP BY k";

async fn stream_run(batches: &[RecordBatch], save: bool) -> (Duration, HashMap<i64, (i64, i64)>) {
    let dir = tempfile::tempdir().unwrap();
    let mut t =
        SqlTransform::new(TransformSpec::new(SQL).with_output_mode(OutputMode::Update)).unwrap();
    t.open(schema()).await.unwrap();
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let mut emitted = Vec::new();
    let start = Instant::now();
    for (v, b) in batches.iter().enumerate() {
        t.apply(b).await.unwrap();
        let state = t.state().unwrap();
        // not saving: the state moves on in memory, as between a real-time batch's chunks
        let out = match save {
            true => state.end_batch().await.unwrap(),
            false => state.end_chunk().await.unwrap(),
        };
        emitted.extend(out);
        if save {
            state.save(dir.path(), v as u64).await.unwrap();
        }
    }
    let took = start.elapsed();
    let mut last = HashMap::new();
    for b in &emitted {
        groups(&mut last, b);
    }
    (took, last)
}

async fn datafusion_run(batches: &[RecordBatch]) -> (Duration, HashMap<i64, (i64, i64)>) {
    let ctx = SessionContext::new();
    let table = MemTable::try_new(schema(), vec![batches.to_vec()]).unwrap();
    ctx.register_table("source", Arc::new(table)).unwrap();
    let start = Instant::now();
    let out = ctx.sql(SQL).await.unwrap().collect().await.unwrap();
    let took = start.elapsed();
    let mut result = HashMap::new();
    for b in &out {
        groups(&mut result, b);
    }
    (took, result)
}

/// The stream (merging into its group table, and regrouping the whole state each batch as
/// before the table) against DataFusion, over `keys` distinct keys in batches of `batch_rows`.
async fn throughput(keys: i64, batch_rows: usize) {
    let batches: Vec<RecordBatch> = (0..ROWS / batch_rows)
        .map(|i| sized(i * batch_rows, batch_rows, keys))
        .collect();
    let (mut tabled, mut regrouped, mut unsaved, mut cold, mut theirs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs() {
        let (d, got) = datafusion_run(&batches).await;
        theirs.push(d);
        assert_eq!(got.len(), keys as usize);
        for (name, times) in [
            ("saved", &mut tabled),
            ("regroup", &mut regrouped),
            ("unsaved", &mut unsaved),
            ("cold", &mut cold),
        ] {
            // `GROUPBY_ONLY=unsaved` (or `saved`, `regroup`, `cold`) runs one way, to profile it
            let only = std::env::var("GROUPBY_ONLY").unwrap_or_default();
            if !only.is_empty() && only != name {
                times.push(Duration::from_nanos(1));
                continue;
            }
            tributary_transform::bench_regroup(name == "regroup");
            tributary_transform::bench_cold_partial(name == "cold");
            let save = name == "saved" || name == "regroup";
            let (s, last) = stream_run(&batches, save).await;
            times.push(s);
            assert!(
                last == got,
                "the stream's last value of every group is DataFusion's"
            );
        }
    }
    tributary_transform::bench_regroup(false);
    tributary_transform::bench_cold_partial(false);
    let (tabled, regrouped, unsaved, cold, theirs) = (
        median(tabled),
        median(regrouped),
        median(unsaved),
        median(cold),
        median(theirs),
    );
    let rate = |d: Duration| ROWS as f64 / d.as_secs_f64() / 1e6;
    println!(
        "throughput, {keys} keys, {} batches of {batch_rows}: stream GROUP BY (state saved each batch) {:.2} M rows/s ({tabled:?}), regrouping the whole state {:.2} M rows/s ({regrouped:?}), state kept in memory, not saved {:.2} M rows/s ({unsaved:?}), the same with the partial plan executed cold per part {:.2} M rows/s ({cold:?}); DataFusion once {:.2} M rows/s ({theirs:?}); stream/DataFusion {:.2}x (unsaved {:.2}x, cold partial {:.2}x), table/regroup {:.2}x, warm/cold partial {:.2}x",
        ROWS / batch_rows,
        rate(tabled),
        rate(regrouped),
        rate(unsaved),
        rate(cold),
        rate(theirs),
        theirs.as_secs_f64() / tabled.as_secs_f64(),
        theirs.as_secs_f64() / unsaved.as_secs_f64(),
        theirs.as_secs_f64() / cold.as_secs_f64(),
        regrouped.as_secs_f64() / tabled.as_secs_f64(),
        cold.as_secs_f64() / unsaved.as_secs_f64()
    );
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn dir_mb(dir: &std::path::Path) -> f64 {
    let mut bytes = 0u64;
    for e in walk(dir) {
        bytes += std::fs::metadata(&e).map_or(0, |m| m.len());
    }
    bytes as f64 / 1e6
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

async fn plateau() {
    let dir = tempfile::tempdir().unwrap();
    let sql = "SELECT window(ts, '1 minute') AS window, k, count(*) AS n FROM source GROUP BY window(ts, '1 minute'), k";
    let spec = TransformSpec::new(sql)
        .with_output_mode(OutputMode::Append)
        .with_watermark("ts", "10 seconds");
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(schema()).await.unwrap();
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let (mut emitted, mut marks) = (0usize, Vec::new());
    let start = Instant::now();
    let n_batches = ROWS / BATCH;
    for v in 0..n_batches {
        t.apply(&batch(v * BATCH, 1_000)).await.unwrap();
        let state = t.state().unwrap();
        if let Some(out) = state.end_batch().await.unwrap() {
            emitted += out
                .column(2)
                .as_primitive::<Int64Type>()
                .iter()
                .flatten()
                .sum::<i64>() as usize;
        }
        state.save(dir.path(), v as u64).await.unwrap();
        let done = v + 1;
        if done * 4 % n_batches == 0 {
            let held = state.progress()[0].num_rows_total;
            marks.push((done * 100 / n_batches, held, rss_mb(), dir_mb(dir.path())));
        }
    }
    let took = start.elapsed();
    for (pct, held, rss, disk) in &marks {
        println!("plateau: {pct:>3} % of {ROWS} rows: {held} groups held, RSS {rss:.0} MB, state on disk {disk:.1} MB");
    }
    println!(
        "plateau: {emitted} rows counted in emitted windows (the rest in windows still open), {:.2} M rows/s",
        ROWS as f64 / took.as_secs_f64() / 1e6
    );
    assert!(
        emitted > ROWS * 9 / 10,
        "most windows closed and were emitted"
    );
}

/// Rows `from..from + BATCH` of the spill run: key `i * 2654435761 mod 5 M` (a permutation of
/// each 5 M rows), `v = i % 97`.
fn scattered(from: usize) -> RecordBatch {
    rows(from, |i| i * 2_654_435_761 % SPILL_KEYS)
}

const SPILL_KEYS: i64 = 5_000_000;

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

async fn spill(provider: &str) {
    let dir = tempfile::tempdir().unwrap();
    let spec = TransformSpec::new(SQL)
        .with_output_mode(OutputMode::Update)
        .with_state_store(provider);
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(schema()).await.unwrap();
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let n_batches = ROWS / BATCH;
    let (mut times, mut marks) = (Vec::new(), Vec::new());
    for v in 0..n_batches {
        let input = scattered(v * BATCH);
        let start = Instant::now();
        t.apply(&input).await.unwrap();
        let state = t.state().unwrap();
        let out = state.end_batch().await.unwrap().unwrap();
        state.save(dir.path(), v as u64).await.unwrap();
        times.push(start.elapsed());
        // outside the timing: each key twice over the run, once per half
        let pass = if v < n_batches / 2 { 1 } else { 2 };
        let n = out.column(1).as_primitive::<Int64Type>();
        assert_eq!(out.num_rows(), BATCH, "batch {v} emits its groups");
        assert!(
            n.iter().all(|n| n == Some(pass)),
            "batch {v}: counts are {pass}"
        );
        let done = v + 1;
        if done * 4 % n_batches == 0 {
            let held = state.progress()[0].num_rows_total;
            marks.push((done * 100 / n_batches, held, rss_mb(), dir_mb(dir.path())));
        }
    }
    let held = t.state().unwrap().progress()[0].num_rows_total;
    assert_eq!(held, SPILL_KEYS as u64, "every key held");
    for (pct, held, rss, disk) in &marks {
        println!("spill {provider}: {pct:>3} % of {ROWS} rows: {held} groups held, RSS {rss:.0} MB, on disk {disk:.0} MB");
    }
    let total: Duration = times.iter().sum();
    println!(
        "spill {provider}: peak RSS {:.0} MB; a batch of {BATCH} rows (apply, end, save) median {:?}, {:.2} M rows/s over the run",
        peak_rss_mb(),
        median(times),
        ROWS as f64 / total.as_secs_f64() / 1e6
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // the words after `--` (cargo adds flags such as `--bench`)
    let words: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let which = words.first().cloned();
    // the plateau first, so its RSS is not the throughput runs' high-water mark
    if which.as_deref().is_none_or(|w| w == "plateau") {
        rt.block_on(plateau());
    }
    if which.as_deref() == Some("spill") {
        let provider = words.get(1).cloned().unwrap_or_else(|| "disk".into());
        rt.block_on(spill(&provider));
        return;
    }
    if which.as_deref().is_none_or(|w| w == "throughput") {
        // `GROUPBY_KEYS` / `GROUPBY_BATCH` pick one case, to profile it
        let pick = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
        };
        for batch_rows in [BATCH, 10 * BATCH] {
            for keys in [KEYS, 1_000_000] {
                if pick("GROUPBY_KEYS").is_none_or(|k| k as i64 == keys)
                    && pick("GROUPBY_BATCH").is_none_or(|b| b == batch_rows)
                {
                    rt.block_on(throughput(keys, batch_rows));
                }
            }
        }
    }
}
