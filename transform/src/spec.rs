//! [`TransformSpec`]: the pipeline's `[transform]` table (one SQL query and the static tables it
//! may join), and the checks that need no I/O and no schema ([`TransformSpec::validate`]).

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, OutputMode, Result};

use crate::error::sql_error;
use crate::SOURCE_TABLE;

/// The `[transform]` table of a pipeline.
///
/// ```toml
/// [transform]
/// sql = "SELECT CAST(key AS STRING) AS k, value.amount FROM source JOIN dim ON ..."
///
/// [[transform.table]]
/// name = "dim"
/// path = "data/dim.parquet"
/// format = "parquet"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformSpec {
    /// One query reading the stream as the table `source` (`SELECT ... FROM source ...`).
    pub sql: String,
    /// Static tables the query may join with, loaded once at start.
    #[serde(default, rename = "table")]
    pub tables: Vec<StaticTable>,
    /// Spark's `outputMode` (`append`, `update`, `complete`): what an aggregation emits each
    /// batch. Unset means `append`, Spark's default, which an aggregation without a watermark
    /// refuses.
    #[serde(
        default,
        rename = "outputMode",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_mode: Option<OutputMode>,
    /// Spark's `withWatermark(eventTime, delayThreshold)`, for an aggregation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<Watermark>,
    /// Spark's `dropDuplicates(columns)`, applied to `source` before the query: a row whose
    /// values in these columns were seen before (in this batch or an earlier one) is dropped.
    /// An empty list means every column but `_metadata` (Spark's `dropDuplicates()`, which does
    /// not see the hidden file-metadata column). Without a watermark the
    /// keys are kept forever; with one whose event-time column is among the columns, keys
    /// older than the watermark are evicted and rows older than it dropped.
    #[serde(
        default,
        rename = "dropDuplicates",
        skip_serializing_if = "Option::is_none"
    )]
    pub drop_duplicates: Option<Vec<String>>,
    /// Spark's `dropDuplicatesWithinWatermark(columns)`: a row is dropped when a row with the
    /// same values arrived within the watermark's delay before it; needs a watermark, whose
    /// column need not be among these.
    #[serde(
        default,
        rename = "dropDuplicatesWithinWatermark",
        skip_serializing_if = "Option::is_none"
    )]
    pub drop_duplicates_within_watermark: Option<Vec<String>>,
    /// Where an aggregation's state lives (`stateStore.providerClass`): in memory (the
    /// default) or on local disk, for state larger than memory.
    #[serde(
        default,
        rename = "stateStore",
        skip_serializing_if = "Option::is_none"
    )]
    pub state_store: Option<StateStore>,
}

/// `stateStore = { providerClass = "disk" }` (or `stateStore.providerClass = "disk"`): Spark's
/// `spark.sql.streaming.stateStore.providerClass`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateStore {
    /// `memory` or `disk`; Spark's class names are taken for them
    /// (`...HDFSBackedStateStoreProvider` keeps state in memory,
    /// `...RocksDBStateStoreProvider` on disk).
    #[serde(rename = "providerClass")]
    pub provider_class: String,
}

/// Where an aggregation's state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StateStoreProvider {
    /// Every group in memory (Spark's HDFS-backed provider).
    #[default]
    Memory,
    /// Groups in an embedded store on local disk, memory bounded by its caches (Spark's
    /// RocksDB provider in spirit; the store is fjall).
    Disk,
}

/// The option naming the state store.
pub(crate) const STATE_STORE_OPTION: &str = "transform.stateStore.providerClass";

impl StateStore {
    /// The provider named, or an error naming the allowed values.
    pub fn provider(&self) -> Result<StateStoreProvider> {
        let name = self.provider_class.trim();
        let class = name.rsplit('.').next().unwrap_or(name);
        match class {
            "memory" | "HDFSBackedStateStoreProvider" => Ok(StateStoreProvider::Memory),
            "disk" | "RocksDBStateStoreProvider" => Ok(StateStoreProvider::Disk),
            _ => Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "[transform] stateStore.providerClass '{name}' is not known; use \"memory\" (every group in memory, the default) or \"disk\" (groups on local disk, for state larger than memory); Spark's org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider and RocksDBStateStoreProvider are taken for them"
                ),
            )
            .with_context("option", STATE_STORE_OPTION)),
        }
    }
}

/// `watermark = { eventTime = "ts", delayThreshold = "10 minutes" }`: Spark's
/// `withWatermark`. The watermark is the latest event time seen minus the delay; rows at or
/// before it are dropped (and counted), groups whose window ended at or before it are final:
/// emitted in `append` mode and removed from the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watermark {
    /// A TIMESTAMP column of `source`.
    #[serde(rename = "eventTime")]
    pub event_time: String,
    /// How late a row may be (`10 minutes`, `30 seconds`).
    #[serde(rename = "delayThreshold")]
    pub delay_threshold: String,
}

/// A static table (`[[transform.table]]`), loaded once at start and joined as a broadcast table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticTable {
    /// The table's name in the query.
    pub name: String,
    /// A local file or directory (relative paths are resolved against the working directory;
    /// the runtime resolves them against the pipeline file first), or a `file://` URL.
    pub path: String,
    /// How the table is stored.
    pub format: TableFormat,
}

/// The storage format of a static table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableFormat {
    /// A Parquet file or a directory of Parquet files.
    Parquet,
    /// A Delta table (its current version; needs the crate feature `delta`).
    Delta,
    /// A CSV file or directory, with a header row; column types are inferred.
    Csv,
}

impl TableFormat {
    /// The spelling used in the pipeline file.
    pub fn as_str(&self) -> &'static str {
        match self {
            TableFormat::Parquet => "parquet",
            TableFormat::Delta => "delta",
            TableFormat::Csv => "csv",
        }
    }
}

impl TransformSpec {
    /// A spec with no static tables.
    pub fn new(sql: impl Into<String>) -> Self {
        TransformSpec {
            sql: sql.into(),
            tables: Vec::new(),
            output_mode: None,
            watermark: None,
            drop_duplicates: None,
            drop_duplicates_within_watermark: None,
            state_store: None,
        }
    }

    /// Sets Spark's `stateStore.providerClass`.
    pub fn with_state_store(mut self, provider_class: impl Into<String>) -> Self {
        self.state_store = Some(StateStore {
            provider_class: provider_class.into(),
        });
        self
    }

    /// Where the aggregation's state lives (checked).
    pub fn state_store_provider(&self) -> Result<StateStoreProvider> {
        self.state_store
            .as_ref()
            .map_or(Ok(StateStoreProvider::Memory), StateStore::provider)
    }

    /// Sets Spark's `dropDuplicates(columns)` (empty: every column).
    pub fn with_drop_duplicates<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.drop_duplicates = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Sets Spark's `dropDuplicatesWithinWatermark(columns)` (empty: every column).
    pub fn with_drop_duplicates_within_watermark<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.drop_duplicates_within_watermark = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Sets Spark's `withWatermark(event_time, delay)`.
    pub fn with_watermark(
        mut self,
        event_time: impl Into<String>,
        delay: impl Into<String>,
    ) -> Self {
        self.watermark = Some(Watermark {
            event_time: event_time.into(),
            delay_threshold: delay.into(),
        });
        self
    }

    /// Sets Spark's `outputMode`.
    pub fn with_output_mode(mut self, mode: OutputMode) -> Self {
        self.output_mode = Some(mode);
        self
    }

    /// Adds a static table.
    pub fn with_table(
        mut self,
        name: impl Into<String>,
        path: impl Into<String>,
        format: TableFormat,
    ) -> Self {
        self.tables.push(StaticTable {
            name: name.into(),
            path: path.into(),
            format,
        });
        self
    }

    /// Checks what can be checked without the source's schema and without I/O (`tributary
    /// check`): the SQL parses as exactly one query (syntax errors carry their line:column), and
    /// the static tables have distinct names other than `source`. Unknown columns and stateful
    /// operators are found at start, when the source's schema is known
    /// ([`crate::SqlTransform::plan`]).
    pub fn validate(&self) -> Result<()> {
        self.state_store_provider()?;
        let mut seen = std::collections::BTreeSet::new();
        for table in &self.tables {
            if table.name.trim().is_empty() {
                return Err(invalid(
                    "[[transform.table]] name must not be empty",
                    "name",
                ));
            }
            if table.name.eq_ignore_ascii_case(SOURCE_TABLE) {
                return Err(invalid(
                    format!(
                        "[[transform.table]] name '{}' is reserved for the stream; choose another name",
                        table.name
                    ),
                    "name",
                ));
            }
            if !seen.insert(table.name.to_ascii_lowercase()) {
                return Err(invalid(
                    format!(
                        "[[transform.table]] name '{}' is declared twice",
                        table.name
                    ),
                    "name",
                ));
            }
            #[cfg(not(feature = "delta"))]
            if table.format == TableFormat::Delta {
                return Err(delta_unavailable(table));
            }
            if table.path.trim().is_empty() {
                return Err(invalid(
                    format!(
                        "[[transform.table]] '{}': path must not be empty",
                        table.name
                    ),
                    "path",
                ));
            }
        }
        if let Some(w) = &self.watermark {
            if w.event_time.trim().is_empty() {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    "[transform] watermark.eventTime must name a TIMESTAMP column of source",
                )
                .with_context("option", "transform.watermark.eventTime"));
            }
            if crate::stateful::window::parse_interval(&w.delay_threshold).is_none() {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!(
                        "[transform] watermark.delayThreshold '{}' is not an interval such as '10 seconds', '5 minutes' or '1 hour'",
                        w.delay_threshold
                    ),
                )
                .with_context("option", "transform.watermark.delayThreshold"));
            }
        }
        if self.drop_duplicates.is_some() && self.drop_duplicates_within_watermark.is_some() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                "[transform] dropDuplicates and dropDuplicatesWithinWatermark are both set; choose one (dropDuplicates keeps a key until the watermark passes its event time, dropDuplicatesWithinWatermark for the watermark's delay after its first row)",
            )
            .with_context("option", "transform.dropDuplicatesWithinWatermark"));
        }
        if self.drop_duplicates_within_watermark.is_some() && self.watermark.is_none() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                "[transform] dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without watermark; set watermark = { eventTime = \"...\", delayThreshold = \"...\" }, or use dropDuplicates",
            )
            .with_context("option", "transform.dropDuplicatesWithinWatermark"));
        }
        for (option, columns) in [
            ("dropDuplicates", &self.drop_duplicates),
            (
                "dropDuplicatesWithinWatermark",
                &self.drop_duplicates_within_watermark,
            ),
        ] {
            if let Some(blank) = columns.iter().flatten().find(|c| c.trim().is_empty()) {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!("[transform] {option} holds an empty column name ('{blank}'); list columns of source, or leave the list empty for every column"),
                )
                .with_context("option", format!("transform.{option}")));
            }
        }
        parse_one_query(&self.sql)
    }
}

fn invalid(message: impl Into<String>, field: &str) -> Error {
    Error::new(ErrorCode::InvalidPipeline, message)
        .with_context("option", format!("transform.table.{field}"))
}

/// Parses the SQL with DataFusion's parser: exactly one statement, and a query.
fn parse_one_query(sql: &str) -> Result<()> {
    use datafusion::sql::parser::{DFParserBuilder, Statement};
    use datafusion::sql::sqlparser::ast;

    let statements = DFParserBuilder::new(sql)
        .build()
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| sql_error(&e, sql))?;
    match statements.len() {
        0 => Err(not_a_query("it is empty")),
        1 => match statements.front() {
            Some(Statement::Statement(s)) if matches!(**s, ast::Statement::Query(_)) => Ok(()),
            _ => Err(not_a_query("it is not a query")),
        },
        n => Err(not_a_query(&format!("it holds {n} statements"))),
    }
}

fn not_a_query(why: &str) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!("[transform] sql must be one query (SELECT ... FROM source ...), but {why}"),
    )
    .with_context("option", "transform.sql")
}

/// The error for `format = "delta"` in a build without the `delta` feature.
#[cfg(not(feature = "delta"))]
pub(crate) fn delta_unavailable(table: &StaticTable) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!(
            "[[transform.table]] '{}': format = \"delta\" needs tributary-transform built with its `delta` feature; use format = \"parquet\" or \"csv\", or rebuild with the feature",
            table.name
        ),
    )
    .with_context("option", "transform.table.format")
}
