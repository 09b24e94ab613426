//! Fault injection: a process killed with SIGKILL in the middle of a full `VACUUM` leaves a
//! readable table with every row exactly once and every file it references on storage; the
//! next vacuum deletes the rest, and ingestion resumes.
//!
//! The table holds 8 batches compacted into one file (8 removed files) and 20,000 files no
//! commit names (what crashed writes leave), so deleting takes long enough to be cut. The test
//! runs its own binary again as the vacuuming process (`TRIBUTARY_DELTA_VACUUM_CHILD` set) and
//! kills it as soon as the first unreferenced file is gone from storage.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tributary_sdk::Sink;
use tributary_sinks::delta::maintenance::{self, VacuumOptions};

use super::{active_files, expected, files_on_disk, ids, json_commits, sink, txn};
use crate::sink::{batch, schema};

const CHILD: &str = "TRIBUTARY_DELTA_VACUUM_CHILD";
const APP: &str = "vacuum-kill";
const ORPHANS: usize = 20_000;
const ROWS: i64 = 50;

fn full_zero() -> VacuumOptions {
    VacuumOptions {
        retention: Some(Duration::ZERO),
        dry_run: false,
        full: true,
        retention_check: false,
    }
}

/// The `operation` of each JSON commit's `commitInfo`, oldest first.
fn operations(path: &std::path::Path) -> Vec<String> {
    json_commits(path)
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(path.join("_delta_log").join(name)).unwrap();
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find_map(|a| a["commitInfo"]["operation"].as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_killed_mid_vacuum_leaves_the_table_exact() {
    if let Ok(path) = std::env::var(CHILD) {
        // The vacuuming process: one full vacuum, retention 0 (killed before it ends).
        maintenance::vacuum_opts(&path, &Default::default(), &full_zero())
            .await
            .unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = sink(&path, APP, &[]);
    s.open(schema(false)).await.unwrap();
    for b in 0..8i64 {
        s.write(u64::try_from(b).unwrap(), &[batch(b * ROWS, ROWS, false)])
            .await
            .unwrap();
    }
    drop(s);
    let location = path.display().to_string();
    maintenance::optimize(&location, &Default::default(), None)
        .await
        .unwrap();
    let active = active_files(&path).await;
    assert_eq!(active.len(), 1);
    let data = std::fs::read(path.join(active.iter().next().unwrap())).unwrap();
    for i in 0..ORPHANS {
        std::fs::write(
            path.join(format!(
                "part-{i:05}-orphan-of-a-crashed-write-c000.snappy.parquet"
            )),
            &data,
        )
        .unwrap();
    }
    let total = files_on_disk(&path).len();
    assert_eq!(total, 8 + 1 + ORPHANS);

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "maintenance::vacuum_kill::process_killed_mid_vacuum_leaves_the_table_exact",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, &location)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut exited = None;
    while Instant::now() < deadline {
        if files_on_disk(&path).len() < total {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            exited = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        exited.is_none(),
        "the vacuum ended before any file was deleted: {exited:?}"
    );

    let left = files_on_disk(&path).len();
    let ops = operations(&path);
    println!("killed mid-vacuum: {left} of {total} files left; commits {ops:?}");
    // The log says a vacuum began and never ended.
    assert_eq!(
        ops.last().map(String::as_str),
        Some("VACUUM START"),
        "{ops:?}"
    );
    assert!(
        left > active.len() && left < total,
        "the kill did not land while the vacuum deleted ({left} of {total} files left)"
    );
    // Readers see the table as it was: its files are all there, every row once.
    assert_eq!(active_files(&path).await, active);
    assert!(active.is_subset(&files_on_disk(&path)));
    assert_eq!(ids(&path).await, expected(8 * ROWS));
    assert_eq!(txn(&path, APP).await, Some(7));

    // The next vacuum deletes what the killed one left.
    let r = maintenance::vacuum_opts(&location, &Default::default(), &full_zero())
        .await
        .unwrap();
    assert_eq!(files_on_disk(&path), active, "{r:?}");
    assert_eq!(ids(&path).await, expected(8 * ROWS));

    // Ingestion resumes after the last committed batch; a replay of it is skipped.
    let mut s = sink(&path, APP, &[]);
    s.open(schema(false)).await.unwrap();
    assert_eq!(s.committed_batch(), Some(7));
    s.write(7, &[batch(7 * ROWS, ROWS, false)]).await.unwrap();
    s.write(8, &[batch(8 * ROWS, ROWS, false)]).await.unwrap();
    assert_eq!(s.stats().skipped_replays, 1);
    assert_eq!(ids(&path).await, expected(9 * ROWS));
}
