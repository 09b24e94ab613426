//! Permissive and FAILFAST decoding through the source.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;
use tributary_sdk::{ErrorCode, ReadLimit};

/// 100 lines, every 10th malformed: alternately not JSON and a value that does not fit.
fn ten_percent_malformed(dir: &std::path::Path) -> Vec<String> {
    let mut bad = Vec::new();
    let mut text = String::new();
    for i in 0..100 {
        let line = if i % 10 == 9 {
            let l = if i % 20 == 9 {
                format!("{{\"id\": {i}, \"name\": \"broken")
            } else {
                format!("{{\"id\": \"not-a-number-{i}\", \"name\": \"n{i}\", \"price\": 1.0}}")
            };
            bad.push(l.clone());
            l
        } else {
            format!("{{\"id\": {i}, \"name\": \"n{i}\", \"price\": {}.5}}", i)
        };
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(dir.join("mixed.json"), text).unwrap();
    bad
}

#[tokio::test]
async fn permissive_json_keeps_good_rows_nulls_bad_ones_and_counts_them() {
    let input = tempfile::tempdir().unwrap();
    let bad = ten_percent_malformed(input.path());
    let mut src = source(
        input.path(),
        None,
        &[("schema", "id BIGINT, name STRING, price DOUBLE")],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(rows(&batches), 100);
    let ids = strings(&batches, "id");
    let names = strings(&batches, "name");
    let prices = strings(&batches, "price");
    let rescued = strings(&batches, "_rescued_data");
    let mut bad_seen = Vec::new();
    for i in 0..100 {
        if i % 10 == 9 {
            assert_eq!(
                (&ids[i], &names[i], &prices[i]),
                (&None, &None, &None),
                "row {i}"
            );
            bad_seen.push(rescued[i].clone().unwrap());
        } else {
            assert_eq!(ids[i], Some(i.to_string()));
            assert_eq!(names[i], Some(format!("n{i}")));
            assert_eq!(prices[i], Some(format!("{i}.5")));
            assert_eq!(rescued[i], None);
        }
    }
    assert_eq!(bad_seen, bad);
    assert_eq!(src.metrics()["numMalformedRecords"], 10);
    assert_eq!(
        file_names(&batches).len(),
        100,
        "every row has its _metadata"
    );
}

#[tokio::test]
async fn failfast_stops_with_malformed_record_naming_file_and_line() {
    let input = tempfile::tempdir().unwrap();
    ten_percent_malformed(input.path());
    let mut src = source(
        input.path(),
        None,
        &[
            ("schema", "id BIGINT, name STRING, price DOUBLE"),
            ("mode", "FAILFAST"),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let err = src.read(&start, &end).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::MalformedRecord);
    let file = input.path().canonicalize().unwrap().join("mixed.json");
    assert_eq!(
        err.context_value("file"),
        Some(file.display().to_string().as_str())
    );
    assert_eq!(err.context_value("row"), Some("10"));
    assert!(err.message().contains("line 10"), "{}", err.message());
}

#[tokio::test]
async fn permissive_csv_rescues_values_that_do_not_fit() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "id,price\n1,2.5\nx,3.5\n3\n4,5.5\n",
    )
    .unwrap();
    let mut src = source(
        input.path(),
        None,
        &[
            ("cloudFiles.format", "csv"),
            ("header", "true"),
            ("schema", "id INT, price DOUBLE"),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "id"),
        vec![Some("1".into()), None, None, Some("4".into())]
    );
    assert_eq!(
        strings(&batches, "price"),
        vec![
            Some("2.5".into()),
            Some("3.5".into()),
            None,
            Some("5.5".into())
        ]
    );
    let rescued = strings(&batches, "_rescued_data");
    let file = input.path().canonicalize().unwrap().join("a.csv");
    assert_eq!(
        rescued[1],
        Some(format!(
            "{{\"_file_path\":\"{}\",\"id\":\"x\"}}",
            file.display()
        ))
    );
    assert_eq!(rescued[2].as_deref(), Some("3"));
    assert_eq!(src.metrics()["numMalformedRecords"], 2);
}

#[tokio::test]
async fn inferred_string_columns_accept_any_scalar() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.json"),
        "{\"a\": 1, \"b\": true}\n{\"a\": \"x\", \"b\": null}\n",
    )
    .unwrap();
    let mut src = source(input.path(), None, &[]);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "a"),
        vec![Some("1".into()), Some("x".into())]
    );
    assert_eq!(strings(&batches, "b"), vec![Some("true".into()), None]);
    assert_eq!(src.metrics()["numMalformedRecords"], 0);
}

#[tokio::test]
async fn multi_line_json_files_are_documents_of_rows() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.json"),
        "[\n  {\n    \"id\": 1,\n    \"name\": \"ann\"\n  },\n  {\n    \"id\": 2\n  }\n]\n",
    )
    .unwrap();
    std::fs::write(
        input.path().join("b.json"),
        "{\n  \"id\": 3,\n  \"name\": \"bo\"\n}\n",
    )
    .unwrap();
    std::fs::write(input.path().join("c.json"), "[{\"id\": 4},\n").unwrap();
    // Inferred from the documents (typed), as Spark does with multiLine.
    let mut src = source(
        input.path(),
        None,
        &[
            ("multiLine", "true"),
            ("cloudFiles.inferColumnTypes", "true"),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "id"),
        [Some("1".into()), Some("2".into()), Some("3".into()), None]
    );
    assert_eq!(
        strings(&batches, "name"),
        [Some("ann".into()), None, Some("bo".into()), None]
    );
    let rescued = strings(&batches, "_rescued_data");
    assert_eq!(rescued[3].as_deref(), Some("[{\"id\": 4},\n"));
    assert_eq!(src.metrics()["numMalformedRecords"], 1);
    assert_eq!(distinct_files(&batches), ["a.json", "b.json", "c.json"]);
}

/// A CSV file with a quoted value holding a newline, then a record whose quote never closes
/// (no quote follows it), then two rows.
fn unclosed_quote_csv(dir: &std::path::Path) {
    std::fs::write(
        dir.join("q.csv"),
        "id,name\n1,a\n2,\"multi\nline\"\n3,\"broken\n4,d\n5,e\n",
    )
    .unwrap();
}

#[tokio::test]
async fn an_unclosed_csv_quote_is_one_counted_malformed_record_and_loses_no_row() {
    let input = tempfile::tempdir().unwrap();
    unclosed_quote_csv(input.path());
    let mut src = source(
        input.path(),
        None,
        &[
            ("cloudFiles.format", "csv"),
            ("header", "true"),
            ("schema", "id INT, name STRING"),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    let ids = strings(&batches, "id");
    let names = strings(&batches, "name");
    let rescued = strings(&batches, "_rescued_data");
    // The quote in line 3 closes in line 4: a multi-line value. Line 5's never does: its
    // record (line 5 alone) is malformed, rows 4 and 5 after it are read.
    let ids: Vec<_> = ids.iter().map(|v| v.as_deref()).collect();
    assert_eq!(ids, [Some("1"), Some("2"), None, Some("4"), Some("5")]);
    assert_eq!(names[1].as_deref(), Some("multi\nline"));
    assert_eq!(names[4].as_deref(), Some("e"));
    assert_eq!(rescued[2].as_deref(), Some("3,\"broken"));
    assert_eq!(rescued[4], None);
    assert_eq!(src.metrics()["numMalformedRecords"], 1);
}

#[tokio::test]
async fn an_unclosed_csv_quote_under_failfast_names_the_file_and_line() {
    let input = tempfile::tempdir().unwrap();
    unclosed_quote_csv(input.path());
    let mut src = source(
        input.path(),
        None,
        &[
            ("cloudFiles.format", "csv"),
            ("header", "true"),
            ("schema", "id INT, name STRING"),
            ("mode", "FAILFAST"),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let err = src.read(&start, &end).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::MalformedRecord);
    let file = input.path().canonicalize().unwrap().join("q.csv");
    assert_eq!(
        err.context_value("file"),
        Some(file.display().to_string().as_str())
    );
    assert_eq!(err.context_value("row"), Some("5"));
    assert!(err.message().contains("quote"), "{}", err.message());
    assert!(!err.message().contains('\n'), "{}", err.message());
}

#[tokio::test]
async fn unknown_fields_at_any_depth_are_rescued_with_their_nesting() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("deep.json"),
        concat!(
            "{\"id\": 1, \"a\": {\"b\": {\"c\": {\"x\": 1, \"deep\": \"kept\"}}}}\n",
            "{\"id\": 2, \"a\": {\"b\": {\"c\": {\"x\": 2}, \"mid\": [1, 2]}, \"top_a\": true}}\n",
            "{\"id\": 3, \"a\": {\"b\": {\"c\": {\"x\": 3}}}}\n",
            "{\"id\": 4, \"l\": [{\"s\": {\"x\": 1}}, {\"s\": {\"x\": 2, \"new\": 9}}]}\n",
        ),
    )
    .unwrap();
    let mut src = source(
        input.path(),
        None,
        &[
            (
                "schema",
                "id BIGINT, a STRUCT<b: STRUCT<c: STRUCT<x: BIGINT>>>, \
                 l ARRAY<STRUCT<s: STRUCT<x: BIGINT>>>",
            ),
            ("rescuedDataColumn", "_rescued_data"),
        ],
    );
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(rows(&batches), 4);
    let rescued: Vec<Option<serde_json::Value>> = strings(&batches, "_rescued_data")
        .into_iter()
        .map(|r| r.map(|t| serde_json::from_str(&t).unwrap()))
        .collect();
    assert_eq!(
        rescued,
        [
            Some(serde_json::json!({"a": {"b": {"c": {"deep": "kept"}}}})),
            Some(serde_json::json!({"a": {"b": {"mid": [1, 2]}, "top_a": true}})),
            None,
            // Inside array elements too; the array keeps its positions.
            Some(serde_json::json!({"l": [null, {"s": {"new": 9}}]})),
        ]
    );
    assert_eq!(
        strings(&batches, "id"),
        [
            Some("1".into()),
            Some("2".into()),
            Some("3".into()),
            Some("4".into())
        ]
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 0);
}

/// A JSON line of 100,000 nested (closed) arrays between two good lines, read with `mode`, on a
/// thread with the default 2 MiB stack of Rust threads.
fn read_deep_line(mode: &'static str) -> tributary_sdk::Result<(Vec<Option<String>>, u64)> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let input = tempfile::tempdir().unwrap();
            let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
            std::fs::write(
                input.path().join("deep.json"),
                format!("{{\"id\": 1}}\n{deep}\n{{\"id\": 3}}\n"),
            )
            .unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut src = source(
                    input.path(),
                    None,
                    &[("schema", "id BIGINT"), ("mode", mode)],
                );
                let start = src.initial_offset().await.unwrap();
                let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
                let batches = src.read(&start, &end).await?;
                let malformed = src.metrics()["numMalformedRecords"].as_u64().unwrap();
                Ok((strings(&batches, "id"), malformed))
            })
        })
        .unwrap()
        .join()
        .expect("the reading thread crashed")
}

#[test]
fn a_line_nested_100000_deep_is_a_counted_malformed_record() {
    let (ids, malformed) = read_deep_line("PERMISSIVE").unwrap();
    assert_eq!(ids, [Some("1".into()), None, Some("3".into())]);
    assert_eq!(malformed, 1);
    let err = read_deep_line("FAILFAST").unwrap_err();
    assert_eq!(err.code(), ErrorCode::MalformedRecord);
    assert_eq!(err.context_value("row"), Some("2"));
    assert!(err.message().contains("nested deeper"), "{}", err.message());
    assert!(err.message().len() < 4096, "{}", err.message().len());
}
