//! `SIGTERM` (what `kill`, systemd and Kubernetes send) during a micro-batch run: the run stops
//! after the batch in flight, exits 0, and leaves no batch planned but uncommitted; runs stopped
//! that way at random points, then a last run, write every input row exactly once.
//!
//! The real-time case (the long batch ends and commits) is in `real_time.rs`, beside its broker.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rand::{Rng, SeedableRng};

fn ids_in(dir: &Path) -> Vec<u64> {
    let mut ids: Vec<u64> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

fn terminate(child: &mut Child) {
    let pid = child.id().to_string();
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(ok.success(), "kill -TERM {pid} failed");
}

/// Waits for the child to exit on its own, at most `limit`.
fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("the run did not end within {limit:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sigterm_mid_run_finishes_the_batch_and_commits_it() {
    let l = Layout::new();
    let mut next_id = write_json_files(&l.input(), "f000", 150, 20, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 1"#, "availableNow");
    let seed: u64 = std::env::var("TRIBUTARY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("sigterm test seed {seed} (set TRIBUTARY_CRASH_SEED to repeat)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let commits = l.checkpoint().join("commits");
    let offsets = l.checkpoint().join("offsets");

    let (mut stopped, mut runs) = (0, 0);
    while stopped < 6 {
        runs += 1;
        assert!(
            runs <= 20,
            "only {stopped} of {runs} runs were stopped mid-way"
        );
        next_id = write_json_files(&l.input(), &format!("f{runs:03}"), 20, 20, next_id);
        let before = ids_in(&commits).len();
        let mut child = tributary()
            .args(["run"])
            .arg(&p)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signal once the run is in its batch loop (a batch of this run committed): before
        // that the handler may not be installed yet, and nothing would be in flight anyway.
        let t0 = Instant::now();
        let mut finished = None;
        while ids_in(&commits).len() <= before {
            if let Some(s) = child.try_wait().unwrap() {
                finished = Some(s);
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "no batch committed");
            std::thread::sleep(Duration::from_millis(1));
        }
        if finished.is_none() {
            std::thread::sleep(Duration::from_millis(rng.random_range(0..40)));
            finished = child.try_wait().unwrap();
            if finished.is_none() {
                terminate(&mut child);
                stopped += 1;
            }
        }
        let status = wait_bounded(&mut child, Duration::from_secs(30));
        let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
        assert!(status.success(), "run {runs} ended with {status}: {err}");
        if finished.is_none() {
            assert!(
                err.contains("SIGTERM: stopping after the current batch"),
                "run {runs}: {err}"
            );
        }
        // A clean stop leaves nothing to replay: every planned batch is committed.
        assert_eq!(
            ids_in(&offsets).last(),
            ids_in(&commits).last(),
            "run {runs}: a batch was planned and not committed"
        );
    }

    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let ids = output_ids(&l.output());
    let expected: Vec<i64> = (0..next_id as i64).collect();
    assert_eq!(ids.len(), expected.len(), "seed {seed}: rows in output");
    assert_eq!(ids, expected, "seed {seed}: ids in output");
    eprintln!(
        "{stopped} SIGTERM stops in {runs} runs, {} rows exactly once",
        ids.len()
    );
}

#[test]
fn sigterm_while_waiting_for_the_next_trigger_ends_at_once() {
    // processingTime every hour: after the first batch the run waits; SIGTERM must end the
    // wait, not the hour.
    let l = Layout::new();
    write_json_files(&l.input(), "f000", 2, 20, 0);
    let p = l.pipeline("", "processingTime");
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("interval = \"1 hour\"\n");
    std::fs::write(&p, text).unwrap();
    let mut child = tributary()
        .args(["run"])
        .arg(&p)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let commits = l.checkpoint().join("commits");
    let t0 = Instant::now();
    while ids_in(&commits).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "no batch committed");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended by itself"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    terminate(&mut child);
    let status = wait_bounded(&mut child, Duration::from_secs(10));
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(
        err.contains("SIGTERM: stopping after the current batch"),
        "{err}"
    );
    assert_eq!(output_ids(&l.output()), (0..40).collect::<Vec<i64>>());
}
