//! The cost of making operator state durable with each batch: a state of 1,000,000 keys of
//! which 1,000 change per batch, saved as the batch's changelog (`commit/delta`, what every
//! batch pays; the snapshot every 10 versions is written by a background thread) against a
//! full snapshot of the same state (`commit/snapshot`, what each batch paid before the
//! changelog), for a deduplication (`dropDuplicates`) and a `GROUP BY` aggregation.
//!
//! Only `StageState::save` is timed; applying the batch and ending it are set-up. Outside the
//! timing, a fresh operator restored from the saved versions is checked to hold every key.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::{OutputMode, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

const KEYS: usize = 1_000_000;
const CHANGED: usize = 1_000;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn rows(keys: impl Iterator<Item = usize>) -> RecordBatch {
    let keys: Vec<String> = keys.map(|i| format!("key-{i:09}")).collect();
    let n = keys.len();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from(keys)),
            Arc::new(Int64Array::from(vec![1; n])),
        ],
    )
    .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An opened operator holding `KEYS` keys (version 0 saved under `dir`).
fn loaded(
    rt: &tokio::runtime::Runtime,
    spec: &TransformSpec,
    dir: &std::path::Path,
) -> SqlTransform {
    rt.block_on(async {
        let mut t = SqlTransform::new(spec.clone()).unwrap();
        t.open(schema()).await.unwrap();
        t.state().unwrap().restore(dir, None).await.unwrap();
        for chunk in (0..KEYS).collect::<Vec<_>>().chunks(100_000) {
            t.apply(&rows(chunk.iter().copied())).await.unwrap();
        }
        t.state().unwrap().end_batch().await.unwrap();
        t.state().unwrap().save(dir, 0).await.unwrap();
        t
    })
}

/// Times `save` of batches of `CHANGED` changed keys: into `dir` (the changelog) or each into
/// a new directory (no chain behind it, so a snapshot).
fn commits(
    rt: &tokio::runtime::Runtime,
    t: &mut SqlTransform,
    dir: &std::path::Path,
    next: &mut u64,
    iters: u64,
    snapshot: bool,
    changed: &dyn Fn(u64) -> RecordBatch,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        *next += 1;
        let v = *next;
        rt.block_on(async {
            t.apply(&changed(v)).await.unwrap();
            t.state().unwrap().end_batch().await.unwrap();
            let fresh = tempfile::tempdir().unwrap();
            let target = if snapshot { fresh.path() } else { dir };
            let start = Instant::now();
            t.state().unwrap().save(target, v).await.unwrap();
            total += start.elapsed();
            if snapshot {
                // keep the changelog in `dir` whole for the next delta
                std::fs::remove_dir_all(dir).ok();
                std::fs::create_dir_all(dir).unwrap();
                t.state().unwrap().save(dir, v).await.unwrap();
            }
        });
    }
    total
}

fn bench_operator(
    c: &mut Criterion,
    name: &str,
    spec: TransformSpec,
    changed: &dyn Fn(u64) -> RecordBatch,
    held: u64,
) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut t = loaded(&rt, &spec, dir.path());
    let mut next = 0u64;
    let mut group = c.benchmark_group(format!("commit/{name}"));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("delta", |b| {
        b.iter_custom(|iters| commits(&rt, &mut t, dir.path(), &mut next, iters, false, changed))
    });
    group.bench_function("snapshot", |b| {
        b.iter_custom(|iters| commits(&rt, &mut t, dir.path(), &mut next, iters, true, changed))
    });
    group.finish();

    // outside the timing: the saved versions restore to every key
    rt.block_on(async {
        let mut fresh = SqlTransform::new(spec.clone()).unwrap();
        fresh.open(schema()).await.unwrap();
        fresh
            .state()
            .unwrap()
            .restore(dir.path(), Some(next))
            .await
            .unwrap();
        let live = t.state().unwrap().progress().last().unwrap().num_rows_total;
        fresh.apply(&rows(std::iter::empty())).await.unwrap();
        fresh.state().unwrap().end_batch().await.unwrap();
        let restored = fresh
            .state()
            .unwrap()
            .progress()
            .last()
            .unwrap()
            .num_rows_total;
        assert_eq!(
            restored, live,
            "{name}: the restored state holds what the live one held"
        );
        assert!(restored >= held, "{name}: {restored} keys held");
    });
}

fn state(c: &mut Criterion) {
    // dropDuplicates: each batch adds CHANGED new keys
    bench_operator(
        c,
        "dedup_1k_of_1M",
        TransformSpec::new("SELECT k FROM source").with_drop_duplicates(["k"]),
        &|v| rows((0..CHANGED).map(move |i| KEYS + v as usize * CHANGED + i)),
        KEYS as u64,
    );
    // GROUP BY k: each batch updates CHANGED existing groups
    bench_operator(
        c,
        "group_by_1k_of_1M",
        TransformSpec::new("SELECT k, count(*) AS n, sum(v) AS total FROM source GROUP BY k")
            .with_output_mode(OutputMode::Update),
        &|v| rows((0..CHANGED).map(move |i| (v as usize * 7919 + i * 997) % KEYS)),
        KEYS as u64,
    );
}

criterion_group!(benches, state);
criterion_main!(benches);
