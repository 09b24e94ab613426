//! The example generator through the plugin boundary vs the same connector linked statically.
//!
//! Both read the same 1,048,576 rows (batches of 8,192 rows, 65,536 rows per trigger) with the
//! same host loop (plan, read, commit). The plugin is built with `--release` into
//! `target/plugins`. Prints criterion's numbers and, after them, an interleaved side-by-side run
//! with the throughput ratio (goal: the plugin at most 3 % slower).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../../runtime/tests/plugin_common/mod.rs"]
mod plugin_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use tributary_sdk::{ConnectorContext, Options, ReadLimit, SourceFactory, SourceFactoryExt};

const TOTAL: u64 = 1 << 20;

fn options() -> Options {
    [
        ("totalRows", TOTAL.to_string()),
        ("rowsPerBatch", "8192".to_string()),
        ("maxRowsPerTrigger", "65536".to_string()),
    ]
    .into_iter()
    .collect()
}

async fn read_all(factory: &dyn SourceFactory) -> u64 {
    let mut source = factory
        .create(&options(), &ConnectorContext::default())
        .expect("create");
    let limit: ReadLimit = source.default_read_limit();
    let mut at = source.initial_offset().await.expect("initial");
    let mut rows = 0u64;
    loop {
        let end = source.latest_offset(&at, &limit).await.expect("plan");
        if end == at {
            break;
        }
        for b in source.read(&at, &end).await.expect("read") {
            rows += b.num_rows() as u64;
        }
        source.commit(&end).await.expect("commit");
        at = end;
    }
    source.stop().await.expect("stop");
    assert_eq!(rows, TOTAL);
    rows
}

fn factories() -> (Arc<dyn SourceFactory>, Arc<dyn SourceFactory>) {
    let lib = plugin_common::build_plugin("", "release");
    let plugin = tributary_runtime::plugin::load(&lib).expect("plugin loads");
    let foreign = plugin
        .source_factories()
        .into_iter()
        .find(|f| f.name() == "generator")
        .expect("generator");
    (
        Arc::new(tributary_plugin_generator::GeneratorSourceFactory),
        foreign,
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (native, foreign) = factories();
    let mut g = c.benchmark_group("generator_1M_rows");
    g.throughput(Throughput::Elements(TOTAL));
    g.sample_size(20);
    g.bench_function("static", |b| {
        b.iter(|| rt.block_on(read_all(native.as_ref())))
    });
    g.bench_function("plugin", |b| {
        b.iter(|| rt.block_on(read_all(foreign.as_ref())))
    });
    g.finish();

    // Interleaved side-by-side runs, so drift on a shared machine hits both equally.
    let mut t_native = Vec::new();
    let mut t_plugin = Vec::new();
    for _ in 0..15 {
        let s = Instant::now();
        rt.block_on(read_all(native.as_ref()));
        t_native.push(s.elapsed());
        let s = Instant::now();
        rt.block_on(read_all(foreign.as_ref()));
        t_plugin.push(s.elapsed());
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (n, p) = (median(&mut t_native), median(&mut t_plugin));
    let rate = |d: Duration| TOTAL as f64 / d.as_secs_f64();
    println!(
        "generator 1M rows: static {:.1} Mrows/s ({n:?}), plugin {:.1} Mrows/s ({p:?}); \
         plugin/static throughput ratio {:.3} (plugin {:+.1}% time)",
        rate(n) / 1e6,
        rate(p) / 1e6,
        rate(p) / rate(n),
        (p.as_secs_f64() / n.as_secs_f64() - 1.0) * 100.0
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
