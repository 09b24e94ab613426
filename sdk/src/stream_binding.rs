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
//! 2. reads what the stream reads from the spec: the names under
//!    [`StreamBinding::names_field`], or one of the other subscription fields the connector
//!    offers ([`StreamBinding::subscription_fields`]: a pattern, an assignment), exactly one,
//! 3. builds the source options with [`StreamBinding::bind_subscription`] (what it reads and
//!    the start time), and
//! 4. fills the ingestion table's `stream_record_timestamp` from
//!    [`StreamBinding::time_column`] and its connector columns from
//!    [`StreamBinding::metadata_columns`].

use std::collections::BTreeMap;
use std::fmt::Debug;

use arrow_schema::DataType;

use crate::error::{Error, ErrorCode, Result};
use crate::options::Options;

/// What a named stream reads, as its spec says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// The names listed under the binding's [`StreamBinding::names_field`]
    /// (`topics = ["orders", "refunds"]`).
    Names(Vec<String>),
    /// A regular expression over names; names created later that match are read too
    /// (`subscribe_pattern = "orders-.*"`, Spark's `subscribePattern`).
    Pattern(String),
    /// Names with the partitions (shards) to read, by number (`assign = { orders = [0, 1] }`,
    /// Spark's `assign`).
    Assign(BTreeMap<String, Vec<u32>>),
}

/// The shape of a subscription field of a stream spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionKind {
    /// A list of names.
    Names,
    /// One regular expression.
    Pattern,
    /// A table of names to partition numbers.
    Assign,
}

impl Subscription {
    /// The kind of this subscription.
    pub fn kind(&self) -> SubscriptionKind {
        match self {
            Subscription::Names(_) => SubscriptionKind::Names,
            Subscription::Pattern(_) => SubscriptionKind::Pattern,
            Subscription::Assign(_) => SubscriptionKind::Assign,
        }
    }
}

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

    /// The spec's `[source]` fields that may say what the stream reads instead of the names,
    /// with their shape (`[("subscribe_pattern", Pattern), ("assign", Assign)]`); a spec gives
    /// exactly one of these or [`Self::names_field`]. None by default.
    fn subscription_fields(&self) -> Vec<(&'static str, SubscriptionKind)> {
        Vec::new()
    }

    /// The source options that read `subscription` from `start_ms` on. The default binds
    /// names with [`Self::bind`] and refuses the other kinds, which a connector offering them
    /// in [`Self::subscription_fields`] binds itself.
    fn bind_subscription(&self, subscription: &Subscription, start_ms: i64) -> Result<Options> {
        match subscription {
            Subscription::Names(names) => Ok(self.bind(names, start_ms)),
            other => Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "this source reads named streams by their names (source.{}), not by {:?}",
                    self.names_field(),
                    other.kind()
                ),
            )
            .with_context("option", format!("source.{}", self.names_field()))),
        }
    }

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
