//! Spark's output modes: what a query with state emits each batch, and which sinks take it.
//!
//! - `append` (the default): only rows that will never change. A stateless query's rows; an
//!   aggregation's only with a watermark (a window once the watermark passes its end).
//! - `update`: the rows that changed in the batch (an aggregation's changed groups).
//! - `complete`: the whole result every batch (aggregations only).
//!
//! A sink declares the modes it honours ([`crate::SinkConnector::output_modes`]); the host
//! refuses a pipeline whose mode a sink cannot take, naming both, before anything runs.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode};

/// Spark's `outputMode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// Only final rows (Spark's default).
    #[default]
    Append,
    /// The rows changed in the batch.
    Update,
    /// The whole result, every batch.
    Complete,
}

impl OutputMode {
    /// Every mode, in Spark's order.
    pub const ALL: [OutputMode; 3] = [OutputMode::Append, OutputMode::Update, OutputMode::Complete];

    /// The spelling in pipeline files (`append`, `update`, `complete`).
    pub fn as_str(&self) -> &'static str {
        match self {
            OutputMode::Append => "append",
            OutputMode::Update => "update",
            OutputMode::Complete => "complete",
        }
    }
}

impl fmt::Display for OutputMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OutputMode {
    type Err = Error;

    /// Case-insensitive, as Spark's `outputMode(String)`.
    fn from_str(s: &str) -> Result<Self, Error> {
        OutputMode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!("unknown output mode '{s}'; accepted: append, update, complete"),
                )
                .with_context("option", "outputMode")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_case_insensitively_and_unknown_ones_are_named() {
        assert_eq!("Update".parse::<OutputMode>().unwrap(), OutputMode::Update);
        assert_eq!(
            " complete".parse::<OutputMode>().unwrap(),
            OutputMode::Complete
        );
        let e = "upsert".parse::<OutputMode>().unwrap_err();
        assert!(e.to_string().contains("append, update, complete"), "{e}");
    }
}
