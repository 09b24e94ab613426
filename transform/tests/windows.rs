//! Event-time windows with a watermark: Spark's `window(ts, '1 minute')` and
//! `withWatermark(ts, '30 seconds')` in append mode — a window is emitted once, when the
//! watermark passes its end, and leaves the state; rows at or before the watermark are dropped
//! and counted; the watermark is saved with the state, so a replayed batch decides the same.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod events;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, Int64Array, RecordBatch, StringArray, StructArray, TimestampMillisecondArray,
};
use events::schema;
use tributary_sdk::{ErrorCode, OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

const SQL: &str = "SELECT window(ts, '1 minute') AS window, count(*) AS n, sum(v) AS total FROM source GROUP BY window(ts, '1 minute')";

/// Rows at these seconds since the epoch, v = the second.
fn rows(seconds: &[i64]) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(
                TimestampMillisecondArray::from_iter_values(seconds.iter().map(|s| s * 1000))
                    .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from_iter_values(
                seconds.iter().map(|s| format!("k{}", s % 2)),
            )),
            Arc::new(Int64Array::from_iter_values(seconds.iter().copied())),
        ],
    )
    .unwrap()
}

fn spec(sql: &str, mode: Option<OutputMode>) -> TransformSpec {
    let mut s = TransformSpec::new(sql).with_watermark("ts", "30 seconds");
    if let Some(m) = mode {
        s = s.with_output_mode(m);
    }
    s
}

async fn opened() -> SqlTransform {
    let mut t = SqlTransform::new(spec(SQL, Some(OutputMode::Append))).unwrap();
    t.open(schema()).await.unwrap();
    t
}

/// (window start second, n, total) of what a batch emits.
async fn run_batch(t: &mut SqlTransform, seconds: &[i64]) -> Vec<(i64, i64, i64)> {
    assert_eq!(t.apply(&rows(seconds)).await.unwrap().num_rows(), 0);
    let Some(out) = t.state().unwrap().end_batch().await.unwrap() else {
        return Vec::new();
    };
    let w = out
        .column_by_name("window")
        .unwrap()
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    let start = w
        .column_by_name("start")
        .unwrap()
        .as_any()
        .downcast_ref::<TimestampMillisecondArray>()
        .unwrap();
    let end = w
        .column_by_name("end")
        .unwrap()
        .as_any()
        .downcast_ref::<TimestampMillisecondArray>()
        .unwrap();
    let n = out
        .column_by_name("n")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let total = out
        .column_by_name("total")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let mut v: Vec<_> = (0..out.num_rows())
        .map(|i| {
            assert_eq!(end.value(i) - start.value(i), 60_000, "a one-minute window");
            (start.value(i) / 1000, n.value(i), total.value(i))
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn append_mode_emits_each_window_once_when_the_watermark_passes_its_end() {
    // Spark's two watermarks: batch n drops input of windows final under the watermark of
    // batch n - 2 and evicts (emits) windows final under that of batch n - 1.
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened().await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // batch 0: windows [0,60) ×2 and [60,120) ×1; watermark becomes 70 - 30 = 40
    assert_eq!(run_batch(&mut t, &[10, 20, 70]).await, vec![]);
    t.state().unwrap().save(dir.path(), 0).await.unwrap();
    // batch 1: evicts under 40: nothing; watermark becomes 130 - 30 = 100
    assert_eq!(run_batch(&mut t, &[50, 130]).await, vec![]);
    t.state().unwrap().save(dir.path(), 1).await.unwrap();
    // batch 2: 30 is older than the watermark but its window is open under 40, so it counts;
    // evicts under 100: [0,60) with 10, 20, 50, 30
    let third = run_batch(&mut t, &[30, 200]).await;
    assert_eq!(third, vec![(0, 4, 110)]);
    let p = t.state().unwrap().progress().remove(0);
    assert_eq!(
        (
            p.num_rows_removed,
            p.num_rows_total,
            p.num_rows_dropped_by_watermark
        ),
        (1, 3, 0)
    );
    assert!(
        p.watermark
            .as_deref()
            .unwrap()
            .contains("1970-01-01T00:02:50"),
        "{p:?}"
    );
    t.state().unwrap().save(dir.path(), 2).await.unwrap();
    // no new input, but the watermark moved: Spark's no-data batch evicts under 170
    assert!(t.state().unwrap().needs_no_data_batch());
    assert_eq!(run_batch(&mut t, &[]).await, vec![(60, 1, 70)]);
    t.state().unwrap().save(dir.path(), 3).await.unwrap();
    assert!(!t.state().unwrap().needs_no_data_batch());
    // batch 4: 100 belongs to [60,120), final under 170: late, dropped and counted
    assert_eq!(run_batch(&mut t, &[100, 230]).await, vec![]);
    assert_eq!(
        t.state().unwrap().progress()[0].num_rows_dropped_by_watermark,
        1
    );

    // A replay of batch 2 from version 1 decides the same (the watermarks were saved with it).
    let mut again = opened().await;
    again
        .state()
        .unwrap()
        .restore(dir.path(), Some(2))
        .await
        .unwrap();
    assert_eq!(run_batch(&mut again, &[]).await, vec![(60, 1, 70)]);
}

#[tokio::test]
async fn update_mode_with_a_watermark_evicts_finished_windows() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = SqlTransform::new(spec(SQL, Some(OutputMode::Update))).unwrap();
    t.open(schema()).await.unwrap();
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    assert_eq!(
        run_batch(&mut t, &[10, 70]).await,
        vec![(0, 1, 10), (60, 1, 70)]
    );
    t.state().unwrap().save(dir.path(), 0).await.unwrap();
    assert_eq!(
        run_batch(&mut t, &[75, 200]).await,
        vec![(60, 2, 145), (180, 1, 200)]
    );
    t.state().unwrap().save(dir.path(), 1).await.unwrap();
    assert_eq!(t.state().unwrap().progress()[0].num_rows_total, 3);
    // the no-data batch evicts under 170: [0,60) and [60,120) leave the state, nothing changed
    assert_eq!(run_batch(&mut t, &[]).await, vec![]);
    assert_eq!(t.state().unwrap().progress()[0].num_rows_total, 1);
}

#[tokio::test]
async fn spark_s_watermark_rules_are_refused_by_name() {
    let refused = |s: TransformSpec| async move {
        let mut t = SqlTransform::new(s).unwrap();
        t.open(schema()).await.unwrap_err()
    };
    let e = refused(spec("SELECT k FROM source", None)).await;
    assert!(
        e.message()
            .contains("no aggregation and no dropDuplicates, so it would be ignored"),
        "{e}"
    );
    assert_eq!(e.context_value("option"), Some("transform.watermark"));
    let e = refused(spec(SQL, Some(OutputMode::Complete))).await;
    assert!(e.message().contains("no effect in complete mode"), "{e}");
    let e = refused(spec(
        "SELECT k, count(*) FROM source GROUP BY k",
        Some(OutputMode::Append),
    ))
    .await;
    assert!(
        e.message().contains("Append output mode not supported"),
        "{e}"
    );
    let e = refused(
        TransformSpec::new(SQL)
            .with_watermark("when", "30 seconds")
            .with_output_mode(OutputMode::Append),
    )
    .await;
    assert!(
        e.message().contains("'when' is not a column of source")
            && e.message().contains("ts, k, v"),
        "{e}"
    );
    let e = refused(
        TransformSpec::new(SQL)
            .with_watermark("k", "30 seconds")
            .with_output_mode(OutputMode::Append),
    )
    .await;
    assert!(e.message().contains("not a TIMESTAMP"), "{e}");
    let e = refused(spec(
        "SELECT window(ts, '1 minute', '10 seconds', '5 seconds') AS w, count(*) FROM source GROUP BY window(ts, '1 minute', '10 seconds', '5 seconds')",
        Some(OutputMode::Append),
    ))
    .await;
    assert!(e.message().contains("startTime is not supported"), "{e}");
    let e = SqlTransform::new(TransformSpec::new(SQL).with_watermark("ts", "soon")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidPipeline);
    assert_eq!(
        e.context_value("option"),
        Some("transform.watermark.delayThreshold")
    );
}

#[tokio::test]
async fn a_sliding_window_counts_each_row_in_every_window_containing_it() {
    let dir = tempfile::tempdir().unwrap();
    let sql = "SELECT window(ts, '1 minute', '30 seconds') AS window, count(*) AS n, sum(v) AS total FROM source GROUP BY window(ts, '1 minute', '30 seconds')";
    let mut t = SqlTransform::new(spec(sql, Some(OutputMode::Update))).unwrap();
    t.open(schema()).await.unwrap();
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // 10 is in [-30,30) and [0,60); 40 in [0,60) and [30,90); 70 in [30,90) and [60,120)
    let out = run_batch(&mut t, &[10, 40, 70]).await;
    assert_eq!(
        out,
        vec![(-30, 1, 10), (0, 2, 50), (30, 2, 110), (60, 1, 70)]
    );
    // a sliding window outside a GROUP BY is refused when the query opens
    let mut s = SqlTransform::new(TransformSpec::new(
        "SELECT window(ts, '1 minute', '30 seconds') AS w FROM source",
    ))
    .unwrap();
    let e = s.open(schema()).await.unwrap_err();
    assert!(e.message().contains("can only be a GROUP BY key"), "{e}");
}
