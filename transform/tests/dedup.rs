//! Spark's `dropDuplicates` and `dropDuplicatesWithinWatermark` before the query: the first row
//! of each key passes, later ones (in the same part, a later part, a later batch) are dropped
//! and counted; under a watermark late rows are dropped and keys evicted as Spark does; the
//! keys are saved with the batch, so a replay from the previous version drops the same rows;
//! a deduplication under an aggregation counts each key once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use tributary_sdk::{ErrorCode, OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("v", DataType::Int64, true),
    ]))
}

/// Rows (id, second, v).
fn rows(r: &[(&str, i64, i64)]) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from_iter_values(r.iter().map(|x| x.0))),
            Arc::new(
                TimestampMillisecondArray::from_iter_values(r.iter().map(|x| x.1 * 1000))
                    .with_timezone("UTC"),
            ),
            Arc::new(Int64Array::from_iter_values(r.iter().map(|x| x.2))),
        ],
    )
    .unwrap()
}

/// (id, v) of the rows a part lets through.
async fn pass(t: &mut SqlTransform, r: &[(&str, i64, i64)]) -> Vec<(String, i64)> {
    let out = t.apply(&rows(r)).await.unwrap();
    let id = out
        .column_by_name("id")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let v = out
        .column_by_name("v")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    (0..out.num_rows())
        .map(|i| (id.value(i).to_string(), v.value(i)))
        .collect()
}

fn owned(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(a, b)| (a.to_string(), *b)).collect()
}

async fn end(t: &mut SqlTransform, dir: &std::path::Path, version: u64) {
    assert!(t.state().unwrap().end_batch().await.unwrap().is_none());
    t.state().unwrap().save(dir, version).await.unwrap();
}

async fn opened(spec: TransformSpec) -> SqlTransform {
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(schema()).await.unwrap();
    assert!(t.is_stateful());
    t
}

#[tokio::test]
async fn the_first_row_of_each_key_passes_across_parts_batches_and_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TransformSpec::new("SELECT id, v FROM source").with_drop_duplicates(["id"]);
    let mut t = opened(spec.clone()).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // within one part and across parts of one batch
    assert_eq!(
        pass(&mut t, &[("a", 1, 1), ("b", 1, 2), ("a", 2, 3)]).await,
        owned(&[("a", 1), ("b", 2)])
    );
    assert_eq!(
        pass(&mut t, &[("b", 3, 4), ("c", 3, 5)]).await,
        owned(&[("c", 5)])
    );
    end(&mut t, dir.path(), 0).await;
    let p = t.state().unwrap().progress().remove(0);
    assert_eq!(p.operator_name, "dedupe");
    assert_eq!((p.num_rows_total, p.num_rows_updated), (3, 3));
    assert_eq!(p.custom_metrics["numDroppedDuplicateRows"], 2);

    // batch 1 sees "c" again and "d" new
    assert_eq!(
        pass(&mut t, &[("c", 9, 6), ("d", 9, 7)]).await,
        owned(&[("d", 7)])
    );
    end(&mut t, dir.path(), 1).await;

    // a new run replaying batch 1 from version 0 lets the same rows through
    let mut again = opened(spec).await;
    again
        .state()
        .unwrap()
        .restore(dir.path(), Some(0))
        .await
        .unwrap();
    assert_eq!(
        pass(&mut again, &[("c", 9, 6), ("d", 9, 7)]).await,
        owned(&[("d", 7)])
    );
    // and from version 1 it knows "d"
    again
        .state()
        .unwrap()
        .restore(dir.path(), Some(1))
        .await
        .unwrap();
    assert_eq!(
        pass(&mut again, &[("d", 10, 8), ("e", 10, 9)]).await,
        owned(&[("e", 9)])
    );
}

#[tokio::test]
async fn with_the_event_time_among_the_keys_old_keys_are_evicted_and_late_rows_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TransformSpec::new("SELECT id, v FROM source")
        .with_watermark("ts", "30 seconds")
        .with_drop_duplicates(["id", "ts"]);
    let mut t = opened(spec).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // batch 0: watermark becomes 100 - 30 = 70
    assert_eq!(
        pass(&mut t, &[("a", 10, 1), ("b", 100, 2), ("a", 10, 3)]).await,
        owned(&[("a", 1), ("b", 2)])
    );
    end(&mut t, dir.path(), 0).await;
    // batch 1 drops input only under the previous watermark (none yet) and evicts under 70 at
    // its end: "a"@10 is still held, so it is a duplicate
    assert_eq!(
        pass(&mut t, &[("a", 10, 4), ("c", 200, 5)]).await,
        owned(&[("c", 5)])
    );
    end(&mut t, dir.path(), 1).await;
    let p = t.state().unwrap().progress().remove(0);
    assert_eq!(p.num_rows_removed, 1, "{p:?}");
    assert_eq!(p.watermark.as_deref(), Some("1970-01-01T00:02:50.000Z"));
    // batch 2 drops input at or before 70 and evicts under 170
    assert_eq!(
        pass(&mut t, &[("d", 70, 6), ("e", 71, 7)]).await,
        owned(&[("e", 7)])
    );
    end(&mut t, dir.path(), 2).await;
    let p = t.state().unwrap().progress().remove(0);
    assert_eq!(p.num_rows_dropped_by_watermark, 1);
    // "b"@100 and "e"@71 are at or before 170; "c"@200 stays
    assert_eq!((p.num_rows_removed, p.num_rows_total), (2, 1), "{p:?}");
}

#[tokio::test]
async fn within_the_watermark_a_key_is_forgotten_its_delay_after_its_first_row() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TransformSpec::new("SELECT id, v FROM source")
        .with_watermark("ts", "30 seconds")
        .with_drop_duplicates_within_watermark(["id"]);
    let mut t = opened(spec).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // "a" expires at 10 + 30 = 40; watermark becomes 60 - 30 = 30
    assert_eq!(
        pass(&mut t, &[("a", 10, 1), ("b", 60, 2), ("a", 50, 3)]).await,
        owned(&[("a", 1), ("b", 2)])
    );
    end(&mut t, dir.path(), 0).await;
    // batch 1 evicts under 30: nothing; "a" is still a duplicate; watermark becomes 80
    assert_eq!(
        pass(&mut t, &[("a", 55, 4), ("c", 110, 5)]).await,
        owned(&[("c", 5)])
    );
    end(&mut t, dir.path(), 1).await;
    // batch 2 evicts under 80: "a" (40); "a" passes again
    assert_eq!(
        pass(&mut t, &[("a", 100, 6)]).await,
        owned(&[]),
        "evicted at batch end"
    );
    end(&mut t, dir.path(), 2).await;
    assert_eq!(pass(&mut t, &[("a", 101, 7)]).await, owned(&[("a", 7)]));
    let p = t.state().unwrap().progress().remove(0);
    assert_eq!(p.operator_name, "dedupeWithinWatermark");
}

#[tokio::test]
async fn a_deduplication_under_an_aggregation_counts_each_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TransformSpec::new("SELECT count(*) AS n, sum(v) AS total FROM source")
        .with_output_mode(OutputMode::Update)
        .with_drop_duplicates(["id"]);
    let mut t = opened(spec).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    assert_eq!(
        t.apply(&rows(&[("a", 1, 1), ("a", 1, 1), ("b", 1, 2)]))
            .await
            .unwrap()
            .num_rows(),
        0
    );
    let out = t.state().unwrap().end_batch().await.unwrap().unwrap();
    let n = out.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(n.value(0), 2);
    t.state().unwrap().save(dir.path(), 0).await.unwrap();
    let ops: Vec<String> = t
        .state()
        .unwrap()
        .progress()
        .into_iter()
        .map(|p| p.operator_name)
        .collect();
    assert_eq!(ops, ["dedupe", "stateStoreSave"]);
    // both operators' versions are on disk: the aggregation's and the deduplication's
    for d in [dir.path().to_path_buf(), dir.path().join("dedup")] {
        let stored = tributary_transform::stored_versions(&d).unwrap();
        assert!(
            stored.iter().any(|v| v.version == 0),
            "{}: {stored:?}",
            d.display()
        );
    }
    assert_eq!(
        t.apply(&rows(&[("b", 2, 2), ("c", 2, 3)]))
            .await
            .unwrap()
            .num_rows(),
        0
    );
    let out = t.state().unwrap().end_batch().await.unwrap().unwrap();
    let n = out.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let total = out.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!((n.value(0), total.value(0)), (3, 6));
}

#[tokio::test]
async fn spark_s_refusals_name_the_option() {
    // dropDuplicatesWithinWatermark needs a watermark (Spark's message)
    let e = SqlTransform::new(
        TransformSpec::new("SELECT * FROM source").with_drop_duplicates_within_watermark(["id"]),
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidPipeline);
    assert!(e.to_string().contains("dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without watermark"), "{e}");
    // both at once
    let e = SqlTransform::new(
        TransformSpec::new("SELECT * FROM source")
            .with_watermark("ts", "1 minute")
            .with_drop_duplicates(["id"])
            .with_drop_duplicates_within_watermark(["id"]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("choose one"), "{e}");
    // an unknown column, at open
    let mut t = SqlTransform::new(
        TransformSpec::new("SELECT * FROM source").with_drop_duplicates(["nope"]),
    )
    .unwrap();
    let e = t.open(schema()).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("'nope' is not a column of source (columns: id, ts, v)"),
        "{e}"
    );
    // a watermark with neither an aggregation nor a deduplication would be ignored
    let mut t = SqlTransform::new(
        TransformSpec::new("SELECT * FROM source").with_watermark("ts", "1 minute"),
    )
    .unwrap();
    let e = t.open(schema()).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("no aggregation and no dropDuplicates"),
        "{e}"
    );
    // a changed key list against saved state is refused naming both
    let dir = tempfile::tempdir().unwrap();
    let mut t =
        opened(TransformSpec::new("SELECT * FROM source").with_drop_duplicates(["id"])).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    pass(&mut t, &[("a", 1, 1)]).await;
    end(&mut t, dir.path(), 0).await;
    let mut other =
        opened(TransformSpec::new("SELECT * FROM source").with_drop_duplicates(["id", "v"])).await;
    let e = other
        .state()
        .unwrap()
        .restore(dir.path(), Some(0))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::CheckpointIncompatible);
    assert!(
        e.to_string().contains("DEDUP [id: Utf8]")
            && e.to_string().contains("DEDUP [id: Utf8, v: Int64]"),
        "{e}"
    );
}

#[tokio::test]
async fn every_column_when_the_list_is_empty_and_nulls_equal_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let spec =
        TransformSpec::new("SELECT id, v FROM source").with_drop_duplicates(Vec::<String>::new());
    let mut t = opened(spec).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from(vec![None, None, Some("a"), Some("a")])),
            Arc::new(
                TimestampMillisecondArray::from(vec![1000, 1000, 1000, 2000]).with_timezone("UTC"),
            ),
            Arc::new(Int64Array::from(vec![1, 1, 1, 1])),
        ],
    )
    .unwrap();
    let out = t.apply(&batch).await.unwrap();
    // (null, 1s, 1) twice → once; ("a", 1s) and ("a", 2s) differ in ts
    assert_eq!(out.num_rows(), 3);
    assert_eq!(out.column(0).null_count(), 1);
}

#[tokio::test]
async fn every_column_leaves_out_the_file_metadata_column() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, true),
        Field::new("_metadata", DataType::Utf8, true),
    ]));
    let spec =
        TransformSpec::new("SELECT id FROM source").with_drop_duplicates(Vec::<String>::new());
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(Arc::clone(&schema)).await.unwrap();
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // the same row read from two files is one row
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec!["a", "a", "b"])),
            Arc::new(StringArray::from(vec!["file1", "file2", "file2"])),
        ],
    )
    .unwrap();
    assert_eq!(t.apply(&batch).await.unwrap().num_rows(), 2);
}
