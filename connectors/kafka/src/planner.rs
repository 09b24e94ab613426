//! Batch planning, pure functions: rate limits across partitions and splitting offset ranges
//! into parallel reads.
//!
//! - [`rate_limit`] shares `maxOffsetsPerTrigger` between partitions in proportion to their lag
//!   (Spark's rule) with the largest-remainder method, so the total never exceeds the limit.
//! - [`split_ranges`] applies `maxRecordsPerPartition` and `minPartitions` the way Spark's
//!   `KafkaOffsetRangeCalculator` does; [`group_into_tasks`] puts the pieces into tasks that each
//!   hold at most one piece per partition (one consumer can read one position per partition).

use crate::offsets::PartitionOffsets;

/// One partition's planned offsets `[start, end)`; serialised as the spec of an input partition
/// (`{"topic":"orders","partition":3,"start":100,"end":200}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffsetRange {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// First offset to read.
    pub start: i64,
    /// One past the last offset to read.
    pub end: i64,
}

impl OffsetRange {
    /// Number of offsets in the range.
    pub fn size(&self) -> u64 {
        (self.end - self.start).max(0) as u64
    }
}

/// The end offsets of a batch that reads at most `limit` offsets, shared in proportion to each
/// partition's lag (`latest - start`). `start` holds every partition of `latest`.
pub fn rate_limit(
    start: &PartitionOffsets,
    latest: &PartitionOffsets,
    limit: u64,
) -> PartitionOffsets {
    let lags: Vec<(&str, i32, i64, u64)> = latest
        .iter()
        .map(|(t, p, end)| {
            let begin = start.get(t, p).unwrap_or(end);
            (t, p, begin, (end - begin).max(0) as u64)
        })
        .collect();
    let total: u128 = lags.iter().map(|l| l.3 as u128).sum();
    let mut out = PartitionOffsets::new();
    if total <= limit as u128 {
        for (t, p, begin, lag) in &lags {
            out.set(t, *p, begin + *lag as i64);
        }
        return out;
    }
    // Quotas: floor of the proportional share, then the remainder to the largest fractions.
    let mut shares: Vec<(usize, u64, u128)> = lags
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let exact = l.3 as u128 * limit as u128;
            (i, (exact / total) as u64, exact % total)
        })
        .collect();
    let given: u64 = shares.iter().map(|s| s.1).sum();
    let mut left = limit - given;
    shares.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    for s in shares.iter_mut() {
        if left == 0 {
            break;
        }
        if s.1 < lags[s.0].3 {
            s.1 += 1;
            left -= 1;
        }
    }
    shares.sort_by_key(|s| s.0);
    for (i, quota, _) in shares {
        let (t, p, begin, lag) = lags[i];
        out.set(t, p, begin + quota.min(lag) as i64);
    }
    out
}

/// Splits ranges: first every range larger than `max_records` into equal pieces, then, while
/// there are fewer than `min_partitions` pieces, the ranges in proportion to their size
/// (at least one piece each). Empty ranges are dropped. Pieces of one partition stay in order.
pub fn split_ranges(
    ranges: Vec<OffsetRange>,
    min_partitions: Option<u64>,
    max_records: Option<u64>,
) -> Vec<OffsetRange> {
    let mut ranges: Vec<OffsetRange> = ranges.into_iter().filter(|r| r.size() > 0).collect();
    if let Some(max) = max_records.filter(|m| *m > 0) {
        ranges = ranges
            .into_iter()
            .flat_map(|r| {
                let parts = r.size().div_ceil(max);
                split_one(r, parts)
            })
            .collect();
    }
    if let Some(min) = min_partitions {
        if (ranges.len() as u64) < min {
            let total: u64 = ranges.iter().map(OffsetRange::size).sum();
            if total > 0 {
                ranges = ranges
                    .into_iter()
                    .flat_map(|r| {
                        let share = (r.size() as f64 / total as f64 * min as f64).round() as u64;
                        let parts = share.max(1).min(r.size());
                        split_one(r, parts)
                    })
                    .collect();
            }
        }
    }
    ranges
}

fn split_one(r: OffsetRange, parts: u64) -> Vec<OffsetRange> {
    if parts <= 1 {
        return vec![r];
    }
    let size = r.size();
    (0..parts)
        .map(|i| OffsetRange {
            topic: r.topic.clone(),
            partition: r.partition,
            start: r.start + (size * i / parts) as i64,
            end: r.start + (size * (i + 1) / parts) as i64,
        })
        .filter(|p| p.size() > 0)
        .collect()
}

/// Groups pieces so that no task holds two pieces of the same partition: task `k` takes the
/// `k`-th piece of every partition.
pub fn group_into_tasks(ranges: Vec<OffsetRange>) -> Vec<Vec<OffsetRange>> {
    let mut tasks: Vec<Vec<OffsetRange>> = Vec::new();
    let mut seen: Vec<((String, i32), usize)> = Vec::new();
    for r in ranges {
        let key = (r.topic.clone(), r.partition);
        let k = match seen.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                seen.push((key, 0));
                0
            }
        };
        if tasks.len() <= k {
            tasks.resize_with(k + 1, Vec::new);
        }
        tasks[k].push(r);
    }
    tasks
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn offs(v: &[(&str, i32, i64)]) -> PartitionOffsets {
        let mut o = PartitionOffsets::new();
        for (t, p, x) in v {
            o.set(t, *p, *x);
        }
        o
    }

    #[test]
    fn limit_is_shared_in_proportion_to_lag_and_never_exceeded() {
        let start = offs(&[("t", 0, 0), ("t", 1, 100), ("t", 2, 0)]);
        let latest = offs(&[("t", 0, 300), ("t", 1, 200), ("t", 2, 1)]);
        let end = rate_limit(&start, &latest, 100);
        let taken: Vec<i64> = (0..3)
            .map(|p| end.get("t", p).unwrap() - start.get("t", p).unwrap())
            .collect();
        assert_eq!(taken.iter().sum::<i64>(), 100);
        // 300:100:1 of 401 -> 74.8, 24.9, 0.25
        assert_eq!(taken, vec![75, 25, 0]);
        // under the limit everything is taken
        let end = rate_limit(&start, &latest, 10_000);
        assert_eq!(end, latest);
    }

    #[test]
    fn new_partitions_are_planned_from_their_start() {
        let start = offs(&[("t", 0, 10)]);
        let latest = offs(&[("t", 0, 20), ("t", 1, 0)]);
        let end = rate_limit(&start, &latest, 5);
        assert_eq!(end.get("t", 0), Some(15));
        assert_eq!(end.get("t", 1), Some(0));
    }

    fn r(p: i32, s: i64, e: i64) -> OffsetRange {
        OffsetRange {
            topic: "t".into(),
            partition: p,
            start: s,
            end: e,
        }
    }

    #[test]
    fn big_ranges_are_split_and_pieces_cover_exactly() {
        let pieces = split_ranges(vec![r(0, 0, 10), r(1, 5, 5)], None, Some(3));
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces.first().unwrap().start, 0);
        assert_eq!(pieces.last().unwrap().end, 10);
        for w in pieces.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        let pieces = split_ranges(vec![r(0, 0, 90), r(1, 0, 10)], Some(10), None);
        assert_eq!(pieces.iter().filter(|p| p.partition == 0).count(), 9);
        assert_eq!(pieces.iter().filter(|p| p.partition == 1).count(), 1);
        let tasks = group_into_tasks(pieces);
        assert_eq!(tasks.len(), 9);
        assert_eq!(tasks[0].len(), 2);
        for t in &tasks {
            let mut parts: Vec<i32> = t.iter().map(|r| r.partition).collect();
            parts.dedup();
            assert_eq!(parts.len(), t.len());
        }
    }
}
