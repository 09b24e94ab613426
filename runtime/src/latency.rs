//! Latency percentiles of real-time batches, as Spark's real-time mode prints them.
//!
//! Three latencies per record, each kept in an HDR histogram (microsecond resolution, three
//! significant digits, bounded memory whatever the record count) rather than by sorting samples:
//!
//! - `processingLatencyMs`: the source read the record → every sink acknowledged it;
//! - `sourceQueuingLatencyMs`: the broker appended the record → the source read it;
//! - `e2eLatencyMs`: the record was created → every sink acknowledged it.
//!
//! A source that knows one timestamp per record (Kafka: `CreateTime` or `LogAppendTime`, by the
//! topic's configuration) gives it as both the append and the creation time.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest latency tracked: one day, in microseconds (larger values are clamped).
const MAX_US: u64 = 86_400_000_000;

/// P50/P90/P95/P99 of one latency, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    #[serde(rename = "P50")]
    pub p50: f64,
    /// 90th percentile.
    #[serde(rename = "P90")]
    pub p90: f64,
    /// 95th percentile.
    #[serde(rename = "P95")]
    pub p95: f64,
    /// 99th percentile.
    #[serde(rename = "P99")]
    pub p99: f64,
}

/// The `latencies` of a real-time progress event.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Latencies {
    /// Read → sink acknowledgement.
    pub processing_latency_ms: Percentiles,
    /// Broker append → read.
    pub source_queuing_latency_ms: Percentiles,
    /// Record creation → sink acknowledgement.
    pub e2e_latency_ms: Percentiles,
}

impl Latencies {
    /// The three latencies by name, for printing.
    pub fn by_name(&self) -> BTreeMap<&'static str, &Percentiles> {
        BTreeMap::from([
            ("processingLatencyMs", &self.processing_latency_ms),
            ("sourceQueuingLatencyMs", &self.source_queuing_latency_ms),
            ("e2eLatencyMs", &self.e2e_latency_ms),
        ])
    }
}

/// One histogram per latency.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    processing: Histogram<u64>,
    queuing: Histogram<u64>,
    e2e: Histogram<u64>,
}

#[allow(clippy::expect_used)] // constant bounds that satisfy the crate's preconditions
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("constant histogram bounds are valid")
}

fn record(h: &mut Histogram<u64>, us: i64, count: u64) {
    let v = (us.max(1) as u64).min(MAX_US);
    let _ = h.record_n(v, count);
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    Percentiles {
        p50: ms(0.50),
        p90: ms(0.90),
        p95: ms(0.95),
        p99: ms(0.99),
    }
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    /// Empty histograms.
    pub fn new() -> Self {
        LatencyRecorder {
            processing: histogram(),
            queuing: histogram(),
            e2e: histogram(),
        }
    }

    /// Records `rows` records read at `read_at_us` and acknowledged at `ack_us` (Unix µs), with
    /// their append and creation times (Unix ms; empty when unknown).
    pub fn record_chunk(
        &mut self,
        rows: usize,
        read_at_us: i64,
        ack_us: i64,
        appended_ms: &[i64],
        created_ms: &[i64],
    ) {
        if rows == 0 {
            return;
        }
        record(&mut self.processing, ack_us - read_at_us, rows as u64);
        for &t in appended_ms.iter().filter(|t| **t > 0) {
            record(&mut self.queuing, read_at_us - t * 1000, 1);
        }
        for &t in created_ms.iter().filter(|t| **t > 0) {
            record(&mut self.e2e, ack_us - t * 1000, 1);
        }
    }

    /// Records counted so far.
    pub fn len(&self) -> u64 {
        self.processing.len()
    }

    /// True before the first record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The percentiles so far.
    pub fn latencies(&self) -> Latencies {
        Latencies {
            processing_latency_ms: percentiles(&self.processing),
            source_queuing_latency_ms: percentiles(&self.queuing),
            e2e_latency_ms: percentiles(&self.e2e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_the_recorded_distribution() {
        let mut r = LatencyRecorder::new();
        // 100 records: processing latency i ms for record i (one chunk each).
        for i in 1..=100i64 {
            let read = 1_000_000_000;
            r.record_chunk(
                1,
                read,
                read + i * 1000,
                &[read / 1000 - 2],
                &[read / 1000 - 5],
            );
        }
        let l = r.latencies();
        assert!((l.processing_latency_ms.p50 - 50.0).abs() < 0.1, "{l:?}");
        assert!((l.processing_latency_ms.p99 - 99.0).abs() < 0.1, "{l:?}");
        assert!(
            (l.source_queuing_latency_ms.p99 - 2.0).abs() < 0.01,
            "{l:?}"
        );
        assert!(
            l.e2e_latency_ms.p50 > 50.0 && l.e2e_latency_ms.p50 < 56.0,
            "{l:?}"
        );
        assert_eq!(r.len(), 100);
        let json = serde_json::to_value(&l).unwrap();
        for name in [
            "processingLatencyMs",
            "sourceQueuingLatencyMs",
            "e2eLatencyMs",
        ] {
            for p in ["P50", "P90", "P95", "P99"] {
                assert!(json[name][p].is_number(), "{name}.{p} missing in {json}");
            }
        }
    }

    #[test]
    fn unknown_times_and_empty_chunks_are_skipped() {
        let mut r = LatencyRecorder::new();
        r.record_chunk(0, 0, 10, &[], &[]);
        r.record_chunk(3, 1_000, 2_000, &[], &[]);
        assert_eq!(r.len(), 3);
        assert_eq!(r.latencies().e2e_latency_ms, Percentiles::default());
    }
}
