//! The pipeline's Prometheus metrics, fed by its progress events and rendered for `/metrics`.
//!
//! Built on the Prometheus project's own Rust client (`prometheus-client`), which writes the
//! OpenMetrics text format that Prometheus scrapes (counters end in `_total`, units are in the
//! names, `# EOF` ends the page). Every metric carries the label `pipeline`; per-source metrics
//! add `source` (connector and target), per-sink metrics `sink`.
//!
//! | metric | type | from |
//! |---|---|---|
//! | `tributary_batches_total` | counter | committed batches |
//! | `tributary_source_rows_total` | counter | rows read (`numInputRows`) |
//! | `tributary_sink_rows_total` | counter | rows each sink received (`numOutputRows`) |
//! | `tributary_source_bytes_total` | counter | bytes read, as Arrow holds them (`numInputBytes`) |
//! | `tributary_sink_bytes_total` | counter | bytes each sink received, as Arrow holds them (`numOutputBytes`) |
//! | `tributary_stage_duration_seconds` | histogram, label `stage` | time in each stage per batch (`durationMs` `stage.<name>`: `decode`, `sql`, ...) |
//! | `tributary_batch_duration_seconds` | histogram | a batch's `triggerExecution` |
//! | `tributary_batch_phase_duration_seconds` | histogram, label `phase` | `latestOffset`, `getBatch`, `addBatch`, `walCommit` |
//! | `tributary_checkpoint_commit_duration_seconds` | histogram | `walCommit` (offsets and commit logs) |
//! | `tributary_latency_seconds` | gauge, labels `kind`, `quantile` | real-time latency percentiles of the last event |
//! | `tributary_source_records_in_error_total` | counter, label `reason` | `malformed` (numMalformedRecords), `data_loss` (`dataLoss.total`) |
//! | `tributary_source_backlog_records` | gauge | Kafka `totalOffsetsBehindLatest` |
//! | `tributary_source_backlog_milliseconds` | gauge | Kinesis `maxMsBehindLatest` |
//! | `tributary_source_partition_backlog_records` | gauge, label `partition` | Kafka `offsetsBehindLatestByPartition` (`topic-3`) |
//! | `tributary_source_partition_backlog_milliseconds` | gauge, label `partition` | Kinesis `msBehindLatestByShard` (`stream/shardId-…`) |
//! | `tributary_source_backlog_files` / `_bytes` | gauge | files `numFilesOutstanding` / `numBytesOutstanding` (Kafka: `estimatedTotalBytesBehindLatest`) |
//! | `tributary_source_backlog_messages` | gauge | files with `useNotifications`: the SQS queue's `approximateQueueSize` |
//! | `tributary_source_metric` | gauge, label `metric` | every other numeric source metric, by its Spark-style name |
//! | `tributary_last_batch_timestamp_seconds` | gauge | when the last batch was committed (Unix seconds) |
//!
//! Interim events of a running real-time batch update the latency and backlog gauges only: their
//! rows are counted once, when the long batch commits.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use tributary_sdk::{Error, ErrorCode, Result, SourceMetrics};

use crate::progress::ProgressEvent;

/// `pipeline`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PipelineLabels {
    pipeline: String,
}

/// `pipeline`, `source`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    pipeline: String,
    source: String,
}

/// `pipeline`, `sink`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SinkLabels {
    pipeline: String,
    sink: String,
}

/// `pipeline`, `phase`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    pipeline: String,
    phase: String,
}

/// `pipeline`, `stage`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    pipeline: String,
    stage: String,
}

/// `pipeline`, `kind`, `quantile`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    pipeline: String,
    kind: String,
    quantile: String,
}

/// `pipeline`, `source`, `reason`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    pipeline: String,
    source: String,
    reason: String,
}

/// `pipeline`, `source`, `partition`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    pipeline: String,
    source: String,
    partition: String,
}

/// `pipeline`, `source`, `metric`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MetricLabels {
    pipeline: String,
    source: String,
    metric: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Durations from 1 ms to about 9 minutes.
fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 20))
}

/// Source metrics counted as records in error, by reason. The source's metrics are totals over
/// the run, so the counter is set to them (never moved back).
const IN_ERROR: &[(&str, &str)] = &[
    ("numMalformedRecords", "malformed"),
    ("dataLoss.total", "data_loss"),
];

/// The metrics of the pipelines of one process (each sample labelled by its pipeline).
#[derive(Debug)]
pub struct PipelineMetrics {
    registry: Registry,
    batches: Family<PipelineLabels, Counter>,
    source_rows: Family<SourceLabels, Counter>,
    sink_rows: Family<SinkLabels, Counter>,
    source_bytes: Family<SourceLabels, Counter>,
    sink_bytes: Family<SinkLabels, Counter>,
    stage_seconds: Histograms<StageLabels>,
    backlog_messages: Family<SourceLabels, FloatGauge>,
    batch_seconds: Histograms<PipelineLabels>,
    phase_seconds: Histograms<PhaseLabels>,
    commit_seconds: Histograms<PipelineLabels>,
    latency: Family<LatencyLabels, FloatGauge>,
    in_error: Family<ErrorLabels, Counter>,
    backlog_records: Family<SourceLabels, FloatGauge>,
    backlog_ms: Family<SourceLabels, FloatGauge>,
    backlog_files: Family<SourceLabels, FloatGauge>,
    backlog_bytes: Family<SourceLabels, FloatGauge>,
    source_metric: Family<MetricLabels, FloatGauge>,
    partition_records: Family<PartitionLabels, FloatGauge>,
    partition_ms: Family<PartitionLabels, FloatGauge>,
    last_batch: Family<PipelineLabels, FloatGauge>,
}

impl Default for PipelineMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl PipelineMetrics {
    /// Empty metrics.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("tributary");
        let m = PipelineMetrics {
            batches: Family::default(),
            source_rows: Family::default(),
            sink_rows: Family::default(),
            source_bytes: Family::default(),
            sink_bytes: Family::default(),
            stage_seconds: Family::new_with_constructor(seconds_histogram),
            backlog_messages: Family::default(),
            batch_seconds: Family::new_with_constructor(seconds_histogram),
            phase_seconds: Family::new_with_constructor(seconds_histogram),
            commit_seconds: Family::new_with_constructor(seconds_histogram),
            latency: Family::default(),
            in_error: Family::default(),
            backlog_records: Family::default(),
            backlog_ms: Family::default(),
            backlog_files: Family::default(),
            backlog_bytes: Family::default(),
            source_metric: Family::default(),
            partition_records: Family::default(),
            partition_ms: Family::default(),
            last_batch: Family::default(),
            registry: Registry::default(),
        };
        registry.register("batches", "Batches committed", m.batches.clone());
        registry.register(
            "source_rows",
            "Rows read from the source",
            m.source_rows.clone(),
        );
        registry.register(
            "sink_rows",
            "Rows each sink received (after the stages)",
            m.sink_rows.clone(),
        );
        registry.register_with_unit(
            "source",
            "Bytes read from the source, as Arrow holds them (not bytes on the wire)",
            Unit::Bytes,
            m.source_bytes.clone(),
        );
        registry.register_with_unit(
            "sink",
            "Bytes each sink received, as Arrow holds them",
            Unit::Bytes,
            m.sink_bytes.clone(),
        );
        registry.register_with_unit(
            "stage_duration",
            "Time in each stage per batch (decode, sql, ...; on a cluster, summed over tasks)",
            Unit::Seconds,
            m.stage_seconds.clone(),
        );
        registry.register(
            "source_backlog_messages",
            "Messages waiting in the source's queue (files with useNotifications: SQS approximateQueueSize)",
            m.backlog_messages.clone(),
        );
        registry.register_with_unit(
            "batch_duration",
            "A batch's whole time (triggerExecution)",
            Unit::Seconds,
            m.batch_seconds.clone(),
        );
        registry.register_with_unit(
            "batch_phase_duration",
            "A batch's phases: latestOffset, getBatch, addBatch, walCommit",
            Unit::Seconds,
            m.phase_seconds.clone(),
        );
        registry.register_with_unit(
            "checkpoint_commit_duration",
            "Writing a batch's offset and commit logs",
            Unit::Seconds,
            m.commit_seconds.clone(),
        );
        registry.register_with_unit(
            "latency",
            "Real-time latency percentiles of the last event (kind: processing, source_queuing, e2e)",
            Unit::Seconds,
            m.latency.clone(),
        );
        registry.register(
            "source_records_in_error",
            "Records in error by reason (malformed, data_loss), over the run",
            m.in_error.clone(),
        );
        registry.register(
            "source_backlog_records",
            "Records not read yet (Kafka: offsets behind latest, all partitions)",
            m.backlog_records.clone(),
        );
        registry.register(
            "source_backlog_milliseconds",
            "How far behind the stream's tip the source reads (Kinesis millisBehindLatest, max over shards)",
            m.backlog_ms.clone(),
        );
        registry.register(
            "source_backlog_files",
            "Files discovered and not read yet",
            m.backlog_files.clone(),
        );
        registry.register(
            "source_backlog_bytes",
            "Bytes not read yet",
            m.backlog_bytes.clone(),
        );
        registry.register(
            "source_metric",
            "Every other numeric source metric, by its name",
            m.source_metric.clone(),
        );
        registry.register(
            "source_partition_backlog_records",
            "Records not read yet, per partition (Kafka: offsets behind latest of topic-partition)",
            m.partition_records.clone(),
        );
        registry.register(
            "source_partition_backlog_milliseconds",
            "How far behind the tip each shard is read (Kinesis millisBehindLatest, stream/shard)",
            m.partition_ms.clone(),
        );
        registry.register_with_unit(
            "last_batch_timestamp",
            "When the last batch was committed (Unix time)",
            Unit::Seconds,
            m.last_batch.clone(),
        );
        PipelineMetrics { registry, ..m }
    }

    /// A progress event of its pipeline (`event.name`): counters and histograms for a
    /// committed batch, gauges for any.
    pub fn observe(&self, event: &ProgressEvent, now_unix_s: f64) {
        let pipeline = event.name.as_str();
        for source in &event.sources {
            self.observe_source(pipeline, &source.description, &source.metrics);
        }
        if let Some(l) = &event.latencies {
            for (kind, p) in [
                ("processing", &l.processing_latency_ms),
                ("source_queuing", &l.source_queuing_latency_ms),
                ("e2e", &l.e2e_latency_ms),
            ] {
                for (q, v) in [
                    ("0.5", p.p50),
                    ("0.9", p.p90),
                    ("0.95", p.p95),
                    ("0.99", p.p99),
                ] {
                    self.latency
                        .get_or_create(&LatencyLabels {
                            pipeline: pipeline.to_string(),
                            kind: kind.to_string(),
                            quantile: q.to_string(),
                        })
                        .set(v / 1000.0);
                }
            }
        }
        if event.interim {
            return;
        }
        let p = PipelineLabels {
            pipeline: pipeline.to_string(),
        };
        self.batches.get_or_create(&p).inc();
        for source in &event.sources {
            self.source_rows
                .get_or_create(&SourceLabels {
                    pipeline: pipeline.to_string(),
                    source: source.description.clone(),
                })
                .inc_by(source.num_input_rows);
            self.source_bytes
                .get_or_create(&SourceLabels {
                    pipeline: pipeline.to_string(),
                    source: source.description.clone(),
                })
                .inc_by(source.num_input_bytes);
        }
        for sink in &event.sinks {
            self.sink_rows
                .get_or_create(&SinkLabels {
                    pipeline: pipeline.to_string(),
                    sink: sink.description.clone(),
                })
                .inc_by(sink.num_output_rows);
            self.sink_bytes
                .get_or_create(&SinkLabels {
                    pipeline: pipeline.to_string(),
                    sink: sink.description.clone(),
                })
                .inc_by(sink.num_output_bytes);
        }
        for (key, ms) in &event.duration_ms.stages {
            let stage = key.strip_prefix("stage.").unwrap_or(key);
            self.stage_seconds
                .get_or_create(&StageLabels {
                    pipeline: pipeline.to_string(),
                    stage: stage.to_string(),
                })
                .observe(*ms as f64 / 1000.0);
        }
        let d = &event.duration_ms;
        let secs = |ms: u64| ms as f64 / 1000.0;
        self.batch_seconds
            .get_or_create(&p)
            .observe(secs(d.trigger_execution));
        self.commit_seconds
            .get_or_create(&p)
            .observe(secs(d.wal_commit));
        for (phase, ms) in [
            ("latestOffset", d.latest_offset),
            ("getBatch", d.get_batch),
            ("addBatch", d.add_batch),
            ("walCommit", d.wal_commit),
        ] {
            self.phase_seconds
                .get_or_create(&PhaseLabels {
                    pipeline: pipeline.to_string(),
                    phase: phase.to_string(),
                })
                .observe(secs(ms));
        }
        self.last_batch.get_or_create(&p).set(now_unix_s);
    }

    /// The backlog gauge a source metric has of its own, if any.
    fn backlog(&self, metric: &str) -> Option<&Family<SourceLabels, FloatGauge>> {
        match metric {
            "totalOffsetsBehindLatest" => Some(&self.backlog_records),
            "maxMsBehindLatest" => Some(&self.backlog_ms),
            "numFilesOutstanding" => Some(&self.backlog_files),
            "numBytesOutstanding" | "estimatedTotalBytesBehindLatest" => Some(&self.backlog_bytes),
            "approximateQueueSize" => Some(&self.backlog_messages),
            _ => None,
        }
    }

    /// A source's metrics (from a batch or from a trigger that found no new data).
    pub fn observe_source(&self, pipeline: &str, source: &str, metrics: &SourceMetrics) {
        let labels = SourceLabels {
            pipeline: pipeline.to_string(),
            source: source.to_string(),
        };
        for (name, value) in metrics {
            if let Some(by) = value.as_object() {
                let family = match name.as_str() {
                    "offsetsBehindLatestByPartition" => &self.partition_records,
                    "msBehindLatestByShard" => &self.partition_ms,
                    _ => continue,
                };
                for (partition, v) in by {
                    if let Some(v) = v.as_f64() {
                        family
                            .get_or_create(&PartitionLabels {
                                pipeline: pipeline.to_string(),
                                source: source.to_string(),
                                partition: partition.clone(),
                            })
                            .set(v);
                    }
                }
                continue;
            }
            let Some(v) = value.as_f64() else { continue };
            if let Some(family) = self.backlog(name) {
                family.get_or_create(&labels).set(v);
            } else if let Some((_, reason)) = IN_ERROR.iter().find(|(n, _)| n == name) {
                let counter = self.in_error.get_or_create(&ErrorLabels {
                    pipeline: pipeline.to_string(),
                    source: source.to_string(),
                    reason: reason.to_string(),
                });
                let total = value.as_u64().unwrap_or(0);
                let seen = counter.get();
                if total > seen {
                    counter.inc_by(total - seen);
                }
            } else {
                self.source_metric
                    .get_or_create(&MetricLabels {
                        pipeline: pipeline.to_string(),
                        source: source.to_string(),
                        metric: name.clone(),
                    })
                    .set(v);
            }
        }
    }

    /// The metrics in the OpenMetrics text format.
    pub fn render(&self) -> Result<String> {
        let mut out = String::new();
        encode(&mut out, &self.registry).map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot encode the metrics").with_cause(e)
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::progress::{Durations, SinkProgress, SourceProgress};
    use tributary_sdk::Offset;

    fn event(rows: u64, interim: bool) -> ProgressEvent {
        let mut metrics = SourceMetrics::new();
        metrics.insert("numFilesOutstanding".into(), 3.into());
        metrics.insert("numMalformedRecords".into(), 2.into());
        metrics.insert("numFilesTracked".into(), 7.into());
        metrics.insert("approximateQueueSize".into(), 12.into());
        metrics.insert(
            "offsetsBehindLatestByPartition".into(),
            serde_json::json!({"t-0": 5, "t-1": 0}),
        );
        ProgressEvent {
            id: "id".into(),
            name: "p".into(),
            batch_id: 0,
            replayed: false,
            timestamp: String::new(),
            num_input_rows: rows,
            input_rows_per_second: 0.0,
            processed_rows_per_second: 0.0,
            duration_ms: Durations {
                trigger_execution: 20,
                wal_commit: 3,
                stages: [("stage.decode".to_string(), 4)].into_iter().collect(),
                ..Durations::default()
            },
            sources: vec![SourceProgress {
                description: "files in".into(),
                start_offset: Offset::parse("{}").unwrap(),
                end_offset: Offset::parse("{}").unwrap(),
                num_input_rows: rows,
                num_input_bytes: rows * 100,
                metrics,
            }],
            sinks: vec![SinkProgress {
                description: "parquet".into(),
                num_output_rows: rows / 2,
                num_output_bytes: rows * 50,
            }],
            latencies: None,
            interim,
            tasks: Vec::new(),
            scheduling_ms: None,
            state_operators: Vec::new(),
            event_time: None,
        }
    }

    #[test]
    fn counters_add_up_committed_batches_and_skip_interim_events() {
        let m = PipelineMetrics::new();
        m.observe(&event(10, false), 1.0);
        m.observe(&event(99, true), 2.0);
        m.observe(&event(4, false), 3.0);
        let text = m.render().unwrap();
        assert!(
            text.contains(r#"tributary_source_bytes_total{pipeline="p",source="files in"} 1400"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tributary_sink_bytes_total{pipeline="p",sink="parquet"} 700"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"tributary_stage_duration_seconds_count{pipeline="p",stage="decode"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"tributary_source_backlog_messages{pipeline="p",source="files in"} 12"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"tributary_source_rows_total{pipeline="p",source="files in"} 14"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tributary_sink_rows_total{pipeline="p",sink="parquet"} 7"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tributary_batches_total{pipeline="p"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tributary_source_backlog_files{pipeline="p",source="files in"} 3"#),
            "{text}"
        );
        // The source's malformed count is a run total: counted once, not per event.
        assert!(text.contains(r#"tributary_source_records_in_error_total{pipeline="p",source="files in",reason="malformed"} 2"#), "{text}");
        assert!(text.contains(r#"metric="numFilesTracked"} 7"#), "{text}");
        assert!(text.contains(r#"tributary_source_partition_backlog_records{pipeline="p",source="files in",partition="t-0"} 5"#), "{text}");
        assert!(
            text.contains(r#"tributary_batch_duration_seconds_count{pipeline="p"} 2"#),
            "{text}"
        );
        assert!(text.trim_end().ends_with("# EOF"), "{text}");
    }
}
