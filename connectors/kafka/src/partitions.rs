//! Input partitions of the Kafka source: one per planned offset range.
//!
//! The driver plans a batch exactly as [`crate::KafkaSource`]'s `read` does (data-loss checks,
//! earliest offsets of new and recreated partitions, `minPartitions` / `maxRecordsPerPartition`
//! splits) and turns every resulting [`OffsetRange`] into an [`InputPartition`]:
//!
//! - `spec`: `{"topic": "orders", "partition": 3, "start": 100, "end": 200}` — offsets only,
//!   never a connection setting or a secret;
//! - `label`: `orders-3 [100, 200)`;
//! - `expected_records`: `end - start` (an upper bound: transaction markers and compaction
//!   leave invisible offsets, which the reader skips as Spark does).
//!
//! An executor turns a partition back into its range ([`range_of`]), checking that the range is
//! well formed and that its topic belongs to the executor's own subscription (an executor built
//! from other options than the driver's is an error, not a silent read of another topic).

use tributary_sdk::{Error, ErrorCode, InputPartition, Result};

use crate::config::Subscription;
use crate::planner::OffsetRange;

/// The connector name in errors about partitions.
const CONNECTOR: &str = "kafka";

/// `orders-3 [100, 200)`.
pub(crate) fn label(r: &OffsetRange) -> String {
    format!("{}-{} [{}, {})", r.topic, r.partition, r.start, r.end)
}

/// One input partition per range, indexed in the ranges' order.
pub(crate) fn input_partitions(ranges: Vec<OffsetRange>) -> Result<Vec<InputPartition>> {
    ranges
        .into_iter()
        .enumerate()
        .map(|(index, r)| {
            let spec = serde_json::to_value(&r).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("cannot describe the Kafka range {}", label(&r)),
                )
                .with_cause(e)
            })?;
            let mut p = InputPartition::new(index, label(&r), spec);
            p.expected_records = Some(r.size());
            Ok(p)
        })
        .collect()
}

/// The range an input partition planned by a Kafka source reads, checked against the
/// subscription of the source that is asked to read it.
pub(crate) fn range_of(
    partition: &InputPartition,
    subscription: &Subscription,
) -> Result<OffsetRange> {
    let r: OffsetRange = partition.decode_spec(CONNECTOR)?;
    let bad = |why: String| {
        Error::new(
            ErrorCode::Internal,
            format!(
                "input partition {} ({}) {why}",
                partition.index, partition.label
            ),
        )
        .with_context("topic", &r.topic)
        .with_context("partition", r.partition)
    };
    if r.partition < 0 || r.start < 0 || r.end < r.start {
        return Err(bad(format!(
            "is not a valid offset range of a partition: [{}, {}) of partition {}",
            r.start, r.end, r.partition
        )));
    }
    if !subscription.matches_topic(&r.topic) {
        return Err(bad(format!(
            "reads topic '{}', which this source's subscription ({}) does not include: the reading source was built from other options than the planning one",
            r.topic,
            subscription.describe()
        )));
    }
    Ok(r)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn r(topic: &str, p: i32, s: i64, e: i64) -> OffsetRange {
        OffsetRange {
            topic: topic.into(),
            partition: p,
            start: s,
            end: e,
        }
    }

    fn topics(t: &[&str]) -> Subscription {
        Subscription::Topics(t.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn ranges_become_indexed_partitions_and_back() {
        let ranges = vec![r("orders", 3, 100, 200), r("orders", 4, 0, 1)];
        let parts = input_partitions(ranges.clone()).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].index, 0);
        assert_eq!(parts[1].index, 1);
        assert_eq!(parts[0].label, "orders-3 [100, 200)");
        assert_eq!(parts[0].expected_records, Some(100));
        assert_eq!(
            parts[0].spec,
            serde_json::json!({"topic": "orders", "partition": 3, "start": 100, "end": 200})
        );
        // Through JSON, as a plan travels to an executor.
        let wire = serde_json::to_string(&parts).unwrap();
        let back: Vec<InputPartition> = serde_json::from_str(&wire).unwrap();
        let sub = topics(&["orders"]);
        let read: Vec<OffsetRange> = back.iter().map(|p| range_of(p, &sub).unwrap()).collect();
        assert_eq!(read, ranges);
    }

    #[test]
    fn planning_is_a_pure_function_of_the_ranges() {
        let ranges = vec![r("a", 0, 0, 5), r("b", 1, 7, 9)];
        assert_eq!(
            input_partitions(ranges.clone()).unwrap(),
            input_partitions(ranges).unwrap()
        );
    }

    #[test]
    fn foreign_or_malformed_partitions_are_refused_with_their_label() {
        let sub = topics(&["orders"]);
        let other = input_partitions(vec![r("payments", 0, 0, 5)]).unwrap();
        let e = range_of(&other[0], &sub).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal);
        assert!(e.to_string().contains("payments-0 [0, 5)"), "{e}");
        assert!(e.to_string().contains("subscribe=orders"), "{e}");
        assert_eq!(e.context_value("topic"), Some("payments"));

        let inverted = InputPartition::new(
            2,
            "orders-0 [9, 3)",
            serde_json::json!({"topic": "orders", "partition": 0, "start": 9, "end": 3}),
        );
        let e = range_of(&inverted, &sub).unwrap_err();
        assert!(e.to_string().contains("not a valid offset range"), "{e}");

        let files = InputPartition::new(0, "4 files", serde_json::json!({"files": ["a"]}));
        let e = range_of(&files, &sub).unwrap_err();
        assert!(e.to_string().contains("not a kafka partition"), "{e}");

        let extra = InputPartition::new(
            0,
            "x",
            serde_json::json!({"topic": "orders", "partition": 0, "start": 0, "end": 1, "path": "/"}),
        );
        assert!(range_of(&extra, &sub).is_err());

        let pattern = Subscription::Pattern(regex::Regex::new("ord.*").unwrap());
        let ok = input_partitions(vec![r("orders", 1, 0, 2)]).unwrap();
        assert_eq!(range_of(&ok[0], &pattern).unwrap(), r("orders", 1, 0, 2));
    }
}
