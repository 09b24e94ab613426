//! SQL projection per batch against the same projection with arrow's cast kernel, same run.
//!
//! `SELECT CAST(key AS STRING) AS k, value FROM source` on Kafka-shaped batches of 1, 100 and
//! 8192 rows: `sql/apply` (`Stage::apply` awaited on a tokio
//! runtime), and `arrow/cast` (arrow's `cast` + a new batch: the floor). The difference is the
//! per-batch overhead of running the plan. `plan/open` is the once-per-run planning cost.
//! Outputs are compared once, outside the timing.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use datafusion::arrow::array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::Stage;
use tributary_transform::{SqlTransform, TransformSpec};

const SQL: &str = "SELECT CAST(key AS STRING) AS k, value FROM source";

fn input_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
        Field::new("topic", DataType::Utf8, false),
        Field::new("offset", DataType::Int64, false),
    ]))
}

fn batch(n: usize) -> RecordBatch {
    let keys: Vec<String> = (0..n).map(|i| format!("customer-{}", i % 1000)).collect();
    let values: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"id":{i},"amount":{}.5,"note":"some payload text"}}"#,
                i % 97
            )
        })
        .collect();
    RecordBatch::try_new(
        input_schema(),
        vec![
            Arc::new(BinaryArray::from_iter_values(
                keys.iter().map(|k| k.as_bytes()),
            )),
            Arc::new(BinaryArray::from_iter_values(
                values.iter().map(|v| v.as_bytes()),
            )),
            Arc::new(StringArray::from(vec!["orders"; n])),
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
        ],
    )
    .unwrap()
}

fn arrow_projection(out_schema: &SchemaRef, b: &RecordBatch) -> RecordBatch {
    let k: ArrayRef = cast(b.column(0), &DataType::Utf8).unwrap();
    RecordBatch::try_new(Arc::clone(out_schema), vec![k, Arc::clone(b.column(1))]).unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut t = SqlTransform::new(TransformSpec::new(SQL)).unwrap();
    let out_schema = rt.block_on(t.open(input_schema())).unwrap();

    let mut group = c.benchmark_group("projection");
    for n in [1usize, 100, 8192] {
        let b = batch(n);
        // same output, checked outside the timing
        let expected = arrow_projection(&out_schema, &b);
        assert_eq!(rt.block_on(t.apply(&b)).unwrap(), expected);

        group.bench_with_input(BenchmarkId::new("arrow/cast", n), &b, |bench, b| {
            bench.iter(|| arrow_projection(&out_schema, b))
        });
        group.bench_with_input(BenchmarkId::new("sql/apply", n), &b, |bench, b| {
            bench.iter(|| rt.block_on(t.apply(b)).unwrap())
        });
    }
    group.finish();

    c.bench_function("plan/open", |bench| {
        bench.iter(|| {
            let mut t = SqlTransform::new(TransformSpec::new(SQL)).unwrap();
            rt.block_on(t.open(input_schema())).unwrap()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
