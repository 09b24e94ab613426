//! The backfill MERGE of a named stream's ingestion table (issue #12).
//!
//! ```sql
//! MERGE INTO <ingestion table> AS target
//! USING (SELECT DISTINCT ON (<dedup key>) <target columns> FROM <backfill table>) AS source
//! ON target.k1 IS NOT DISTINCT FROM source.k1 AND ...
//! WHEN NOT MATCHED THEN INSERT (..., record_source) VALUES (..., 'backfill')
//! ```
//!
//! The source is shaped like the target: columns the backfill table has are cast to the target's
//! types, columns it lacks are NULL, `record_source` is `'backfill'`. The dedup key is the
//! stream's `deduplication_columns` (dot paths into struct columns such as
//! `value.transaction_id`) or, without them, `key`, `value` and `stream_record_timestamp`;
//! comparisons are null-safe. Rows sharing a key within the backfill table are inserted once
//! (the earliest `stream_record_timestamp`).
//!
//! Idempotent: the MERGE is one Delta commit, so a crash leaves the table as it was, and a re-run
//! finds every key already present and inserts nothing. With [`MergeOptions::app_id`] the commit
//! also records a `txn` action, and a later call with the same id reports
//! [`MergeReport::already_done`] without scanning anything.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use deltalake::datafusion::common::{Column, ScalarValue};
use deltalake::datafusion::functions::core::expr_fn::get_field;
use deltalake::datafusion::logical_expr::{binary_expr, cast, lit, Expr, Operator, SortExpr};
use deltalake::datafusion::prelude::SessionContext;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::Transaction;
use deltalake::DeltaTable;
use tributary_sdk::{Error, ErrorCode, Result};

use super::error::to_error;
use super::table::load_existing;

/// The column the MERGE sets to `'backfill'`.
pub const RECORD_SOURCE: &str = "record_source";
/// The record time column of an ingestion table.
pub const STREAM_RECORD_TIMESTAMP: &str = "stream_record_timestamp";
/// The dedup key without `deduplication_columns`.
pub const DEFAULT_DEDUP_COLUMNS: [&str; 3] = ["key", "value", STREAM_RECORD_TIMESTAMP];

/// Settings of [`merge_backfill_with`] beyond the two tables and the key.
#[derive(Clone, Default)]
pub struct MergeOptions {
    /// Object-store options of the ingestion table (resolved values).
    pub target_storage: HashMap<String, String>,
    /// Object-store options of the backfill table (resolved values).
    pub source_storage: HashMap<String, String>,
    /// When set, the MERGE commit records a Delta `txn` action with this app id (version 1) and
    /// a MERGE already recorded under it is not run again.
    pub app_id: Option<String>,
}

impl std::fmt::Debug for MergeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeOptions")
            .field(
                "target_storage",
                &self.target_storage.keys().collect::<Vec<_>>(),
            )
            .field(
                "source_storage",
                &self.source_storage.keys().collect::<Vec<_>>(),
            )
            .field("app_id", &self.app_id)
            .finish()
    }
}

/// What a backfill MERGE did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeReport {
    /// The dedup key used (dot paths).
    pub dedup_columns: Vec<String>,
    /// Rows in the backfill table.
    pub source_rows: u64,
    /// Backfill rows dropped because another backfill row had the same key.
    pub source_duplicates: u64,
    /// Rows inserted into the ingestion table.
    pub inserted_rows: u64,
    /// Backfill rows whose key the ingestion table already had.
    pub matched_rows: u64,
    /// The table version after the MERGE (unchanged when nothing was committed).
    pub table_version: Option<u64>,
    /// True when [`MergeOptions::app_id`] showed the MERGE already committed: nothing was run.
    pub already_done: bool,
}

/// Runs the backfill MERGE of `backfill_source_uri` into the ingestion table at `table_uri`,
/// deduplicating by `dedup_columns` (or key + value + stream_record_timestamp when empty).
pub async fn merge_backfill(
    table_uri: &str,
    backfill_source_uri: &str,
    dedup_columns: &[String],
) -> Result<MergeReport> {
    merge_backfill_with(
        table_uri,
        backfill_source_uri,
        dedup_columns,
        &MergeOptions::default(),
    )
    .await
}

/// [`merge_backfill`] with object-store options and an optional transaction id.
pub async fn merge_backfill_with(
    table_uri: &str,
    backfill_source_uri: &str,
    dedup_columns: &[String],
    options: &MergeOptions,
) -> Result<MergeReport> {
    let target = load_existing(table_uri, &options.target_storage).await?;
    let source = load_existing(backfill_source_uri, &options.source_storage).await?;
    let target_schema = arrow_schema(&target, table_uri)?;
    let source_schema = arrow_schema(&source, backfill_source_uri)?;

    let dedup: Vec<String> = if dedup_columns.is_empty() {
        DEFAULT_DEDUP_COLUMNS
            .iter()
            .map(|c| c.to_string())
            .collect()
    } else {
        dedup_columns.to_vec()
    };
    let explicit = !dedup_columns.is_empty();
    for path in &dedup {
        resolve_path(&target_schema, path).ok_or_else(|| {
            missing_column("the ingestion table", table_uri, path, &target_schema)
        })?;
        if explicit && resolve_path(&source_schema, path).is_none() {
            return Err(missing_column(
                "the backfill table",
                backfill_source_uri,
                path,
                &source_schema,
            ));
        }
    }
    if target_schema.field_with_name(RECORD_SOURCE).is_err() {
        return Err(missing_column(
            "the ingestion table",
            table_uri,
            RECORD_SOURCE,
            &target_schema,
        ));
    }
    let mut report = MergeReport {
        dedup_columns: dedup.clone(),
        table_version: target.version(),
        ..MergeReport::default()
    };
    if let (Some(app), Ok(state)) = (&options.app_id, target.snapshot()) {
        let done = state
            .transaction_version(target.log_store().as_ref(), app)
            .await
            .map_err(|e| to_error("read the transaction ids of", table_uri, e))?;
        if done.is_some() {
            report.already_done = true;
            return Ok(report);
        }
    }

    let ctx = SessionContext::new();
    let provider = source
        .table_provider()
        .await
        .map_err(|e| df_error("read the backfill table", backfill_source_uri, e))?;
    let raw = ctx
        .read_table(provider)
        .map_err(|e| df_error("read the backfill table", backfill_source_uri, e))?;
    report.source_rows = raw
        .clone()
        .count()
        .await
        .map_err(|e| df_error("count the backfill rows of", backfill_source_uri, e))?
        as u64;

    // The backfill rows shaped like the ingestion table.
    let projection: Vec<Expr> = target_schema
        .fields()
        .iter()
        .map(|f| shaped_column(f, &source_schema))
        .collect();
    let on: Vec<Expr> = dedup.iter().map(|p| path_expr(None, p)).collect();
    // DISTINCT ON keeps the first row of each key in this order: the earliest record time.
    let mut sort: Vec<SortExpr> = on
        .iter()
        .map(|e| SortExpr::new(e.clone(), true, true))
        .collect();
    if !dedup.iter().any(|c| c == STREAM_RECORD_TIMESTAMP) {
        sort.push(SortExpr::new(
            Expr::Column(Column::from_name(STREAM_RECORD_TIMESTAMP)),
            true,
            true,
        ));
    }
    let sort = target_schema
        .field_with_name(STREAM_RECORD_TIMESTAMP)
        .is_ok()
        .then_some(sort);
    let shaped = raw
        .select(projection)
        .and_then(|df| df.distinct_on(on, all_columns(&target_schema), sort))
        .map_err(|e| df_error("shape the backfill rows of", backfill_source_uri, e))?;

    let predicate = dedup
        .iter()
        .map(|p| {
            binary_expr(
                path_expr(Some("target"), p),
                Operator::IsNotDistinctFrom,
                path_expr(Some("source"), p),
            )
        })
        .reduce(Expr::and)
        .ok_or_else(|| Error::new(ErrorCode::Internal, "empty dedup key"))?;

    let mut commit = CommitProperties::default().with_metadata([(
        "tributary.operation".to_string(),
        serde_json::Value::String("backfill".into()),
    )]);
    if let Some(app) = &options.app_id {
        commit = commit.with_application_transaction(Transaction::new(app, 1));
    }
    let columns: Vec<String> = target_schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let (table, metrics) = target
        .merge(shaped, predicate)
        .with_source_alias("source")
        .with_target_alias("target")
        .with_session_state(Arc::new(ctx.state()))
        .with_commit_properties(commit)
        .when_not_matched_insert(|insert| {
            columns.iter().fold(insert, |i, c| {
                i.set(
                    Column::new_unqualified(c.clone()),
                    Expr::Column(Column::new(Some("source"), c.clone())),
                )
            })
        })
        .map_err(|e| to_error("plan the backfill MERGE into", table_uri, e))?
        .await
        .map_err(|e| to_error("MERGE the backfill into", table_uri, e))?;
    let distinct = metrics.num_source_rows as u64;
    report.inserted_rows = metrics.num_target_rows_inserted as u64;
    report.source_duplicates = report.source_rows.saturating_sub(distinct);
    report.matched_rows = distinct.saturating_sub(report.inserted_rows);
    report.table_version = table.version();
    Ok(report)
}

/// The table's schema as Arrow.
fn arrow_schema(table: &DeltaTable, location: &str) -> Result<ArrowSchema> {
    let state = table
        .snapshot()
        .map_err(|e| to_error("read the schema of", location, e))?;
    state.schema().as_ref().try_into_arrow().map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            format!("the schema of the Delta table at {location} has no Arrow form"),
        )
        .with_cause(e)
    })
}

/// The target column `field` computed from the backfill row: the backfill's column cast to the
/// target type, `'backfill'` for `record_source`, NULL when the backfill has no such column.
fn shaped_column(field: &Field, source: &ArrowSchema) -> Expr {
    let name = field.name();
    let value = if name == RECORD_SOURCE {
        cast(lit("backfill"), field.data_type().clone())
    } else if source.field_with_name(name).is_ok() {
        cast(
            Expr::Column(Column::new_unqualified(name.clone())),
            field.data_type().clone(),
        )
    } else {
        typed_null(field.data_type())
    };
    value.alias(name)
}

fn typed_null(data_type: &DataType) -> Expr {
    match ScalarValue::try_from(data_type) {
        Ok(null) => lit(null),
        Err(_) => cast(lit(ScalarValue::Null), data_type.clone()),
    }
}

fn all_columns(schema: &ArrowSchema) -> Vec<Expr> {
    schema
        .fields()
        .iter()
        .map(|f| Expr::Column(Column::new_unqualified(f.name().clone())))
        .collect()
}

/// `relation.a` then `get_field(.., "b")` for each further segment of `a.b.c`.
pub(crate) fn path_expr(relation: Option<&str>, path: &str) -> Expr {
    let mut parts = path.split('.');
    let head = parts.next().unwrap_or(path).to_string();
    let base = Expr::Column(Column::new(relation, head));
    parts.fold(base, |e, segment| get_field(e, segment.to_string()))
}

/// The type at a dot path (`value.transaction_id`) of a schema.
pub fn resolve_path(schema: &ArrowSchema, path: &str) -> Option<DataType> {
    let mut parts = path.split('.');
    let mut current = schema
        .field_with_name(parts.next()?)
        .ok()?
        .data_type()
        .clone();
    for segment in parts {
        current = match current {
            DataType::Struct(fields) => fields
                .iter()
                .find(|f| f.name() == segment)?
                .data_type()
                .clone(),
            _ => return None,
        };
    }
    Some(current)
}

fn missing_column(what: &str, location: &str, path: &str, schema: &ArrowSchema) -> Error {
    let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    Error::new(
        ErrorCode::Schema,
        format!(
            "{what} at {location} has no column '{path}' (deduplication columns are dot paths \
             into its columns: {})",
            columns.join(", ")
        ),
    )
    .with_context("field", path)
    .with_context("path", location)
}

fn df_error(what: &str, location: &str, e: deltalake::datafusion::error::DataFusionError) -> Error {
    Error::new(ErrorCode::SinkWrite, format!("cannot {what} {location}"))
        .with_context("path", location)
        .with_cause(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Fields;

    #[test]
    fn dot_paths_resolve_into_structs() {
        let schema = ArrowSchema::new(vec![Field::new(
            "value",
            DataType::Struct(Fields::from(vec![Field::new(
                "transaction_id",
                DataType::Utf8,
                true,
            )])),
            true,
        )]);
        assert_eq!(
            resolve_path(&schema, "value.transaction_id"),
            Some(DataType::Utf8)
        );
        assert_eq!(resolve_path(&schema, "value.missing"), None);
        assert_eq!(resolve_path(&schema, "value.transaction_id.x"), None);
    }
}
