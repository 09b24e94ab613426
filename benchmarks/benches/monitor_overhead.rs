//! The monitoring endpoint's own work, measured directly: what one progress event costs the
//! monitor's listener (counters, histograms, gauges, the recent-events ring), and what each scrape
//! costs (`/metrics` rendered, `/api/progress` serialised), for an event of a 32-partition Kafka
//! source with its per-partition lag. The end-to-end bench (`monitor_cost`) compares whole runs,
//! but its run-to-run spread on a shared 2-core machine is larger than the 2 % it looks for; these
//! two numbers times the events and scrapes per second bound the cost instead.
//!
//! ```text
//! cargo bench -p tributary-benchmarks --bench monitor_overhead
//! ```
//!
//! Outside the timing, the rendered text must hold the counters the events added up to.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use tributary_runtime::monitor::{self, Monitor};
use tributary_runtime::progress::{Durations, ProgressEvent, SinkProgress, SourceProgress};
use tributary_sdk::{Offset, SourceMetrics};

fn event(batch_id: u64) -> ProgressEvent {
    let mut metrics = SourceMetrics::new();
    let mut lag = serde_json::Map::new();
    for p in 0..32 {
        lag.insert(format!("orders-{p}"), (p * 10).into());
    }
    metrics.insert("offsetsBehindLatestByPartition".into(), lag.into());
    metrics.insert("totalOffsetsBehindLatest".into(), 4960.into());
    metrics.insert("numMalformedRecords".into(), batch_id.into());
    ProgressEvent {
        id: "ck".into(),
        name: "orders".into(),
        batch_id,
        replayed: false,
        timestamp: "2026-12-01T00:00:00.000Z".into(),
        num_input_rows: 50_000,
        input_rows_per_second: 100_000.0,
        processed_rows_per_second: 120_000.0,
        duration_ms: Durations {
            latest_offset: 2,
            wal_commit: 3,
            get_batch: 300,
            add_batch: 100,
            trigger_execution: 410,
            stages: [("stage.decode".to_string(), 120)].into_iter().collect(),
        },
        sources: vec![SourceProgress {
            description: "kafka orders".into(),
            start_offset: Offset::parse("{}").unwrap(),
            end_offset: Offset::parse("{}").unwrap(),
            num_input_rows: 50_000,
            num_input_bytes: 6_000_000,
            metrics,
        }],
        sinks: vec![SinkProgress {
            description: "parquet".into(),
            num_output_rows: 50_000,
            num_output_bytes: 5_000_000,
        }],
        latencies: None,
        interim: false,
        tasks: Vec::new(),
        scheduling_ms: None,
        state_operators: Vec::new(),
        event_time: None,
    }
}

fn bench(c: &mut Criterion) {
    let m = Monitor::new(monitor::DEFAULT_READY_WITHIN);
    let mut listener = m.listener("orders", "availableNow");
    let mut id = 0;
    let mut g = c.benchmark_group("monitor");
    g.measurement_time(Duration::from_secs(3));
    let e = event(0);
    g.bench_function("on_progress (one event)", |b| {
        b.iter(|| {
            listener.on_progress(&e);
            id += 1;
        })
    });
    g.bench_function("/metrics render", |b| b.iter(|| m.metrics_text().unwrap()));
    g.bench_function("/api/progress serialise", |b| {
        b.iter(|| serde_json::to_vec(&m.recent(None)).unwrap())
    });
    g.finish();
    let text = m.metrics_text().unwrap();
    let batches = format!("tributary_batches_total{{pipeline=\"orders\"}} {id}");
    assert!(text.contains(&batches), "the counters add up: {batches}");
}

criterion_group!(benches, bench);
criterion_main!(benches);
