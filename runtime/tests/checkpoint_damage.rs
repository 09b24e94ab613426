//! A checkpoint that proves itself (#22): each kind of damage a user can do to a files →
//! Parquet (or Delta) checkpoint is refused by `run`, `check` and `checkpoint verify` with one
//! `CHECKPOINT_DAMAGED` error naming the damaged part — and the output is left as it was
//! (before, each of these re-read or skipped rows without a word).
//!
//! - `offsets/` deleted (every batch would run again);
//! - one `offsets/N` deleted or edited (a hole, a rewritten range);
//! - `metadata.json` deleted (a new identity: Delta would append everything again);
//! - `sources/0/files.db*` deleted, and a file with an old modification time added;
//! - a second pipeline with its own checkpoint pointed at the first one's Parquet directory;
//! - a Delta table holding a batch beyond the checkpoint's offsets log.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

fn run(pipeline: &Path) -> Output {
    tributary()
        .args(["run", "-q"])
        .arg(pipeline)
        .output()
        .unwrap()
}

/// A files → Parquet pipeline that ran three available-now batches (one file each).
fn ran() -> (Layout, PathBuf) {
    let l = Layout::new();
    write_json_files(&l.input(), "f", 3, 10, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = "1""#, "availableNow");
    let o = run(&p);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(output_ids(&l.output()), (0..30).collect::<Vec<_>>());
    (l, p)
}

/// The output's files and their modification times: what a refused run must not change.
fn snapshot(dir: &Path) -> Vec<(String, std::time::SystemTime)> {
    let mut out: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p.display().to_string(), m)
        })
        .collect();
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// `run`, `check` and `checkpoint verify` each refuse with one error naming `part`; the
/// output is unchanged.
fn refused_everywhere(l: &Layout, p: &Path, part: &str) {
    let before = snapshot(&l.output());
    let o = run(p);
    let line = assert_one_clear_error(&o);
    assert!(line.contains("CHECKPOINT_DAMAGED"), "{line}");
    assert!(line.contains(part), "expected '{part}' in: {line}");
    assert!(line.contains("new checkpoint location"), "{line}");
    assert_eq!(
        snapshot(&l.output()),
        before,
        "a refused run changed the output"
    );

    let o = tributary().arg("check").arg(p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains(part), "check: expected '{part}' in: {line}");

    let o = tributary()
        .args(["checkpoint", "verify"])
        .arg(l.checkpoint())
        .arg("--pipeline")
        .arg(p)
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains(part), "verify: expected '{part}' in: {line}");
    assert_eq!(snapshot(&l.output()), before);
}

#[test]
fn a_whole_checkpoint_verifies_and_runs_on() {
    let (l, p) = ran();
    let o = tributary()
        .args(["checkpoint", "verify"])
        .arg(l.checkpoint())
        .arg("--pipeline")
        .arg(&p)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("checkpoint is whole"), "{out}");
    assert!(out.contains("offsets 0..=2, commits 0..=2"), "{out}");
    assert!(out.contains("sinks parquet"), "{out}");
    // Without the pipeline the sinks are said to be unchecked.
    let o = tributary()
        .args(["checkpoint", "verify"])
        .arg(l.checkpoint())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("sinks not checked"));
    // A directory that is no checkpoint is said to be none.
    let o = tributary()
        .args(["checkpoint", "verify"])
        .arg(l.input())
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains("is not a checkpoint"), "{line}");
    // The checks pass a whole checkpoint: new files are read once.
    write_json_files(&l.input(), "g", 1, 10, 30);
    let o = run(&p);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(output_ids(&l.output()), (0..40).collect::<Vec<_>>());
}

#[test]
fn a_deleted_offsets_log_is_refused() {
    let (l, p) = ran();
    std::fs::remove_dir_all(l.checkpoint().join("offsets")).unwrap();
    refused_everywhere(&l, &p, "offsets/");
}

#[test]
fn a_hole_or_an_edit_in_the_offsets_log_is_refused() {
    let (l, p) = ran();
    std::fs::remove_file(l.checkpoint().join("offsets/1")).unwrap();
    refused_everywhere(&l, &p, "offsets/1");

    let (l, p) = ran();
    let path = l.checkpoint().join("offsets/2");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut entry: serde_json::Value = serde_json::from_str(&text).unwrap();
    entry["start"] = serde_json::json!({"seq": 0});
    std::fs::write(&path, entry.to_string()).unwrap();
    refused_everywhere(&l, &p, "offsets/2");
}

#[test]
fn a_deleted_metadata_file_is_refused() {
    let (l, p) = ran();
    std::fs::remove_file(l.checkpoint().join("metadata.json")).unwrap();
    refused_everywhere(&l, &p, "metadata.json");
}

#[test]
fn a_deleted_file_state_is_refused() {
    let (l, p) = ran();
    for e in std::fs::read_dir(l.checkpoint().join("sources/0")).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().starts_with("files.db") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    // A file whose modification time is old: a new file state would skip or mis-order it.
    write_json_files(&l.input(), "old", 1, 10, 30);
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    std::fs::File::options()
        .write(true)
        .open(l.input().join("old-00000.json"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    refused_everywhere(&l, &p, "files.db");
}

#[test]
fn a_second_checkpoint_writing_the_same_parquet_directory_is_refused() {
    let (l, _) = ran();
    // Another pipeline, its own input and checkpoint, the first one's output.
    let other = Layout::new();
    write_json_files(&other.input(), "x", 2, 5, 100);
    let text = std::fs::read_to_string(other.pipeline("", "availableNow"))
        .unwrap()
        .replace(
            &other.output().display().to_string(),
            &l.output().display().to_string(),
        );
    let p = other.root.path().join("second.toml");
    std::fs::write(&p, text).unwrap();
    let before = snapshot(&l.output());
    let o = run(&p);
    let line = assert_one_clear_error(&o);
    assert!(line.contains("sink 'parquet'"), "{line}");
    assert!(line.contains("written by checkpoint"), "{line}");
    assert_eq!(snapshot(&l.output()), before);
    assert_eq!(output_ids(&l.output()), (0..30).collect::<Vec<_>>());
}

#[test]
fn a_sink_ahead_of_the_log_is_refused() {
    // The last batch's offsets and commit removed together (a log rolled back, e.g. restored
    // from an older copy): the Parquet directory holds batch 2, the log ends at batch 1.
    let (l, p) = ran();
    std::fs::remove_file(l.checkpoint().join("offsets/2")).unwrap();
    std::fs::remove_file(l.checkpoint().join("commits/2")).unwrap();
    let before = snapshot(&l.output());
    let o = run(&p);
    let line = assert_one_clear_error(&o);
    assert!(line.contains("sink 'parquet'"), "{line}");
    assert!(line.contains("ends at batch 1"), "{line}");
    assert_eq!(snapshot(&l.output()), before);
}

#[cfg(feature = "delta")]
#[test]
fn a_delta_table_ahead_of_the_log_is_refused() {
    let l = Layout::new();
    write_json_files(&l.input(), "f", 3, 10, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = "1""#, "availableNow");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("connector = \"parquet\"", "connector = \"delta\"");
    std::fs::write(&p, text).unwrap();
    let o = run(&p);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_file(l.checkpoint().join("offsets/2")).unwrap();
    std::fs::remove_file(l.checkpoint().join("commits/2")).unwrap();
    let log = l.output().join("_delta_log");
    let versions = walk(&log).len();
    let o = run(&p);
    let line = assert_one_clear_error(&o);
    assert!(line.contains("sink 'delta'"), "{line}");
    assert!(line.contains("holds batch 2"), "{line}");
    assert_eq!(
        walk(&log).len(),
        versions,
        "a refused run committed to the table"
    );
    // Both the log and the identity lost: refused on the checkpoint alone.
    std::fs::remove_dir_all(l.checkpoint().join("offsets")).unwrap();
    std::fs::remove_file(l.checkpoint().join("metadata.json")).unwrap();
    let line = assert_one_clear_error(&run(&p));
    assert!(line.contains("metadata.json"), "{line}");
    assert_eq!(walk(&log).len(), versions);
}
