//! Micro-batch planning, exactly-once file tracking, restarts and replay against real temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;
use tributary_sdk::ReadLimit;

#[tokio::test]
async fn three_batches_under_max_files_then_new_files_later() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..7 {
        write_json(input.path(), &format!("f{i}.json"), i * 10, 10);
    }
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.maxFilesPerTrigger", "3")],
    );
    assert_eq!(src.default_read_limit(), ReadLimit::MaxFiles(3));
    let limit = src.default_read_limit();
    let mut start = src.initial_offset().await.unwrap();
    assert_eq!(seq(&start), 0);
    let mut per_batch = Vec::new();
    loop {
        let (end, batches) = batch(&mut src, &start, &limit).await;
        if end == start {
            assert!(batches.is_empty());
            break;
        }
        per_batch.push((seq(&end), distinct_files(&batches).len(), rows(&batches)));
        start = end;
    }
    assert_eq!(per_batch, vec![(3, 3, 30), (6, 3, 30), (7, 1, 10)]);
    assert_eq!(src.metrics()["numFilesOutstanding"], 0);

    // New files arrive later and are picked up by the next batch, in their own range.
    write_json(input.path(), "g0.json", 100, 5);
    write_json(input.path(), "g1.json", 105, 5);
    let (end, batches) = batch(&mut src, &start, &limit).await;
    assert_eq!(seq(&end), 9);
    assert_eq!(distinct_files(&batches), vec!["g0.json", "g1.json"]);
    assert_eq!(rows(&batches), 10);
}

#[tokio::test]
async fn outstanding_metrics_count_discovered_but_unplanned_files() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..5 {
        write_json(input.path(), &format!("f{i}.json"), 0, 2);
    }
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.maxFilesPerTrigger", "2")],
    );
    let start = src.initial_offset().await.unwrap();
    let end = src
        .latest_offset(&start, &src.default_read_limit())
        .await
        .unwrap();
    assert_eq!(seq(&end), 2);
    let m = src.metrics();
    assert_eq!(m["numFilesOutstanding"], 3);
    let size = std::fs::metadata(input.path().join("f0.json"))
        .unwrap()
        .len();
    assert_eq!(m["numBytesOutstanding"], 3 * size);
}

#[tokio::test]
async fn soft_byte_limit_takes_at_least_one_file() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..4 {
        write_json(input.path(), &format!("f{i}.json"), 0, 10);
    }
    let size = std::fs::metadata(input.path().join("f0.json"))
        .unwrap()
        .len();
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.maxBytesPerTrigger", &(2 * size + 1).to_string())],
    );
    let limit = src.default_read_limit();
    assert_eq!(limit.max_bytes(), Some(2 * size + 1));
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &limit).await.unwrap();
    assert_eq!(seq(&end), 2);
    // A limit below one file's size still moves forward by one file.
    let end2 = src
        .latest_offset(&end, &ReadLimit::MaxBytes(1))
        .await
        .unwrap();
    assert_eq!(seq(&end2), 3);
    // ReadLimit::All takes everything.
    assert_eq!(
        seq(&src.latest_offset(&end2, &ReadLimit::All).await.unwrap()),
        4
    );
}

#[tokio::test]
async fn restart_with_the_same_state_dir_reads_only_new_files() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for i in 0..3 {
        write_json(input.path(), &format!("f{i}.json"), i * 10, 10);
    }
    let (start, end) = {
        let mut src = source(input.path(), Some(state.path()), &[]);
        let start = src.initial_offset().await.unwrap();
        let (end, batches) = batch(&mut src, &start, &ReadLimit::All).await;
        assert_eq!(rows(&batches), 30);
        src.stop().await.unwrap();
        (start, end)
    };
    assert!(state.path().join("files.db").is_file());
    // While stopped, a file arrives, and an old one is rewritten (without allowOverwrites it
    // must not be ingested again).
    write_json(input.path(), "f3.json", 30, 4);
    write_json(input.path(), "f0.json", 0, 11);

    let mut src = source(input.path(), Some(state.path()), &[]);
    let (end2, batches) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(seq(&end2), 4);
    assert_eq!(distinct_files(&batches), vec!["f3.json"]);
    assert_eq!(
        strings(&batches, "id"),
        (30..34).map(|i| Some(i.to_string())).collect::<Vec<_>>()
    );

    let report = state_report(
        state.path(),
        &[logged(0, &start, &end, true), logged(1, &end, &end2, true)],
    );
    let rows = &report.rows;
    assert_eq!(rows.len(), 4);
    assert!(rows
        .iter()
        .all(|r| r["committed"] == true && r["commitTimeMs"].is_i64()));
    assert_eq!(
        rows.iter()
            .map(|r| r["batchId"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![0, 0, 0, 1]
    );
    assert_eq!(
        rows[3]["path"],
        input
            .path()
            .canonicalize()
            .unwrap()
            .join("f3.json")
            .display()
            .to_string()
    );
    assert_eq!(
        rows.iter()
            .map(|r| r["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
}

#[tokio::test]
async fn the_same_range_read_twice_is_identical() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..4 {
        write_json(input.path(), &format!("f{i}.json"), i * 100, 50);
    }
    std::fs::write(input.path().join("bad.json"), "{\"id\": 1}\nnope\n").unwrap();
    let mut src = source(input.path(), None, &[]);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let first = src.read(&start, &end).await.unwrap();
    // New files in between do not change the planned range.
    write_json(input.path(), "late.json", 1000, 5);
    let second = src.read(&start, &end).await.unwrap();
    assert_eq!(rows(&first), 202);
    assert_eq!(first, second);
    // A fresh source over the same state (in memory here: a new one) plans the same files.
    assert_eq!(distinct_files(&first).len(), 5);
}

#[tokio::test]
async fn available_now_never_reads_past_its_snapshot() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..3 {
        write_json(input.path(), &format!("f{i}.json"), 0, 1);
    }
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.maxFilesPerTrigger", "2")],
    );
    let start = src.initial_offset().await.unwrap();
    src.prepare_available_now().await.unwrap();
    write_json(input.path(), "late.json", 0, 1);
    let limit = src.default_read_limit();
    let (e1, _) = batch(&mut src, &start, &limit).await;
    let (e2, b2) = batch(&mut src, &e1, &limit).await;
    assert_eq!((seq(&e1), seq(&e2)), (2, 3));
    assert_eq!(distinct_files(&b2), vec!["f2.json"]);
    assert_eq!(
        src.latest_offset(&e2, &limit).await.unwrap(),
        e2,
        "late.json is past the snapshot"
    );
}

#[tokio::test]
async fn include_existing_files_false_skips_what_is_there_at_start() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "old.json", 0, 3);
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.includeExistingFiles", "false")],
    );
    let start = src.initial_offset().await.unwrap();
    assert_eq!(seq(&start), 1);
    assert_eq!(
        src.latest_offset(&start, &ReadLimit::All).await.unwrap(),
        start
    );
    write_json(input.path(), "new.json", 10, 2);
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(distinct_files(&batches), vec!["new.json"]);
}

#[tokio::test]
async fn allow_overwrites_requeues_a_rewritten_file() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 2);
    let mut src = source(
        input.path(),
        None,
        &[("cloudFiles.allowOverwrites", "true")],
    );
    let start = src.initial_offset().await.unwrap();
    let (end, _) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(src.latest_offset(&end, &ReadLimit::All).await.unwrap(), end);
    write_json(input.path(), "a.json", 50, 3);
    let f = std::fs::File::options()
        .write(true)
        .open(input.path().join("a.json"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    let (end2, batches) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(seq(&end2), 2);
    assert_eq!(
        strings(&batches, "id"),
        vec![Some("50".into()), Some("51".into()), Some("52".into())]
    );
}

#[tokio::test]
async fn hidden_files_globs_and_nested_directories() {
    let input = tempfile::tempdir().unwrap();
    let p = input.path();
    std::fs::create_dir_all(p.join("2024/01")).unwrap();
    std::fs::create_dir_all(p.join("_tmp")).unwrap();
    write_json(p, "a.json", 0, 1);
    write_json(&p.join("2024/01"), "b.json", 0, 1);
    write_json(p, ".hidden.json", 0, 1);
    write_json(p, "_SUCCESS", 0, 1);
    write_json(&p.join("_tmp"), "c.json", 0, 1);
    write_json(p, "notes.txt", 0, 1);

    let mut src = source(p, None, &[("pathGlobFilter", "*.json")]);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    let mut names = distinct_files(&batches);
    names.sort();
    assert_eq!(names, vec!["a.json", "b.json"]);

    // A glob in the path: only one level below, `*` does not cross directories.
    let glob = format!("{}/*/*/*.json", p.display());
    let mut src = source(std::path::Path::new(&glob), None, &[]);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(distinct_files(&batches), vec!["b.json"]);
    assert!(
        src.identity()
            .target
            .ends_with("/*/*/*.json?format=json&pathGlobFilter="),
        "{}",
        src.identity().target
    );
}

#[tokio::test]
async fn inferred_schema_is_stored_and_reused_on_restart() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 2);
    let first = source(
        input.path(),
        Some(state.path()),
        &[("cloudFiles.inferColumnTypes", "true")],
    )
    .schema();
    let names: Vec<_> = first.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, vec!["id", "name", "_rescued_data", "_metadata"]);
    assert_eq!(first.field(0).data_type(), &arrow_schema::DataType::Int64);
    assert!(state.path().join("schema.json").is_file());

    // Files with other columns arrive; with schemaEvolutionMode=rescue the restarted stream
    // keeps its schema and rescues them.
    std::fs::write(
        input.path().join("b.json"),
        "{\"id\": 9, \"extra\": true}\n",
    )
    .unwrap();
    std::fs::remove_file(input.path().join("a.json")).unwrap();
    let mut src = source(
        input.path(),
        Some(state.path()),
        &[
            ("cloudFiles.inferColumnTypes", "true"),
            ("cloudFiles.schemaEvolutionMode", "rescue"),
        ],
    );
    assert_eq!(src.schema(), first);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "_rescued_data"),
        vec![Some("{\"extra\":true}".into())]
    );
    assert_eq!(strings(&batches, "id"), vec![Some("9".into())]);
}

#[tokio::test]
async fn ddl_schema_csv_with_header_and_parquet() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "id;name;price;ts;ok;d\n1;ann;2.5;2024-01-02T03:04:05Z;true;2024-01-02\n2;bob;;;false;\n",
    )
    .unwrap();
    let mut src = source(
        input.path(),
        None,
        &[
            ("cloudFiles.format", "csv"),
            ("header", "true"),
            ("sep", ";"),
            (
                "schema",
                "id BIGINT, name STRING, price DOUBLE, ts TIMESTAMP, ok BOOLEAN, d DATE",
            ),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "name"),
        vec![Some("ann".into()), Some("bob".into())]
    );
    assert_eq!(
        strings(&batches, "ts")[0].as_deref(),
        Some("2024-01-02T03:04:05Z")
    );
    assert_eq!(
        strings(&batches, "d"),
        vec![Some("2024-01-02".into()), None]
    );
    assert_eq!(strings(&batches, "price"), vec![Some("2.5".into()), None]);

    // Parquet: written by the parquet crate, schema from the file.
    let pq = tempfile::tempdir().unwrap();
    let batch_in = arrow_array::RecordBatch::try_from_iter(vec![
        (
            "k",
            std::sync::Arc::new(arrow_array::Int32Array::from(vec![1, 2, 3]))
                as arrow_array::ArrayRef,
        ),
        (
            "v",
            std::sync::Arc::new(arrow_array::StringArray::from(vec!["x", "y", "z"])) as _,
        ),
    ])
    .unwrap();
    let file = std::fs::File::create(pq.path().join("p.parquet")).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch_in.schema(), None).unwrap();
    w.write(&batch_in).unwrap();
    w.close().unwrap();
    let mut src = source(pq.path(), None, &[("cloudFiles.format", "parquet")]);
    let names: Vec<_> = src
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, vec!["k", "v", "_metadata"]);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "v"),
        vec![Some("x".into()), Some("y".into()), Some("z".into())]
    );
}

#[tokio::test]
async fn names_object_store_must_encode_are_tracked_by_their_real_path() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "a b%1.json", 0, 2);
    let mut src = source(input.path(), None, &[]);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(distinct_files(&batches), vec!["a b%1.json"]);
    assert_eq!(rows(&batches), 2);
}

#[tokio::test]
async fn schema_hints_type_some_inferred_columns_and_add_missing_ones() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.json"),
        "{\"id\": 7, \"name\": \"ann\", \"at\": \"2026-11-01T08:00:00Z\"}\n",
    )
    .unwrap();
    let hints = [(
        "cloudFiles.schemaHints",
        "ID bigint, at TIMESTAMP, score DOUBLE",
    )];
    let mut src = source(input.path(), Some(state.path()), &hints);
    let schema = src.schema();
    let ty = |n: &str| schema.field_with_name(n).unwrap().data_type().to_string();
    // Inferred JSON columns are strings; the hints type id and at, and add score.
    assert_eq!(ty("id"), "Int64");
    assert!(ty("at").starts_with("Timestamp"), "{}", ty("at"));
    assert_eq!(ty("name"), "Utf8");
    assert_eq!(ty("score"), "Float64");
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(strings(&batches, "id"), [Some("7".into())]);
    assert_eq!(strings(&batches, "score"), [None]);
    // The stored schema keeps the hints on restart.
    assert_eq!(
        source(input.path(), Some(state.path()), &hints).schema(),
        schema
    );

    let e = try_source(
        input.path(),
        None,
        &[("cloudFiles.schemaHints", "id BIGINTEGER")],
    )
    .unwrap_err();
    assert_eq!(e.context_value("option"), Some("cloudFiles.schemaHints"));
    let e = try_source(
        input.path(),
        None,
        &[
            ("cloudFiles.schemaHints", "id BIGINT"),
            ("schema", "id INT"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code(), tributary_sdk::ErrorCode::ConflictingOptions);
}
