//! State saved as a changelog with periodic snapshots: a version whose batch changed few of the
//! state's rows is stored as those rows (`<n>.delta.arrow`), and every 10 versions a background
//! thread writes a snapshot (`<n>.arrow`) from the files; restoring any kept version from a
//! fresh operator gives the state the live one had, for an aggregation and a deduplication;
//! what restoring the last two versions does not need is removed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::{OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn rows(keys: &[String], v: i64) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from_iter_values(keys)),
            Arc::new(Int64Array::from(vec![v; keys.len()])),
        ],
    )
    .unwrap()
}

/// Waits for the background snapshot of version `v` when one is due (every 10th version).
fn settle(dir: &Path, v: u64) {
    if v == 0 || !v.is_multiple_of(10) {
        return;
    }
    let snapshot = dir.join(format!("{v}.arrow"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !snapshot.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "no snapshot {}",
            snapshot.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The versions stored under `dir` from `from` on, each as it serves a restore: (version,
/// snapshot).
fn stored_from(dir: &Path, from: u64) -> Vec<(u64, bool)> {
    tributary_transform::stored_versions(dir)
        .unwrap()
        .iter()
        .filter(|v| v.version >= from)
        .map(|v| (v.version, v.snapshot))
        .collect()
}

/// The version files under `dir` (not the state log), by kind: (snapshot versions, delta
/// versions).
fn files(dir: &Path) -> (Vec<u64>, Vec<u64>) {
    let (mut snaps, mut deltas) = (Vec::new(), Vec::new());
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(v) = name.strip_suffix(".delta.arrow") {
            deltas.push(v.parse().unwrap());
        } else if let Some(v) = name.strip_suffix(".arrow") {
            snaps.push(v.parse().unwrap());
        }
    }
    snaps.sort();
    deltas.sort();
    (snaps, deltas)
}

async fn opened(spec: TransformSpec) -> SqlTransform {
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(schema()).await.unwrap();
    t
}

/// `count` and `sum` per key in update mode, and an operator of it started empty on `dir`.
async fn counting(dir: &Path) -> (TransformSpec, SqlTransform) {
    let spec =
        TransformSpec::new("SELECT k, count(*) AS n, sum(v) AS total FROM source GROUP BY k")
            .with_output_mode(OutputMode::Update);
    let mut live = opened(spec.clone()).await;
    live.state().unwrap().restore(dir, None).await.unwrap();
    (spec, live)
}

/// k → (n, total) of every row an update-mode batch emitted.
fn absorb(out: Option<RecordBatch>, into: &mut BTreeMap<String, (i64, i64)>) {
    let Some(out) = out else { return };
    let k = out
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let n = out.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
    let t = out.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
    for i in 0..out.num_rows() {
        into.insert(k.value(i).to_string(), (n.value(i), t.value(i)));
    }
}

#[tokio::test]
async fn an_aggregation_restored_from_snapshot_and_deltas_continues_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, mut live) = counting(dir.path()).await;
    let all: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
    let mut seen = BTreeMap::new();
    let batch_keys = |b: u64| -> Vec<String> {
        if b == 0 {
            return all.clone();
        }
        // 20 groups per batch, a different 20 each time
        (0..20)
            .map(|i| format!("k{}", (b * 37 + i * 101) % 2000))
            .collect()
    };
    let mut predicted: Option<BTreeMap<String, (i64, i64)>> = None;
    for b in 0..25u64 {
        live.apply(&rows(&batch_keys(b), b as i64)).await.unwrap();
        let mut emitted = BTreeMap::new();
        absorb(
            live.state().unwrap().end_batch().await.unwrap(),
            &mut emitted,
        );
        for (k, (n, _)) in &emitted {
            let before = seen.get(k).map_or(0, |s: &(i64, i64)| s.0);
            assert_eq!(*n, before + 1, "group {k} in batch {b}");
        }
        if let Some(p) = predicted.take() {
            assert_eq!(
                p,
                emitted,
                "batch {b} as a run restored from version {} emits it",
                b - 1
            );
        }
        seen.extend(emitted);
        live.state().unwrap().save(dir.path(), b).await.unwrap();
        settle(dir.path(), b);

        // a fresh run restoring version b, fed batch b + 1, must emit what the live one will
        let mut fresh = opened(spec.clone()).await;
        fresh
            .state()
            .unwrap()
            .restore(dir.path(), Some(b))
            .await
            .unwrap();
        fresh
            .apply(&rows(&batch_keys(b + 1), (b + 1) as i64))
            .await
            .unwrap();
        let mut p = BTreeMap::new();
        absorb(fresh.state().unwrap().end_batch().await.unwrap(), &mut p);
        predicted = Some(p);
    }
    // old files are removed in the background: the operator waits for that as it goes
    drop(live);
    let (snaps, deltas) = files(dir.path());
    // version 0 was a snapshot, 10 and 20 deltas snapshotted in the background into files of
    // their own; what restoring 23 and 24 needs is the snapshot of 20 and the deltas after it,
    // which are in the state log (the older snapshot file is removed)
    assert_eq!(snaps, vec![20]);
    assert!(
        deltas.is_empty(),
        "deltas are appended to the log: {deltas:?}"
    );
    assert_eq!(
        stored_from(dir.path(), 20),
        vec![
            (20, true),
            (21, false),
            (22, false),
            (23, false),
            (24, false)
        ]
    );
}

#[tokio::test]
async fn a_deduplication_restored_from_snapshot_and_deltas_knows_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TransformSpec::new("SELECT k FROM source").with_drop_duplicates(["k"]);
    let mut live = opened(spec.clone()).await;
    live.state()
        .unwrap()
        .restore(dir.path(), None)
        .await
        .unwrap();
    for b in 0..14u64 {
        // 1000 keys first, then 50 new ones a batch
        let keys: Vec<String> = match b {
            0 => (0..1000).map(|i| format!("k{i}")).collect(),
            b => (0..50).map(|i| format!("k{}", 1000 + b * 50 + i)).collect(),
        };
        assert_eq!(
            live.apply(&rows(&keys, 0)).await.unwrap().num_rows(),
            keys.len()
        );
        live.state().unwrap().end_batch().await.unwrap();
        live.state().unwrap().save(dir.path(), b).await.unwrap();
        settle(&dir.path().join("dedup"), b);

        let mut fresh = opened(spec.clone()).await;
        fresh
            .state()
            .unwrap()
            .restore(dir.path(), Some(b))
            .await
            .unwrap();
        // every key seen so far is a duplicate; one never seen passes
        let mut probe: Vec<String> = (0..1000).step_by(97).map(|i| format!("k{i}")).collect();
        probe.extend((1..=b).map(|x| format!("k{}", 1000 + x * 50 + 49)));
        probe.push("never".into());
        let out = fresh.apply(&rows(&probe, 0)).await.unwrap();
        assert_eq!(out.num_rows(), 1, "after version {b}");
        fresh.state().unwrap().end_batch().await.unwrap();
        let p = fresh.state().unwrap().progress().remove(0);
        assert_eq!(p.num_rows_total, 1000 + 50 * b + 1);
    }
    drop(live);
    let (snaps, deltas) = files(&dir.path().join("dedup"));
    assert_eq!(snaps, vec![10]);
    assert!(
        deltas.is_empty(),
        "deltas are appended to the log: {deltas:?}"
    );
    assert_eq!(
        stored_from(&dir.path().join("dedup"), 10),
        vec![(10, true), (11, false), (12, false), (13, false)]
    );
}

/// Versions that fill the state log: each batch changes every one of 10 k groups, so every
/// version is a snapshot of ~300 KB appended to the log; full segments move on to the next,
/// those holding only versions no restore needs are removed, and a fresh operator restores the
/// newest version exactly.
#[tokio::test]
async fn the_state_log_moves_on_and_drops_what_no_restore_needs() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, mut live) = counting(dir.path()).await;
    let keys: Vec<String> = (0..10_000).map(|i| format!("key-{i:08}")).collect();
    let batches = 24u64;
    for b in 0..batches {
        live.apply(&rows(&keys, b as i64)).await.unwrap();
        live.state().unwrap().end_batch().await.unwrap();
        live.state().unwrap().save(dir.path(), b).await.unwrap();
    }
    drop(live);
    let stored = tributary_transform::stored_versions(dir.path()).unwrap();
    assert!(
        stored.iter().all(|v| v.snapshot && v.in_log),
        "every version a snapshot in the log: {stored:?}"
    );
    assert_eq!(
        stored.last().map(|v| v.version),
        Some(batches - 1),
        "{stored:?}"
    );
    let segments: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("log-"))
        .collect();
    // 24 versions of ~300 KB are ~7 MB, 4 segments' worth; the ones before the newest (which
    // holds what restoring the last two versions needs) and the spare are gone
    assert!(segments.len() <= 3, "{segments:?}");
    assert!(
        stored.len() < batches as usize,
        "versions in removed segments are gone: {stored:?}"
    );
    let mut fresh = opened(spec).await;
    fresh
        .state()
        .unwrap()
        .restore(dir.path(), Some(batches - 1))
        .await
        .unwrap();
    fresh.apply(&rows(&keys[..1], 100)).await.unwrap();
    let mut out = BTreeMap::new();
    absorb(fresh.state().unwrap().end_batch().await.unwrap(), &mut out);
    let sum: i64 = (0..batches as i64).sum::<i64>() + 100;
    assert_eq!(
        out.get(&keys[0]),
        Some(&(batches as i64 + 1, sum)),
        "restored from the log"
    );
}
