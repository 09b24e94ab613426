//! Session windows, Spark's `session_window(ts, gap)`: sessions of one key merge when their
//! events are closer than the gap, across batches too (a late event can bridge two held
//! sessions); in append mode a session is emitted once, when the watermark passes its end; the
//! state saved after a merge holds the merged session only, so an operator restored from any
//! version emits what the live one emits. Spark's refusals (update mode, a session window as
//! the only key) are checked with its messages.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod events;

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, Int64Array, RecordBatch, StringArray, StructArray, TimestampMillisecondArray,
};
use events::schema;
use tributary_sdk::{OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

const SQL: &str = "SELECT k, session_window(ts, '10 seconds') AS session, count(*) AS n, sum(v) AS total FROM source GROUP BY session_window(ts, '10 seconds'), k";

/// Rows (key, second since the epoch), v = the second.
fn rows(events: &[(&str, i64)]) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(
                TimestampMillisecondArray::from_iter_values(events.iter().map(|e| e.1 * 1000))
                    .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from_iter_values(events.iter().map(|e| e.0))),
            Arc::new(Int64Array::from_iter_values(events.iter().map(|e| e.1))),
        ],
    )
    .unwrap()
}

fn spec(mode: OutputMode, watermark: bool) -> TransformSpec {
    let s = TransformSpec::new(SQL).with_output_mode(mode);
    match watermark {
        true => s.with_watermark("ts", "30 seconds"),
        false => s,
    }
}

async fn opened(mode: OutputMode, watermark: bool) -> SqlTransform {
    let mut t = SqlTransform::new(spec(mode, watermark)).unwrap();
    t.open(schema()).await.unwrap();
    t
}

/// (key, start second, end second, n, total) of what a batch emits, sorted.
type Session = (String, i64, i64, i64, i64);

async fn run_batch(t: &mut SqlTransform, events: &[(&str, i64)]) -> Vec<Session> {
    assert_eq!(t.apply(&rows(events)).await.unwrap().num_rows(), 0);
    let Some(out) = t.state().unwrap().end_batch().await.unwrap() else {
        return Vec::new();
    };
    let s = out
        .column_by_name("session")
        .unwrap()
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    let ms = |name: &str| {
        s.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .unwrap()
            .clone()
    };
    let (start, end) = (ms("start"), ms("end"));
    let ints = |name: &str| {
        out.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .clone()
    };
    let (n, total) = (ints("n"), ints("total"));
    let k = out
        .column_by_name("k")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .clone();
    let mut v: Vec<Session> = (0..out.num_rows())
        .map(|i| {
            (
                k.value(i).to_string(),
                start.value(i) / 1000,
                end.value(i) / 1000,
                n.value(i),
                total.value(i),
            )
        })
        .collect();
    v.sort();
    v
}

fn session(k: &str, start: i64, end: i64, n: i64, total: i64) -> Session {
    (k.to_string(), start, end, n, total)
}

#[tokio::test]
async fn sessions_merge_across_batches_and_append_emits_each_once_past_the_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened(OutputMode::Append, true).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // batch 0: a [0,15) and [30,40), b [100,110); watermark becomes 100 - 30 = 70
    assert_eq!(
        run_batch(&mut t, &[("a", 0), ("a", 5), ("a", 30), ("b", 100)]).await,
        vec![]
    );
    t.state().unwrap().save(dir.path(), 0).await.unwrap();
    // batch 1: 12 joins [0,15) → [0,22), 22 joins it → [0,32), which reaches [30,40): one
    // session a [0,40); final under batch 0's watermark (70), so emitted once; b is not
    let out = run_batch(&mut t, &[("a", 12), ("a", 22)]).await;
    assert_eq!(out, vec![session("a", 0, 40, 5, 69)]);
    t.state().unwrap().save(dir.path(), 1).await.unwrap();
    // batch 2: 35 is later than the late-rows watermark (70, batch 0's) and dropped; b's 108
    // extends b to [100,118); nothing final under 70 remains
    assert_eq!(run_batch(&mut t, &[("a", 35), ("b", 108)]).await, vec![]);
    let progress = t.state().unwrap().progress();
    assert_eq!(progress[0].num_rows_dropped_by_watermark, 1, "{progress:?}");
    t.state().unwrap().save(dir.path(), 2).await.unwrap();
    // batch 3: b at 200 moves the watermark to 170; batch 4 (no data) evicts b [100,118)
    assert_eq!(run_batch(&mut t, &[("b", 200)]).await, vec![]);
    t.state().unwrap().save(dir.path(), 3).await.unwrap();
    assert_eq!(
        run_batch(&mut t, &[]).await,
        vec![session("b", 100, 118, 2, 208)]
    );
}

#[tokio::test]
async fn a_restored_operator_holds_the_merged_sessions_only() {
    // complete mode: every held session every batch, so stale (merged-away) sessions would show
    let dir = tempfile::tempdir().unwrap();
    let mut live = opened(OutputMode::Complete, false).await;
    live.state()
        .unwrap()
        .restore(dir.path(), None)
        .await
        .unwrap();
    // twenty other keys make the state large beside each batch's changes, so versions 1 to 3
    // are saved as deltas (a merged-away session must be deleted in the delta)
    let names: Vec<String> = (0..20).map(|i| format!("z{i:02}")).collect();
    let mut first: Vec<(&str, i64)> = vec![("a", 0), ("a", 30), ("a", 60), ("b", 0)];
    first.extend(names.iter().map(|n| (n.as_str(), 500)));
    let batches: [&[(&str, i64)]; 4] = [
        // a [0,10) [30,40) [60,70), b [0,10), z.. [500,510)
        &first,
        // a [15,25) bridges nothing
        &[("a", 15)],
        // 8 joins [0,10) and [15,25), 23 reaches [30,40): a [0,40)
        &[("a", 8), ("a", 23)],
        // b [0,15); a's 45 stays apart from [0,40) and [60,70)
        &[("b", 5), ("a", 45)],
    ];
    // after each save, an operator restored from that version runs the next batch aside
    let (mut emitted, mut restored) = (Vec::new(), Vec::new());
    for (v, b) in batches.iter().enumerate() {
        emitted.push(without_z(run_batch(&mut live, b).await));
        live.state()
            .unwrap()
            .save(dir.path(), v as u64)
            .await
            .unwrap();
        if let Some(next) = batches.get(v + 1) {
            let mut fresh = opened(OutputMode::Complete, false).await;
            fresh
                .state()
                .unwrap()
                .restore(dir.path(), Some(v as u64))
                .await
                .unwrap();
            restored.push(without_z(run_batch(&mut fresh, next).await));
        }
    }
    let deltas = tributary_transform::stored_versions(dir.path())
        .unwrap()
        .iter()
        .filter(|v| !v.snapshot)
        .count();
    assert!(deltas > 0, "versions saved as deltas");
    assert_eq!(
        emitted[2],
        vec![
            session("a", 0, 40, 5, 76),
            session("a", 60, 70, 1, 60),
            session("b", 0, 10, 1, 0),
        ]
    );
    assert_eq!(
        emitted[3],
        vec![
            session("a", 0, 40, 5, 76),
            session("a", 45, 55, 1, 45),
            session("a", 60, 70, 1, 60),
            session("b", 0, 15, 2, 5),
        ]
    );
    // an operator restored from each version emitted what the live one emitted next
    assert_eq!(restored, emitted[1..].to_vec());
}

/// The sessions of keys `a` and `b` (the others only make the state large).
fn without_z(rows: Vec<Session>) -> Vec<Session> {
    rows.into_iter().filter(|s| !s.0.starts_with('z')).collect()
}

async fn open_err(spec: TransformSpec) -> String {
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(schema()).await.unwrap_err().to_string()
}

#[tokio::test]
async fn spark_s_session_window_rules_are_refused_with_its_messages() {
    let update = open_err(spec(OutputMode::Update, true)).await;
    assert!(
        update.contains("Invalid streaming output mode: update. This output mode is not supported for session window streaming aggregations"),
        "{update}"
    );
    let global = open_err(
        TransformSpec::new("SELECT session_window(ts, '10 seconds') AS s, count(*) AS n FROM source GROUP BY session_window(ts, '10 seconds')")
            .with_output_mode(OutputMode::Complete),
    )
    .await;
    assert!(
        global
            .contains("Global aggregation with session window in streaming query is not supported"),
        "{global}"
    );
    let cases = [
        (
            "SELECT k, session_window(ts, '10 seconds') AS s FROM source",
            "can only be a GROUP BY key",
        ),
        (
            "SELECT k, count(*) AS n FROM source GROUP BY session_window(ts, k), k",
            "must be a literal interval",
        ),
        (
            "SELECT k, count(*) AS n FROM source GROUP BY session_window(ts, 'soon'), k",
            "'soon' is not an interval",
        ),
        (
            "SELECT k, count(*) AS n FROM source GROUP BY session_window(ts, '10 seconds'), window(ts, '1 minute'), k",
            "cannot be combined with window",
        ),
    ];
    for (sql, want) in cases {
        let err = open_err(TransformSpec::new(sql).with_output_mode(OutputMode::Complete)).await;
        assert!(err.contains(want), "{sql}: {err}");
    }
    // the realTime trigger refuses it, as Spark's real-time mode does
    let mut t = opened(OutputMode::Append, true).await;
    let refusal = t.state().unwrap().real_time_refusal().unwrap();
    assert!(refusal.contains("session_window"), "{refusal}");
}
