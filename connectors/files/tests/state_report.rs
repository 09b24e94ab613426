//! `describe_state`: the connector's own report of a checkpoint's file state, from the source's
//! store and a (here fabricated) offsets log, as `tributary state` prints it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;
use serde_json::json;
use tributary_sdk::{ErrorCode, Offset, ReadLimit, SourceFactory, StateRequest};

fn at(seq: u64) -> Offset {
    Offset::parse(&format!(r#"{{"seq": {seq}}}"#)).unwrap()
}

#[tokio::test]
async fn every_file_is_reported_with_the_batch_that_holds_its_seq() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for i in 0..5 {
        write_json(input.path(), &format!("f{i}.json"), i, 1);
    }
    let mut src = source(input.path(), Some(state.path()), &[]);
    let start = src.initial_offset().await.unwrap();
    let (end0, _) = batch(&mut src, &start, &ReadLimit::MaxFiles(2)).await;
    let end1 = src
        .latest_offset(&end0, &ReadLimit::MaxFiles(2))
        .await
        .unwrap();
    src.read(&end0, &end1).await.unwrap();
    // Seqs 0-1 committed in batch 0; 2-3 planned in batch 1 (not committed); 4 discovered only.
    let batches = [
        logged(0, &start, &end0, true),
        logged(1, &end0, &end1, false),
    ];
    let report = state_report(state.path(), &batches);

    assert_eq!(
        report.columns,
        [
            "path",
            "size",
            "modificationTimeMs",
            "discoveryTimeMs",
            "seq",
            "batchId",
            "committed",
            "commitTimeMs",
            "cleanedTimeMs"
        ]
    );
    assert_eq!(report.columns, tributary_files::state_report::COLUMNS);
    let rows = &report.rows;
    assert_eq!(rows.len(), 5);
    let col = |key: &str| rows.iter().map(|r| r[key].clone()).collect::<Vec<_>>();
    assert_eq!(
        col("seq"),
        [json!(0), json!(1), json!(2), json!(3), json!(4)]
    );
    assert_eq!(
        col("batchId"),
        [json!(0), json!(0), json!(1), json!(1), json!(null)]
    );
    assert_eq!(
        col("committed"),
        [
            json!(true),
            json!(true),
            json!(false),
            json!(false),
            json!(false)
        ]
    );
    let root = input.path().canonicalize().unwrap();
    assert_eq!(rows[0]["path"], root.join("f0.json").display().to_string());
    assert_eq!(
        rows[0]["size"],
        json!(std::fs::metadata(root.join("f0.json")).unwrap().len())
    );
    assert!(rows.iter().all(|r| r["modificationTimeMs"].is_i64()));
    assert!(rows
        .iter()
        .all(|r| r["discoveryTimeMs"].as_i64().unwrap() > 0));
    // The source committed only batch 0; nothing was cleaned (cleanSource OFF).
    assert!(rows[..2].iter().all(|r| r["commitTimeMs"].is_i64()));
    assert!(rows[2..].iter().all(|r| !r.contains_key("commitTimeMs")));
    assert!(rows.iter().all(|r| !r.contains_key("cleanedTimeMs")));

    // JSON keeps numbers (ms); the table prints the *TimeMs columns as UTC times, and a summary.
    let json = report.to_json();
    assert_eq!(json[4]["batchId"], json!(null));
    let table = report.to_table();
    assert!(table.starts_with("path "), "{table}");
    assert!(table.ends_with("5 files, 2 committed\n"), "{table}");
}

#[tokio::test]
async fn a_replanned_range_belongs_to_the_latest_batch() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 1);
    write_json(input.path(), "b.json", 1, 1);
    let mut src = source(input.path(), Some(state.path()), &[]);
    let start = src.initial_offset().await.unwrap();
    src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    // Batch 0 planned [0, 2) and never committed; batch 1 planned [0, 1) again, committed.
    let batches = [
        logged(0, &at(0), &at(2), false),
        logged(1, &at(0), &at(1), true),
    ];
    let rows = state_report(state.path(), &batches).rows;
    assert_eq!(rows[0]["batchId"], json!(1));
    assert_eq!(rows[0]["committed"], json!(true));
    assert_eq!(rows[1]["batchId"], json!(0));
    assert_eq!(rows[1]["committed"], json!(false));
}

#[test]
fn a_state_dir_the_source_never_wrote_has_no_rows() {
    let empty = tempfile::tempdir().unwrap();
    let missing = empty.path().join("sources/0");
    for dir in [empty.path(), missing.as_path()] {
        let report = state_report(dir, &[]);
        assert!(report.rows.is_empty());
        assert_eq!(report.summary.as_deref(), Some("0 files, 0 committed"));
    }
}

#[test]
fn offsets_of_another_source_are_refused() {
    let state = tempfile::tempdir().unwrap();
    let kafka = Offset::parse(r#"{"t": {"0": 5}}"#).unwrap();
    let batches = [logged(0, &kafka, &kafka, true)];
    let request = StateRequest {
        state_dir: state.path(),
        batches: &batches,
    };
    let err =
        SourceFactory::describe_state(&tributary_files::FilesSourceFactory, &request).unwrap_err();
    assert_eq!(err.code(), ErrorCode::CheckpointIncompatible, "{err}");
}
