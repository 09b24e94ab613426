//! Schema evolution (`cloudFiles.schemaEvolutionMode`) for JSON, as in Auto Loader: a new column
//! stops the stream once with UNKNOWN_FIELD_EXCEPTION after evolving the stored schema, and the
//! restarted stream reads the same batch again with the column; the other modes rescue, fail
//! or drop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use tributary_sdk::{ErrorCode, ReadLimit};

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[tokio::test]
async fn add_new_columns_stops_once_then_the_restart_reads_them() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let typed = [("cloudFiles.inferColumnTypes", "true")];
    write(input.path(), "a.json", "{\"id\": 1, \"name\": \"ann\"}\n");
    let mut src = source(input.path(), Some(state.path()), &typed);
    let start = src.initial_offset().await.unwrap();
    let (end_a, _) = batch(&mut src, &start, &ReadLimit::All).await;

    // b.json brings two new columns (one null in the first record that has it).
    write(
        input.path(),
        "b.json",
        "{\"id\": 2, \"vip\": null}\n{\"id\": 3, \"vip\": true, \"tags\": [\"x\"]}\n",
    );
    let end_b = src.latest_offset(&end_a, &ReadLimit::All).await.unwrap();
    let e = src.read(&end_a, &end_b).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownField);
    assert_eq!(e.code().as_str(), "UNKNOWN_FIELD_EXCEPTION");
    assert!(e.message().contains("tags, vip"), "{}", e.message());
    assert!(e.message().contains("restart"), "{}", e.message());
    assert!(e.context_value("file").unwrap().ends_with("b.json"));
    let stored = std::fs::read_to_string(state.path().join("schema.json")).unwrap();
    assert!(
        stored.contains("\"vip\"") && stored.contains("\"tags\""),
        "{stored}"
    );

    // The restart (a new instance on the same state) reads the interrupted batch again, with
    // the new columns typed as inferred from their values.
    let mut src = source(input.path(), Some(state.path()), &typed);
    let names: Vec<String> = src
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        ["id", "name", "tags", "vip", "_rescued_data", "_metadata"]
    );
    let vip = src
        .schema()
        .field_with_name("vip")
        .unwrap()
        .data_type()
        .clone();
    assert_eq!(vip, arrow_schema::DataType::Boolean);
    let batches = src.read(&end_a, &end_b).await.unwrap();
    assert_eq!(
        strings(&batches, "id"),
        [Some("2".into()), Some("3".into())]
    );
    assert_eq!(strings(&batches, "vip"), [None, Some("true".into())]);
    assert_eq!(strings(&batches, "_rescued_data"), [None, None]);
}

#[tokio::test]
async fn fail_on_new_columns_keeps_the_schema_and_none_drops_the_values() {
    let input = tempfile::tempdir().unwrap();
    write(input.path(), "a.json", "{\"id\": 1}\n");
    write(input.path(), "b.json", "{\"id\": 2, \"extra\": 5}\n");
    let schema = [("schema", "id BIGINT")];

    let state = tempfile::tempdir().unwrap();
    let mut src = source(
        input.path(),
        Some(state.path()),
        &[
            schema[0],
            ("cloudFiles.schemaEvolutionMode", "failOnNewColumns"),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let e = src.read(&start, &end).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownField);
    assert!(e.message().contains("failOnNewColumns"), "{}", e.message());

    let mut src = source(
        input.path(),
        None,
        &[schema[0], ("cloudFiles.schemaEvolutionMode", "none")],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "id"),
        [Some("1".into()), Some("2".into())]
    );
    assert_eq!(strings(&batches, "_rescued_data"), [None, None]);

    // With a given schema the default is rescue.
    let mut src = source(input.path(), None, &schema);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "_rescued_data"),
        [None, Some("{\"extra\":5}".into())]
    );
}

#[test]
fn add_new_columns_with_a_given_schema_or_csv_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = try_source(
        dir.path(),
        None,
        &[
            ("schema", "id BIGINT"),
            ("cloudFiles.schemaEvolutionMode", "addNewColumns"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert!(e.message().contains("inferred schema"), "{}", e.message());
    let e = try_source(
        dir.path(),
        None,
        &[
            ("cloudFiles.format", "csv"),
            ("cloudFiles.schemaEvolutionMode", "rescue"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    let e = try_source(
        dir.path(),
        None,
        &[("cloudFiles.schemaEvolutionMode", "addColumns")],
    )
    .unwrap_err();
    assert!(e.message().contains("addNewColumns"), "{}", e.message());
}

fn write_parquet(path: &std::path::Path, batch: arrow_array::RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[tokio::test]
async fn parquet_columns_evolve_with_their_own_types() {
    use arrow_array::{BooleanArray, Int64Array, RecordBatch};
    use std::sync::Arc;
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let ids = |v: Vec<i64>| Arc::new(Int64Array::from(v)) as arrow_array::ArrayRef;
    write_parquet(
        &input.path().join("a.parquet"),
        RecordBatch::try_from_iter([("id", ids(vec![1]))]).unwrap(),
    );
    let parquet = [("cloudFiles.format", "parquet")];
    let mut src = source(input.path(), Some(state.path()), &parquet);
    let start = src.initial_offset().await.unwrap();
    let (end_a, _) = batch(&mut src, &start, &ReadLimit::All).await;
    write_parquet(
        &input.path().join("b.parquet"),
        RecordBatch::try_from_iter([
            ("id", ids(vec![2])),
            (
                "vip",
                Arc::new(BooleanArray::from(vec![true])) as arrow_array::ArrayRef,
            ),
        ])
        .unwrap(),
    );
    let end_b = src.latest_offset(&end_a, &ReadLimit::All).await.unwrap();
    let e = src.read(&end_a, &end_b).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownField);
    assert!(e.message().contains("vip"), "{}", e.message());
    let mut src = source(input.path(), Some(state.path()), &parquet);
    assert_eq!(
        src.schema().field_with_name("vip").unwrap().data_type(),
        &arrow_schema::DataType::Boolean
    );
    let batches = src.read(&end_a, &end_b).await.unwrap();
    assert_eq!(strings(&batches, "vip"), [Some("true".into())]);

    // rescue needs a rescued column, which Parquet streams lack.
    let e = try_source(
        input.path(),
        None,
        &[parquet[0], ("cloudFiles.schemaEvolutionMode", "rescue")],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
}

#[tokio::test]
async fn fields_new_inside_a_struct_are_rescued_or_evolve_the_struct() {
    let input = tempfile::tempdir().unwrap();
    write(input.path(), "a.json", "{\"id\": 1, \"a\": {\"x\": 1}}\n");
    write(
        input.path(),
        "b.json",
        "{\"id\": 2, \"a\": {\"x\": 2, \"deep\": 7}}\n",
    );
    // With a given schema the nested value is rescued with its nesting, not dropped.
    let mut src = source(
        input.path(),
        None,
        &[("schema", "id BIGINT, a STRUCT<x: BIGINT>")],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "_rescued_data"),
        [None, Some("{\"a\":{\"deep\":7}}".into())]
    );

    // With an inferred schema the struct gains the field.
    std::fs::remove_file(input.path().join("b.json")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let typed = [("cloudFiles.inferColumnTypes", "true")];
    let mut src = source(input.path(), Some(state.path()), &typed);
    let start = src.initial_offset().await.unwrap();
    let (end_a, _) = batch(&mut src, &start, &ReadLimit::All).await;
    write(
        input.path(),
        "b.json",
        "{\"id\": 2, \"a\": {\"x\": 2, \"deep\": 7}}\n",
    );
    let end_b = src.latest_offset(&end_a, &ReadLimit::All).await.unwrap();
    let e = src.read(&end_a, &end_b).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownField);
    assert!(e.message().contains("a.deep"), "{}", e.message());
    let mut src = source(input.path(), Some(state.path()), &typed);
    let a = src
        .schema()
        .field_with_name("a")
        .unwrap()
        .data_type()
        .clone();
    let arrow_schema::DataType::Struct(children) = a else {
        panic!("a is not a struct")
    };
    let names: Vec<_> = children.iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["x", "deep"]);
    let batches = src.read(&end_a, &end_b).await.unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    assert_eq!(strings(&batches, "_rescued_data"), [None]);
}
