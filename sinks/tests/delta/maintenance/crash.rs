//! Fault injection: a writer process killed with SIGKILL while it compacts leaves a readable
//! table with every row exactly once, its `txn` version matching the rows, and the files the
//! interrupted compaction wrote unreferenced until a full vacuum deletes them.
//!
//! The test runs its own binary again as the writer (`TRIBUTARY_DELTA_CRASH_CHILD` set): it
//! appends 20,000-row batches with auto-compaction after every second small file (each run
//! rewrites the whole, growing table), resuming after the last batch the table holds, so most
//! of its time is spent compacting. The parent kills it as soon as a file that no commit names
//! and that is larger than a batch's file (a compaction's output, not yet committed) appears
//! on storage, else after a different delay each round, and checks the table between rounds.

use std::process::{Command, Stdio};
use std::time::Duration;

use tributary_sdk::Sink;
use tributary_sinks::delta::maintenance::{self, VacuumOptions};

use super::{active_files, expected, files_on_disk, ids, json_commits, sink, txn};
use crate::sink::{batch, schema};

const CHILD: &str = "TRIBUTARY_DELTA_CRASH_CHILD";
const ROWS: i64 = 20_000;
const APP: &str = "ckpt-crash";

fn options() -> [(&'static str, &'static str); 2] {
    [
        ("delta.autoOptimize.autoCompact", "true"),
        ("spark.databricks.delta.autoCompact.minNumFiles", "2"),
    ]
}

/// The writer: never returns (killed by the parent).
async fn child(path: &std::path::Path) -> ! {
    let mut s = sink(path, APP, &options());
    s.open(schema(false)).await.unwrap();
    let mut next = s.committed_batch().map_or(0, |b| b + 1);
    loop {
        let b = u64::try_from(next).unwrap();
        s.write(b, &[batch(next * ROWS, ROWS, false)])
            .await
            .unwrap();
        next += 1;
    }
}

/// Every data file an `add` action of any JSON commit named.
fn ever_added(path: &std::path::Path) -> std::collections::BTreeSet<String> {
    let mut named = std::collections::BTreeSet::new();
    for name in json_commits(path) {
        let text = std::fs::read_to_string(path.join("_delta_log").join(name)).unwrap();
        for line in text.lines() {
            let action: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(p) = action["add"]["path"].as_str() {
                named.insert(p.to_string());
            }
        }
    }
    named
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_killed_mid_compaction_leaves_the_table_exact() {
    if let Ok(path) = std::env::var(CHILD) {
        child(std::path::Path::new(&path)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let exe = std::env::current_exe().unwrap();
    let mut unreferenced_after_kill = Vec::new();
    for (round, delay_ms) in [700u64, 1100, 450, 1600, 900, 1300, 2000, 1200]
        .into_iter()
        .enumerate()
    {
        let mut child = Command::new(&exe)
            .args([
                "maintenance::crash::writer_killed_mid_compaction_leaves_the_table_exact",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, &path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill as soon as a compaction's output is on storage before its commit, or at the
        // round's delay.
        let deadline = std::time::Instant::now() + Duration::from_millis(delay_ms);
        let (mut named, mut commits) = (std::collections::BTreeSet::new(), 0);
        let before = if path.exists() {
            files_on_disk(&path)
        } else {
            Default::default()
        };
        while std::time::Instant::now() < deadline {
            if path.join("_delta_log").exists() {
                let now = json_commits(&path).len();
                if now != commits {
                    (named, commits) = (ever_added(&path), now);
                }
                // A compaction's output: unnamed, new, and larger than a batch's file.
                let batch_file = named
                    .iter()
                    .filter_map(|f| std::fs::metadata(path.join(f)).ok())
                    .map(|m| m.len())
                    .min()
                    .unwrap_or(u64::MAX);
                if files_on_disk(&path).iter().any(|f| {
                    !named.contains(f)
                        && !before.contains(f)
                        && std::fs::metadata(path.join(f))
                            .is_ok_and(|m| m.len().saturating_mul(2) > batch_file.saturating_mul(3))
                }) {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if !path.join("_delta_log").exists() {
            continue; // killed before the first commit
        }
        let last = txn(&path, APP).await;
        let n = last.map_or(0, |v| v + 1);
        assert_eq!(ids(&path).await, expected(n * ROWS), "round {round}");
        let on_disk = files_on_disk(&path);
        let active = active_files(&path).await;
        assert!(active.is_subset(&on_disk), "round {round}");
        // Files no commit ever named: written by the compaction (or batch) the kill cut short.
        let named = ever_added(&path);
        let orphans: Vec<(String, u64)> = on_disk
            .difference(&named)
            .filter(|f| !before.contains(*f))
            .map(|f| {
                (
                    f.clone(),
                    std::fs::metadata(path.join(f)).map_or(0, |m| m.len()),
                )
            })
            .collect();
        unreferenced_after_kill.push(orphans);
    }
    // A batch's file holds one batch of rows; a compaction's output holds the table's.
    println!("files no commit named, after each kill (name, bytes): {unreferenced_after_kill:?}");
    assert!(
        unreferenced_after_kill.iter().any(|o| !o.is_empty()),
        "no kill landed during a write"
    );
    // At least one kill cut a compaction short: an unnamed file holding more than one batch
    // (larger than 1.5 x the smallest file a batch commit named).
    let named = ever_added(&path);
    let smallest_batch_file = named
        .iter()
        .filter_map(|f| std::fs::metadata(path.join(f)).ok())
        .map(|m| m.len())
        .min()
        .unwrap();
    assert!(
        unreferenced_after_kill
            .iter()
            .flatten()
            .any(|(_, bytes)| *bytes * 2 > smallest_batch_file * 3),
        "no kill landed during a compaction (batch files are {smallest_batch_file} bytes)"
    );
    let last = txn(&path, APP).await.expect("the writer committed batches");
    assert!(last >= 2, "only {} batches in 8 rounds", last + 1);

    // A full vacuum (retention 0, check off: no other reader here) deletes every file the
    // table does not reference — replaced ones and ones an interrupted compaction wrote.
    let r = maintenance::vacuum_opts(
        &path.display().to_string(),
        &Default::default(),
        &VacuumOptions {
            retention: Some(Duration::ZERO),
            dry_run: false,
            full: true,
            retention_check: false,
        },
    )
    .await
    .unwrap();
    // Left over: only the local store's staging files (`<name>#<n>`) of a write the kill cut
    // short; object_store's listing hides them, so no vacuum can see or delete them (harmless
    // to readers, but disk space).
    let active = active_files(&path).await;
    let left: Vec<String> = files_on_disk(&path).difference(&active).cloned().collect();
    println!("after a full vacuum, unreferenced files left: {left:?} ({r:?})");
    assert!(left.iter().all(|f| f.contains('#')), "{left:?}");
    assert!(active.is_subset(&files_on_disk(&path)));
    assert_eq!(ids(&path).await, expected((last + 1) * ROWS));

    // The pipeline resumes: the batch after the last committed one is written, a replay of
    // the last one skipped.
    let mut s = sink(&path, APP, &options());
    s.open(schema(false)).await.unwrap();
    assert_eq!(s.committed_batch(), Some(last));
    let b = u64::try_from(last).unwrap();
    s.write(b, &[batch(last * ROWS, ROWS, false)])
        .await
        .unwrap();
    s.write(b + 1, &[batch((last + 1) * ROWS, ROWS, false)])
        .await
        .unwrap();
    assert_eq!(s.stats().skipped_replays, 1);
    assert_eq!(ids(&path).await, expected((last + 2) * ROWS));
}
