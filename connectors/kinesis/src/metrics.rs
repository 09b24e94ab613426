//! Source metrics for progress events: how far behind the shards are (`avgMsBehindLatest`,
//! `maxMsBehindLatest`, `minMsBehindLatest`, from GetRecords' MillisBehindLatest), what the
//! last planned batch holds, throttling, and the data-loss counters.

use std::collections::BTreeMap;

use tributary_sdk::{DataLossTracker, SourceMetrics};

/// Metrics of the last planned batch.
#[derive(Debug, Clone, Default)]
pub(crate) struct KinesisMetrics {
    /// MillisBehindLatest by (stream, shard).
    pub behind: BTreeMap<(String, String), i64>,
    /// Records in the last planned batch.
    pub planned_records: u64,
    /// Bytes in the last planned batch.
    pub planned_bytes: u64,
    /// Shards being read.
    pub active_shards: u64,
    /// Times throttled since start.
    pub throttled: u64,
    /// Shard-list refreshes (DescribeStreamSummary + ListShards per stream) since start,
    /// spaced by shardFetchInterval.
    pub shard_list_refreshes: u64,
}

impl KinesisMetrics {
    /// The metrics map.
    pub fn to_metrics(&self, tracker: &DataLossTracker) -> SourceMetrics {
        let mut m = SourceMetrics::new();
        if !self.behind.is_empty() {
            let values: Vec<i64> = self.behind.values().copied().collect();
            let sum: i64 = values.iter().sum();
            m.insert(
                "avgMsBehindLatest".into(),
                (sum as f64 / values.len() as f64).into(),
            );
            m.insert(
                "maxMsBehindLatest".into(),
                values.iter().max().copied().unwrap_or(0).into(),
            );
            m.insert(
                "minMsBehindLatest".into(),
                values.iter().min().copied().unwrap_or(0).into(),
            );
            // Per shard (`stream/shardId-...`), for lag dashboards.
            let by_shard: serde_json::Map<String, serde_json::Value> = self
                .behind
                .iter()
                .map(|((stream, shard), ms)| (format!("{stream}/{shard}"), (*ms).into()))
                .collect();
            m.insert(
                "msBehindLatestByShard".into(),
                serde_json::Value::Object(by_shard),
            );
        }
        m.insert("numRecordsPlanned".into(), self.planned_records.into());
        m.insert("numBytesPlanned".into(), self.planned_bytes.into());
        m.insert("numActiveShards".into(), self.active_shards.into());
        m.insert("numThrottled".into(), self.throttled.into());
        m.insert(
            "numShardListRefreshes".into(),
            self.shard_list_refreshes.into(),
        );
        tracker.write_metrics(&mut m);
        m
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn behind_latest_statistics() {
        let mut k = KinesisMetrics::default();
        k.behind.insert(("s".into(), "a".into()), 100);
        k.behind.insert(("s".into(), "b".into()), 300);
        let m = k.to_metrics(&DataLossTracker::new(true));
        assert_eq!(m["avgMsBehindLatest"], 200.0);
        assert_eq!(m["maxMsBehindLatest"], 300);
        assert_eq!(m["minMsBehindLatest"], 100);
        assert_eq!(m["dataLoss.total"], 0);
    }
}
