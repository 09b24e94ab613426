//! Fault injection: a writer process killed with SIGKILL while it compacts leaves a readable
//! table with every row exactly once, its `txn` version matching the rows, and the files the
//! interrupted compaction wrote unreferenced until a full vacuum deletes them.
//!
//! The test runs its own binary again as the writer (`TRIBUTARY_DELTA_CRASH_CHILD` set): it
//! appends 200-row batches with auto-compaction after every second small file, resuming after
//! the last batch the table holds, so nearly all its time is spent compacting. The parent kills
//! it after a different delay each round and checks the table between rounds.

use std::process::{Command, Stdio};
use std::time::Duration;

use tributary_sdk::Sink;
use tributary_sinks::delta::maintenance::{self, VacuumOptions};

use super::{active_files, expected, files_on_disk, ids, json_commits, sink, txn};
use crate::sink::{batch, schema};

const CHILD: &str = "TRIBUTARY_DELTA_CRASH_CHILD";
const ROWS: i64 = 200;
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
    for (round, delay_ms) in [700u64, 1100, 450, 1600, 900].into_iter().enumerate() {
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
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
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
        unreferenced_after_kill.push(on_disk.difference(&named).count());
    }
    println!("files no commit named, after each kill: {unreferenced_after_kill:?}");
    let last = txn(&path, APP).await.expect("the writer committed batches");
    assert!(last >= 4, "only {} batches in 5 rounds", last + 1);

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
    assert_eq!(files_on_disk(&path), active_files(&path).await, "{r:?}");
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
