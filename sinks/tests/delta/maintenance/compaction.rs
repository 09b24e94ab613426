//! Auto-compaction after the sink's commits: fewer files, the same rows, the `txn` version
//! intact (also when loaded from a checkpoint), replays after a crash still skipped; and the
//! manual `optimize`.

use tributary_sdk::Sink;
use tributary_sinks::delta::maintenance::{self, options::AUTO_COMPACT};

use crate::reader::{column, python, read};

use super::{active_files, expected, ids, json_commits, open, sink, txn};
use crate::sink::{batch, schema};

#[tokio::test]
async fn auto_compaction_keeps_rows_and_txn_and_replays_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let options = [
        ("delta.autoOptimize.autoCompact", "true"),
        ("spark.databricks.delta.autoCompact.minNumFiles", "5"),
        ("delta.targetFileSize", "64mb"),
        ("delta.checkpointInterval", "4"),
    ];
    let mut s = sink(&path, "ckpt-c", &options);
    s.open(schema(false)).await.unwrap();
    for b in 0..23u64 {
        let first = i64::try_from(b).unwrap() * 10;
        s.write(b, &[batch(first, 10, false)]).await.unwrap();
    }
    let stats = s.stats();
    // A run at 5 small files, then at every 5 more (4 new + the compacted one): 4 runs.
    assert!(stats.compactions >= 4, "{stats:?}");
    assert_eq!(stats.maintenance_failures, 0, "{stats:?}");
    assert!(stats.files_compacted >= 20, "{stats:?}");
    let files = active_files(&path).await;
    assert!(files.len() <= 5, "23 batches left {} files", files.len());
    assert_eq!(ids(&path).await, expected(230));
    assert_eq!(txn(&path, "ckpt-c").await, Some(22));

    // The OPTIMIZE commits changed no data: their removes and adds say dataChange = false.
    let log = path.join("_delta_log");
    let mut optimize_commits = 0;
    for name in json_commits(&path) {
        let text = std::fs::read_to_string(log.join(&name)).unwrap();
        if text.contains("\"operation\":\"OPTIMIZE\"") {
            optimize_commits += 1;
            for line in text.lines() {
                let action: serde_json::Value = serde_json::from_str(line).unwrap();
                for kind in ["add", "remove"] {
                    if let Some(a) = action.get(kind) {
                        assert_eq!(a["dataChange"], false, "{name}: {line}");
                    }
                }
                assert!(action.get("txn").is_none(), "{name}: {line}");
            }
        }
    }
    assert_eq!(u64::try_from(optimize_commits).unwrap(), stats.compactions);
    let table = open(&path).await;
    let config = &table.snapshot().unwrap().metadata().configuration().clone();
    assert_eq!(config.get(AUTO_COMPACT).map(String::as_str), Some("true"));
    assert_eq!(
        config.get("delta.targetFileSize").map(String::as_str),
        Some("67108864")
    );

    // Crash: the runtime never logged batch 22's commit and replays it into a new sink, which
    // reads the txn version from a table whose latest state comes from compactions and a
    // checkpoint.
    drop(s);
    assert!(log.join("_last_checkpoint").exists());
    let mut again = sink(&path, "ckpt-c", &options);
    again.open(schema(false)).await.unwrap();
    assert_eq!(again.committed_batch(), Some(22));
    again.write(22, &[batch(220, 10, false)]).await.unwrap();
    assert_eq!(again.stats().skipped_replays, 1);
    again.write(23, &[batch(230, 10, false)]).await.unwrap();
    assert_eq!(ids(&path).await, expected(240));
    assert_eq!(txn(&path, "ckpt-c").await, Some(23));
    // The independent reader (Python deltalake) sees the same rows and txn version.
    if let Some(py) = python() {
        let table = read(&py, &path, &["ckpt-c"]);
        assert_eq!(column::<i64>(&table, "id"), expected(240));
        assert_eq!(table["txn"]["ckpt-c"], 23);
    }
}

#[tokio::test]
async fn without_auto_compaction_every_batch_keeps_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = sink(&path, "ckpt-n", &[]);
    s.open(schema(false)).await.unwrap();
    for b in 0..12u64 {
        let first = i64::try_from(b).unwrap() * 10;
        s.write(b, &[batch(first, 10, false)]).await.unwrap();
    }
    assert_eq!(s.stats().compactions, 0);
    assert_eq!(active_files(&path).await.len(), 12);
}

#[tokio::test]
async fn manual_optimize_reports_and_keeps_txn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = sink(&path, "ckpt-m", &[("partitionBy", "country")]);
    s.open(schema(false)).await.unwrap();
    for b in 0..8u64 {
        let first = i64::try_from(b).unwrap() * 9;
        s.write(b, &[batch(first, 9, false)]).await.unwrap();
    }
    drop(s);
    assert_eq!(
        active_files(&path).await.len(),
        24,
        "8 batches x 3 countries"
    );
    let location = path.display().to_string();
    let report = maintenance::optimize(&location, &Default::default(), None)
        .await
        .unwrap();
    assert_eq!(report.files_removed, 24, "{report:?}");
    assert_eq!(report.files_added, 3, "one per partition: {report:?}");
    assert_eq!(report.partitions_optimized, 3);
    assert_eq!(report.target_size, 1 << 30, "Databricks' OPTIMIZE default");
    assert!(report.bytes_removed > report.bytes_added / 2, "{report:?}");
    assert_eq!(report.version, Some(8));
    assert_eq!(report.version_before, Some(7));
    assert_eq!(active_files(&path).await.len(), 3);
    assert_eq!(ids(&path).await, expected(72));
    assert_eq!(txn(&path, "ckpt-m").await, Some(7));
    // Nothing left to compact: no commit.
    let again = maintenance::optimize(&location, &Default::default(), None)
        .await
        .unwrap();
    assert_eq!((again.files_removed, again.version), (0, Some(8)));
    // A location without a table is an error naming it.
    let e = maintenance::optimize(
        &dir.path().join("none").display().to_string(),
        &Default::default(),
        None,
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("none"), "{e}");
}
