//! Expired log clean-up after checkpoints: JSON commits older than `delta.logRetentionDuration`
//! before a checkpoint are deleted, the latest version still loads with its rows and `txn`;
//! and the manual `checkpoint`.

use std::time::Duration;

use tributary_sdk::Sink;
use tributary_sinks::delta::maintenance;

use super::{expected, ids, json_commits, open, sink, txn};
use crate::sink::{batch, schema};

#[tokio::test]
async fn expired_log_files_are_removed_after_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let options = [
        ("checkpointInterval", "5"),
        ("delta.logRetentionDuration", "interval 1 second"),
    ];
    let mut s = sink(&path, "ckpt-l", &options);
    s.open(schema(false)).await.unwrap();
    for b in 0..7u64 {
        s.write(b, &[batch(i64::try_from(b).unwrap() * 3, 3, false)])
            .await
            .unwrap();
    }
    // Versions 0..=6 written, a checkpoint at 4; nothing older than a second yet.
    assert_eq!(json_commits(&path).len(), 7);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for b in 7..12u64 {
        s.write(b, &[batch(i64::try_from(b).unwrap() * 3, 3, false)])
            .await
            .unwrap();
    }
    // The checkpoint at 9 made every commit before the checkpoint at 4 (outside the
    // retention) removable; commits 4.. stay (deltalake keeps a complete checkpoint).
    let commits = json_commits(&path);
    assert!(s.stats().log_files_removed >= 4, "{:?}", s.stats());
    assert!(
        !commits.contains(&format!("{:020}.json", 0)),
        "version 0 still there: {commits:?}"
    );
    assert!(commits.contains(&format!("{:020}.json", 11)));
    let table = open(&path).await;
    assert_eq!(table.version(), Some(11));
    assert_eq!(
        table.snapshot().unwrap().metadata().configuration()["delta.logRetentionDuration"],
        "interval 1 second"
    );
    assert_eq!(ids(&path).await, expected(36));
    assert_eq!(txn(&path, "ckpt-l").await, Some(11));

    // A reopened sink reads its txn version from the checkpoint and the remaining commits.
    drop(s);
    let mut again = sink(&path, "ckpt-l", &options);
    again.open(schema(false)).await.unwrap();
    assert_eq!(again.committed_batch(), Some(11));
}

#[tokio::test]
async fn manual_checkpoint_writes_one_and_cleans_expired_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let options = [("delta.logRetentionDuration", "interval 0 seconds")];
    let mut s = sink(&path, "ckpt-k", &options);
    s.open(schema(false)).await.unwrap();
    for b in 0..6u64 {
        s.write(b, &[batch(i64::try_from(b).unwrap() * 2, 2, false)])
            .await
            .unwrap();
    }
    drop(s);
    let location = path.display().to_string();
    // No checkpoint yet (interval 100): nothing may be removed before the first one.
    let first = maintenance::checkpoint(&location, &Default::default())
        .await
        .unwrap();
    assert_eq!(first.version, Some(5));
    assert!(path
        .join(format!("_delta_log/{:020}.checkpoint.parquet", 5))
        .exists());
    // Everything before the checkpoint at 5 is expired and goes.
    assert_eq!(first.log_files_removed, 5, "{first:?}");
    assert_eq!(json_commits(&path), vec![format!("{:020}.json", 5)]);
    assert!(first.log_files >= 3, "{first:?}"); // 5.json, its checkpoint, _last_checkpoint
    assert_eq!(ids(&path).await, expected(12));
    assert_eq!(txn(&path, "ckpt-k").await, Some(5));
}
