//! What the SQL transform refuses at start, and how it says so: stateful operators named,
//! SQL errors with their line:column and DataFusion's message, malformed `[transform]` tables.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use tributary_sdk::{Error, ErrorCode, Stage};
use tributary_transform::{SqlTransform, TableFormat, TransformSpec};

fn dim_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.parquet");
    write_parquet(&path, &customers());
    let path = path.to_str().unwrap().to_string();
    (dir, path)
}

async fn open_err(sql: &str, table: Option<&str>) -> Error {
    let mut spec = TransformSpec::new(sql);
    if let Some(path) = table {
        spec = spec.with_table("customers", path, TableFormat::Parquet);
    }
    let mut t = SqlTransform::new(spec).unwrap();
    // `plan` (for `tributary check`) and `open` refuse the same way
    let planned = t.plan(decoded_schema()).await.unwrap_err();
    let opened = t.open(decoded_schema()).await.unwrap_err();
    assert_eq!(planned.message(), opened.message());
    opened
}

#[tokio::test]
async fn stateful_operators_are_refused_by_name() {
    let (_dir, dim) = dim_dir();
    let cases: &[(&str, &str, &[&str])] = &[
        // An aggregation at the top of the query keeps state (tests/aggregation.rs); anywhere
        // else it is refused.
        (
            "SELECT s.k FROM (SELECT key AS k, sum(value.amount) AS t FROM source GROUP BY key) s JOIN customers d ON d.id = CAST(s.k AS STRING)",
            "aggregation",
            &["GROUP BY source.key", "aggregate function sum("],
        ),
        (
            "SELECT row_number() OVER (PARTITION BY key ORDER BY \"offset\") FROM source",
            "window",
            &["window function row_number()"],
        ),
        ("SELECT DISTINCT key FROM source", "distinct", &["DISTINCT"]),
        ("SELECT key FROM source UNION SELECT key FROM source", "distinct", &["DISTINCT"]),
        ("SELECT key FROM source ORDER BY \"offset\"", "sort", &["ORDER BY"]),
        ("SELECT key FROM source LIMIT 10", "limit", &["LIMIT"]),
        (
            "SELECT a.key FROM source a JOIN source b ON a.key = b.key",
            "join",
            &["join of source with itself"],
        ),
        (
            "SELECT key FROM source s WHERE EXISTS (SELECT 1 FROM source t WHERE t.key = s.key)",
            "subquery",
            &["subquery over source"],
        ),
        (
            "SELECT d.id FROM customers d WHERE d.id IN (SELECT CAST(key AS STRING) FROM source)",
            "subquery",
            &["subquery over source filtering"],
        ),
        (
            "SELECT d.id FROM customers d LEFT JOIN source s ON d.id = CAST(s.key AS STRING)",
            "join",
            &["Left join that keeps the static table's rows", "put source on the left side"],
        ),
        (
            "SELECT d.id FROM source s FULL JOIN customers d ON d.id = CAST(s.key AS STRING)",
            "join",
            &["FULL OUTER JOIN"],
        ),
        (
            "SELECT CAST(key AS STRING) AS k FROM source UNION ALL SELECT id FROM customers",
            "union",
            &["UNION of source with a static table"],
        ),
        (
            "SELECT value.id FROM source WHERE CAST(key AS STRING) NOT IN (SELECT id FROM customers)",
            "join",
            &["NOT IN (subquery)", "NOT EXISTS"],
        ),
    ];
    // every case is checked before failing, so one run shows every wrong message
    let mut failures = Vec::new();
    for (sql, operator, words) in cases {
        let e = open_err(sql, Some(&dim)).await;
        let ok = e.code() == ErrorCode::InvalidPipeline
            && e.context_value("operator") == Some(*operator)
            && e.context_value("option") == Some("transform.sql")
            && words.iter().all(|w| e.message().contains(w));
        if !ok {
            failures.push(format!(
                "{sql}\n  expected operator {operator} and {words:?}\n  got {e}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let e = open_err("SELECT 1 AS one", None).await;
    assert!(e.message().contains("does not read the stream"), "{e}");
}

#[tokio::test]
async fn sql_errors_carry_the_position_and_datafusions_message() {
    // unknown column (planner diagnostic span)
    let e = open_err("SELECT key,\n  nope FROM source", None).await;
    assert_eq!(e.code(), ErrorCode::InvalidPipeline);
    assert_eq!(e.context_value("position"), Some("2:3"), "{e}");
    assert!(e.message().contains("at line 2, column 3"), "{e}");
    assert!(e.message().contains("nope"), "{e}");
    assert!(e.message().contains("\n    nope FROM source\n    ^"), "{e}");

    // unknown table
    let e = open_err("SELECT key FROM sauce", None).await;
    assert!(e.message().contains("sauce"), "{e}");
    assert_eq!(e.context_value("position"), Some("1:17"), "{e}");

    // syntax error: found at `new`, without the source's schema (tributary check)
    let bad = TransformSpec::new("SELECT CAST(key AS STRING k FROM source");
    let e = SqlTransform::new(bad).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidPipeline);
    assert_eq!(e.context_value("option"), Some("transform.sql"));
    assert!(e.context_value("position").is_some(), "{e}");
    assert!(e.message().contains("Expected"), "{e}");

    // type error from the planner
    let e = open_err("SELECT value.amount + 'x' FROM source WHERE key > 3", None).await;
    assert_eq!(e.code(), ErrorCode::InvalidPipeline, "{e}");

    for (sql, why) in [
        ("INSERT INTO t VALUES (1)", "not a query"),
        ("SELECT 1; SELECT 2", "2 statements"),
        ("", "empty"),
    ] {
        let e = SqlTransform::new(TransformSpec::new(sql)).unwrap_err();
        assert!(e.message().contains(why), "{sql}: {e}");
    }
}

#[test]
fn transform_tables_deserialize_as_the_pipeline_declares_them() {
    // the runtime parses `[transform]` and `[[transform.table]]` from TOML; the same serde shape
    // is checked here through JSON (the `table` key is the array of tables)
    #[derive(serde::Deserialize)]
    struct Pipeline {
        transform: TransformSpec,
    }
    let text = r#"{"transform": {
        "sql": "SELECT CAST(key AS STRING) FROM source",
        "table": [
            {"name": "customers", "path": "dim/customers.parquet", "format": "parquet"},
            {"name": "rates", "path": "dim/rates", "format": "delta"}
        ]}}"#;
    let p: Pipeline = serde_json::from_str(text).unwrap();
    assert_eq!(p.transform.tables.len(), 2);
    assert_eq!(p.transform.tables[1].format, TableFormat::Delta);
    assert_eq!(p.transform.tables[0].path, "dim/customers.parquet");

    let e = serde_json::from_str::<Pipeline>(&text.replace("\"delta\"", "\"orc\""))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("unknown variant `orc`, expected one of `parquet`, `delta`, `csv`"),
        "{e}"
    );
    let e = serde_json::from_str::<Pipeline>(&text.replace(
        "\"format\": \"parquet\"",
        "\"format\": \"parquet\", \"header\": true",
    ))
    .err()
    .unwrap();
    assert!(e.to_string().contains("unknown field `header`"), "{e}");
    let e = serde_json::from_str::<Pipeline>(r#"{"transform": {"sql": "SELECT 1", "tables": []}}"#)
        .err()
        .unwrap();
    assert!(e.to_string().contains("unknown field `tables`"), "{e}");

    let twice = TransformSpec::new("SELECT key FROM source")
        .with_table("dim", "a.parquet", TableFormat::Parquet)
        .with_table("DIM", "b.parquet", TableFormat::Parquet);
    assert!(twice
        .validate()
        .unwrap_err()
        .message()
        .contains("declared twice"));
    let reserved = TransformSpec::new("SELECT key FROM source").with_table(
        "source",
        "a.csv",
        TableFormat::Csv,
    );
    assert!(reserved
        .validate()
        .unwrap_err()
        .message()
        .contains("reserved"));
}

#[tokio::test]
async fn a_missing_static_table_names_the_table_and_path() {
    let spec = TransformSpec::new("SELECT key FROM source").with_table(
        "customers",
        "/nonexistent/customers.parquet",
        TableFormat::Parquet,
    );
    let e = SqlTransform::new(spec)
        .unwrap()
        .open(decoded_schema())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io, "{e}");
    assert_eq!(e.context_value("table"), Some("customers"));
    assert!(
        e.message().contains("/nonexistent/customers.parquet"),
        "{e}"
    );
}
