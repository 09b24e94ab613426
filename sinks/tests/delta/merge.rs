//! The backfill MERGE: dedup by the default key and by a struct field, idempotent re-runs,
//! metadata columns the backfill lacks left NULL.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, Field, Fields, Schema, TimeUnit};
use tributary_sdk::{ErrorCode, Sink};
use tributary_sinks::delta::{
    merge_backfill, merge_backfill_with, DeltaConfig, DeltaSink, MergeOptions,
};

use crate::reader::{column, python, read};

/// (key, transaction_id, amount, time in ms)
type Row = (&'static str, &'static str, i64, i64);

fn value_fields() -> Fields {
    Fields::from(vec![
        Field::new("transaction_id", DataType::Utf8, true),
        Field::new("amount", DataType::Int64, true),
    ])
}

fn value(rows: &[Row]) -> ArrayRef {
    Arc::new(StructArray::new(
        value_fields(),
        vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
        None,
    ))
}

/// Ingestion-table rows as the forward pipeline writes them (Kafka metadata included).
fn stream_rows(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Struct(value_fields()), true),
        Field::new(
            "stream_record_timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("record_source", DataType::Utf8, true),
        Field::new("kafka_topic", DataType::Utf8, true),
        Field::new("kafka_partition", DataType::Int32, true),
        Field::new("kafka_offset", DataType::Int64, true),
    ]));
    let n = rows.len();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            value(rows),
            Arc::new(
                TimestampMicrosecondArray::from(
                    rows.iter().map(|r| r.3 * 1000).collect::<Vec<_>>(),
                )
                .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from(vec!["stream"; n])),
            Arc::new(StringArray::from(vec!["payments"; n])),
            Arc::new(Int32Array::from(vec![0; n])),
            Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>())),
        ],
    )
    .unwrap()
}

/// Backfill rows: no Kafka metadata, millisecond timestamps, a column the target lacks.
fn backfill_rows(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Struct(value_fields()), true),
        Field::new(
            "stream_record_timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("legacy_batch", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            value(rows),
            Arc::new(
                TimestampMillisecondArray::from(rows.iter().map(|r| r.3).collect::<Vec<_>>())
                    .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from(vec!["2025-export"; rows.len()])),
        ],
    )
    .unwrap()
}

async fn write_table(path: &std::path::Path, batch: RecordBatch) {
    let mut sink = DeltaSink::new(
        DeltaConfig::new(path.display().to_string()),
        Default::default(),
        None,
    );
    sink.open(batch.schema()).await.unwrap();
    sink.write(0, &[batch]).await.unwrap();
}

const STREAM: [Row; 3] = [
    ("k1", "t1", 10, 1_000),
    ("k2", "t2", 20, 2_000),
    ("k3", "t3", 30, 3_000),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_key_inserts_missing_rows_once_and_is_idempotent() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (target, source) = (dir.path().join("ingest"), dir.path().join("backfill"));
    write_table(&target, stream_rows(&STREAM)).await;
    write_table(
        &source,
        backfill_rows(&[
            ("k2", "t2", 20, 2_000), // already ingested by the stream
            ("k3", "t3", 30, 3_000), // already ingested by the stream
            ("k0", "t0", 5, 500),
            ("k9", "t9", 90, 9_000),
            ("k9", "t9", 90, 9_000), // duplicate inside the backfill
            ("k3", "t3", 31, 3_000), // same key and time, other value: a different record
        ]),
    )
    .await;
    let (t, s) = (target.display().to_string(), source.display().to_string());
    let report = merge_backfill(&t, &s, &[]).await.unwrap();
    assert_eq!(
        report.dedup_columns,
        ["key", "value", "stream_record_timestamp"]
    );
    assert_eq!(report.source_rows, 6);
    assert_eq!(report.source_duplicates, 1, "{report:?}");
    assert_eq!(report.inserted_rows, 3, "{report:?}");
    assert_eq!(report.matched_rows, 2, "{report:?}");

    let table = read(&py, &target, &[]);
    assert_eq!(
        column::<String>(&table, "key"),
        ["k0", "k1", "k2", "k3", "k3", "k9"]
    );
    let sources: Vec<String> = column(&table, "record_source");
    assert_eq!(sources.iter().filter(|s| *s == "backfill").count(), 3);
    for row in table["rows"].as_array().unwrap() {
        let backfill = row["record_source"] == "backfill";
        assert_eq!(row["kafka_topic"].is_null(), backfill, "{row}");
        assert!(row.get("legacy_batch").is_none(), "{row}");
    }
    let k0 = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "k0")
        .unwrap();
    assert!(
        k0["stream_record_timestamp"]
            .as_str()
            .unwrap()
            .starts_with("1970-01-01 00:00:00.500"),
        "{k0}"
    );

    // A re-run (after a crash or by mistake) inserts nothing.
    let again = merge_backfill(&t, &s, &[]).await.unwrap();
    assert_eq!(again.inserted_rows, 0, "{again:?}");
    assert_eq!(again.matched_rows, 5, "{again:?}");
    assert_eq!(read(&py, &target, &[])["rows"].as_array().unwrap().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_by_struct_field_and_recorded_transaction() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (target, source) = (dir.path().join("ingest"), dir.path().join("backfill"));
    write_table(&target, stream_rows(&STREAM)).await;
    write_table(
        &source,
        backfill_rows(&[
            ("other-key", "t1", 99, 7_000), // same transaction as a stream row: not inserted
            ("k4", "t4", 40, 4_000),
            ("k4", "t4", 41, 4_500), // same transaction twice: the earliest is inserted
        ]),
    )
    .await;
    let (t, s) = (target.display().to_string(), source.display().to_string());
    let dedup = vec!["value.transaction_id".to_string()];
    let options = MergeOptions {
        app_id: Some("backfill:stream-1".into()),
        ..MergeOptions::default()
    };
    let report = merge_backfill_with(&t, &s, &dedup, &options).await.unwrap();
    assert_eq!(
        (
            report.inserted_rows,
            report.matched_rows,
            report.source_duplicates
        ),
        (1, 1, 1)
    );
    let table = read(&py, &target, &["backfill:stream-1"]);
    assert_eq!(table["txn"]["backfill:stream-1"], 1);
    let k4: Vec<&serde_json::Value> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["key"] == "k4")
        .collect();
    assert_eq!(k4.len(), 1);
    assert_eq!(k4[0]["value"]["amount"], 40);

    let again = merge_backfill_with(&t, &s, &dedup, &options).await.unwrap();
    assert!(again.already_done, "{again:?}");
    assert_eq!(read(&py, &target, &[])["rows"].as_array().unwrap().len(), 4);

    let e = merge_backfill(&t, &s, &["value.nope".to_string()])
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Schema);
    assert!(e.to_string().contains("'value.nope'"), "{e}");
}
