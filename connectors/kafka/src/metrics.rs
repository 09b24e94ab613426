//! Source metrics: offsets behind latest per partition and the estimated bytes behind latest.
//!
//! `estimatedTotalBytesBehindLatest` multiplies the offsets behind latest by the average record
//! size (key + value) measured over the reads of the last `bytesEstimateWindowLength`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tributary_sdk::SourceMetrics;

use crate::offsets::PartitionOffsets;

/// Record sizes seen over a sliding time window.
#[derive(Debug)]
pub(crate) struct ByteWindow {
    window: Duration,
    samples: VecDeque<(Instant, u64, u64)>,
}

impl ByteWindow {
    pub(crate) fn new(window: Duration) -> Self {
        ByteWindow {
            window,
            samples: VecDeque::new(),
        }
    }

    /// Records one read: how many records and bytes.
    pub(crate) fn record(&mut self, records: u64, bytes: u64, now: Instant) {
        if records > 0 {
            self.samples.push_back((now, records, bytes));
        }
        while let Some((t, _, _)) = self.samples.front() {
            if now.duration_since(*t) > self.window {
                self.samples.pop_front();
            } else {
                break;
            }
        }
    }

    /// Average bytes per record in the window, if any read happened.
    pub(crate) fn average(&self) -> Option<f64> {
        let (r, b) = self
            .samples
            .iter()
            .fold((0u64, 0u64), |(r, b), s| (r + s.1, b + s.2));
        (r > 0).then(|| b as f64 / r as f64)
    }
}

/// Lag metrics of a planned batch end against the latest offsets.
/// `estimatedTotalBytesBehindLatest` is added by [`with_byte_estimate`] when metrics are read, so
/// it uses the record sizes of the batch that was read after planning.
pub(crate) fn lag_metrics(end: &PartitionOffsets, latest: &PartitionOffsets) -> SourceMetrics {
    let lags: Vec<i64> = latest
        .iter()
        .map(|(t, p, hi)| (hi - end.get(t, p).unwrap_or(hi)).max(0))
        .collect();
    let mut m = SourceMetrics::new();
    if lags.is_empty() {
        return m;
    }
    let total: i64 = lags.iter().sum();
    m.insert(
        "minOffsetsBehindLatest".into(),
        lags.iter().min().copied().unwrap_or(0).into(),
    );
    m.insert(
        "maxOffsetsBehindLatest".into(),
        lags.iter().max().copied().unwrap_or(0).into(),
    );
    m.insert(
        "avgOffsetsBehindLatest".into(),
        serde_json::json!(total as f64 / lags.len() as f64),
    );
    m.insert("totalOffsetsBehindLatest".into(), total.into());
    // Per partition (`topic-3`), for lag dashboards (the monitor's per-partition backlog).
    let by_partition: serde_json::Map<String, serde_json::Value> = latest
        .iter()
        .map(|(t, p, hi)| {
            let lag = (hi - end.get(t, p).unwrap_or(hi)).max(0);
            (format!("{t}-{p}"), lag.into())
        })
        .collect();
    m.insert(
        "offsetsBehindLatestByPartition".into(),
        serde_json::Value::Object(by_partition),
    );
    m
}

/// Adds `estimatedTotalBytesBehindLatest` (offsets behind latest x average record size).
pub(crate) fn with_byte_estimate(mut m: SourceMetrics, avg_record: Option<f64>) -> SourceMetrics {
    let total = m.get("totalOffsetsBehindLatest").and_then(|v| v.as_i64());
    if let (Some(total), Some(avg)) = (total, avg_record) {
        m.insert(
            "estimatedTotalBytesBehindLatest".into(),
            serde_json::json!((total as f64 * avg).round()),
        );
    }
    m
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn window_forgets_old_reads_and_lag_uses_the_average() {
        let t0 = Instant::now();
        let mut w = ByteWindow::new(Duration::from_secs(10));
        w.record(10, 1000, t0);
        w.record(10, 3000, t0 + Duration::from_secs(5));
        assert_eq!(w.average(), Some(200.0));
        w.record(0, 0, t0 + Duration::from_secs(12));
        assert_eq!(w.average(), Some(300.0));
        let mut end = PartitionOffsets::new();
        let mut latest = PartitionOffsets::new();
        end.set("t", 0, 5);
        end.set("t", 1, 10);
        latest.set("t", 0, 10);
        latest.set("t", 1, 10);
        let m = with_byte_estimate(lag_metrics(&end, &latest), w.average());
        assert_eq!(m["maxOffsetsBehindLatest"], 5);
        assert_eq!(m["minOffsetsBehindLatest"], 0);
        assert_eq!(m["avgOffsetsBehindLatest"], 2.5);
        assert_eq!(m["estimatedTotalBytesBehindLatest"], 1500.0);
    }
}
