//! Benchmarks of the host run against the plain library underneath, side by side in one run:
//! `cargo bench -p tributary-benchmarks --bench realtime_latency` (real-time Kafka → Kafka
//! against a raw rdkafka loop; `--features sql` adds the SQL mode), `--bench plugin_boundary`
//! (the generator plugin through the C ABI against the same connector linked statically) and
//! `--bench monitor_cost` (Kafka → Parquet with and without the monitoring endpoint). The
//! library itself is empty: the programs are in `benches/`.
