//! Spark's output modes: what a query with state emits each batch, and which sinks take it.
//!
//! - `append` (the default): only rows that will never change. A stateless query's rows; an
//!   aggregation's only with a watermark (a window once the watermark passes its end).
//! - `update`: the rows that changed in the batch (an aggregation's changed groups).
//! - `complete`: the whole result every batch (aggregations only).
//!
//! A sink declares the modes it honours ([`crate::SinkConnector::output_modes`]); the host
//! refuses a pipeline whose mode a sink cannot take, naming both, before anything runs.
//!
//! ## What a sink learns at open
//!
//! A stage with state that emits `update` or `complete` rows says so in the metadata of the
//! schema the sinks are opened with ([`OutputShape`]): the mode, and the columns that identify a
//! row across batches (an aggregation's grouping keys, when the query selects every one of
//! them). A sink that upserts (the Delta sink's MERGE) reads it with [`OutputShape::of`]; the
//! metadata crosses the plugin ABI with the schema. Append output carries none.

use std::fmt;
use std::str::FromStr;

use arrow_schema::Schema;
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

/// Schema metadata key: the output mode of the rows (`update` or `complete`).
pub const OUTPUT_MODE_METADATA: &str = "tributary.outputMode";
/// Schema metadata key: a JSON array of the column names that identify a row across batches.
pub const UPDATE_KEY_METADATA: &str = "tributary.updateKey";

/// What the rows a sink receives are: their output mode and the columns identifying a row
/// across batches (see the [module docs](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputShape {
    /// The output mode.
    pub mode: OutputMode,
    /// The columns that identify a row across batches (an aggregation's grouping keys, in the
    /// output's order); `None` when the output lacks one of them.
    pub key: Option<Vec<String>>,
}

impl OutputShape {
    /// The shape a schema's metadata declares; `append` without a key when it declares none.
    pub fn of(schema: &Schema) -> Result<OutputShape, Error> {
        let bad = |what: &str, value: &str| {
            Error::new(
                ErrorCode::Schema,
                format!("the schema's metadata '{what}' is not valid: '{value}'"),
            )
            .with_context("field", what)
        };
        let mode = match schema.metadata().get(OUTPUT_MODE_METADATA) {
            Some(m) => m.parse().map_err(|_| bad(OUTPUT_MODE_METADATA, m))?,
            None => OutputMode::Append,
        };
        let key = match schema.metadata().get(UPDATE_KEY_METADATA) {
            Some(k) => Some(
                serde_json::from_str::<Vec<String>>(k).map_err(|_| bad(UPDATE_KEY_METADATA, k))?,
            ),
            None => None,
        };
        Ok(OutputShape { mode, key })
    }

    /// `schema` with this shape in its metadata (unchanged for `append`, which carries none).
    pub fn attach(&self, schema: &Schema) -> Schema {
        if self.mode == OutputMode::Append {
            return schema.clone();
        }
        let mut metadata = schema.metadata().clone();
        metadata.insert(OUTPUT_MODE_METADATA.to_string(), self.mode.to_string());
        if let Some(key) = &self.key {
            metadata.insert(
                UPDATE_KEY_METADATA.to_string(),
                serde_json::Value::from(key.clone()).to_string(),
            );
        }
        schema.clone().with_metadata(metadata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    #[test]
    fn the_shape_travels_in_the_schema_metadata() {
        let schema = Schema::new(vec![Field::new("k", DataType::Int64, true)]);
        assert_eq!(OutputShape::of(&schema).unwrap(), OutputShape::default());
        let shape = OutputShape {
            mode: OutputMode::Update,
            key: Some(vec!["k".into(), "a,b".into()]),
        };
        let with = shape.attach(&schema);
        assert_eq!(OutputShape::of(&with).unwrap(), shape);
        assert_eq!(
            OutputShape::default().attach(&schema),
            schema,
            "append carries nothing"
        );
        let broken =
            schema.with_metadata([(UPDATE_KEY_METADATA.to_string(), "k".to_string())].into());
        let e = OutputShape::of(&broken).unwrap_err();
        assert!(e.to_string().contains(UPDATE_KEY_METADATA), "{e}");
    }

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
