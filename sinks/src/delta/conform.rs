//! Brings a record batch to the physical schema of a Delta table's data files.
//!
//! The part writer stages Parquet files through deltalake's file writer, which takes batches
//! already in the table's Arrow schema (deltalake's own `write` does this with a DataFusion
//! projection). Columns are matched by name, at every struct depth: a column the batch lacks
//! becomes nulls, one whose Arrow type differs is cast with `arrow::compute::cast` (a `Utf8View`
//! to `Utf8`, a millisecond timestamp to Delta's microseconds). The schema check before the write
//! has already refused real type changes, so a failing cast here is a bug or a value that does
//! not fit, reported naming the column.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, StructArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Fields, SchemaRef};
use tributary_sdk::{Error, ErrorCode, Result};

/// `batch` with exactly the columns of `target`, in its order and with its types.
pub fn conform(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema() == *target {
        return Ok(batch.clone());
    }
    let rows = batch.num_rows();
    let columns = target
        .fields()
        .iter()
        .map(|field| match batch.column_by_name(field.name()) {
            Some(column) => conform_array(column, field.data_type(), field.name()),
            None => Ok(new_null_array(field.data_type(), rows)),
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            "the batch does not fit the Delta table schema",
        )
        .with_cause(e)
    })
}

fn conform_array(array: &ArrayRef, target: &DataType, path: &str) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    if let (DataType::Struct(have), DataType::Struct(want)) = (array.data_type(), target) {
        if have != want {
            return conform_struct(array, want, path);
        }
    }
    cast(array, target).map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            format!(
                "column '{path}' of type {} cannot be written as the Delta table's {target}",
                array.data_type()
            ),
        )
        .with_context("field", path)
        .with_cause(e)
    })
}

fn conform_struct(array: &ArrayRef, want: &Fields, path: &str) -> Result<ArrayRef> {
    let Some(have) = array.as_any().downcast_ref::<StructArray>() else {
        return Err(Error::new(
            ErrorCode::Internal,
            format!("column '{path}' claims a struct type but is not a struct array"),
        ));
    };
    let columns = want
        .iter()
        .map(|field| {
            let child = format!("{path}.{}", field.name());
            match have.column_by_name(field.name()) {
                Some(column) => conform_array(column, field.data_type(), &child),
                None => Ok(new_null_array(field.data_type(), have.len())),
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    StructArray::try_new(want.clone(), columns, have.nulls().cloned())
        .map(|s| Arc::new(s) as ArrayRef)
        .map_err(|e| {
            Error::new(
                ErrorCode::Schema,
                format!("column '{path}' does not fit the Delta table's struct type"),
            )
            .with_context("field", path)
            .with_cause(e)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringViewArray};
    use arrow::datatypes::{Field, Schema};

    #[allow(clippy::unwrap_used)]
    #[test]
    fn missing_columns_become_nulls_and_types_are_cast() {
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("s", DataType::Utf8View, true),
                Field::new("n", DataType::Int64, false),
            ])),
            vec![
                Arc::new(StringViewArray::from(vec!["a", "b"])),
                Arc::new(Int64Array::from(vec![1, 2])),
            ],
        )
        .unwrap();
        let target = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("extra", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let out = conform(&batch, &target).unwrap();
        assert_eq!(out.schema(), target);
        assert_eq!(out.column(1).null_count(), 2);
        assert_eq!(out.column(2).data_type(), &DataType::Utf8);
    }
}
