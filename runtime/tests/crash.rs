//! Crash test: SIGKILL the `tributary` binary at random points while it ingests many files into
//! Parquet, restart it each time, and check that every input row lands exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use rand::{Rng, SeedableRng};

#[test]
fn sigkill_at_random_points_loses_and_duplicates_nothing() {
    let l = Layout::new();
    // Many small files, one file per batch: every batch is a full plan/log/read/write/commit cycle.
    let mut next_id = write_json_files(&l.input(), "f000", 100, 20, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 1"#, "availableNow");

    let seed: u64 = std::env::var("TRIBUTARY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("crash test seed {seed} (set TRIBUTARY_CRASH_SEED to repeat)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

    let mut kills = 0;
    let mut iterations = 0;
    while kills < 12 {
        iterations += 1;
        assert!(
            iterations <= 40,
            "only {kills} of {iterations} runs were killed mid-way"
        );
        // More files keep arriving while the pipeline restarts.
        next_id = write_json_files(&l.input(), &format!("f{iterations:03}"), 15, 20, next_id);
        let mut child = tributary().args(["run", "-q"]).arg(&p).spawn().unwrap();
        let delay = Duration::from_millis(rng.random_range(5..150));
        let t0 = Instant::now();
        let mut exited = None;
        while t0.elapsed() < delay {
            if let Some(status) = child.try_wait().unwrap() {
                exited = Some(status);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        match exited {
            Some(status) => assert!(status.success(), "iteration {iterations}: run failed"),
            None => {
                // SIGKILL: no chance to clean up.
                child.kill().unwrap();
                child.wait().unwrap();
                kills += 1;
            }
        }
    }

    // A final run to completion.
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let ids = output_ids(&l.output());
    let expected: Vec<i64> = (0..next_id as i64).collect();
    if ids != expected {
        let mut distinct = ids.clone();
        distinct.dedup();
        panic!(
            "seed {seed}: {} rows in output, {} distinct, {} expected",
            ids.len(),
            distinct.len(),
            expected.len()
        );
    }
    eprintln!(
        "{kills} kills in {iterations} runs, {} rows exactly once",
        ids.len()
    );
    // Killed writes leave only hidden temp files, never a visible partial file; beside the
    // batches the directory holds only its owner record (readers skip names starting with `_`).
    for e in std::fs::read_dir(l.output()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            name.starts_with("part-") || name.starts_with(".part-") || name == "_owner.json",
            "{name}"
        );
    }
}
