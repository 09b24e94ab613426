//! Auto Loader options beyond formats: `cloudFiles.maxFileAge` (minimum and file-state
//! expiry), `cloudFiles.validateOptions`, `cloudFiles.fetchParallelism`,
//! `cloudFiles.resourceTag.*`, and Spark's `maxFilesPerTrigger` / `maxBytesPerTrigger`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use tributary_sdk::{ErrorCode, Offset, ReadLimit};

fn age(path: &std::path::Path, days: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(days * 86_400))
        .unwrap();
}

#[tokio::test]
async fn max_file_age_expires_old_entries_without_ingesting_them_again() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for i in 0..3 {
        write_json(input.path(), &format!("old{i}.json"), i, 1);
        age(&input.path().join(format!("old{i}.json")), 20);
    }
    write_json(input.path(), "new.json", 100, 1);
    // Run 1 without maxFileAge: all four are ingested and tracked.
    let mut src = source(input.path(), Some(state.path()), &[]);
    let start = src.initial_offset().await.unwrap();
    let (end, b) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(rows(&b), 4);
    drop(src);
    // Run 2 with maxFileAge=14 days: the next commit forgets the 20-day-old entries; they are
    // not listed again (the listing ignores files that old), so nothing is read twice; an old
    // file arriving now is not tracked at all.
    let opts = [("cloudFiles.maxFileAge", "14 days")];
    let mut src = source(input.path(), Some(state.path()), &opts);
    write_json(input.path(), "late.json", 200, 1);
    age(&input.path().join("late.json"), 30);
    write_json(input.path(), "new2.json", 300, 1);
    let (end2, b) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(distinct_files(&b), ["new2.json"]);
    let m = src.metrics();
    assert_eq!(m["numFilesExpired"], 3);
    assert_eq!(m["numFileStateEntries"], 2, "new.json and new2.json");
    let (end3, b) = batch(&mut src, &end2, &ReadLimit::All).await;
    assert_eq!(rows(&b), 0, "expired files are not ingested again");
    assert_eq!(end3, end2);
    assert_eq!(common::seq(&end2), 5, "sequence numbers go on after expiry");
    let report = state_report(
        state.path(),
        &[logged(
            0,
            &Offset::from_typed(&serde_json::json!({"seq": 0})).unwrap(),
            &end2,
            true,
        )],
    );
    assert_eq!(
        report.rows.len(),
        2,
        "the state report shows the entries kept"
    );
}

#[test]
fn max_file_age_below_databricks_minimum_is_refused() {
    let input = tempfile::tempdir().unwrap();
    let e = try_source(input.path(), None, &[("cloudFiles.maxFileAge", "7 days")]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(
        e.message().contains("minimum is 14 days"),
        "{}",
        e.message()
    );
}

#[tokio::test]
async fn spark_rate_limit_names_are_aliases_and_conflicting_values_are_refused() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..5 {
        write_json(input.path(), &format!("f{i}.json"), i, 1);
    }
    let mut src = source(input.path(), None, &[("maxFilesPerTrigger", "2")]);
    assert_eq!(src.default_read_limit(), ReadLimit::MaxFiles(2));
    let start = src.initial_offset().await.unwrap();
    let limit = src.default_read_limit();
    let (_, b) = batch(&mut src, &start, &limit).await;
    assert_eq!(distinct_files(&b).len(), 2);
    let same = try_source(
        input.path(),
        None,
        &[
            ("maxFilesPerTrigger", "2"),
            ("cloudFiles.maxFilesPerTrigger", "2"),
        ],
    );
    assert!(same.is_ok());
    let e = try_source(
        input.path(),
        None,
        &[
            ("maxFilesPerTrigger", "2"),
            ("cloudFiles.maxFilesPerTrigger", "3"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert!(
        e.message().contains("maxFilesPerTrigger"),
        "{}",
        e.message()
    );
    let src = source(input.path(), None, &[("maxBytesPerTrigger", "1k")]);
    assert_eq!(
        src.default_read_limit(),
        ReadLimit::Composite(vec![ReadLimit::MaxFiles(1000), ReadLimit::MaxBytes(1024)])
    );
    let e = try_source(
        input.path(),
        None,
        &[
            ("maxBytesPerTrigger", "1k"),
            ("cloudFiles.maxBytesPerTrigger", "2k"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
}

#[test]
fn validate_options_fetch_parallelism_and_resource_tags_where_they_apply() {
    let input = tempfile::tempdir().unwrap();
    assert!(try_source(
        input.path(),
        None,
        &[
            ("schema", "a STRING"),
            ("cloudFiles.validateOptions", "true")
        ]
    )
    .is_ok());
    let e = try_source(
        input.path(),
        None,
        &[("cloudFiles.validateOptions", "false")],
    )
    .unwrap_err();
    assert!(e.message().contains("always validated"), "{}", e.message());
    // A listing uses it (a local directory: the walk's threads) ...
    assert!(try_source(
        input.path(),
        None,
        &[("schema", "a STRING"), ("cloudFiles.fetchParallelism", "4")]
    )
    .is_ok());
    let e = try_source(input.path(), None, &[("cloudFiles.fetchParallelism", "0")]).unwrap_err();
    assert!(
        e.message().contains("cloudFiles.fetchParallelism"),
        "{}",
        e.message()
    );
    // ... a stream that never lists and reads no SQS queue would ignore it.
    let e = try_source(
        input.path(),
        None,
        &[
            ("schema", "a STRING"),
            ("cloudFiles.useNotifications", "true"),
            ("cloudFiles.includeExistingFiles", "false"),
            ("cloudFiles.fetchParallelism", "4"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert!(e.message().contains("SQS"), "{}", e.message());
    assert!(
        e.message().contains("cloudFiles.includeExistingFiles"),
        "{}",
        e.message()
    );
    let e = try_source(
        input.path(),
        None,
        &[("cloudFiles.resourceTag.team", "ingest")],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert!(
        e.message().contains("cloudFiles.resourceTag.team"),
        "{}",
        e.message()
    );
    let e = try_source(
        input.path(),
        None,
        &[
            ("cloudFiles.useNotifications", "true"),
            ("cloudFiles.resourceTag.team", "ingest"),
        ],
    )
    .unwrap_err();
    assert!(e.message().contains("local directories"), "{}", e.message());
}
