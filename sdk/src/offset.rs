//! Source offsets: source-defined positions that serialise to JSON and round-trip exactly.
//!
//! The runtime never looks inside an offset; it stores it in the checkpoint's write-ahead log and
//! hands it back to the source. A source defines its own serde type (per-partition offsets, file
//! sequence numbers, shard sequence numbers) and converts with [`Offset::from_typed`] and
//! [`Offset::to_typed`]. The JSON text is canonical (object keys sorted), so two equal offsets
//! have the same text and a replay reads exactly the same range.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};

/// An opaque, JSON-serialisable source position.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Offset(serde_json::Value);

impl Offset {
    /// Wraps a JSON value. Object keys are kept sorted, so the text form is canonical.
    pub fn from_json(value: serde_json::Value) -> Self {
        Offset(value)
    }

    /// Parses the text form written by [`Offset::to_json_string`].
    pub fn parse(text: &str) -> Result<Self> {
        serde_json::from_str(text).map(Offset).map_err(|e| {
            Error::new(
                ErrorCode::Checkpoint,
                format!("offset is not valid JSON: {text}"),
            )
            .with_cause(e)
        })
    }

    /// Converts a source's own offset type into an `Offset`.
    pub fn from_typed<T: Serialize>(value: &T) -> Result<Self> {
        serde_json::to_value(value).map(Offset).map_err(|e| {
            Error::new(ErrorCode::Internal, "offset cannot be serialised").with_cause(e)
        })
    }

    /// Converts back into the source's own offset type.
    pub fn to_typed<T: DeserializeOwned>(&self) -> Result<T> {
        T::deserialize(&self.0).map_err(|e| {
            Error::new(
                ErrorCode::CheckpointIncompatible,
                format!(
                    "offset {} does not have the shape this source writes",
                    self.0
                ),
            )
            .with_cause(e)
        })
    }

    /// The JSON value.
    pub fn as_json(&self) -> &serde_json::Value {
        &self.0
    }

    /// The canonical text form.
    pub fn to_json_string(&self) -> String {
        self.0.to_string()
    }
}

impl fmt::Debug for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Offset({})", self.0)
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct PartitionOffsets(BTreeMap<String, BTreeMap<i32, i64>>);

    #[test]
    fn typed_offsets_round_trip_exactly_through_text() {
        let mut m = BTreeMap::new();
        m.insert(
            "events".to_string(),
            BTreeMap::from([(0, i64::MAX), (1, -2), (10, 0)]),
        );
        let typed = PartitionOffsets(m);
        let off = Offset::from_typed(&typed).unwrap();
        let text = off.to_json_string();
        let back = Offset::parse(&text).unwrap();
        assert_eq!(back, off);
        assert_eq!(back.to_typed::<PartitionOffsets>().unwrap(), typed);
        assert_eq!(back.to_json_string(), text);
    }

    #[test]
    fn wrong_shape_is_a_checkpoint_incompatibility() {
        let off = Offset::parse(r#"{"seq": "x"}"#).unwrap();
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Seq {
            seq: u64,
        }
        let err = off.to_typed::<Seq>().unwrap_err();
        assert_eq!(err.code(), ErrorCode::CheckpointIncompatible);
    }

    #[test]
    fn malformed_text_is_rejected() {
        assert_eq!(
            Offset::parse("{not json").unwrap_err().code(),
            ErrorCode::Checkpoint
        );
    }
}
