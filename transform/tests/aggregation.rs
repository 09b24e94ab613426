//! Aggregations with state across batches: every emitted group equals a ground truth computed
//! here from the same orders, in `update` and `complete` mode, across parts and batches, after
//! a restore from a saved version (a replayed batch emits what its first attempt emitted), and
//! Spark's refusals (append without a watermark, complete without an aggregation, functions
//! whose partial values do not merge, a changed query against saved state).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::*;
use datafusion::arrow::array::{Array, Float64Array, Int64Array, RecordBatch};
use tributary_sdk::{ErrorCode, OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

const SQL: &str = "SELECT value.customer AS customer, count(*) AS n, sum(value.amount) AS total, \
                   min(value.id) AS lo, max(value.id) AS hi, avg(value.amount) AS mean \
                   FROM source WHERE value.id % 11 <> 3 GROUP BY value.customer";

/// customer → (n, total, lo, hi, mean)
type Groups = BTreeMap<Option<String>, (i64, f64, i64, i64, f64)>;

fn truth(orders: &[Order]) -> Groups {
    let mut g: BTreeMap<Option<String>, Vec<&Order>> = BTreeMap::new();
    for o in orders.iter().filter(|o| o.id % 11 != 3) {
        g.entry(o.customer.clone()).or_default().push(o);
    }
    g.into_iter()
        .map(|(k, v)| {
            let total: f64 = v.iter().map(|o| o.amount).sum();
            let n = v.len() as i64;
            let lo = v.iter().map(|o| o.id).min().unwrap();
            let hi = v.iter().map(|o| o.id).max().unwrap();
            (k, (n, total, lo, hi, total / n as f64))
        })
        .collect()
}

/// The groups `input` (the last batch) touched, with their values over every order `seen`.
fn touched_truth(seen: &[Order], input: &[Order]) -> Groups {
    let touched: Vec<_> = truth(input).into_keys().collect();
    truth(seen)
        .into_iter()
        .filter(|(k, _)| touched.contains(k))
        .collect()
}

fn groups(batch: &RecordBatch) -> Groups {
    let customers = strings(batch, "customer");
    let int = |name: &str| {
        batch
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .clone()
    };
    let float = |name: &str| {
        batch
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .clone()
    };
    let (n, total, lo, hi, mean) = (
        int("n"),
        float("total"),
        int("lo"),
        int("hi"),
        float("mean"),
    );
    let mut out = Groups::new();
    for (i, c) in customers.into_iter().enumerate() {
        let previous = out.insert(
            c.clone(),
            (
                n.value(i),
                total.value(i),
                lo.value(i),
                hi.value(i),
                mean.value(i),
            ),
        );
        assert!(previous.is_none(), "group {c:?} emitted twice in one batch");
    }
    out
}

fn assert_same(got: &Groups, want: &Groups) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (k, g) in got {
        let w = &want[k];
        assert_eq!((g.0, g.2, g.3), (w.0, w.2, w.3), "group {k:?}");
        assert!(
            (g.1 - w.1).abs() < 1e-9 && (g.4 - w.4).abs() < 1e-9,
            "group {k:?}: {g:?} vs {w:?}"
        );
    }
}

async fn opened(sql: &str, mode: Option<OutputMode>) -> SqlTransform {
    let mut spec = TransformSpec::new(sql);
    if let Some(m) = mode {
        spec = spec.with_output_mode(m);
    }
    let mut t = SqlTransform::new(spec).unwrap();
    t.open(decoded_schema()).await.unwrap();
    assert!(t.is_stateful());
    t
}

/// Feeds one batch as `parts` parts; returns what the batch emits.
async fn batch(t: &mut SqlTransform, orders: &[Order], parts: usize) -> RecordBatch {
    let chunk = orders.len().div_ceil(parts).max(1);
    for (i, part) in orders.chunks(chunk).enumerate() {
        let out = t
            .apply(&decoded_batch(part, (i * chunk) as i64))
            .await
            .unwrap();
        assert_eq!(
            out.num_rows(),
            0,
            "a stateful query emits at the batch's end only"
        );
    }
    let state = t.state().unwrap();
    state
        .end_batch()
        .await
        .unwrap()
        .expect("the batch emits rows")
}

/// Three batches of orders; batch 2 adds customers of its own and meets old ones.
fn batches() -> Vec<Vec<Order>> {
    let mut third = orders(500, 300);
    for o in third.iter_mut().step_by(3) {
        o.customer = Some(format!("new{}", o.id % 4));
    }
    vec![orders(0, 200), orders(200, 300), third]
}

#[tokio::test]
async fn update_mode_emits_each_batch_s_changed_groups_with_their_running_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened(SQL, Some(OutputMode::Update)).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let mut seen: Vec<Order> = Vec::new();
    for (id, input) in batches().into_iter().enumerate() {
        let out = batch(&mut t, &input, 4).await;
        seen.extend(input.iter().cloned());
        // exactly the groups this batch touched, each with its value over every batch so far
        let want = touched_truth(&seen, &input);
        assert_same(&groups(&out), &want);
        t.state()
            .unwrap()
            .save(dir.path(), id as u64)
            .await
            .unwrap();
        let progress = t.state().unwrap().progress().remove(0);
        assert_eq!(progress.num_rows_total, truth(&seen).len() as u64);
        assert_eq!(progress.num_rows_updated, want.len() as u64);
        assert_eq!(progress.operator_name, "stateStoreSave");
    }
    // every version is a snapshot (a batch changes half the groups or more), small enough for
    // the state log: no file of its own
    drop(t);
    let stored: Vec<(u64, bool, bool)> = tributary_transform::stored_versions(dir.path())
        .unwrap()
        .iter()
        .map(|v| (v.version, v.snapshot, v.in_log))
        .collect();
    assert_eq!(
        stored,
        vec![(0, true, true), (1, true, true), (2, true, true)]
    );
    let files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("log-"))
        .collect();
    assert!(files.is_empty(), "{files:?}");
}

#[tokio::test]
async fn complete_mode_emits_every_group_every_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened(SQL, Some(OutputMode::Complete)).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let mut seen: Vec<Order> = Vec::new();
    for (id, input) in batches().into_iter().enumerate() {
        let out = batch(&mut t, &input, 3).await;
        seen.extend(input.iter().cloned());
        assert_same(&groups(&out), &truth(&seen));
        t.state()
            .unwrap()
            .save(dir.path(), id as u64)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_replayed_batch_restored_from_the_previous_version_emits_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let input = batches();
    let mut first = opened(SQL, Some(OutputMode::Update)).await;
    first
        .state()
        .unwrap()
        .restore(dir.path(), None)
        .await
        .unwrap();
    batch(&mut first, &input[0], 2).await;
    first.state().unwrap().save(dir.path(), 0).await.unwrap();
    let attempt = groups(&batch(&mut first, &input[1], 2).await);
    // the process dies after saving version 1, before commits/1: batch 1 is replayed from 0
    first.state().unwrap().save(dir.path(), 1).await.unwrap();
    drop(first);

    let mut again = opened(SQL, Some(OutputMode::Update)).await;
    again
        .state()
        .unwrap()
        .restore(dir.path(), Some(0))
        .await
        .unwrap();
    // other part boundaries: the result does not depend on them
    let replay = groups(&batch(&mut again, &input[1], 5).await);
    assert_same(&replay, &attempt);
    again.state().unwrap().save(dir.path(), 1).await.unwrap();
    let third = groups(&batch(&mut again, &input[2], 1).await);
    let all: Vec<Order> = input.concat();
    let touched: Vec<_> = truth(&input[2]).into_keys().collect();
    let want: Groups = truth(&all)
        .into_iter()
        .filter(|(k, _)| touched.contains(k))
        .collect();
    assert_same(&third, &want);
}

#[tokio::test]
async fn having_filters_the_emitted_groups_and_global_aggregates_keep_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened(
        "SELECT value.customer AS customer, count(*) AS n FROM source GROUP BY value.customer HAVING count(*) > 30",
        Some(OutputMode::Complete),
    )
    .await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let out = batch(&mut t, &orders(0, 200), 2).await;
    let n = out
        .column_by_name("n")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .clone();
    let mut want: Vec<i64> = truth_counts(&orders(0, 200))
        .into_values()
        .filter(|c| *c > 30)
        .collect();
    let mut got: Vec<i64> = (0..n.len()).map(|i| n.value(i)).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);

    let mut g = opened(
        "SELECT count(*) AS n, sum(value.amount) AS s FROM source",
        Some(OutputMode::Update),
    )
    .await;
    g.state()
        .unwrap()
        .restore(dir.path().join("g").as_path(), None)
        .await
        .unwrap();
    batch(&mut g, &orders(0, 100), 3).await;
    g.state()
        .unwrap()
        .save(dir.path().join("g").as_path(), 0)
        .await
        .unwrap();
    let out = batch(&mut g, &orders(100, 50), 2).await;
    assert_eq!(out.num_rows(), 1);
    let n = out
        .column_by_name("n")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .value(0);
    assert_eq!(n, 150);
}

fn truth_counts(orders: &[Order]) -> BTreeMap<Option<String>, i64> {
    let mut m = BTreeMap::new();
    for o in orders {
        *m.entry(o.customer.clone()).or_insert(0) += 1;
    }
    m
}

#[tokio::test]
async fn state_of_another_query_or_a_lost_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened(SQL, Some(OutputMode::Update)).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    batch(&mut t, &orders(0, 50), 1).await;
    t.state().unwrap().save(dir.path(), 0).await.unwrap();

    let mut other = opened(
        "SELECT value.customer AS customer, max(value.amount) AS m FROM source GROUP BY value.customer",
        Some(OutputMode::Update),
    )
    .await;
    let e = other
        .state()
        .unwrap()
        .restore(dir.path(), Some(0))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::CheckpointIncompatible, "{e}");
    assert!(
        e.message().contains("max(source.value[amount])") || e.message().contains("max("),
        "{e}"
    );
    assert!(e.message().contains("new checkpoint"), "{e}");

    let e = t
        .state()
        .unwrap()
        .restore(dir.path(), Some(7))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::CheckpointDamaged, "{e}");
    assert!(e.message().contains("7.arrow"), "{e}");
}

#[tokio::test]
async fn spark_s_output_mode_rules_and_unmergeable_functions_are_refused_by_name() {
    let refused = |sql: &'static str, mode: Option<OutputMode>| async move {
        let mut spec = TransformSpec::new(sql);
        if let Some(m) = mode {
            spec = spec.with_output_mode(m);
        }
        let mut t = SqlTransform::new(spec).unwrap();
        let planned = t.plan(decoded_schema()).await.unwrap_err();
        let opened = t.open(decoded_schema()).await.unwrap_err();
        assert_eq!(planned.message(), opened.message());
        opened
    };
    let e = refused("SELECT key, count(*) FROM source GROUP BY key", None).await;
    assert!(
        e.message()
            .contains("Append output mode not supported when there are streaming aggregations"),
        "{e}"
    );
    assert_eq!(e.context_value("option"), Some("transform.outputMode"));
    let e = refused(
        "SELECT key, count(*) FROM source GROUP BY key",
        Some(OutputMode::Append),
    )
    .await;
    assert!(e.message().contains("without watermark"), "{e}");
    let e = refused("SELECT key FROM source", Some(OutputMode::Complete)).await;
    assert!(
        e.message().contains(
            "Complete output mode not supported when there are no streaming aggregations"
        ),
        "{e}"
    );
    // update on a stateless query is append (Spark allows it)
    let mut t = SqlTransform::new(
        TransformSpec::new("SELECT key FROM source").with_output_mode(OutputMode::Update),
    )
    .unwrap();
    t.open(decoded_schema()).await.unwrap();
    assert!(!t.is_stateful());
    for (sql, words) in [
        (
            "SELECT key, median(value.amount) FROM source GROUP BY key",
            &["median", "supported: count, sum"][..],
        ),
        (
            "SELECT key, count(DISTINCT value.id) FROM source GROUP BY key",
            &["DISTINCT"][..],
        ),
        (
            "SELECT key, sum(value.amount) FILTER (WHERE value.id > 3) FROM source GROUP BY key",
            &["FILTER"][..],
        ),
        (
            "SELECT key, count(*) FROM source GROUP BY ROLLUP(key)",
            &["ROLLUP"][..],
        ),
    ] {
        let e = refused(sql, Some(OutputMode::Update)).await;
        assert_eq!(e.context_value("option"), Some("transform.sql"), "{e}");
        for w in words {
            assert!(e.message().contains(w), "{sql}: {e}");
        }
    }
}

#[tokio::test]
async fn the_readme_s_kafka_shaped_query_emits_key_and_value_per_changed_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened(
        "SELECT value.customer AS key, concat(CAST(count(*) AS STRING), ',', CAST(sum(value.amount) AS STRING)) AS value FROM source GROUP BY value.customer",
        Some(OutputMode::Update),
    )
    .await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    batch(&mut t, &orders(0, 70), 2).await;
    t.state().unwrap().save(dir.path(), 0).await.unwrap();
    let out = batch(&mut t, &orders(70, 35), 2).await;
    let keys = strings(&out, "key");
    let values = strings(&out, "value");
    let all = truth_counts(&orders(0, 105));
    assert_eq!(keys.len(), truth_counts(&orders(70, 35)).len());
    for (k, v) in keys.iter().zip(&values) {
        let n: i64 = v
            .as_deref()
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(n, all[k], "group {k:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_parts_aggregated_on_every_core_and_a_batch_ended_again_give_the_same_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = opened(SQL, Some(OutputMode::Update)).await;
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    // parts of 100 k and 70 k rows: cut into slices aggregated side by side, whose partials
    // name the same groups
    let input = [orders(0, 100_000), orders(100_000, 70_000)];
    let mut seen: Vec<Order> = Vec::new();
    for (id, part) in input.iter().enumerate() {
        // a first attempt ended but not saved (its state dropped), then the batch again
        let dropped = batch(&mut t, part, 1).await;
        let out = batch(&mut t, part, 1).await;
        assert_eq!(groups(&dropped), groups(&out), "batch {id} ended twice");
        seen.extend(part.iter().cloned());
        assert_same(&groups(&out), &truth(&seen));
        t.state()
            .unwrap()
            .save(dir.path(), id as u64)
            .await
            .unwrap();
    }
    // the saved state restores to the same groups
    let mut restored = opened(SQL, Some(OutputMode::Update)).await;
    restored
        .state()
        .unwrap()
        .restore(dir.path(), Some(1))
        .await
        .unwrap();
    let more = orders(170_000, 10);
    let out = batch(&mut restored, &more, 1).await;
    seen.extend(more.iter().cloned());
    assert_same(&groups(&out), &touched_truth(&seen, &more));
}

#[tokio::test]
async fn plain_aggregations_keep_their_partial_hash_tables_warm_and_others_run_the_plan() {
    for sql in [
        SQL,
        "SELECT window(timestamp, '1 minute') AS w, value.customer AS c, count(*) AS n \
         FROM source GROUP BY window(timestamp, '1 minute'), value.customer",
        "SELECT window(timestamp, '1 minute', '10 seconds') AS w, count(*) AS n \
         FROM source GROUP BY window(timestamp, '1 minute', '10 seconds')",
    ] {
        let t = opened(sql, Some(OutputMode::Update)).await;
        let plan = t.explain().unwrap();
        assert!(plan.contains("warm hash tables"), "{sql}: {plan}");
    }
    // without a grouping key, one row: the plan runs
    let t = opened("SELECT count(*) AS n FROM source", Some(OutputMode::Update)).await;
    let plan = t.explain().unwrap();
    assert!(plan.contains("the plan, executed per part"), "{plan}");
}

/// Parts whose slices hold nearly as many keys as rows: after the first, the slices hand
/// their rows on as groups of one (as DataFusion stops pre-aggregating), every 17th is
/// aggregated again to look at the ratio; the values stay exact, batch after batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_of_nearly_distinct_keys_hand_their_rows_on_and_stay_exact() {
    let sql = "SELECT value.id % 90000 AS k, count(*) AS n, sum(value.id) AS s, \
               max(value.amount) AS hi FROM source GROUP BY value.id % 90000";
    let mut t = opened(sql, Some(OutputMode::Update)).await;
    let dir = tempfile::tempdir().unwrap();
    t.state().unwrap().restore(dir.path(), None).await.unwrap();
    let mut truth: BTreeMap<i64, (i64, i64, f64)> = BTreeMap::new();
    for b in 0..20i64 {
        let part = orders(b * 40_000, 40_000);
        for o in &part {
            let e = truth.entry(o.id % 90_000).or_insert((0, 0, f64::MIN));
            e.0 += 1;
            e.1 += o.id;
            e.2 = e.2.max(o.amount);
        }
        let out = batch(&mut t, &part, 1).await;
        assert_eq!(out.num_rows(), 40_000, "batch {b}: each key once");
        let col = |i: usize| out.column(i).as_any().downcast_ref::<Int64Array>().unwrap();
        let (k, n, s) = (col(0), col(1), col(2));
        let hi = out
            .column(3)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        for r in 0..out.num_rows() {
            let want = truth[&k.value(r)];
            assert_eq!(
                (n.value(r), s.value(r), hi.value(r)),
                want,
                "batch {b}, key {}",
                k.value(r)
            );
        }
        t.state().unwrap().save(dir.path(), b as u64).await.unwrap();
    }
}
