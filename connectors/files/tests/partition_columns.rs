//! `cloudFiles.partitionColumns` and Hive-style partition discovery on real directories.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::DataType;
use common::*;
use tributary_sdk::{ErrorCode, ReadLimit, Source};

async fn read_all(src: &mut Box<dyn Source>) -> Vec<RecordBatch> {
    let start = src.initial_offset().await.unwrap();
    batch(src, &start, &ReadLimit::MaxFiles(1000)).await.1
}

/// `<root>/year=2026/month=12/a.json` (ids 0, 1) and `<root>/year=2027/month=1/b.json` (id 10).
fn tree(root: &Path) {
    let a = root.join("year=2026/month=12");
    let b = root.join("year=2027/month=1");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    write_json(&a, "a.json", 0, 2);
    write_json(&b, "b.json", 10, 1);
}

fn names(b: &[RecordBatch]) -> Vec<String> {
    b[0].schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

#[tokio::test]
async fn inferred_schema_discovers_typed_partition_columns_from_directories() {
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    let state = tempfile::tempdir().unwrap();
    let mut src = source(
        input.path(),
        Some(state.path()),
        &[("cloudFiles.inferColumnTypes", "true")],
    );
    let b = read_all(&mut src).await;
    assert_eq!(
        names(&b),
        ["id", "name", "_rescued_data", "year", "month", "_metadata"]
    );
    let schema = b[0].schema();
    assert_eq!(
        schema.field_with_name("year").unwrap().data_type(),
        &DataType::Int32
    );
    assert_eq!(
        strings(&b, "year"),
        [
            Some("2026".into()),
            Some("2026".into()),
            Some("2027".into())
        ]
    );
    assert_eq!(
        strings(&b, "month"),
        [Some("12".into()), Some("12".into()), Some("1".into())]
    );
    // Kept with the schema: a restart has the same columns without listing for them.
    drop(src);
    let src = source(
        input.path(),
        Some(state.path()),
        &[("cloudFiles.inferColumnTypes", "true")],
    );
    assert_eq!(
        src.schema().field_with_name("month").unwrap().data_type(),
        &DataType::Int32
    );
}

#[tokio::test]
async fn without_infer_column_types_partition_values_are_strings() {
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    let mut src = source(input.path(), None, &[]);
    let b = read_all(&mut src).await;
    assert_eq!(
        b[0].schema().field_with_name("year").unwrap().data_type(),
        &DataType::Utf8
    );
}

#[tokio::test]
async fn an_empty_partition_columns_adds_none_and_a_named_list_picks_columns() {
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    let mut src = source(input.path(), None, &[("cloudFiles.partitionColumns", "")]);
    let b = read_all(&mut src).await;
    assert_eq!(names(&b), ["id", "name", "_rescued_data", "_metadata"]);
    // A named column the path lacks is null (Auto Loader's `day` in year=2022/week=1/).
    let mut src = source(
        input.path(),
        None,
        &[
            ("cloudFiles.partitionColumns", "month, day"),
            ("cloudFiles.inferColumnTypes", "true"),
        ],
    );
    let b = read_all(&mut src).await;
    assert_eq!(
        names(&b),
        ["id", "name", "_rescued_data", "month", "day", "_metadata"]
    );
    assert_eq!(strings(&b, "day"), [None, None, None]);
    assert_eq!(
        strings(&b, "month"),
        [Some("12".into()), Some("12".into()), Some("1".into())]
    );
}

#[tokio::test]
async fn a_given_schema_takes_the_named_partition_columns_from_paths_csv_by_position() {
    let input = tempfile::tempdir().unwrap();
    let dir = input
        .path()
        .join("region=eu%2Fwest/dt=__HIVE_DEFAULT_PARTITION__");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.csv"), "1,x\n2,y\n").unwrap();
    let mut src = source(
        input.path(),
        None,
        &[
            ("cloudFiles.format", "csv"),
            ("schema", "region STRING, id INT, name STRING, dt DATE"),
            ("cloudFiles.partitionColumns", "region,dt"),
        ],
    );
    let b = read_all(&mut src).await;
    assert_eq!(
        names(&b),
        ["id", "name", "_rescued_data", "region", "dt", "_metadata"]
    );
    assert_eq!(strings(&b, "id"), [Some("1".into()), Some("2".into())]);
    assert_eq!(
        strings(&b, "region"),
        [Some("eu/west".into()), Some("eu/west".into())]
    );
    assert_eq!(
        strings(&b, "dt"),
        [None, None],
        "Hive's default partition is null"
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 0);
    let e = try_source(
        input.path(),
        None,
        &[
            ("cloudFiles.format", "csv"),
            ("schema", "id INT"),
            ("cloudFiles.partitionColumns", "region"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(e.message().contains("'region'"), "{}", e.message());
}

#[tokio::test]
async fn input_partitions_carry_the_partition_columns_to_executors() {
    use futures::TryStreamExt;
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    let state = tempfile::tempdir().unwrap();
    let typed = [("cloudFiles.inferColumnTypes", "true")];
    let mut driver = source(input.path(), Some(state.path()), &typed);
    let start = driver.initial_offset().await.unwrap();
    let end = driver.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let expected = driver.read(&start, &end).await.unwrap();
    let parts = driver
        .plan_partitions(&start, &end, 2)
        .await
        .unwrap()
        .unwrap();
    // An executor: the same options, no state directory.
    let mut executor = source(input.path(), None, &typed);
    let mut got = Vec::new();
    for p in &parts {
        let s = executor.read_partition(p).await.unwrap();
        got.extend(s.try_collect::<Vec<_>>().await.unwrap());
    }
    assert_eq!(strings(&got, "year"), strings(&expected, "year"));
    assert_eq!(
        strings(&got, "month"),
        [Some("12".into()), Some("12".into()), Some("1".into())]
    );
    assert_eq!(got[0].schema(), expected[0].schema());
}

#[tokio::test]
async fn a_data_field_named_like_a_partition_column_is_not_a_new_column_the_path_wins() {
    let input = tempfile::tempdir().unwrap();
    let dir = input.path().join("year=2026");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.json"), "{\"id\": 1}\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut src = source(input.path(), Some(state.path()), &[]);
    let start = src.initial_offset().await.unwrap();
    let (end, _) = batch(&mut src, &start, &ReadLimit::All).await;
    std::fs::write(dir.join("b.json"), "{\"id\": 2, \"year\": \"1999\"}\n").unwrap();
    let (_, b) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(strings(&b, "year"), [Some("2026".into())]);
}
