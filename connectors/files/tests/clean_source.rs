//! `cloudFiles.cleanSource`: files whose batch committed are deleted or moved after the
//! retention, never before the commit, never when they changed since ingestion, and never
//! ingested again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use tributary_sdk::{ErrorCode, ReadLimit};

#[tokio::test]
async fn delete_after_commit_and_never_before() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 2);
    write_json(input.path(), "b.json", 2, 2);
    let opts = [
        ("cloudFiles.cleanSource", "DELETE"),
        ("cloudFiles.cleanSource.retentionDuration", "0s"),
        ("cloudFiles.maxFilesPerTrigger", "1"),
    ];
    let mut src = source(input.path(), Some(state.path()), &opts);
    let start = src.initial_offset().await.unwrap();
    let end = src
        .latest_offset(&start, &src.default_read_limit())
        .await
        .unwrap();
    let batches = src.read(&start, &end).await.unwrap();
    assert_eq!(rows(&batches), 2);
    // Read but not committed: still there (a replay may need it).
    assert!(input.path().join("a.json").exists());
    src.commit(&end).await.unwrap();
    assert!(!input.path().join("a.json").exists());
    assert!(input.path().join("b.json").exists());
    assert_eq!(src.metrics()["numFilesCleaned"], 1);

    // The rest, then a new file with the name of a deleted one is not ingested again.
    let (end2, batches) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(rows(&batches), 2);
    assert!(!input.path().join("b.json").exists());
    write_json(input.path(), "a.json", 100, 1);
    let end3 = src.latest_offset(&end2, &ReadLimit::All).await.unwrap();
    assert_eq!(seq(&end3), seq(&end2));
    let report = state_report(
        state.path(),
        &[logged(0, &start, &end, true), logged(1, &end, &end2, true)],
    );
    assert_eq!(report.rows.len(), 2);
    assert!(report.rows.iter().all(|r| r["cleanedTimeMs"].is_i64()));
}

#[tokio::test]
async fn move_keeps_the_relative_path_and_skips_changed_files() {
    let input = tempfile::tempdir().unwrap();
    let archive = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(input.path().join("day=1")).unwrap();
    write_json(&input.path().join("day=1"), "a.json", 0, 1);
    write_json(input.path(), "b.json", 1, 1);
    let dest = archive.path().display().to_string();
    let opts = [
        ("cloudFiles.cleanSource", "move"),
        ("cloudFiles.cleanSource.moveDestination", dest.as_str()),
        ("cloudFiles.cleanSource.retentionDuration", "0s"),
    ];
    let state = tempfile::tempdir().unwrap();
    let mut src = source(input.path(), Some(state.path()), &opts);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    src.read(&start, &end).await.unwrap();
    // b.json is rewritten after it was read: it is not the ingested version any more.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_json(input.path(), "b.json", 7, 3);
    src.commit(&end).await.unwrap();
    assert!(archive.path().join("day=1/a.json").is_file());
    assert!(!input.path().join("day=1/a.json").exists());
    assert!(input.path().join("b.json").is_file());
    let m = src.metrics();
    assert_eq!(
        (
            m["numFilesCleaned"].as_u64(),
            m["numFilesCleanSkipped"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

#[tokio::test]
async fn retention_keeps_recent_files() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 1);
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.cleanSource", "DELETE")], // default retention: 30 days
    );
    let start = src.initial_offset().await.unwrap();
    batch(&mut src, &start, &ReadLimit::All).await;
    assert!(input.path().join("a.json").exists());
    assert_eq!(src.metrics()["numFilesCleaned"], 0);
}

#[test]
fn move_needs_a_destination_outside_the_source() {
    let input = tempfile::tempdir().unwrap();
    let e = try_source(input.path(), None, &[("cloudFiles.cleanSource", "MOVE")]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::MissingOption);
    let inside = input.path().join("archive").display().to_string();
    let e = try_source(
        input.path(),
        None,
        &[
            ("cloudFiles.cleanSource", "MOVE"),
            ("cloudFiles.cleanSource.moveDestination", inside.as_str()),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(e.message().contains("outside"), "{}", e.message());
}

/// Reads everything and commits it (cleaning runs in the commit).
async fn read_and_commit(src: &mut Box<dyn tributary_sdk::Source>) -> usize {
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let n = rows(&src.read(&start, &end).await.unwrap());
    src.commit(&end).await.unwrap();
    n
}

#[tokio::test]
async fn a_directory_symlink_out_of_the_input_is_neither_read_nor_cleaned() {
    let input = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write_json(outside.path(), "precious.json", 100, 3);
    write_json(input.path(), "a.json", 0, 2);
    std::os::unix::fs::symlink(outside.path(), input.path().join("elsewhere")).unwrap();
    let opts = [
        ("cloudFiles.cleanSource", "DELETE"),
        ("cloudFiles.cleanSource.retentionDuration", "0s"),
    ];
    let mut src = source(input.path(), None, &opts);
    assert_eq!(read_and_commit(&mut src).await, 2);
    assert!(!input.path().join("a.json").exists());
    assert!(outside.path().join("precious.json").is_file());
}

/// Replaces directory `dir` of the input, after it was read, with a symlink to a directory
/// outside holding a file of the same name, size and modification time.
fn swap_for_outside_symlink(dir: &std::path::Path, name: &str, outside: &std::path::Path) {
    let original = dir.join(name);
    let mtime = std::fs::metadata(&original).unwrap().modified().unwrap();
    std::fs::copy(&original, outside.join(name)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(outside.join(name))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    std::os::unix::fs::symlink(outside, dir).unwrap();
}

#[tokio::test]
async fn delete_never_follows_a_symlink_out_of_the_input() {
    let input = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let sub = input.path().join("day=1");
    std::fs::create_dir_all(&sub).unwrap();
    write_json(&sub, "x.json", 0, 2);
    write_json(input.path(), "b.json", 2, 1);
    let opts = [
        ("cloudFiles.cleanSource", "DELETE"),
        ("cloudFiles.cleanSource.retentionDuration", "0s"),
    ];
    let mut src = source(input.path(), None, &opts);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    assert_eq!(rows(&src.read(&start, &end).await.unwrap()), 3);
    // Between the read and the clean-up, day=1 becomes a link to a directory elsewhere.
    swap_for_outside_symlink(&sub, "x.json", outside.path());
    src.commit(&end).await.unwrap();
    assert!(
        outside.path().join("x.json").is_file(),
        "deleted outside the input"
    );
    assert!(!input.path().join("b.json").exists());
    let m = src.metrics();
    assert_eq!(m["numFilesCleaned"], 1);
    assert_eq!(m["numFilesCleanSkipped"], 1);
}

#[tokio::test]
async fn move_never_follows_a_symlink_out_of_the_input_or_the_destination() {
    let input = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let archive = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let sub = input.path().join("day=1");
    std::fs::create_dir_all(&sub).unwrap();
    write_json(&sub, "x.json", 0, 2);
    std::fs::create_dir_all(input.path().join("day=2")).unwrap();
    write_json(&input.path().join("day=2"), "y.json", 2, 1);
    // In the destination, day=2 is a link to a directory elsewhere.
    std::os::unix::fs::symlink(elsewhere.path(), archive.path().join("day=2")).unwrap();
    let dest = archive.path().display().to_string();
    let opts = [
        ("cloudFiles.cleanSource", "MOVE"),
        ("cloudFiles.cleanSource.moveDestination", dest.as_str()),
        ("cloudFiles.cleanSource.retentionDuration", "0s"),
    ];
    let mut src = source(input.path(), None, &opts);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    assert_eq!(rows(&src.read(&start, &end).await.unwrap()), 3);
    swap_for_outside_symlink(&sub, "x.json", outside.path());
    src.commit(&end).await.unwrap();
    // Not moved out of the directory the link points to.
    assert!(outside.path().join("x.json").is_file());
    assert!(!archive.path().join("day=1/x.json").exists());
    // Not moved through the destination's link.
    assert!(input.path().join("day=2/y.json").is_file());
    assert!(!elsewhere.path().join("y.json").exists());
    let m = src.metrics();
    assert_eq!(m["numFilesCleaned"], 0);
    assert_eq!(m["numFilesCleanSkipped"], 2);
}
