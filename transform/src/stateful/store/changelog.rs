//! The rows one batch changed in an operator's state, and replaying them onto a snapshot.
//!
//! A delta holds the state's columns (all nullable) and a last `__deleted` flag: rows upserted
//! by key (the first `keys` columns) carry their new values; deleted keys carry only the key
//! columns. Replaying looks keys up in Arrow's row format and builds the result with one
//! `interleave` per column, so restoring costs one pass over the snapshot and the deltas.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use tributary_sdk::{Error, ErrorCode, Result};

/// The flag column of a delta.
const DELETED: &str = "__deleted";

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] state changelog: {what}: {e}"),
    )
}

/// The schema of a delta of a state of schema `state`.
pub(crate) fn changes_schema(state: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<Field> = state
        .fields()
        .iter()
        .map(|f| Field::new(f.name(), f.data_type().clone(), true))
        .collect();
    fields.push(Field::new(DELETED, DataType::Boolean, false));
    Arc::new(Schema::new(fields))
}

/// A delta: `upserts` (rows of the state's schema) and the keys in `deleted` (the first
/// `deleted.len()` columns of the state).
pub(crate) fn changes(
    state: &SchemaRef,
    upserts: &RecordBatch,
    deleted: &[ArrayRef],
) -> Result<RecordBatch> {
    let schema = changes_schema(state);
    let n_up = upserts.num_rows();
    let n_del = deleted.first().map_or(0, |c| c.len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    if n_del == 0 {
        // only upserts: their columns as they are, no copy
        columns.extend(upserts.columns().iter().take(state.fields().len()).cloned());
        columns.push(Arc::new(BooleanArray::from(vec![false; n_up])));
        return RecordBatch::try_new(schema, columns).map_err(|e| internal("building a delta", e));
    }
    for (i, f) in state.fields().iter().enumerate() {
        let del = match deleted.get(i) {
            Some(k) => Arc::clone(k),
            None => new_null_array(f.data_type(), n_del),
        };
        let c = datafusion::arrow::compute::concat(&[upserts.column(i).as_ref(), del.as_ref()])
            .map_err(|e| internal("building a delta", e))?;
        columns.push(c);
    }
    let flags: BooleanArray = (0..n_up + n_del).map(|i| Some(i >= n_up)).collect();
    columns.push(Arc::new(flags));
    RecordBatch::try_new(schema, columns).map_err(|e| internal("building a delta", e))
}

/// The state `snapshot` after the deltas, in order.
pub(crate) fn apply(
    snapshot: RecordBatch,
    deltas: &[RecordBatch],
    keys: usize,
) -> Result<RecordBatch> {
    if deltas.is_empty() {
        return Ok(snapshot);
    }
    let schema = snapshot.schema();
    let width = schema.fields().len();
    let converter = RowConverter::new(
        schema
            .fields()
            .iter()
            .take(keys)
            .map(|f| SortField::new(f.data_type().clone()))
            .collect(),
    )
    .map_err(|e| internal("the key columns", e))?;
    // key → (source, row): source 0 is the snapshot, i + 1 delta i
    let mut at: HashMap<Box<[u8]>, (usize, usize)> = HashMap::new();
    let sources: Vec<&RecordBatch> = std::iter::once(&snapshot).chain(deltas).collect();
    for (s, batch) in sources.iter().enumerate() {
        if batch.num_columns() < width || batch.num_columns() < keys {
            return Err(internal("a delta", "has fewer columns than the state"));
        }
        let rows = converter
            .convert_columns(&batch.columns()[..keys])
            .map_err(|e| internal("encoding keys", e))?;
        let deleted = match s {
            0 => None,
            _ => Some(
                batch
                    .column(width)
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| internal("a delta", "has no deleted flags"))?,
            ),
        };
        for (r, row) in rows.iter().enumerate() {
            if deleted.is_some_and(|d| d.value(r)) {
                at.remove(row.as_ref());
            } else {
                at.insert(row.as_ref().into(), (s, r));
            }
        }
    }
    let mut indices: Vec<(usize, usize)> = at.into_values().collect();
    indices.sort_unstable();
    let mut columns = Vec::with_capacity(width);
    for c in 0..width {
        let parts: Vec<&dyn Array> = sources.iter().map(|b| b.column(c).as_ref()).collect();
        columns.push(
            datafusion::arrow::compute::interleave(&parts, &indices)
                .map_err(|e| internal("replaying deltas", e))?,
        );
    }
    RecordBatch::try_new(schema, columns).map_err(|e| internal("replaying deltas", e))
}
