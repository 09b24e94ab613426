//! Spark's JSON and CSV reader options users copy from `spark.read` jobs, each shown by its
//! effect on rows (or its refusal message).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use arrow_array::RecordBatch;
use common::*;
use tributary_sdk::{ErrorCode, ReadLimit, Source};

async fn read_all(src: &mut Box<dyn Source>) -> Vec<RecordBatch> {
    let start = src.initial_offset().await.unwrap();
    batch(src, &start, &ReadLimit::MaxFiles(1000)).await.1
}

fn csv<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut v = vec![("cloudFiles.format", "csv")];
    v.extend_from_slice(extra);
    v
}

#[tokio::test]
async fn csv_quote_escape_and_comment_change_how_fields_split() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "id,name\n# a comment line with a 'stray quote\n1,'a,b'\n2,'it\\'s'\n",
    )
    .unwrap();
    let opts = csv(&[
        ("schema", "id INT, name STRING"),
        ("header", "true"),
        ("quote", "'"),
        ("comment", "#"),
    ]);
    let mut src = source(input.path(), None, &opts);
    let b = read_all(&mut src).await;
    assert_eq!(
        strings(&b, "name"),
        [Some("a,b".into()), Some("it's".into())],
        "quote ' keeps the comma, \\' (default escape) is a quote, # skips the line"
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 0);
}

#[tokio::test]
async fn csv_default_escape_is_backslash_as_in_spark_and_doubled_quotes_still_read() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "1,\"say \\\"hi\\\"\"\n2,\"x\"\"y\"\n",
    )
    .unwrap();
    let mut src = source(input.path(), None, &csv(&[("schema", "id INT, t STRING")]));
    let b = read_all(&mut src).await;
    assert_eq!(
        strings(&b, "t"),
        [Some("say \"hi\"".into()), Some("x\"y".into())]
    );
}

#[tokio::test]
async fn csv_null_value_reads_its_text_as_null_and_rescues_what_does_not_fit() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("a.csv"), "1,NA\nNA,x\nzz,y\n4,\n").unwrap();
    let mut src = source(
        input.path(),
        None,
        &csv(&[("schema", "id INT, name STRING"), ("nullValue", "NA")]),
    );
    let b = read_all(&mut src).await;
    assert_eq!(
        strings(&b, "id"),
        [Some("1".into()), None, None, Some("4".into())]
    );
    assert_eq!(
        strings(&b, "name"),
        [None, Some("x".into()), Some("y".into()), None]
    );
    let rescued = strings(&b, "_rescued_data");
    assert_eq!(rescued[0], None, "the null text is not a failed value");
    assert_eq!(rescued[1], None);
    assert!(
        rescued[2].as_deref().unwrap().contains("\"id\":\"zz\""),
        "{rescued:?}"
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 1);
}

#[tokio::test]
async fn csv_timestamp_and_date_formats_parse_their_patterns() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "1,02/01/2026 10:30,03.02.2026\n2,2026-01-02 10:30,03.02.2026\n",
    )
    .unwrap();
    let mut src = source(
        input.path(),
        None,
        &csv(&[
            ("schema", "id INT, ts TIMESTAMP, d DATE"),
            ("timestampFormat", "dd/MM/yyyy HH:mm"),
            ("dateFormat", "dd.MM.yyyy"),
        ]),
    );
    let b = read_all(&mut src).await;
    assert_eq!(
        strings(&b, "ts"),
        [Some("2026-01-02T10:30:00Z".into()), None]
    );
    assert_eq!(
        strings(&b, "d"),
        [Some("2026-02-03".into()), Some("2026-02-03".into())]
    );
    let rescued = strings(&b, "_rescued_data");
    assert!(rescued[1]
        .as_deref()
        .unwrap()
        .contains("\"ts\":\"2026-01-02 10:30\""));
    assert_eq!(src.metrics()["numMalformedRecords"], 1);
}

#[tokio::test]
async fn json_timestamp_format_with_an_offset_and_failfast() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.json"),
        "{\"id\": 1, \"ts\": \"2026/12/01 09:00:00 +01:00\"}\n{\"id\": 2, \"ts\": \"2026/12/01 08:00:00 Z\"}\n",
    )
    .unwrap();
    let opts = [
        ("schema", "id INT, ts TIMESTAMP"),
        ("timestampFormat", "yyyy/MM/dd HH:mm:ss XXX"),
    ];
    let mut src = source(input.path(), None, &opts);
    let b = read_all(&mut src).await;
    assert_eq!(
        strings(&b, "ts"),
        [
            Some("2026-12-01T08:00:00Z".into()),
            Some("2026-12-01T08:00:00Z".into())
        ]
    );
    std::fs::write(
        input.path().join("b.json"),
        "{\"id\": 3, \"ts\": \"yesterday\"}\n",
    )
    .unwrap();
    std::fs::remove_file(input.path().join("a.json")).unwrap();
    let mut src = source(
        input.path(),
        None,
        &[opts[0], opts[1], ("mode", "FAILFAST")],
    );
    let start = src.initial_offset().await.unwrap();
    let end = src
        .latest_offset(&start, &ReadLimit::MaxFiles(10))
        .await
        .unwrap();
    let e = src.read(&start, &end).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::MalformedRecord);
    assert!(e.message().contains("yesterday"), "{}", e.message());
}

#[tokio::test]
async fn json_allow_comments_skips_comments_that_are_malformed_otherwise() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.json"),
        "// a header comment\n{\"id\": 1, /* inline */ \"name\": \"a // not a comment\"}\n{\"id\": 2, \"name\": \"b\"} // trailing\n",
    )
    .unwrap();
    let schema = ("schema", "id INT, name STRING");
    let mut src = source(input.path(), None, &[schema, ("allowComments", "true")]);
    let b = read_all(&mut src).await;
    assert_eq!(
        strings(&b, "name"),
        [Some("a // not a comment".into()), Some("b".into())]
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 0);
    let mut src = source(input.path(), None, &[schema]);
    let b = read_all(&mut src).await;
    assert!(rows(&b) >= 2);
    assert!(
        src.metrics()["numMalformedRecords"].as_u64().unwrap() >= 2,
        "without allowComments the commented lines are malformed"
    );
    // Inference reads through the comments too.
    let mut src = source(
        input.path(),
        None,
        &[
            ("allowComments", "true"),
            ("cloudFiles.inferColumnTypes", "true"),
        ],
    );
    let b = read_all(&mut src).await;
    assert_eq!(
        b[0].schema().field_with_name("id").unwrap().data_type(),
        &arrow_schema::DataType::Int64
    );
}

#[tokio::test]
async fn primitives_as_string_keeps_inferred_numbers_as_strings() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.json"),
        "{\"id\": 1, \"ok\": true, \"s\": {\"x\": 2.5}}\n",
    )
    .unwrap();
    let types = ("cloudFiles.inferColumnTypes", "true");
    let state = tempfile::tempdir().unwrap();
    let src = source(input.path(), Some(state.path()), &[types]);
    assert_eq!(
        src.schema().field_with_name("id").unwrap().data_type(),
        &arrow_schema::DataType::Int64
    );
    let src = source(input.path(), None, &[types, ("primitivesAsString", "true")]);
    let schema = src.schema();
    assert_eq!(
        schema.field_with_name("id").unwrap().data_type(),
        &arrow_schema::DataType::Utf8
    );
    assert_eq!(
        schema.field_with_name("ok").unwrap().data_type(),
        &arrow_schema::DataType::Utf8
    );
    assert!(matches!(
        schema.field_with_name("s").unwrap().data_type(),
        arrow_schema::DataType::Struct(f) if f[0].data_type() == &arrow_schema::DataType::Utf8
    ));
}

#[test]
fn refusals_name_the_option_and_why() {
    let input = tempfile::tempdir().unwrap();
    let err = |extra: &[(&str, &str)]| try_source(input.path(), None, extra).unwrap_err();
    let e = err(&[("encoding", "ISO-8859-1")]);
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(e.message().contains("only UTF-8"), "{}", e.message());
    assert!(try_source(
        input.path(),
        None,
        &[("schema", "a STRING"), ("encoding", "utf-8")]
    )
    .is_ok());
    let e = err(&[("columnNameOfCorruptRecord", "_corrupt_record")]);
    assert!(e.message().contains("rescuedDataColumn"), "{}", e.message());
    let e = err(&[("quote", "'")]);
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert!(e.message().contains("csv only"), "{}", e.message());
    let e = err(&[("cloudFiles.format", "csv"), ("allowComments", "true")]);
    assert!(e.message().contains("json only"), "{}", e.message());
    let e = err(&[("schema", "a STRING"), ("primitivesAsString", "true")]);
    assert!(e.message().contains("inferred"), "{}", e.message());
    let e = err(&[
        ("schema", "ts TIMESTAMP"),
        ("timestampFormat", "yyyy-MM-dd[ HH:mm]"),
    ]);
    assert!(e.message().contains("optional section"), "{}", e.message());
    let e = err(&[
        ("cloudFiles.format", "csv"),
        ("schema", "a STRING"),
        ("quote", ""),
    ]);
    assert!(e.message().contains("quoting off"), "{}", e.message());
    let e = err(&[
        ("cloudFiles.format", "csv"),
        ("schema", "a STRING"),
        ("comment", ","),
    ]);
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    // Spark's own default patterns are accepted as they are.
    assert!(try_source(
        input.path(),
        None,
        &[
            ("schema", "a STRING"),
            ("timestampFormat", "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]"),
            ("dateFormat", "yyyy-MM-dd")
        ]
    )
    .is_ok());
}

#[tokio::test]
async fn csv_inference_types_columns_with_the_null_text_and_the_patterns() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "n,d,ts,s\n1,03.02.2026,02/01/2026 10:30,x\nNA,04.02.2026,NA,y\n",
    )
    .unwrap();
    let mut src = source(
        input.path(),
        None,
        &csv(&[
            ("header", "true"),
            ("cloudFiles.inferColumnTypes", "true"),
            ("nullValue", "NA"),
            ("dateFormat", "dd.MM.yyyy"),
            ("timestampFormat", "dd/MM/yyyy HH:mm"),
        ]),
    );
    let schema = src.schema();
    let dt = |n: &str| schema.field_with_name(n).unwrap().data_type().clone();
    assert_eq!(
        dt("n"),
        arrow_schema::DataType::Int64,
        "NA is null, not text"
    );
    assert_eq!(dt("d"), arrow_schema::DataType::Date32);
    assert!(matches!(dt("ts"), arrow_schema::DataType::Timestamp(..)));
    assert_eq!(dt("s"), arrow_schema::DataType::Utf8);
    let b = read_all(&mut src).await;
    assert_eq!(strings(&b, "n"), [Some("1".into()), None]);
    assert_eq!(
        strings(&b, "ts"),
        [Some("2026-01-02T10:30:00Z".into()), None]
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 0);
}

#[test]
fn drop_malformed_and_infer_schema_are_refused_naming_what_to_use() {
    let input = tempfile::tempdir().unwrap();
    let e = try_source(input.path(), None, &[("mode", "DROPMALFORMED")]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(
        e.message().contains("PERMISSIVE and filter"),
        "{}",
        e.message()
    );
    let e = try_source(input.path(), None, &[("inferSchema", "true")]).unwrap_err();
    assert!(
        e.message().contains("cloudFiles.inferColumnTypes"),
        "{}",
        e.message()
    );
}

#[tokio::test]
async fn a_backslash_before_another_character_is_kept_as_spark_keeps_it() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "1,\"C:\\dir\\x\"\n2,C:\\dir\n3,\"a\\\\b\"\n",
    )
    .unwrap();
    let mut src = source(input.path(), None, &csv(&[("schema", "id INT, t STRING")]));
    let b = read_all(&mut src).await;
    assert_eq!(
        strings(&b, "t"),
        [
            Some("C:\\dir\\x".into()),
            Some("C:\\dir".into()),
            Some("a\\b".into())
        ]
    );
}
