//! Output modes beside `append`: a query with state writes its changed groups (`update`) as a
//! MERGE by the grouping keys, or its whole result (`complete`) as an overwrite.
//!
//! The mode and the key come with the schema the sink is opened with
//! ([`tributary_sdk::OutputShape`]): an aggregation says which output columns carry its grouping
//! keys. Each batch is one Delta commit with the batch's `txn` action, through the same retry
//! loop as appends ([`super::commit`]), so a batch replayed after a crash is skipped when the
//! table already holds it: exactly once, as the append path.
//!
//! - `update`: `MERGE INTO table AS target USING batch AS source ON target.k IS NOT DISTINCT FROM
//!   source.k AND ... WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`. Struct keys
//!   (Spark's `window`) are compared field by field. A new table is created by the first batch,
//!   as an append (a batch holds one row per group). The rows of a batch must have distinct keys,
//!   as an aggregation's do; a MERGE with two source rows for one target row fails.
//! - `complete`: every batch replaces the table's rows (a Delta `WRITE` in overwrite mode), as
//!   Spark's Delta sink does in complete mode.
//!
//! In these modes the batch is written whole: the part writer collects the batch's parts (one
//! row per changed group, so bounded by the state, not by the input) and writes them at commit.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Schema as ArrowSchema, SchemaRef};
use deltalake::datafusion::common::Column;
use deltalake::datafusion::logical_expr::{binary_expr, Expr, Operator};
use deltalake::datafusion::prelude::SessionContext;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::Transaction;
use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;
use tributary_sdk::{Error, ErrorCode, OutputMode, OutputShape, Result};

use super::DeltaSink;
use crate::delta::error::{classify, Failure};
use crate::delta::merge::path_expr;

/// The option whose value the refusals below point at.
const OUTPUT_MODE_OPTION: &str = "transform.outputMode";

/// A batch collected by the part writer in `update` or `complete` mode.
pub(super) struct Collected {
    pub(super) batch_id: u64,
    pub(super) parts: Vec<RecordBatch>,
}

/// `batch` without the output shape in its schema's metadata (see [`tributary_sdk::OutputShape`]).
pub(super) fn without_shape(batch: &RecordBatch) -> Result<RecordBatch> {
    if batch.schema().metadata().is_empty() {
        return Ok(batch.clone());
    }
    let schema = Arc::new(
        batch
            .schema()
            .as_ref()
            .clone()
            .with_metadata(Default::default()),
    );
    RecordBatch::try_new(schema, batch.columns().to_vec()).map_err(|e| {
        Error::new(ErrorCode::Internal, "delta sink: re-labelling a batch").with_cause(e)
    })
}

/// The key columns of an `update` output, checked against its schema: every one present.
pub(super) fn check_shape(shape: &OutputShape, schema: &ArrowSchema, path: &str) -> Result<()> {
    if shape.mode != OutputMode::Update {
        return Ok(());
    }
    let Some(key) = shape.key.as_ref().filter(|k| !k.is_empty()) else {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "the delta sink writes outputMode 'update' to {path} as a MERGE by the query's \
                 grouping keys, but the query does not select every grouping key unchanged; \
                 select each GROUP BY expression as a column (for example SELECT window, key, \
                 count(*) ... GROUP BY window, key), or use outputMode 'complete'"
            ),
        )
        .with_context("option", OUTPUT_MODE_OPTION)
        .with_context("path", path));
    };
    for column in key {
        if schema.field_with_name(column).is_err() {
            return Err(Error::new(
                ErrorCode::Schema,
                format!("the update key column '{column}' is not a column of the batches"),
            )
            .with_context("field", column)
            .with_context("path", path));
        }
    }
    Ok(())
}

/// The MERGE condition: every key column (each leaf of a struct key) null-safely equal.
fn merge_predicate(key: &[String], schema: &ArrowSchema) -> Result<Expr> {
    let mut paths = Vec::new();
    for column in key {
        let field = schema.field_with_name(column).map_err(|_| {
            Error::new(
                ErrorCode::Schema,
                format!("the update key column '{column}' is not a column of the batches"),
            )
            .with_context("field", column)
        })?;
        leaves(column.clone(), field.data_type(), &mut paths);
    }
    paths
        .iter()
        .map(|p| {
            binary_expr(
                path_expr(Some("target"), p),
                Operator::IsNotDistinctFrom,
                path_expr(Some("source"), p),
            )
        })
        .reduce(Expr::and)
        .ok_or_else(|| Error::new(ErrorCode::Internal, "an empty update key"))
}

/// The dot paths of every non-struct leaf under `path`.
fn leaves(path: String, data_type: &DataType, into: &mut Vec<String>) {
    match data_type {
        DataType::Struct(fields) => {
            for f in fields {
                leaves(format!("{path}.{}", f.name()), f.data_type(), into);
            }
        }
        _ => into.push(path),
    }
}

impl DeltaSink {
    /// The commit properties of batch `version`: its `txn` action, checkpoints as appends do.
    fn upsert_properties(&self, version: i64) -> CommitProperties {
        let mut properties = CommitProperties::default()
            .with_create_checkpoint(self.own_checkpoint_interval.is_none())
            .with_cleanup_expired_logs(Some(false));
        if let Some(app) = &self.app_id {
            properties = properties.with_application_transaction(Transaction::new(app, version));
        }
        properties
    }

    /// One attempt at MERGing a batch's changed groups by `key`; `Ok(Err(_))` is a failed
    /// commit to classify. A table not created yet is created by an append of the batch.
    pub(super) async fn commit_merge(
        &mut self,
        version: i64,
        batches: &[RecordBatch],
        schema: &SchemaRef,
        key: &[String],
    ) -> Result<std::result::Result<DeltaTable, Failure>> {
        let table = self
            .table
            .clone()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "delta sink written before open"))?;
        if table.version().is_none() {
            return self
                .commit_batches(version, batches, SaveMode::Append, false)
                .await;
        }
        let predicate = merge_predicate(key, schema)?;
        let ctx = SessionContext::new();
        let source = ctx.read_batches(batches.to_vec()).map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                "delta sink: the batch cannot be read as a MERGE source",
            )
            .with_cause(e)
        })?;
        let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let source_column = |c: &String| Expr::Column(Column::new(Some("source"), c.clone()));
        let merge = table
            .merge(source, predicate)
            .with_source_alias("source")
            .with_target_alias("target")
            .with_session_state(Arc::new(ctx.state()))
            .with_writer_properties(self.writer_properties.clone())
            .with_commit_properties(self.upsert_properties(version))
            .when_matched_update(|update| {
                columns.iter().fold(update, |u, c| {
                    u.update(Column::new_unqualified(c.clone()), source_column(c))
                })
            })
            .and_then(|m| {
                m.when_not_matched_insert(|insert| {
                    columns.iter().fold(insert, |i, c| {
                        i.set(Column::new_unqualified(c.clone()), source_column(c))
                    })
                })
            });
        let merge = match merge {
            Ok(m) => m,
            Err(e) => return Ok(Err(classify(e))),
        };
        Ok(merge.await.map(|(table, _metrics)| table).map_err(classify))
    }

    /// Writes the batch the part writer collected, whole (see the module docs).
    pub(super) async fn write_collected(&mut self, collected: Collected) -> Result<()> {
        use tributary_sdk::Sink;
        self.write(collected.batch_id, &collected.parts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, Fields, TimeUnit};

    #[test]
    fn struct_keys_are_compared_leaf_by_leaf_and_missing_keys_are_refused() {
        let window = DataType::Struct(Fields::from(vec![
            Field::new(
                "start",
                DataType::Timestamp(TimeUnit::Microsecond, None),
                true,
            ),
            Field::new(
                "end",
                DataType::Timestamp(TimeUnit::Microsecond, None),
                true,
            ),
        ]));
        let schema = ArrowSchema::new(vec![
            Field::new("window", window, true),
            Field::new("k", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
        ]);
        let p = merge_predicate(&["window".into(), "k".into()], &schema).unwrap();
        let text = p.to_string();
        for leaf in ["start", "end"] {
            assert!(text.contains(leaf), "{text}");
        }
        assert_eq!(text.matches("IS NOT DISTINCT FROM").count(), 3, "{text}");

        let no_key = OutputShape {
            mode: OutputMode::Update,
            key: None,
        };
        let e = check_shape(&no_key, &schema, "/t").unwrap_err();
        assert!(e.to_string().contains("grouping key"), "{e}");
        let wrong = OutputShape {
            mode: OutputMode::Update,
            key: Some(vec!["nope".into()]),
        };
        assert!(check_shape(&wrong, &schema, "/t").is_err());
        let complete = OutputShape {
            mode: OutputMode::Complete,
            key: None,
        };
        check_shape(&complete, &schema, "/t").unwrap();
    }
}
