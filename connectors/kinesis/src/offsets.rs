//! The source's offset: per stream, per shard, the position after the last record read, plus
//! the shard lineage (parents) that orders resharding.
//!
//! ```json
//! {"keying":"names","streams":{"events":{"createdMs":1700000000000,"shards":{
//!   "shardId-000000000000":{"finished":true,"position":{"after":"4962..."}},
//!   "shardId-000000000001":{"parents":["shardId-000000000000"],"position":"trimHorizon"}}}}}
//! ```
//!
//! A shard is read only after every parent still in the offsets is `finished` (read to its
//! end); a finished parent leaves the offsets once its children are in them. `createdMs` is the
//! stream's creation time: a stream deleted and recreated under the same name is detected.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Offset, Result};

use crate::config::StreamKeying;

/// Where reading a shard resumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ShardPosition {
    /// From the oldest record.
    TrimHorizon,
    /// From the first record that arrived at or after this time (ms).
    AtTimestamp(i64),
    /// After this sequence number.
    After(String),
}

/// One shard's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardOffset {
    /// Where reading resumes.
    pub position: ShardPosition,
    /// The parent shards (split: one, merge: two).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// The shard is closed and every record of it was read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finished: bool,
}

impl ShardOffset {
    /// An unread shard.
    pub fn new(position: ShardPosition, parents: Vec<String>) -> Self {
        ShardOffset {
            position,
            parents,
            finished: false,
        }
    }
}

/// One stream's entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamOffsets {
    /// The stream's creation time (ms), to detect a recreated stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_ms: Option<i64>,
    /// Shards by id.
    pub shards: BTreeMap<String, ShardOffset>,
}

/// The whole offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KinesisOffsets {
    /// Whether the streams are keyed by name or ARN.
    pub keying: StreamKeying,
    /// Streams by name or ARN, as configured.
    pub streams: BTreeMap<String, StreamOffsets>,
}

impl KinesisOffsets {
    /// Refuses a restart whose query names its streams the other way (`streamName` against
    /// `streamARN`) than the checkpoint: the same stream would be read twice and counted lost.
    pub fn check_keying(&self, keying: StreamKeying) -> Result<()> {
        if self.keying == keying {
            return Ok(());
        }
        let (was, now) = (self.keying.option(), keying.option());
        Err(Error::new(
            ErrorCode::CheckpointIncompatible,
            format!(
                "the checkpoint names its streams with '{was}' but the query now uses '{now}'; \
                 switching between streamName and streamARN on an existing checkpoint is refused: \
                 the same stream under its other form would be read again from its oldest record \
                 (duplicates) and the old form would count as removed (loss). Go back to '{was}' \
                 or start a new checkpoint."
            ),
        )
        .with_context("option", now)
        .with_context("conflicts_with", was))
    }

    /// No stream yet.
    pub fn new(keying: StreamKeying) -> Self {
        KinesisOffsets {
            keying,
            streams: BTreeMap::new(),
        }
    }

    /// Into the SDK's opaque offset.
    pub fn to_offset(&self) -> Result<Offset> {
        Offset::from_typed(self)
    }

    /// From the SDK's opaque offset.
    pub fn from_offset(offset: &Offset) -> Result<Self> {
        offset.to_typed()
    }

    /// The entry of one shard.
    pub fn shard(&self, stream: &str, shard: &str) -> Option<&ShardOffset> {
        self.streams.get(stream).and_then(|s| s.shards.get(shard))
    }

    /// True when every parent of the shard still in the offsets is finished.
    pub fn readable(&self, stream: &str, shard: &str) -> bool {
        let Some(s) = self.streams.get(stream) else {
            return false;
        };
        let Some(entry) = s.shards.get(shard) else {
            return false;
        };
        !entry.finished
            && entry
                .parents
                .iter()
                .all(|p| s.shards.get(p).is_none_or(|po| po.finished))
    }

    /// Removes finished shards whose children are all in the offsets: once consumed, closed
    /// parents leave the offsets.
    pub fn drop_consumed_parents(&mut self) {
        for s in self.streams.values_mut() {
            let referenced: Vec<String> = s
                .shards
                .values()
                .flat_map(|e| e.parents.iter().cloned())
                .collect();
            let drop: Vec<String> = s
                .shards
                .iter()
                .filter(|(id, e)| e.finished && referenced.contains(id))
                .map(|(id, _)| id.clone())
                .collect();
            for id in drop {
                // A child that is itself finished may be dropped later; its parent goes now.
                s.shards.remove(&id);
            }
        }
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.streams.values().map(|s| s.shards.len()).sum()
    }
}

/// Orders Kinesis sequence numbers (decimal strings of up to 128 bits and more).
pub fn compare_sequence(a: &str, b: &str) -> Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> KinesisOffsets {
        let mut o = KinesisOffsets::new(StreamKeying::Names);
        let s = o.streams.entry("events".into()).or_default();
        s.created_ms = Some(1_700_000_000_000);
        s.shards.insert(
            "shardId-0".into(),
            ShardOffset {
                position: ShardPosition::After("495".into()),
                parents: vec![],
                finished: true,
            },
        );
        s.shards.insert(
            "shardId-1".into(),
            ShardOffset::new(ShardPosition::TrimHorizon, vec!["shardId-0".into()]),
        );
        s.shards.insert(
            "shardId-2".into(),
            ShardOffset::new(
                ShardPosition::AtTimestamp(5),
                vec!["shardId-0".into(), "shardId-3".into()],
            ),
        );
        s.shards.insert(
            "shardId-3".into(),
            ShardOffset::new(ShardPosition::After("7".into()), vec![]),
        );
        o
    }

    #[test]
    fn json_round_trips_exactly() {
        let o = sample();
        let text = o.to_offset().unwrap().to_json_string();
        // Compared as JSON values: key order depends on serde_json's `preserve_order`, which
        // another crate of the build may turn on.
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let shards = &value["streams"]["events"]["shards"];
        assert_eq!(
            shards["shardId-1"],
            serde_json::json!({"parents": ["shardId-0"], "position": "trimHorizon"}),
            "{text}"
        );
        assert_eq!(
            shards["shardId-0"],
            serde_json::json!({"finished": true, "position": {"after": "495"}}),
            "{text}"
        );
        let back = KinesisOffsets::from_offset(&Offset::parse(&text).unwrap()).unwrap();
        assert_eq!(back, o);
        assert_eq!(back.to_offset().unwrap().to_json_string(), text);
    }

    #[test]
    fn children_wait_for_every_parent() {
        let mut o = sample();
        assert!(o.readable("events", "shardId-1"));
        assert!(
            !o.readable("events", "shardId-2"),
            "shardId-3 is not finished"
        );
        assert!(!o.readable("events", "shardId-0"), "finished");
        o.drop_consumed_parents();
        assert!(o.shard("events", "shardId-0").is_none());
        assert!(
            o.readable("events", "shardId-1"),
            "an absent parent counts as read"
        );
        assert_eq!(o.shard_count(), 3);
    }

    #[test]
    fn sequence_numbers_compare_numerically() {
        assert_eq!(compare_sequence("9", "10"), Ordering::Less);
        assert_eq!(
            compare_sequence(
                "49590338271490256608559692538361571095921575989136588898",
                "49590338271490256608559692538361571095921575989136588899"
            ),
            Ordering::Less
        );
        assert_eq!(compare_sequence("010", "10"), Ordering::Equal);
    }
}
