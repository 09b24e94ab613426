//! How a source connector serves a named stream (`tributary streams`).
//!
//! A named stream is a source plus an ingestion table. The host owns the catalog, the table and
//! the pipeline around it, but not the meaning of any connector option: which options select
//! what a stream reads, how "from the stream's creation time on" is spelled, and which metadata
//! columns its records carry are the connector's. A connector that can back a stream returns a
//! [`StreamBinding`] from [`crate::SourceFactory::stream_binding`]; the host then
//!
//! 1. refuses a stream spec that sets one of [`StreamBinding::owned_options`] itself (naming
//!    what sets it instead),
//! 2. reads the names the stream reads from the spec field [`StreamBinding::names_field`],
//! 3. builds the source options with [`StreamBinding::bind`] (names and start time), and
//! 4. fills the ingestion table's `stream_record_timestamp` from
//!    [`StreamBinding::time_column`] and its connector columns from
//!    [`StreamBinding::metadata_columns`].

use std::fmt::Debug;

use arrow_schema::DataType;

use crate::options::Options;

/// One connector metadata column of an ingestion table, copied from a source column.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestionColumn {
    /// The source column (`topic`).
    pub source: String,
    /// The ingestion table's column (`kafka_topic`).
    pub column: String,
    /// Its type in the ingestion table (the source column is cast to it).
    pub data_type: DataType,
}

impl IngestionColumn {
    /// A column copied from `source` into `column` as `data_type`.
    pub fn new(source: &str, column: &str, data_type: DataType) -> Self {
        IngestionColumn {
            source: source.to_string(),
            column: column.to_string(),
            data_type,
        }
    }
}

/// What a named stream needs from its source connector (see the module docs).
pub trait StreamBinding: Send + Sync + Debug {
    /// The stream spec's `[source]` field listing what the stream reads (`topics`, `streams`).
    fn names_field(&self) -> &'static str;

    /// Source options the stream sets itself, each with what sets it (`("subscribe",
    /// "source.topics")`); a spec that sets one is refused.
    fn owned_options(&self) -> Vec<(&'static str, &'static str)>;

    /// The source options that read `names` from `start_ms` (milliseconds since the epoch) on,
    /// added to the spec's own options.
    fn bind(&self, names: &[String], start_ms: i64) -> Options;

    /// The source column holding each record's time (`stream_record_timestamp`).
    fn time_column(&self) -> &'static str;

    /// The connector's metadata columns of the ingestion table, in order.
    fn metadata_columns(&self) -> Vec<IngestionColumn>;

    /// `Some(reason)` when a key schema cannot apply (a Kinesis record's key is its partition
    /// key, a string).
    fn key_schema_refused(&self) -> Option<&'static str> {
        None
    }
}
