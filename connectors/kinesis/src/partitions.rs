//! Input partitions of the Kinesis source: per-shard sequence-number ranges.
//!
//! A range `[start, end)` of the source's offsets is, per shard, "after the start position, up
//! to and including the end sequence number" ([`ShardRange`]). [`shard_ranges`] computes them
//! exactly as [`crate::KinesisSource`]'s replay read does (it is the same function), and
//! [`input_partitions`] turns them into [`InputPartition`]s:
//!
//! - one partition (a task) per `shardsPerTask` shard ranges, as Databricks plans
//!   ceil(shards / shardsPerTask) tasks, the ranges in stream and shard order; a shard read in
//!   the same range as one of its parents (resharding) always shares the parent's partition,
//!   parents first, so the lineage order "a child only after its parents" holds inside one
//!   reader (the planner makes a child readable only in a batch after the one that finished its
//!   parents, so a batch of today's planner has no such pair; a wider range, or a future
//!   planner, may); such a family is never split, so its partition may hold more;
//! - `spec`: `{"shards": [{"stream": "orders", "shard": "shardId-000000000001",
//!   "from": {"after": "4959..."}, "until": "4960..."}]}` — positions only, never a connection
//!   setting or a secret;
//! - `label`: `orders/shardId-000000000001 [4959..., 4960...)` (the start position, the end
//!   position), several shards joined by ` + `.
//!
//! An executor turns a partition back into its ranges ([`ranges_of`]), checking each stream is
//! one of its own configured streams (an executor built from other options than the driver's is
//! an error, not a silent read of another stream).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, InputPartition, Result};

use crate::offsets::{KinesisOffsets, ShardPosition};

/// The connector name in errors about partitions.
const CONNECTOR: &str = "kinesis";

/// The records of one shard after `from`, up to and including sequence number `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ShardRange {
    /// The stream, by name or ARN as configured.
    pub stream: String,
    /// The shard id.
    pub shard: String,
    /// Where reading starts (the start offset's position of the shard).
    pub from: ShardPosition,
    /// The last sequence number of the range (the end offset's position of the shard).
    pub until: String,
}

impl ShardRange {
    /// `orders/shardId-000000000001 [4959..., 4960...)`.
    pub fn label(&self) -> String {
        let from = match &self.from {
            ShardPosition::TrimHorizon => "TRIM_HORIZON".to_string(),
            ShardPosition::AtTimestamp(ms) => format!("AT_TIMESTAMP {ms}"),
            ShardPosition::After(seq) => seq.clone(),
        };
        format!("{}/{} [{from}, {})", self.stream, self.shard, self.until)
    }
}

/// The spec of one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionSpec {
    /// Parents before their children.
    shards: Vec<ShardRange>,
}

/// The shard ranges of `[start, end)`, sorted by stream and shard: every shard of `end` whose
/// position moved past its start position (a shard new in `end` starts at its oldest record),
/// except shards already finished at `start` and streams in `lost` (recreated or deleted).
pub(crate) fn shard_ranges(
    start: &KinesisOffsets,
    end: &KinesisOffsets,
    lost: &BTreeSet<String>,
) -> Vec<ShardRange> {
    let mut out = Vec::new();
    for (stream, s) in &end.streams {
        if lost.contains(stream) {
            continue;
        }
        for (shard, e) in &s.shards {
            let ShardPosition::After(until) = &e.position else {
                continue;
            };
            let at_start = start.shard(stream, shard);
            let from = at_start
                .map(|x| x.position.clone())
                .unwrap_or(ShardPosition::TrimHorizon);
            if from == e.position || at_start.is_some_and(|x| x.finished) {
                continue;
            }
            out.push(ShardRange {
                stream: stream.clone(),
                shard: shard.clone(),
                from,
                until: until.clone(),
            });
        }
    }
    out
}

/// Groups ranges so that a shard shares a partition with every parent read in the same range
/// (lineage from `end`), parents first; groups in the order of their first range.
fn lineage_groups(ranges: Vec<ShardRange>, end: &KinesisOffsets) -> Vec<Vec<ShardRange>> {
    let key = |r: &ShardRange| (r.stream.clone(), r.shard.clone());
    let index: BTreeMap<(String, String), usize> = ranges
        .iter()
        .enumerate()
        .map(|(i, r)| (key(r), i))
        .collect();
    // Union-find over the ranges: a child joins its parents' group.
    let mut root: Vec<usize> = (0..ranges.len()).collect();
    fn find(root: &mut [usize], mut i: usize) -> usize {
        while root[i] != i {
            root[i] = root[root[i]];
            i = root[i];
        }
        i
    }
    let parents_of = |r: &ShardRange| -> Vec<String> {
        end.shard(&r.stream, &r.shard)
            .map(|e| e.parents.clone())
            .unwrap_or_default()
    };
    for (i, r) in ranges.iter().enumerate() {
        for p in parents_of(r) {
            if let Some(&j) = index.get(&(r.stream.clone(), p)) {
                let (a, b) = (find(&mut root, i), find(&mut root, j));
                root[a.max(b)] = a.min(b);
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<ShardRange>> = BTreeMap::new();
    let mut lineage: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (i, r) in ranges.into_iter().enumerate() {
        lineage.insert(key(&r), parents_of(&r));
        let g = find(&mut root, i);
        groups.entry(g).or_default().push(r);
    }
    groups
        .into_values()
        .map(|group| parents_first(group, &lineage))
        .collect()
}

/// Orders one group so every range comes after the ranges of its parents (stable otherwise).
fn parents_first(
    mut rest: Vec<ShardRange>,
    lineage: &BTreeMap<(String, String), Vec<String>>,
) -> Vec<ShardRange> {
    let mut out: Vec<ShardRange> = Vec::with_capacity(rest.len());
    while !rest.is_empty() {
        let pending: BTreeSet<(String, String)> = rest
            .iter()
            .map(|r| (r.stream.clone(), r.shard.clone()))
            .collect();
        let ready = rest
            .iter()
            .position(|r| {
                lineage
                    .get(&(r.stream.clone(), r.shard.clone()))
                    .is_none_or(|ps| {
                        ps.iter()
                            .all(|p| !pending.contains(&(r.stream.clone(), p.clone())))
                    })
            })
            // A lineage cycle cannot come from Kinesis; keep the remaining order then.
            .unwrap_or(0);
        out.push(rest.remove(ready));
    }
    out
}

/// The input partitions of `ranges` (from [`shard_ranges`] of the same `end`), indexed from 0:
/// consecutive lineage groups packed into partitions of at most `per_task` ranges (a group
/// larger than that is a partition of its own).
pub(crate) fn input_partitions(
    ranges: Vec<ShardRange>,
    end: &KinesisOffsets,
    per_task: usize,
) -> Result<Vec<InputPartition>> {
    let per_task = per_task.max(1);
    let mut tasks: Vec<Vec<ShardRange>> = Vec::new();
    for group in lineage_groups(ranges, end) {
        match tasks.last_mut() {
            Some(t) if t.len() + group.len() <= per_task => t.extend(group),
            _ => tasks.push(group),
        }
    }
    tasks
        .into_iter()
        .enumerate()
        .map(|(index, shards)| {
            let label = shards
                .iter()
                .map(ShardRange::label)
                .collect::<Vec<_>>()
                .join(" + ");
            let spec = serde_json::to_value(PartitionSpec { shards }).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("cannot describe the Kinesis range {label}"),
                )
                .with_cause(e)
            })?;
            Ok(InputPartition::new(index, label, spec))
        })
        .collect()
}

/// The ranges an input partition planned by a Kinesis source reads, checked against the
/// streams of the source that is asked to read it.
pub(crate) fn ranges_of(partition: &InputPartition, streams: &[String]) -> Result<Vec<ShardRange>> {
    let spec: PartitionSpec = partition.decode_spec(CONNECTOR)?;
    for r in &spec.shards {
        let bad = |why: String| {
            Error::new(
                ErrorCode::Internal,
                format!(
                    "input partition {} ({}) {why}",
                    partition.index, partition.label
                ),
            )
            .with_context("stream", &r.stream)
            .with_context("shard", &r.shard)
        };
        if r.until.is_empty() || r.shard.is_empty() {
            return Err(bad(
                "is not a valid shard range: empty shard id or end sequence number".into(),
            ));
        }
        if !streams.contains(&r.stream) {
            return Err(bad(format!(
                "reads stream '{}', which is not one of this source's streams ({}): the reading source was built from other options than the planning one",
                r.stream,
                streams.join(", ")
            )));
        }
    }
    Ok(spec.shards)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::StreamKeying;
    use crate::offsets::{ShardOffset, StreamOffsets};

    fn after(s: &str) -> ShardPosition {
        ShardPosition::After(s.into())
    }

    fn offsets(shards: &[(&str, ShardPosition, &[&str], bool)]) -> KinesisOffsets {
        let mut o = KinesisOffsets::new(StreamKeying::Names);
        let mut s = StreamOffsets::default();
        for (id, pos, parents, finished) in shards {
            let mut e =
                ShardOffset::new(pos.clone(), parents.iter().map(|p| p.to_string()).collect());
            e.finished = *finished;
            s.shards.insert(id.to_string(), e);
        }
        o.streams.insert("orders".into(), s);
        o
    }

    /// A merge of p1 and p2 into c (both parents read to their end in the range), and an
    /// unrelated shard u: `(start, end)`.
    fn merged_family() -> (KinesisOffsets, KinesisOffsets) {
        let start = offsets(&[
            ("p1", after("1"), &[], false),
            ("p2", after("2"), &[], false),
            ("u", after("5"), &[], false),
        ]);
        let end = offsets(&[
            ("c", after("9"), &["p2", "p1"], false),
            ("p1", after("3"), &[], true),
            ("p2", after("4"), &[], true),
            ("u", after("6"), &[], false),
        ]);
        (start, end)
    }

    #[test]
    fn one_partition_per_shard_and_back_through_json() {
        let start = offsets(&[
            ("s0", after("10"), &[], false),
            ("s1", ShardPosition::TrimHorizon, &[], false),
            ("s2", after("30"), &[], false),
        ]);
        let end = offsets(&[
            ("s0", after("15"), &[], false),
            ("s1", after("22"), &[], false),
            ("s2", after("30"), &[], false),
        ]);
        let ranges = shard_ranges(&start, &end, &BTreeSet::new());
        assert_eq!(ranges.len(), 2, "{ranges:?}");
        let parts = input_partitions(ranges.clone(), &end, 1).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].index, 0);
        assert_eq!(parts[1].index, 1);
        assert_eq!(parts[0].label, "orders/s0 [10, 15)");
        assert_eq!(parts[1].label, "orders/s1 [TRIM_HORIZON, 22)");
        assert_eq!(
            parts[0].spec,
            serde_json::json!({"shards": [{"stream": "orders", "shard": "s0", "from": {"after": "10"}, "until": "15"}]})
        );
        let wire = serde_json::to_string(&parts).unwrap();
        let back: Vec<InputPartition> = serde_json::from_str(&wire).unwrap();
        let streams = vec!["orders".to_string()];
        let read: Vec<ShardRange> = back
            .iter()
            .flat_map(|p| ranges_of(p, &streams).unwrap())
            .collect();
        assert_eq!(read, ranges);
        assert_eq!(parts, input_partitions(ranges, &end, 1).unwrap());
    }

    #[test]
    fn a_child_shares_its_parents_partition_after_them() {
        let (start, end) = merged_family();
        let ranges = shard_ranges(&start, &end, &BTreeSet::new());
        assert_eq!(ranges.len(), 4);
        let parts = input_partitions(ranges, &end, 1).unwrap();
        assert_eq!(parts.len(), 2, "{parts:?}");
        let order: Vec<String> = ranges_of(&parts[0], &["orders".into()])
            .unwrap()
            .into_iter()
            .map(|r| r.shard)
            .collect();
        assert_eq!(order, ["p1", "p2", "c"]);
        assert_eq!(
            parts[0].label,
            "orders/p1 [1, 3) + orders/p2 [2, 4) + orders/c [TRIM_HORIZON, 9)"
        );
        assert_eq!(parts[1].label, "orders/u [5, 6)");
    }

    #[test]
    fn shards_per_task_packs_consecutive_ranges_into_one_partition() {
        let start = offsets(&[]);
        let ids = ["s0", "s1", "s2", "s3", "s4"];
        let end = offsets(
            &ids.iter()
                .map(|id| (*id, after("9"), &[][..], false))
                .collect::<Vec<_>>(),
        );
        let ranges = shard_ranges(&start, &end, &BTreeSet::new());
        let shards = |parts: &[InputPartition]| -> Vec<Vec<String>> {
            parts
                .iter()
                .map(|p| {
                    ranges_of(p, &["orders".into()])
                        .unwrap()
                        .into_iter()
                        .map(|r| r.shard)
                        .collect()
                })
                .collect()
        };
        let parts = input_partitions(ranges.clone(), &end, 2).unwrap();
        assert_eq!(
            shards(&parts),
            [vec!["s0", "s1"], vec!["s2", "s3"], vec!["s4"]]
        );
        assert_eq!(
            parts[0].label,
            "orders/s0 [TRIM_HORIZON, 9) + orders/s1 [TRIM_HORIZON, 9)"
        );
        assert_eq!(input_partitions(ranges.clone(), &end, 5).unwrap().len(), 1);
        assert_eq!(input_partitions(ranges, &end, 1).unwrap().len(), 5);

        // A family (two parents merged into c) is never split, even past shardsPerTask.
        let (start, end) = merged_family();
        let ranges = shard_ranges(&start, &end, &BTreeSet::new());
        let parts = input_partitions(ranges.clone(), &end, 2).unwrap();
        assert_eq!(shards(&parts), [vec!["p1", "p2", "c"], vec!["u"]]);
        let parts = input_partitions(ranges, &end, 4).unwrap();
        assert_eq!(shards(&parts), [vec!["p1", "p2", "c", "u"]]);
    }

    #[test]
    fn finished_lost_and_unmoved_shards_are_not_ranges() {
        let start = offsets(&[("a", after("1"), &[], true), ("b", after("2"), &[], false)]);
        let end = offsets(&[("a", after("1"), &[], true), ("b", after("2"), &[], false)]);
        assert!(shard_ranges(&start, &end, &BTreeSet::new()).is_empty());
        let end = offsets(&[("b", after("3"), &[], false)]);
        let lost = BTreeSet::from(["orders".to_string()]);
        assert!(shard_ranges(&start, &end, &lost).is_empty());
    }

    #[test]
    fn foreign_or_malformed_partitions_are_refused_with_their_label() {
        let end = offsets(&[("s0", after("5"), &[], false)]);
        let start = offsets(&[]);
        let parts =
            input_partitions(shard_ranges(&start, &end, &BTreeSet::new()), &end, 1).unwrap();
        let e = ranges_of(&parts[0], &["payments".into()]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal);
        assert!(e.to_string().contains("orders/s0 [TRIM_HORIZON, 5)"), "{e}");
        assert!(e.to_string().contains("payments"), "{e}");
        assert_eq!(e.context_value("stream"), Some("orders"));

        let kafka = InputPartition::new(
            0,
            "orders-3 [1, 2)",
            serde_json::json!({"topic": "orders", "partition": 3, "start": 1, "end": 2}),
        );
        let e = ranges_of(&kafka, &["orders".into()]).unwrap_err();
        assert!(e.to_string().contains("not a kinesis partition"), "{e}");

        let empty = InputPartition::new(
            0,
            "x",
            serde_json::json!({"shards": [{"stream": "orders", "shard": "s0", "from": "trimHorizon", "until": ""}]}),
        );
        let e = ranges_of(&empty, &["orders".into()]).unwrap_err();
        assert!(e.to_string().contains("not a valid shard range"), "{e}");
    }
}
