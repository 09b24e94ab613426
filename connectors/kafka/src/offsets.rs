//! The source's offset type and the JSON forms users write in options.
//!
//! The checkpoint holds `{"topic":{"0":23,"1":42}}`: for every partition the offset of the next
//! record to read (Spark's format). In options `-2` stands for earliest and `-1` for latest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Offset, Result};

/// Offset meaning "earliest" in options.
pub const EARLIEST: i64 = -2;
/// Offset meaning "latest" in options.
pub const LATEST: i64 = -1;

/// Per-partition offsets (or timestamps), by topic then partition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PartitionOffsets(pub BTreeMap<String, BTreeMap<i32, i64>>);

impl PartitionOffsets {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of one partition.
    pub fn get(&self, topic: &str, partition: i32) -> Option<i64> {
        self.0.get(topic).and_then(|p| p.get(&partition)).copied()
    }

    /// Sets the value of one partition.
    pub fn set(&mut self, topic: &str, partition: i32, value: i64) {
        self.0
            .entry(topic.to_string())
            .or_default()
            .insert(partition, value);
    }

    /// Every `(topic, partition, value)` in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i32, i64)> {
        self.0
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |(p, o)| (t.as_str(), *p, *o)))
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.0.values().map(BTreeMap::len).sum()
    }

    /// True without partitions.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Into the SDK's opaque offset.
    pub fn to_offset(&self) -> Result<Offset> {
        Offset::from_typed(self)
    }

    /// From the SDK's opaque offset (a checkpoint).
    pub fn from_offset(offset: &Offset) -> Result<Self> {
        offset.to_typed()
    }
}

/// Parses `{"topic":{"0":23,"1":-2}}`; values must be >= `min` (-2 for starting offsets, -1
/// for ending offsets, 0 for timestamps). The example an error shows is one that is valid for
/// `min`: an ending offsets error never suggests -2.
pub fn parse_partition_values(text: &str, option: &str, min: i64) -> Result<PartitionOffsets> {
    let example = match min {
        m if m <= -2 => r#"{"topic":{"0":23,"1":-2}} (-2 earliest, -1 latest)"#,
        -1 => r#"{"topic":{"0":50,"1":-1}} (-1 latest)"#,
        _ => r#"{"topic":{"0":1700000000000}} (milliseconds since the epoch)"#,
    };
    let bad = |why: String| {
        Error::new(
            ErrorCode::InvalidOption,
            format!("invalid value for option '{option}': {why}; expected JSON like {example}"),
        )
        .with_context("option", option)
        .with_context("value", text)
    };
    let raw: BTreeMap<String, BTreeMap<String, serde_json::Value>> =
        serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let mut out = PartitionOffsets::new();
    for (topic, parts) in raw {
        if topic.is_empty() {
            return Err(bad("empty topic name".into()));
        }
        for (p, v) in parts {
            let partition: i32 = p.parse().ok().filter(|p: &i32| *p >= 0).ok_or_else(|| {
                bad(format!(
                    "partition '{p}' of topic '{topic}' is not a partition number"
                ))
            })?;
            let value = v.as_i64().filter(|v| *v >= min).ok_or_else(|| {
                if min == -1 && v.as_i64() == Some(-2) {
                    bad(format!(
                        "value -2 (earliest) for {topic}-{partition} cannot end a range (as in Spark); give an offset or -1 (latest)"
                    ))
                } else {
                    bad(format!(
                        "value {v} for {topic}-{partition} must be a whole number >= {min}"
                    ))
                }
            })?;
            out.set(&topic, partition, value);
        }
    }
    Ok(out)
}

/// Parses the `assign` option: `{"topicA":[0,1],"topicB":[2]}`.
pub fn parse_assign(text: &str) -> Result<BTreeMap<String, Vec<i32>>> {
    let bad = |why: String| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "invalid value for option 'assign': {why}; expected JSON like {{\"topicA\":[0,1],\"topicB\":[2]}}"
            ),
        )
        .with_context("option", "assign")
        .with_context("value", text)
    };
    let raw: BTreeMap<String, Vec<i32>> =
        serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    if raw.is_empty() || raw.values().all(Vec::is_empty) {
        return Err(bad("no partition is assigned".into()));
    }
    let mut out = BTreeMap::new();
    for (t, mut ps) in raw {
        if t.is_empty() {
            return Err(bad("empty topic name".into()));
        }
        if let Some(p) = ps.iter().find(|p| **p < 0) {
            return Err(bad(format!("partition {p} of topic '{t}' is negative")));
        }
        ps.sort_unstable();
        ps.dedup();
        out.insert(t, ps);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn an_error_never_shows_an_example_its_option_refuses() {
        let e = parse_partition_values(r#"{"t":{"0":-2}}"#, "endingOffsets", -1).unwrap_err();
        assert_eq!(e.context_value("option"), Some("endingOffsets"));
        let example = e
            .message()
            .split("expected JSON like")
            .nth(1)
            .unwrap()
            .to_string();
        assert!(!example.contains("-2"), "{e}");
        assert!(example.contains(r#"{"topic":{"0":50,"1":-1}}"#), "{e}");
        assert!(
            e.message()
                .contains("-2 (earliest) for t-0 cannot end a range"),
            "{e}"
        );
        // startingOffsets may use -2, and its example says so; timestamps never negative.
        let e = parse_partition_values(r#"{"t":{"0":-3}}"#, "startingOffsets", -2).unwrap_err();
        assert!(
            e.message()
                .contains(r#"{"topic":{"0":23,"1":-2}} (-2 earliest, -1 latest)"#),
            "{e}"
        );
        let e = parse_partition_values(r#"{"t":{"0":-1}}"#, "startingOffsetsByTimestamp", 0)
            .unwrap_err();
        let example = e
            .message()
            .split("expected JSON like")
            .nth(1)
            .unwrap()
            .to_string();
        assert!(!example.contains('-'), "{e}");
    }

    #[test]
    fn offsets_round_trip_in_spark_format() {
        let mut o = PartitionOffsets::new();
        o.set("t", 0, 23);
        o.set("t", 10, 5);
        o.set("a", 1, 0);
        let off = o.to_offset().unwrap();
        assert_eq!(off.to_json_string(), r#"{"a":{"1":0},"t":{"0":23,"10":5}}"#);
        let back =
            PartitionOffsets::from_offset(&Offset::parse(&off.to_json_string()).unwrap()).unwrap();
        assert_eq!(back, o);
        assert_eq!(back.len(), 3);
    }

    #[test]
    fn option_json_is_checked() {
        let o = parse_partition_values(r#"{"t":{"0":-2,"1":-1,"2":7}}"#, "startingOffsets", -2)
            .unwrap();
        assert_eq!(o.get("t", 2), Some(7));
        for bad in [
            r#"{"t":{"x":1}}"#,
            r#"{"t":{"0":-3}}"#,
            r#"{"t":[0]}"#,
            "nope",
        ] {
            let e = parse_partition_values(bad, "startingOffsets", -2).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad}");
            assert_eq!(e.context_value("option"), Some("startingOffsets"));
        }
    }

    #[test]
    fn assign_json_is_checked() {
        let a = parse_assign(r#"{"t":[1,0,1]}"#).unwrap();
        assert_eq!(a["t"], vec![0, 1]);
        for bad in [r#"{"t":[-1]}"#, r#"{}"#, r#"{"t":"0"}"#, "[0]"] {
            assert_eq!(
                parse_assign(bad).unwrap_err().code(),
                ErrorCode::InvalidOption,
                "{bad}"
            );
        }
    }
}
