//! `cloudFiles.schemaLocation`: the inferred schema and its evolution kept as versions
//! `_schemas/0`, `1`, ... as in Auto Loader, shared by streams with the same location.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::Path;

use common::*;
use tributary_sdk::{ErrorCode, ReadLimit};

fn versions(location: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(location.join("_schemas"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn columns(src: &dyn tributary_sdk::Source) -> Vec<String> {
    src.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

#[tokio::test]
async fn inference_is_stored_there_evolution_adds_a_version_and_a_second_stream_reuses_it() {
    let input = tempfile::tempdir().unwrap();
    let location = tempfile::tempdir().unwrap();
    let loc = location.path().display().to_string();
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let opts = [
        ("cloudFiles.schemaLocation", loc.as_str()),
        ("cloudFiles.inferColumnTypes", "true"),
    ];
    std::fs::write(input.path().join("a.json"), "{\"id\": 1}\n").unwrap();

    // Stream A infers: version 0 in the location, nothing in its checkpoint.
    let mut a = source(input.path(), Some(state_a.path()), &opts);
    assert_eq!(versions(location.path()), ["0"]);
    assert!(!state_a.path().join("schema.json").exists());
    assert_eq!(columns(a.as_ref()), ["id", "_rescued_data", "_metadata"]);
    let start = a.initial_offset().await.unwrap();
    let (end, _) = batch(&mut a, &start, &ReadLimit::All).await;

    // A new column: A stops after writing version 1.
    std::fs::write(input.path().join("b.json"), "{\"id\": 2, \"vip\": true}\n").unwrap();
    let next = a.latest_offset(&end, &ReadLimit::All).await.unwrap();
    let e = a.read(&end, &next).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownField);
    assert!(e.message().contains("_schemas/1"), "{}", e.message());
    assert_eq!(versions(location.path()), ["0", "1"]);

    // Stream B (its own checkpoint, the same location) starts from the newest version: it
    // infers nothing, although its sample holds only what a.json and b.json hold.
    std::fs::write(
        input.path().join("c.json"),
        "{\"id\": 3, \"other\": \"x\"}\n",
    )
    .unwrap();
    let b = source(input.path(), Some(state_b.path()), &opts);
    assert_eq!(
        columns(b.as_ref()),
        ["id", "vip", "_rescued_data", "_metadata"]
    );
    assert_eq!(versions(location.path()), ["0", "1"]);

    // The restarted A reads the interrupted batch with the new column.
    let mut a = source(input.path(), Some(state_a.path()), &opts);
    let batches = a.read(&end, &next).await.unwrap();
    assert_eq!(strings(&batches, "vip"), [Some("true".into())]);
}

#[tokio::test]
async fn two_streams_evolving_at_once_each_get_their_own_version_and_merge() {
    let input = tempfile::tempdir().unwrap();
    let location = tempfile::tempdir().unwrap();
    let loc = location.path().display().to_string();
    let opts = [("cloudFiles.schemaLocation", loc.as_str())];
    std::fs::write(input.path().join("a.json"), "{\"id\": 1}\n").unwrap();
    let (sa, sb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = source(input.path(), Some(sa.path()), &opts);
    let mut b = source(input.path(), Some(sb.path()), &opts);
    let (start_a, start_b) = (
        a.initial_offset().await.unwrap(),
        b.initial_offset().await.unwrap(),
    );
    let (end_a, _) = batch(&mut a, &start_a, &ReadLimit::All).await;
    let (end_b, _) = batch(&mut b, &start_b, &ReadLimit::All).await;
    std::fs::write(input.path().join("b.json"), "{\"id\": 2, \"x\": 1}\n").unwrap();
    let next_a = a.latest_offset(&end_a, &ReadLimit::All).await.unwrap();
    assert!(a.read(&end_a, &next_a).await.is_err());
    // B evolves from the schema it started with (version 0) after A wrote version 1: its
    // version 2 holds A's column too.
    std::fs::write(input.path().join("c.json"), "{\"id\": 3, \"y\": 1}\n").unwrap();
    std::fs::remove_file(input.path().join("b.json")).unwrap();
    let next_b = b.latest_offset(&end_b, &ReadLimit::All).await.unwrap();
    assert!(b.read(&end_b, &next_b).await.is_err());
    assert_eq!(versions(location.path()), ["0", "1", "2"]);
    let newest = std::fs::read_to_string(location.path().join("_schemas/2")).unwrap();
    assert!(
        newest.contains("\"x\"") && newest.contains("\"y\""),
        "{newest}"
    );
}

#[test]
fn refused_where_it_would_be_ignored_or_cannot_be_kept() {
    let input = tempfile::tempdir().unwrap();
    let e = try_source(
        input.path(),
        None,
        &[
            ("schema", "id INT"),
            ("cloudFiles.schemaLocation", "/tmp/x"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert!(e.message().contains("inferred schema"), "{}", e.message());
}

#[tokio::test]
async fn a_location_added_later_starts_from_the_checkpoints_schema() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("a.json"), "{\"id\": 1}\n").unwrap();
    let src = source(input.path(), Some(state.path()), &[]);
    assert_eq!(columns(src.as_ref()), ["id", "_rescued_data", "_metadata"]);
    drop(src);
    // Later files would infer more columns; the stream keeps its schema.
    std::fs::write(input.path().join("0.json"), "{\"id\": 0, \"extra\": 1}\n").unwrap();
    let location = tempfile::tempdir().unwrap();
    let loc = location.path().display().to_string();
    let src = source(
        input.path(),
        Some(state.path()),
        &[("cloudFiles.schemaLocation", loc.as_str())],
    );
    assert_eq!(columns(src.as_ref()), ["id", "_rescued_data", "_metadata"]);
    assert_eq!(versions(location.path()), ["0"]);
}
