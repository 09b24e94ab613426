//! The SQL transform on Kafka-shaped batches, in the shapes of the reference examples:
//! `selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")`, a projection of decoded struct
//! fields, and a broadcast join enriching the stream from a static table (Parquet, CSV, Delta),
//! each fed several batches through one plan.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use tributary_sdk::{ErrorCode, Stage};
use tributary_transform::{SqlTransform, TableFormat, TransformSpec};

async fn opened(
    spec: TransformSpec,
    input: datafusion::arrow::datatypes::SchemaRef,
) -> SqlTransform {
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(input).await.unwrap();
    t
}

#[tokio::test]
async fn cast_key_and_value_as_string() {
    // selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    let mut t = opened(
        TransformSpec::new(
            "SELECT CAST(key AS STRING) AS key, CAST(value AS STRING) AS value FROM source",
        ),
        kafka_schema(),
    )
    .await;
    for (from, n) in [(0, 1), (1, 100), (101, 8192), (8293, 0)] {
        let input = orders(from, n);
        let out = t.apply(&kafka_batch(&input, from)).await.unwrap();
        assert_eq!(out.num_rows(), n);
        assert_eq!(
            out.schema().field(0).data_type(),
            &datafusion::arrow::datatypes::DataType::Utf8
        );
        let expected_keys: Vec<Option<String>> = input.iter().map(|o| o.customer.clone()).collect();
        let expected_values: Vec<Option<String>> = input.iter().map(|o| Some(json(o))).collect();
        assert_eq!(strings(&out, "key"), expected_keys);
        assert_eq!(strings(&out, "value"), expected_values);
    }
}

#[tokio::test]
async fn cast_of_invalid_utf8_never_fails_the_batch() {
    use datafusion::arrow::array::{BinaryArray, RecordBatch};
    use std::sync::Arc;

    let mut t = opened(
        TransformSpec::new(
            "SELECT CAST(key AS STRING) AS k, TRY_CAST(key AS STRING) AS t FROM source",
        ),
        kafka_schema(),
    )
    .await;
    let good = kafka_batch(&orders(1, 3), 1);
    let mut columns = good.columns().to_vec();
    columns[0] = Arc::new(BinaryArray::from_iter([
        Some(&b"c1"[..]),
        Some(&[0x63, 0xc3, 0x28][..]),
        None,
    ]));
    let out = t
        .apply(&RecordBatch::try_new(good.schema(), columns).unwrap())
        .await
        .unwrap();
    assert_eq!(
        strings(&out, "k"),
        vec![Some("c1".to_string()), Some("c\u{fffd}(".to_string()), None]
    );
    // TRY_CAST keeps DataFusion's meaning: NULL when the bytes are not UTF-8
    assert_eq!(strings(&out, "t"), vec![Some("c1".to_string()), None, None]);
}

#[tokio::test]
async fn decoded_struct_fields_are_addressable() {
    let mut t = opened(
        TransformSpec::new(
            "SELECT value.id AS id, value['customer'] AS customer, value.amount * 2 AS doubled, \"offset\" \
             FROM source WHERE value.amount > 20",
        ),
        decoded_schema(),
    )
    .await;
    for (from, n) in [(0, 100), (100, 1000)] {
        let input = orders(from, n);
        let out = t.apply(&decoded_batch(&input, from)).await.unwrap();
        let kept: Vec<&Order> = input.iter().filter(|o| o.amount > 20.0).collect();
        assert!(!kept.is_empty() && kept.len() < n);
        assert_eq!(
            strings(&out, "id"),
            kept.iter()
                .map(|o| Some(o.id.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            strings(&out, "customer"),
            kept.iter().map(|o| o.customer.clone()).collect::<Vec<_>>()
        );
        assert_eq!(
            floats(&out, "doubled"),
            kept.iter()
                .map(|o| Some(o.amount * 2.0))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            strings(&out, "offset"),
            kept.iter()
                .map(|o| Some(o.id.to_string()))
                .collect::<Vec<_>>()
        );
    }
}

/// Runs the enrichment join over several batches and checks every batch's output on its own:
/// each output holds exactly that batch's matched rows (the plan is executed again per batch,
/// the static side is not mixed up with earlier batches).
async fn check_enrichment(t: &mut SqlTransform, left_join: bool) {
    let mut from = 0;
    for n in [1usize, 100, 8192, 0, 37] {
        let input = orders(from, n);
        let out = t.apply(&decoded_batch(&input, from)).await.unwrap();
        let expected: Vec<(Option<String>, Option<String>)> = input
            .iter()
            .filter_map(|o| {
                let region = o
                    .customer
                    .as_deref()
                    .and_then(region_of)
                    .map(str::to_string);
                (left_join || region.is_some()).then(|| (o.customer.clone(), region))
            })
            .collect();
        let got: Vec<(Option<String>, Option<String>)> = strings(&out, "k")
            .into_iter()
            .zip(strings(&out, "region"))
            .collect();
        let mut got_sorted = got.clone();
        let mut expected_sorted = expected.clone();
        got_sorted.sort();
        expected_sorted.sort();
        assert_eq!(got_sorted, expected_sorted, "batch of {n} rows from {from}");
        from += n as i64;
    }
}

const ENRICH: &str =
    "SELECT CAST(s.key AS STRING) AS k, s.value.amount AS amount, d.name, d.region \
                      FROM source s JOIN customers d ON d.id = CAST(s.key AS STRING)";

#[tokio::test]
async fn broadcast_join_with_a_parquet_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.parquet");
    write_parquet(&path, &customers());
    let spec = TransformSpec::new(ENRICH).with_table(
        "customers",
        path.to_str().unwrap(),
        TableFormat::Parquet,
    );
    let mut t = opened(spec, decoded_schema()).await;
    // the static table is the broadcast (build) side, held in memory; the stream probes it
    let plan = t.explain().unwrap();
    assert!(plan.contains("HashJoinExec: mode=CollectLeft"), "{plan}");
    let build = plan
        .lines()
        .skip_while(|l| !l.contains("HashJoinExec"))
        .nth(1)
        .unwrap();
    assert!(
        build.trim_start().starts_with("DataSourceExec"),
        "the static table in memory must be the build side:\n{plan}"
    );
    // the file is read at open, not per batch: deleting it does not matter any more
    std::fs::remove_file(&path).unwrap();
    check_enrichment(&mut t, false).await;
}

#[tokio::test]
async fn left_join_keeps_unmatched_stream_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.parquet");
    write_parquet(&path, &customers());
    let sql = "SELECT CAST(s.key AS STRING) AS k, d.region FROM source s \
               LEFT JOIN customers d ON d.id = CAST(s.key AS STRING)";
    let spec = TransformSpec::new(sql).with_table(
        "customers",
        path.to_str().unwrap(),
        TableFormat::Parquet,
    );
    let mut t = opened(spec, decoded_schema()).await;
    check_enrichment(&mut t, true).await;
}

#[tokio::test]
async fn broadcast_join_with_a_csv_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.csv");
    write_csv(&path, &customers());
    let spec = TransformSpec::new(ENRICH).with_table(
        "customers",
        path.to_str().unwrap(),
        TableFormat::Csv,
    );
    let mut t = opened(spec, decoded_schema()).await;
    check_enrichment(&mut t, false).await;
}

#[cfg(feature = "delta")]
#[tokio::test]
async fn broadcast_join_with_a_delta_table_reads_its_current_version() {
    use datafusion::arrow::array::{RecordBatch, StringArray};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let url = url::Url::from_directory_path(dir.path()).unwrap();
    // version 0: stale regions; version 1 overwrites with the real ones
    let stale = customers();
    let stale = RecordBatch::try_new(
        stale.schema(),
        vec![
            stale.column(0).clone(),
            stale.column(1).clone(),
            Arc::new(StringArray::from(vec!["old"; 4])),
        ],
    )
    .unwrap();
    let table = deltalake::DeltaTable::try_from_url(url.clone())
        .await
        .unwrap();
    let table = table.write(vec![stale]).await.unwrap();
    let table = table
        .write(vec![customers()])
        .with_save_mode(deltalake::protocol::SaveMode::Overwrite)
        .await
        .unwrap();
    assert_eq!(table.version(), Some(1));

    let spec = TransformSpec::new(ENRICH).with_table(
        "customers",
        dir.path().to_str().unwrap(),
        TableFormat::Delta,
    );
    let mut t = opened(spec, decoded_schema()).await;
    check_enrichment(&mut t, false).await;
}

#[tokio::test]
async fn semi_anti_joins_and_static_subqueries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.parquet");
    write_parquet(&path, &customers());
    let table = path.to_str().unwrap();
    let input = orders(0, 500);
    let batch = decoded_batch(&input, 0);

    // EXISTS / NOT EXISTS against the static table (semi / anti join, stream preserved)
    let sql = "SELECT value.id AS id FROM source s WHERE NOT EXISTS \
               (SELECT 1 FROM customers d WHERE d.id = CAST(s.key AS STRING))";
    let mut t = opened(
        TransformSpec::new(sql).with_table("customers", table, TableFormat::Parquet),
        decoded_schema(),
    )
    .await;
    let expected: Vec<Option<String>> = input
        .iter()
        .filter(|o| o.customer.as_deref().and_then(region_of).is_none())
        .map(|o| Some(o.id.to_string()))
        .collect();
    for _ in 0..3 {
        let mut got = strings(&t.apply(&batch).await.unwrap(), "id");
        got.sort();
        let mut want = expected.clone();
        want.sort();
        assert_eq!(got, want);
    }

    // an aggregate over the static table alone runs once and is allowed
    let sql = "SELECT value.id AS id, (SELECT count(*) FROM customers) AS n FROM source";
    let mut t = opened(
        TransformSpec::new(sql).with_table("customers", table, TableFormat::Parquet),
        decoded_schema(),
    )
    .await;
    let out = t.apply(&batch).await.unwrap();
    assert_eq!(out.num_rows(), 500);
    assert!(strings(&out, "n").iter().all(|n| n.as_deref() == Some("4")));
}

#[tokio::test]
async fn union_all_of_the_stream_and_unnest() {
    let sql = "SELECT value.id AS id FROM source WHERE value.amount < 10 \
               UNION ALL SELECT value.id AS id FROM source WHERE value.amount > 30";
    let mut t = opened(TransformSpec::new(sql), decoded_schema()).await;
    let input = orders(0, 400);
    let out = t.apply(&decoded_batch(&input, 0)).await.unwrap();
    let mut got = strings(&out, "id");
    got.sort();
    let mut want: Vec<Option<String>> = input
        .iter()
        .filter(|o| o.amount < 10.0 || o.amount > 30.0)
        .map(|o| Some(o.id.to_string()))
        .collect();
    want.sort();
    assert_eq!(got, want);

    let sql = "SELECT \"offset\", unnest(make_array(value.id, value.id + 1000)) AS v FROM source";
    let mut t = opened(TransformSpec::new(sql), decoded_schema()).await;
    let out = t.apply(&decoded_batch(&orders(0, 3), 0)).await.unwrap();
    assert_eq!(
        strings(&out, "v"),
        ["0", "1000", "1", "1001", "2", "1002"].map(|s| Some(s.to_string()))
    );
}

#[tokio::test]
async fn apply_from_inside_a_tokio_task_many_times() {
    // Stage::apply is called from the engine's async task; thousands of applies in one poll
    // must not run out of tokio's cooperative budget (which would spin).
    let mut t = opened(
        TransformSpec::new("SELECT CAST(key AS STRING) AS k FROM source"),
        kafka_schema(),
    )
    .await;
    let batch = kafka_batch(&orders(0, 10), 0);
    let rows = tokio::spawn(async move {
        let mut rows = 0;
        for _ in 0..5000 {
            rows += t.apply(&batch).await.unwrap().num_rows();
        }
        rows
    })
    .await
    .unwrap();
    assert_eq!(rows, 50_000);
}

#[tokio::test]
async fn apply_twice_gives_the_same_rows_and_bad_values_fail_the_batch() {
    let mut t = opened(
        TransformSpec::new("SELECT CAST(CAST(value AS STRING) AS INT) AS n FROM source"),
        kafka_schema(),
    )
    .await;
    let e = t.apply(&kafka_batch(&orders(0, 2), 0)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::MalformedRecord, "{e}");
    assert!(e.message().contains("Cannot cast"), "{e}");

    let mut t = opened(
        TransformSpec::new("SELECT CAST(key AS STRING) AS k FROM source WHERE partition = 0"),
        kafka_schema(),
    )
    .await;
    let batch = kafka_batch(&orders(0, 50), 0);
    let a = t.apply(&batch).await.unwrap();
    let b = t.apply(&batch).await.unwrap();
    assert_eq!(a, b);

    // a batch whose schema is not the planned one is refused, not misread
    let e = t.apply(&decoded_batch(&orders(0, 2), 0)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Schema);
}
