//! The cost of the plugin boundary for a SQL function: the example plugin's `mask_email`
//! called across the C ABI (the functions extension, Arrow C Data Interface) next to the very
//! same function (`tributary_plugin_generator::MaskEmail`) registered natively, in one run, on
//! 8,192-row batches.
//!
//! - `invoke/*`: the function alone (`ScalarFunction::invoke`), the boundary's whole cost;
//! - `sql/*`: `SELECT mask_email(email) FROM source` through the SQL transform, as a pipeline
//!   runs it.
//!
//! Outputs are checked equal outside the timing. The plugin is built in release mode first
//! (`cargo build --release` of `examples/plugin-generator` into `target/plugins`).
//!
//! `cargo bench -p tributary-runtime --bench udf`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/plugin_common/mod.rs"]
mod plugin_common;

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tributary_plugin_generator::MaskEmail;
use tributary_runtime::plugin;
use tributary_sdk::{ScalarFunction, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

const ROWS: usize = 8192;

fn emails() -> RecordBatch {
    let values: StringArray = (0..ROWS)
        .map(|i| match i % 20 {
            0 => None,
            _ => Some(format!("customer.{i}@mail{}.example.com", i % 13)),
        })
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("email", DataType::Utf8, true)])),
        vec![Arc::new(values) as ArrayRef],
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let loaded = plugin::load(&plugin_common::build_plugin("", "release")).unwrap();
    let foreign = loaded
        .functions()
        .pop()
        .expect("the plugin exports mask_email");
    let native: Arc<dyn ScalarFunction> = Arc::new(MaskEmail);
    let batch = emails();
    let args = vec![batch.column(0).clone()];

    // The outputs first, outside the timing: the same column either way.
    assert_eq!(
        foreign.invoke(&args, ROWS).unwrap().as_ref(),
        native.invoke(&args, ROWS).unwrap().as_ref()
    );

    let mut g = c.benchmark_group("udf_invoke");
    g.throughput(Throughput::Elements(ROWS as u64));
    for (name, f) in [("native", &native), ("plugin", &foreign)] {
        g.bench_function(BenchmarkId::new("mask_email", name), |b| {
            b.iter(|| f.invoke(&args, ROWS).unwrap())
        });
    }
    g.finish();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let open = |f: &Arc<dyn ScalarFunction>| {
        let mut t = SqlTransform::new(TransformSpec::new(
            "SELECT mask_email(email) AS masked FROM source",
        ))
        .unwrap()
        .with_functions(vec![f.clone()]);
        rt.block_on(t.open(batch.schema())).unwrap();
        t
    };
    let mut sql_native = open(&native);
    let mut sql_foreign = open(&foreign);
    assert_eq!(
        rt.block_on(sql_native.apply(&batch)).unwrap(),
        rt.block_on(sql_foreign.apply(&batch)).unwrap()
    );
    let mut g = c.benchmark_group("udf_sql");
    g.throughput(Throughput::Elements(ROWS as u64));
    for (name, t) in [("native", &mut sql_native), ("plugin", &mut sql_foreign)] {
        g.bench_function(BenchmarkId::new("mask_email", name), |b| {
            b.iter(|| rt.block_on(t.apply(&batch)).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
