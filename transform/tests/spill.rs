//! Aggregation state on disk (`stateStore.providerClass = "disk"`): for every output mode and
//! kind of grouping key, a query whose groups are held in the embedded store emits exactly
//! what the same query with its groups in memory emits, batch after batch, with the same
//! progress counts — and a deduplication on disk drops exactly the rows it drops in memory,
//! through restarts from the checkpoint (a snapshot and deltas, some written
//! from the store by the background snapshot), replays of a batch, late rows and windows the
//! watermark closes. Options the disk store would ignore are refused by name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod events;

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use events::schema;
use tributary_sdk::{ErrorCode, OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

/// Batch `b`'s rows: 300 over 600 keys (some null; a batch changes less than half the
/// groups held, so most versions are saved as deltas), the event time around a clock that moves
/// 15 s a batch, up to 45 s behind it (late rows once the watermark passes them).
fn rows(b: u64) -> RecordBatch {
    let mut x = b.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let n = 300;
    let clock = 1_000_000 + b as i64 * 15_000;
    let (mut ts, mut k, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        ts.push(clock - (next() % 45_000) as i64 + (next() % 5_000) as i64);
        let key = next() % 601;
        k.push((key != 600).then(|| format!("k{key}")));
        v.push((next() % 1_000) as i64 - 100);
    }
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(TimestampMillisecondArray::from(ts).with_timezone("UTC")),
            Arc::new(StringArray::from(k)),
            Arc::new(Int64Array::from(v)),
        ],
    )
    .unwrap()
}

/// Every emitted row as text, sorted.
fn canon(out: Option<RecordBatch>) -> Vec<String> {
    let Some(out) = out else { return Vec::new() };
    let options = FormatOptions::default().with_null("null");
    let formatters: Vec<_> = out
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
        .collect();
    let mut lines: Vec<String> = (0..out.num_rows())
        .map(|i| {
            formatters
                .iter()
                .map(|f| f.value(i).to_string())
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect();
    lines.sort();
    lines
}

async fn opened(spec: &TransformSpec, dir: &Path, version: Option<u64>) -> SqlTransform {
    let mut t = SqlTransform::new(spec.clone()).unwrap();
    t.open(schema()).await.unwrap();
    t.state().unwrap().restore(dir, version).await.unwrap();
    t
}

/// Waits until no file is being written under `dir` (a background snapshot finished).
fn settle(dir: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let writing = std::fs::read_dir(dir)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"));
        if !writing {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a snapshot under {}",
            dir.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// One batch: its rows in, what it emitted (a stateless query's rows, then the aggregation's)
/// and each operator's counts out.
async fn step(
    t: &mut SqlTransform,
    rows: fn(u64) -> RecordBatch,
    b: u64,
) -> (Vec<String>, Vec<[u64; 5]>) {
    let mut out = canon(Some(t.apply(&rows(b)).await.unwrap()));
    let state = t.state().unwrap();
    out.extend(canon(state.end_batch().await.unwrap()));
    let counts = state
        .progress()
        .iter()
        .map(|p| {
            [
                p.num_rows_total,
                p.num_rows_updated,
                p.num_rows_removed,
                p.num_rows_dropped_by_watermark,
                p.custom_metrics
                    .get("numDroppedDuplicateRows")
                    .copied()
                    .unwrap_or(0),
            ]
        })
        .collect();
    (out, counts)
}

/// The state versions stored as deltas under `dir` and its subdirectories (one per
/// operator), and the directories named `name`.
fn found(dir: &Path, name: &str) -> (usize, Vec<std::path::PathBuf>) {
    let mut deltas = tributary_transform::stored_versions(dir)
        .unwrap()
        .iter()
        .filter(|v| !v.snapshot)
        .count();
    let mut dirs = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == name) {
                dirs.push(p);
            } else {
                let (f, d) = found(&p, name);
                deltas += f;
                dirs.extend(d);
            }
        }
    }
    (deltas, dirs)
}

/// Runs `spec` with its groups in memory and on disk side by side for 32 batches: every
/// batch's output and counts must agree; both restart from their checkpoints every 7 batches,
/// and at batch 13 the disk run replays the batch from the version before it. `deltas`: the
/// batches change few enough groups that versions are saved as deltas.
async fn same_as_in_memory(spec: TransformSpec, deltas: bool) {
    same_over(spec, deltas, rows).await
}

/// [`same_as_in_memory`] over the batches `rows` makes.
async fn same_over(spec: TransformSpec, deltas: bool, rows: fn(u64) -> RecordBatch) {
    let disk_spec = spec.clone().with_state_store("disk");
    let (mem_dir, disk_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut mem = opened(&spec, mem_dir.path(), None).await;
    let mut disk = opened(&disk_spec, disk_dir.path(), None).await;
    let (mut emitted, mut finalised) = (0usize, 0u64);
    for b in 0..32u64 {
        let (want, want_counts) = step(&mut mem, rows, b).await;
        let (got, got_counts) = step(&mut disk, rows, b).await;
        assert_eq!(
            got, want,
            "batch {b}: the disk store emits what memory does"
        );
        assert_eq!(
            got_counts, want_counts,
            "batch {b}: numRowsTotal, numRowsUpdated, numRowsRemoved, numRowsDroppedByWatermark, numDroppedDuplicateRows"
        );
        emitted += got.len();
        finalised += got_counts.iter().map(|c| c[2]).sum::<u64>();
        if b == 13 {
            // the first attempt dies before its commit; the replay from version 12 emits the same
            let mut again = opened(&disk_spec, disk_dir.path(), Some(b - 1)).await;
            let (replayed, counts) = step(&mut again, rows, b).await;
            assert_eq!(
                replayed, want,
                "batch {b} replayed from the disk store's checkpoint"
            );
            assert_eq!(counts, want_counts);
            disk = again;
        }
        for (t, dir) in [(&mut mem, &mem_dir), (&mut disk, &disk_dir)] {
            t.state().unwrap().save(dir.path(), b).await.unwrap();
            settle(dir.path());
        }
        if b % 7 == 6 {
            mem = opened(&spec, mem_dir.path(), Some(b)).await;
            disk = opened(&disk_spec, disk_dir.path(), Some(b)).await;
        }
    }
    assert!(emitted > 100, "the query emitted rows ({emitted})");
    let (delta_versions, stores) = found(disk_dir.path(), ".spill");
    assert_eq!(delta_versions > 0, deltas, "versions were saved as deltas");
    let operators = disk.state().unwrap().progress().len();
    assert_eq!(stores.len(), operators, "one store per operator");
    for s in &stores {
        let n = std::fs::read_dir(s).unwrap().count();
        assert_eq!(
            n,
            1,
            "{}: the state is held in one local store",
            s.display()
        );
    }
    drop(disk);
    for s in &stores {
        let n = std::fs::read_dir(s).unwrap().count();
        assert_eq!(
            n,
            0,
            "{}: a closed store removes its directory",
            s.display()
        );
    }
    let modes = spec.output_mode;
    if spec.watermark.is_some() && modes != Some(OutputMode::Complete) {
        assert!(finalised > 0, "the watermark finalised groups");
    }
}

const COUNTS: &str = "count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean";

#[tokio::test]
async fn update_mode_by_key() {
    same_as_in_memory(
        TransformSpec::new(format!("SELECT k, {COUNTS} FROM source GROUP BY k"))
            .with_output_mode(OutputMode::Update),
        true,
    )
    .await;
}

#[tokio::test]
async fn complete_mode_by_key() {
    same_as_in_memory(
        TransformSpec::new(format!("SELECT k, {COUNTS} FROM source GROUP BY k"))
            .with_output_mode(OutputMode::Complete),
        true,
    )
    .await;
}

#[tokio::test]
async fn append_mode_tumbling_windows_with_late_rows() {
    same_as_in_memory(
        TransformSpec::new(format!(
            "SELECT window(ts, '1 minute') AS window, k, {COUNTS} FROM source GROUP BY window(ts, '1 minute'), k"
        ))
        .with_output_mode(OutputMode::Append)
        .with_watermark("ts", "20 seconds"),
        true,
    )
    .await;
}

#[tokio::test]
async fn update_mode_sliding_windows_evicted_by_the_watermark() {
    same_as_in_memory(
        TransformSpec::new(format!(
            "SELECT window(ts, '1 minute', '20 seconds') AS window, k, {COUNTS} FROM source GROUP BY window(ts, '1 minute', '20 seconds'), k"
        ))
        .with_output_mode(OutputMode::Update)
        .with_watermark("ts", "20 seconds"),
        true,
    )
    .await;
}

#[tokio::test]
async fn append_mode_grouped_by_the_event_time_itself() {
    same_as_in_memory(
        TransformSpec::new(
            "SELECT ts, k, count(*) AS n, sum(v) AS total FROM source GROUP BY ts, k",
        )
        .with_output_mode(OutputMode::Append)
        .with_watermark("ts", "10 seconds"),
        // each row is a group of its own: most versions change half the state or more
        false,
    )
    .await;
}

/// Batch 0: 20 one-minute windows of 100 keys each; then 10 rows a minute later each batch
/// (and a late one): the watermark (10 minutes) closes one window a batch after the first
/// nine, so the deltas delete a few groups of many.
fn closing(b: u64) -> RecordBatch {
    let (ts, k): (Vec<i64>, Vec<String>) = match b {
        0 => (0..2000)
            .map(|i| ((i / 100) * 60_000 + 1_000, format!("k{}", i % 100)))
            .unzip(),
        _ => (0..11)
            .map(|i| match i {
                10 => (5_000, "late".to_string()),
                _ => ((20 + b as i64) * 60_000 + 1_000 + i, format!("k{i}")),
            })
            .unzip(),
    };
    let n = ts.len();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(TimestampMillisecondArray::from(ts).with_timezone("UTC")),
            Arc::new(StringArray::from(k)),
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
        ],
    )
    .unwrap()
}

#[tokio::test]
async fn windows_closed_in_deltas_stay_closed_after_a_restart() {
    same_over(
        TransformSpec::new(
            "SELECT window(ts, '1 minute') AS window, k, count(*) AS n, sum(v) AS total FROM source GROUP BY window(ts, '1 minute'), k",
        )
        .with_output_mode(OutputMode::Append)
        .with_watermark("ts", "10 minutes"),
        true,
        closing,
    )
    .await;
}

/// 300 rows a batch over 40 keys, the event time in whole seconds up to 40 s behind a clock
/// that moves 15 s a batch: the same key and second recur within and across batches.
fn dups(b: u64) -> RecordBatch {
    let mut x = b.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(3);
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let clock = 1_000 + b as i64 * 15;
    let (mut ts, mut k, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..300 {
        ts.push((clock - (next() % 40) as i64) * 1_000);
        k.push(format!("k{}", next() % 40));
        v.push((next() % 3) as i64);
    }
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(TimestampMillisecondArray::from(ts).with_timezone("UTC")),
            Arc::new(StringArray::from(k)),
            Arc::new(Int64Array::from(v)),
        ],
    )
    .unwrap()
}

#[tokio::test]
async fn drop_duplicates_with_the_event_time_among_the_keys() {
    same_over(
        TransformSpec::new("SELECT ts, k, v FROM source")
            .with_drop_duplicates(["k", "ts"])
            .with_watermark("ts", "1 minute"),
        true,
        dups,
    )
    .await;
}

#[tokio::test]
async fn drop_duplicates_within_the_watermark() {
    same_over(
        TransformSpec::new("SELECT ts, k, v FROM source")
            .with_drop_duplicates_within_watermark(["k", "v"])
            .with_watermark("ts", "20 seconds"),
        // 120 keys, each forgotten 20 s after it was seen: most versions change half of them
        false,
        dups,
    )
    .await;
}

#[tokio::test]
async fn drop_duplicates_kept_forever_before_an_aggregation() {
    same_over(
        TransformSpec::new(
            "SELECT window(ts, '1 minute') AS window, k, count(*) AS n, sum(v) AS total FROM source GROUP BY window(ts, '1 minute'), k",
        )
        .with_drop_duplicates(["ts", "k", "v"])
        .with_output_mode(OutputMode::Update),
        true,
        dups,
    )
    .await;
}

/// Real-time mode: chunks end one by one (each emitting its changed groups) and the long batch
/// is saved every 5 chunks; both runs restart from their checkpoints every 3 saves. The disk
/// run applies each chunk's changes to its store at once and saves them all with the long
/// batch.
#[tokio::test]
async fn real_time_chunks_emit_what_memory_does() {
    let spec = TransformSpec::new(
        "SELECT window(ts, '1 minute') AS window, k, count(*) AS n, sum(v) AS total FROM source GROUP BY window(ts, '1 minute'), k",
    )
    .with_output_mode(OutputMode::Update)
    .with_watermark("ts", "20 seconds")
    .with_drop_duplicates(["ts", "k", "v"]);
    let disk_spec = spec.clone().with_state_store("disk");
    let (mem_dir, disk_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut mem = opened(&spec, mem_dir.path(), None).await;
    let mut disk = opened(&disk_spec, disk_dir.path(), None).await;
    let mut emitted = 0;
    for chunk in 0..40u64 {
        let mut outs = Vec::new();
        for t in [&mut mem, &mut disk] {
            let mut out = canon(Some(t.apply(&rows(chunk)).await.unwrap()));
            let state = t.state().unwrap();
            out.extend(canon(state.end_chunk().await.unwrap()));
            let totals: Vec<u64> = state.progress().iter().map(|p| p.num_rows_total).collect();
            outs.push((out, totals));
        }
        assert_eq!(
            outs[1], outs[0],
            "chunk {chunk}: rows emitted and groups held"
        );
        emitted += outs[0].0.len();
        if chunk % 5 == 4 {
            let version = chunk / 5;
            for (t, dir) in [(&mut mem, &mem_dir), (&mut disk, &disk_dir)] {
                t.state().unwrap().save(dir.path(), version).await.unwrap();
                settle(dir.path());
            }
            if version % 3 == 2 {
                mem = opened(&spec, mem_dir.path(), Some(version)).await;
                disk = opened(&disk_spec, disk_dir.path(), Some(version)).await;
            }
        }
    }
    assert!(emitted > 100, "the chunks emitted rows ({emitted})");
}

async fn refusal(spec: TransformSpec) -> (ErrorCode, String, Option<String>) {
    let mut t = match SqlTransform::new(spec) {
        Ok(t) => t,
        Err(e) => {
            return (
                e.code(),
                e.to_string(),
                e.context_value("option").map(String::from),
            )
        }
    };
    let e = t.open(schema()).await.expect_err("refused");
    (
        e.code(),
        e.to_string(),
        e.context_value("option").map(String::from),
    )
}

#[tokio::test]
async fn what_the_disk_store_would_ignore_is_refused_by_name() {
    let option = Some("transform.stateStore.providerClass".to_string());
    for (spec, says) in [
        (TransformSpec::new("SELECT k FROM source"), "keeps no state"),
        (
            TransformSpec::new("SELECT count(*) AS n FROM source")
                .with_output_mode(OutputMode::Complete),
            "without GROUP BY",
        ),
        (
            TransformSpec::new("SELECT session_window(ts, '5 minutes') AS s, k, count(*) AS n FROM source GROUP BY session_window(ts, '5 minutes'), k")
                .with_output_mode(OutputMode::Append)
                .with_watermark("ts", "10 seconds"),
            "session_window",
        ),
    ] {
        let (code, message, named) = refusal(spec.with_state_store("disk")).await;
        assert_eq!(code, ErrorCode::InvalidPipeline, "{message}");
        assert!(message.contains(says), "{message}");
        assert_eq!(named, option, "{message}");
    }
    let (code, message, named) = refusal(
        TransformSpec::new("SELECT k, count(*) AS n FROM source GROUP BY k")
            .with_output_mode(OutputMode::Update)
            .with_state_store("rocks"),
    )
    .await;
    assert_eq!(code, ErrorCode::InvalidPipeline);
    assert!(
        message.contains("'rocks'")
            && message.contains("\"memory\"")
            && message.contains("\"disk\""),
        "{message}"
    );
    assert_eq!(named, option);
    // Spark's class names are taken
    for class in [
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    ] {
        let spec = TransformSpec::new("SELECT k, count(*) AS n FROM source GROUP BY k")
            .with_output_mode(OutputMode::Update)
            .with_state_store(class);
        spec.validate().unwrap();
        let mut t = SqlTransform::new(spec).unwrap();
        t.open(schema()).await.unwrap();
    }
}
