//! Vacuum deletes only files that no longer belong to the table and are older than the
//! retention: manually (full, also files no commit named) and beside ingestion (`autoVacuum`,
//! lite: the files compaction removed).

use std::time::Duration;

use tributary_sdk::{ErrorCode, Sink};
use tributary_sinks::delta::maintenance::{self, VacuumOptions};

use super::{active_files, expected, files_on_disk, ids, sink, txn};
use crate::sink::{batch, schema};

#[tokio::test]
async fn full_vacuum_deletes_unreferenced_files_past_the_retention_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = sink(&path, "ckpt-v", &[]);
    s.open(schema(false)).await.unwrap();
    for b in 0..6u64 {
        s.write(b, &[batch(i64::try_from(b).unwrap() * 4, 4, false)])
            .await
            .unwrap();
    }
    drop(s);
    let location = path.display().to_string();
    let before = active_files(&path).await;
    maintenance::optimize(&location, &Default::default(), None)
        .await
        .unwrap();
    // A file no commit names (what a crashed attempt or an interrupted compaction leaves).
    std::fs::write(
        path.join("part-orphan-of-a-crash.parquet"),
        b"not referenced",
    )
    .unwrap();
    let active = active_files(&path).await;
    assert_eq!(active.len(), 1);
    assert_eq!(files_on_disk(&path).len(), 6 + 1 + 1);

    // Default retention (the table's, 7 days): everything is younger, nothing goes.
    let r = maintenance::vacuum(&location, &Default::default(), None, false)
        .await
        .unwrap();
    assert_eq!(r.files_deleted, 0, "{r:?}");
    assert_eq!(r.retention, Duration::from_secs(7 * 86_400));
    // A shorter retention is refused while the check is on, naming the setting.
    let e = maintenance::vacuum(
        &location,
        &Default::default(),
        Some(Duration::from_secs(3600)),
        false,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    assert!(
        e.to_string()
            .contains("spark.databricks.delta.retentionDurationCheck.enabled"),
        "{e}"
    );
    // With the check off: a dry run lists exactly the replaced files and the orphan.
    let zero = VacuumOptions {
        retention: Some(Duration::ZERO),
        dry_run: true,
        full: true,
        retention_check: false,
    };
    let dry = maintenance::vacuum_opts(&location, &Default::default(), &zero)
        .await
        .unwrap();
    let mut listed: Vec<String> = dry.files.clone();
    listed.sort();
    let mut wanted: Vec<String> = before.iter().cloned().collect();
    wanted.push("part-orphan-of-a-crash.parquet".into());
    wanted.sort();
    assert_eq!(listed, wanted);
    assert_eq!(files_on_disk(&path).len(), 8, "a dry run deletes nothing");
    let done = maintenance::vacuum_opts(
        &location,
        &Default::default(),
        &VacuumOptions {
            dry_run: false,
            ..zero
        },
    )
    .await
    .unwrap();
    assert_eq!(done.files_deleted, 7, "{done:?}");
    assert_eq!(files_on_disk(&path), active);
    assert_eq!(ids(&path).await, expected(24));
    assert_eq!(txn(&path, "ckpt-v").await, Some(5));
}

#[tokio::test]
async fn auto_vacuum_deletes_what_compaction_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let options = [
        ("delta.autoOptimize.autoCompact", "auto"),
        ("spark.databricks.delta.autoCompact.minNumFiles", "4"),
        ("autoVacuum", "true"),
        ("delta.deletedFileRetentionDuration", "interval 0 seconds"),
        (
            "spark.databricks.delta.retentionDurationCheck.enabled",
            "false",
        ),
    ];
    let mut s = sink(&path, "ckpt-a", &options);
    s.open(schema(false)).await.unwrap();
    for b in 0..13u64 {
        s.write(b, &[batch(i64::try_from(b).unwrap() * 5, 5, false)])
            .await
            .unwrap();
    }
    let stats = s.stats();
    assert!(stats.compactions >= 3, "{stats:?}");
    // Each run vacuums right after its compaction: what it just removed (retention 0) goes,
    // so storage holds exactly the table's files. (deltalake counts a removed file again on
    // each later run while its tombstone stays in the log; gone files count as deleted.)
    assert!(stats.files_vacuumed >= stats.files_compacted, "{stats:?}");
    let active = active_files(&path).await;
    assert_eq!(files_on_disk(&path), active);
    assert_eq!(ids(&path).await, expected(65));
    assert_eq!(txn(&path, "ckpt-a").await, Some(12));
}
