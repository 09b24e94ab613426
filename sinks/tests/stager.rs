//! The Parquet sink's staged write (distributed batches): partitions staged by separate sink
//! objects (as executors would), committed by another (the driver), exactly once across retried
//! tasks, repeated commits, replays and a commit interrupted between its renames. The Delta
//! sink's stager is tested in `tests/delta/stager.rs`.
//!
//! Rows are read back with the crate's reader and, when `scripts/services/registry-python.sh`
//! has run, with pyarrow's dataset reader (the independent reader, which must skip `_staging/`
//! and `_commits/`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::{ConnectorContext, ErrorCode, Options, Sink, SinkFactoryExt, StagedOutput};
use tributary_sinks::parquet::{read_dir_batches, ParquetSink};
use tributary_sinks::ParquetSinkFactory;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]))
}

fn batch(ids: std::ops::Range<i64>) -> RecordBatch {
    RecordBatch::try_new(schema(), vec![Arc::new(Int64Array::from_iter_values(ids))]).unwrap()
}

/// A sink built from options, as the driver and every executor build theirs.
fn sink(dir: &Path) -> Box<dyn Sink> {
    let options = Options::new().with("path", dir.display().to_string());
    ParquetSinkFactory
        .create(&options, &ConnectorContext::default())
        .unwrap()
}

/// One task: a fresh sink object stages rows `ids` of `partition` in `parts` parts (plus an
/// empty one).
async fn stage(
    dir: &Path,
    batch_id: u64,
    partition: usize,
    ids: std::ops::Range<i64>,
    parts: i64,
) -> StagedOutput {
    let mut s = sink(dir);
    let st = s.as_stager().expect("parquet sink is a stager");
    st.begin_partition(batch_id, partition, schema())
        .await
        .unwrap();
    st.stage_part(&batch(0..0)).await.unwrap();
    let step = ((ids.end - ids.start) / parts).max(1);
    let mut start = ids.start;
    while start < ids.end {
        let end = (start + step).min(ids.end);
        st.stage_part(&batch(start..end)).await.unwrap();
        start = end;
    }
    st.finish_partition().await.unwrap()
}

/// A task attempt killed mid-write: staged parts, never finished.
async fn killed_attempt(dir: &Path, batch_id: u64, partition: usize, ids: std::ops::Range<i64>) {
    let mut s = sink(dir);
    let st = s.as_stager().unwrap();
    st.begin_partition(batch_id, partition, schema())
        .await
        .unwrap();
    st.stage_part(&batch(ids)).await.unwrap();
    // Dropped without finish_partition: the file has no footer, as after a kill -9.
    std::mem::drop(s);
}

/// The driver: a fresh sink object commits the manifests.
async fn commit(dir: &Path, batch_id: u64, outputs: &[StagedOutput]) -> tributary_sdk::Result<()> {
    let mut s = sink(dir);
    s.as_stager()
        .unwrap()
        .commit_staged(batch_id, outputs.to_vec())
        .await
}

fn ids(dir: &Path) -> Vec<i64> {
    let mut ids: Vec<i64> = read_dir_batches(dir)
        .unwrap()
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect();
    ids.sort_unstable();
    ids
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

const P0: &str = "part-00000000000000000000-00000.parquet";
const P1: &str = "part-00000000000000000000-00001.parquet";
const P2: &str = "part-00000000000000000000-00002.parquet";

#[tokio::test]
async fn partitions_staged_by_two_executors_are_committed_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Executor A stages partition 0, executor B partition 1. Partition 1 also had a first
    // attempt that finished but lost to the retry (not in the manifests), and one killed
    // mid-write.
    let p0 = stage(&out, 0, 0, 0..100, 1).await;
    killed_attempt(&out, 0, 1, 100..180).await;
    let lost = stage(&out, 0, 1, 100..250, 2).await;
    let p1 = stage(&out, 0, 1, 100..250, 3).await;
    assert_eq!(
        (p0.rows, p1.rows, p0.partition, p1.partition),
        (100, 150, 0, 1)
    );
    assert!(p0.bytes > 0 && p1.bytes > 0);
    assert_ne!(
        lost.manifest, p1.manifest,
        "each attempt stages under its own name"
    );
    assert_eq!(p1.manifest["rows"], 150);
    // Staged, not published.
    assert!(ids(&out).is_empty());
    assert_eq!(names(&out), set(&["_staging"]));
    assert_eq!(names(&out.join("_staging/00000000000000000000")).len(), 4);

    commit(&out, 0, &[p0.clone(), p1.clone()]).await.unwrap();
    assert_eq!(ids(&out), (0..250).collect::<Vec<_>>());
    // The orphans of the lost and killed attempts went with the staging directory.
    assert_eq!(names(&out), set(&["_commits", "_staging", P0, P1]));
    assert!(names(&out.join("_staging")).is_empty());

    // Commit twice = once (the driver retried its commit call).
    commit(&out, 0, &[p0.clone(), p1.clone()]).await.unwrap();
    assert_eq!(ids(&out), (0..250).collect::<Vec<_>>());

    // Batch 1: an empty partition and a non-empty one; batch 0's record is pruned.
    let e0 = stage(&out, 1, 0, 0..0, 1).await;
    assert_eq!(e0.manifest["file"], serde_json::Value::Null);
    let e1 = stage(&out, 1, 1, 250..260, 1).await;
    commit(&out, 1, &[e0, e1]).await.unwrap();
    assert_eq!(ids(&out), (0..260).collect::<Vec<_>>());
    assert_eq!(
        names(&out.join("_commits")),
        set(&["00000000000000000001.json"])
    );
    assert!(names(&out).contains("part-00000000000000000001-00001.parquet"));
    assert!(!names(&out).contains("part-00000000000000000001-00000.parquet"));
}

#[tokio::test]
async fn replay_after_commit_and_after_a_commit_interrupted_between_renames() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Batch 0 in three partitions. The commit is interrupted between its renames: partition 1's
    // staged file vanishes (fault injection), so partitions 0 and 2 are renamed and the call
    // fails on partition 1, as a driver dying between renames would leave it.
    let a = [
        stage(&out, 0, 0, 0..100, 2).await,
        stage(&out, 0, 1, 100..200, 2).await,
        stage(&out, 0, 2, 200..300, 2).await,
    ];
    let staged_p1 = out.join(a[1].manifest["file"].as_str().unwrap());
    std::fs::remove_file(&staged_p1).unwrap();
    let interrupted = commit(&out, 0, &[a[0].clone(), a[2].clone(), a[1].clone()]).await;
    assert!(interrupted.is_err());
    let visible = names(&out);
    assert!(visible.contains(P0) && visible.contains(P2) && !visible.contains(P1));
    // The window a reader can see: part of the batch.
    assert_eq!(ids(&out).len(), 200);

    // The driver replays the batch: tasks stage again (the replay splits the range in two
    // this time) and the driver commits. Partition 2 of the interrupted commit is removed.
    let b = [
        stage(&out, 0, 0, 0..150, 1).await,
        stage(&out, 0, 1, 150..300, 3).await,
    ];
    commit(&out, 0, &b).await.unwrap();
    assert_eq!(ids(&out), (0..300).collect::<Vec<_>>());
    assert_eq!(names(&out), set(&["_commits", "_staging", P0, P1]));

    // The driver died after the commit, before its `commits/0`: the batch is replayed again,
    // staged again, committed again: skipped, the replay's staged files removed.
    let c = [
        stage(&out, 0, 0, 0..150, 1).await,
        stage(&out, 0, 1, 150..300, 1).await,
    ];
    commit(&out, 0, &c).await.unwrap();
    assert_eq!(ids(&out), (0..300).collect::<Vec<_>>());
    assert_eq!(names(&out), set(&["_commits", "_staging", P0, P1]));
    assert!(names(&out.join("_staging")).is_empty());

    // A retry of the interrupted call itself (same manifests, some already renamed) completes it.
    let d = [
        stage(&out, 1, 0, 300..310, 1).await,
        stage(&out, 1, 1, 310..320, 1).await,
    ];
    let blocker = out.join("part-00000000000000000001-00001.parquet");
    std::fs::create_dir_all(&blocker).unwrap();
    std::fs::write(blocker.join("x"), b"x").unwrap();
    assert!(
        commit(&out, 1, &d).await.is_err(),
        "a directory blocks the rename"
    );
    std::fs::remove_dir_all(&blocker).unwrap();
    commit(&out, 1, &d).await.unwrap();
    assert_eq!(ids(&out), (0..320).collect::<Vec<_>>());
}

#[tokio::test]
async fn embedded_and_distributed_attempts_of_one_batch_replace_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Batch 3 was committed by a distributed attempt, then the pipeline was moved back to the
    // embedded engine before `commits/3`: the embedded write of batch 3 replaces it.
    let staged = [
        stage(&out, 3, 0, 0..10, 1).await,
        stage(&out, 3, 1, 10..20, 1).await,
    ];
    commit(&out, 3, &staged).await.unwrap();
    let mut embedded = ParquetSink::new(&out);
    embedded.open(schema()).await.unwrap();
    embedded.write(3, &[batch(0..20)]).await.unwrap();
    assert_eq!(ids(&out), (0..20).collect::<Vec<_>>());
    assert!(names(&out).contains("part-00000000000000000003.parquet"));
    assert!(names(&out.join("_commits")).is_empty());

    // And the other way: batch 4 written by the embedded engine, then committed distributed.
    embedded.write(4, &[batch(20..30)]).await.unwrap();
    let staged = [
        stage(&out, 4, 0, 20..25, 1).await,
        stage(&out, 4, 1, 25..30, 1).await,
    ];
    commit(&out, 4, &staged).await.unwrap();
    assert_eq!(ids(&out), (0..30).collect::<Vec<_>>());
    assert!(!names(&out).contains("part-00000000000000000004.parquet"));
}

#[tokio::test]
async fn outputs_that_do_not_belong_to_the_batch_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let p0 = stage(&out, 0, 0, 0..10, 1).await;
    let mut escaping = p0.clone();
    escaping.manifest["file"] = "_staging/00000000000000000000/../../x.parquet".into();
    let mut other_batch = p0.clone();
    other_batch.batch_id = 1;
    let mut wrong_partition = p0.clone();
    wrong_partition.partition = 1;
    for (outputs, what) in [
        (vec![escaping], "traversal"),
        (vec![other_batch], "another batch"),
        (vec![wrong_partition], "another partition's file"),
        (vec![p0.clone(), p0.clone()], "two outputs for a partition"),
    ] {
        let e = commit(&out, 0, &outputs).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal, "{what}: {e}");
    }
    assert!(ids(&out).is_empty());
    commit(&out, 0, &[p0]).await.unwrap();
    assert_eq!(ids(&out).len(), 10);
}

const PYARROW_READ: &str = r#"
import json, os, sys
import pyarrow.dataset as ds
ids = sorted(ds.dataset(sys.argv[1], format="parquet").to_table(columns=["id"]).column("id").to_pylist())
print(json.dumps(ids))
sys.stdout.flush()
os._exit(0)
"#;

#[tokio::test]
async fn pyarrow_reads_committed_partitions_and_skips_staging() {
    let Some(py) = tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let staged = [
        stage(&out, 0, 0, 0..100, 2).await,
        stage(&out, 0, 1, 100..200, 2).await,
    ];
    commit(&out, 0, &staged).await.unwrap();
    // Batch 1 staged (a complete and a killed attempt), not committed.
    stage(&out, 1, 0, 200..300, 1).await;
    killed_attempt(&out, 1, 1, 300..350).await;
    let read = Command::new(&py)
        .arg("-c")
        .arg(PYARROW_READ)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "pyarrow failed: {}",
        String::from_utf8_lossy(&read.stderr)
    );
    let got: Vec<i64> = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(got, (0..200).collect::<Vec<_>>());
}
