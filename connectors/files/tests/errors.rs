//! Files that cannot be read, files that vanish, and bad configuration.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;
use tributary_sdk::{ErrorCode, ReadLimit};

#[tokio::test]
async fn corrupt_parquet_is_source_read_failed_naming_the_file() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("bad.parquet"),
        b"PAR1 this is not parquet PAR1",
    )
    .unwrap();
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.format", "parquet"), ("schema", "a INT")],
    );
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let err = src.read(&start, &end).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::SourceRead);
    let file = input.path().canonicalize().unwrap().join("bad.parquet");
    assert_eq!(
        err.context_value("file"),
        Some(file.display().to_string().as_str())
    );
    assert!(err.message().contains("bad.parquet"));
}

/// Lists `locked.json`, lets `make_unopenable` break it, then reads: `SOURCE_READ_FAILED`
/// naming the file (an entry that exists but cannot be opened is not a vanished file).
async fn unopenable_file_fails_the_read(make_unopenable: impl FnOnce(&std::path::Path)) {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "locked.json", 0, 3);
    let mut src = source(input.path(), None, &[("schema", "id BIGINT")]);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let path = input.path().join("locked.json");
    make_unopenable(&path);
    assert!(
        std::fs::read(&path).is_err(),
        "the test setup left {} readable",
        path.display()
    );
    let err = src.read(&start, &end).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::SourceRead, "{err}");
    assert!(!err.is_data_loss(), "{err}");
    let file = input.path().canonicalize().unwrap().join("locked.json");
    assert_eq!(
        err.context_value("file"),
        Some(file.display().to_string().as_str())
    );
    assert!(err.message().contains("locked.json"), "{}", err.message());
}

/// Replaces the file with a symbolic link to itself: opening it fails (ELOOP) for every user,
/// root included.
fn make_symlink_loop(path: &std::path::Path) {
    std::fs::remove_file(path).unwrap();
    std::os::unix::fs::symlink(path.file_name().unwrap(), path).unwrap();
}

#[tokio::test]
async fn permission_denied_is_source_read_failed_naming_the_file() {
    use std::os::unix::fs::PermissionsExt;
    unopenable_file_fails_the_read(|path| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o000)).unwrap();
        if std::fs::read(path).is_ok() {
            // Root (CAP_DAC_OVERRIDE) reads a mode-000 file: break the entry in a way that
            // stops root too, so the same error path (open fails) is still exercised.
            println!(
                "this process bypasses file permissions (root): the file is made unopenable \
                 with a symbolic link loop instead of mode 000"
            );
            make_symlink_loop(path);
        }
    })
    .await;
}

#[tokio::test]
async fn a_symlink_loop_is_source_read_failed_naming_the_file() {
    unopenable_file_fails_the_read(make_symlink_loop).await;
}

#[tokio::test]
async fn a_file_replaced_by_a_directory_is_a_vanished_file_not_a_silent_skip() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 1);
    let mut src = source(input.path(), None, &[("schema", "id BIGINT")]);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    std::fs::remove_file(input.path().join("a.json")).unwrap();
    std::fs::create_dir(input.path().join("a.json")).unwrap();
    let err = src.read(&start, &end).await.unwrap_err();
    assert_eq!(err.code().as_str(), "CLOUD_FILES_FILE_NOT_FOUND", "{err}");
    assert!(err.to_string().contains("a.json"), "{err}");
}

#[tokio::test]
async fn vanished_file_fails_by_default() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 2);
    write_json(input.path(), "b.json", 2, 2);
    let mut src = source(input.path(), None, &[("schema", "id BIGINT")]);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    std::fs::remove_file(input.path().join("a.json")).unwrap();
    let err = src.read(&start, &end).await.unwrap_err();
    assert_eq!(err.code().as_str(), "CLOUD_FILES_FILE_NOT_FOUND");
    assert!(err.is_data_loss());
    assert!(err.context_value("location").unwrap().ends_with("/a.json"));
    assert!(
        err.message().contains("ignoreMissingFiles"),
        "{}",
        err.message()
    );
    assert!(
        !err.message().contains("failOnDataLoss"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn vanished_file_is_skipped_and_counted_with_ignore_missing_files() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 2);
    write_json(input.path(), "b.json", 2, 2);
    let mut src = source(
        input.path(),
        None,
        &[("schema", "id BIGINT"), ("ignoreMissingFiles", "true")],
    );
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    std::fs::remove_file(input.path().join("a.json")).unwrap();
    let batches = src.read(&start, &end).await.unwrap();
    assert_eq!(distinct_files(&batches), vec!["b.json"]);
    let m = src.metrics();
    assert_eq!(m["dataLoss.CLOUD_FILES_FILE_NOT_FOUND"], 1);
    assert_eq!(m["dataLoss.total"], 1);
}

#[tokio::test]
async fn configuration_errors_are_clear() {
    let input = tempfile::tempdir().unwrap();
    let missing = input.path().join("nope");
    let err = try_source(&missing, None, &[]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption);
    assert_eq!(err.context_value("option"), Some("path"));

    let err = try_source(std::path::Path::new("hdfs://namenode/in"), None, &[]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption);
    assert!(err.message().contains("s3://"), "{}", err.message());

    // Empty directory, no schema: inference has nothing to read.
    let err = try_source(input.path(), None, &[]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Schema);
    assert!(
        err.message().contains("'schema' option"),
        "{}",
        err.message()
    );

    let err = try_source(input.path(), None, &[("schema", "id BIGNT")]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Schema);

    let err = try_source(input.path(), None, &[("schema", "_rescued_data STRING")]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Schema);
}

#[tokio::test]
async fn a_state_dir_written_for_another_path_is_refused() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    source(a.path(), Some(state.path()), &[("schema", "id BIGINT")]);
    let err = try_source(b.path(), Some(state.path()), &[("schema", "id BIGINT")]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::CheckpointIncompatible);
}

#[tokio::test]
async fn reading_a_range_the_state_does_not_know_is_a_checkpoint_error() {
    let input = tempfile::tempdir().unwrap();
    let mut src = source(input.path(), None, &[("schema", "id BIGINT")]);
    let start = tributary_sdk::Offset::parse(r#"{"seq": 0}"#).unwrap();
    let end = tributary_sdk::Offset::parse(r#"{"seq": 3}"#).unwrap();
    assert_eq!(
        src.read(&start, &end).await.unwrap_err().code(),
        ErrorCode::Checkpoint
    );
    let wrong = tributary_sdk::Offset::parse(r#"{"partition": 3}"#).unwrap();
    assert_eq!(
        src.latest_offset(&wrong, &ReadLimit::All)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::CheckpointIncompatible
    );
}
