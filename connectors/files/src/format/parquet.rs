//! Parquet, read with the `parquet` crate's Arrow reader.
//!
//! Columns are matched to the schema by name: a column the file lacks is null, a column whose
//! type differs is cast (an impossible cast is an error naming the file and column). Columns not
//! in the schema are reported for schema evolution (`addNewColumns`, `failOnNewColumns`) or
//! dropped (`none`). A file that is not valid Parquet is `SOURCE_READ_FAILED` naming it.

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_cast::{can_cast_types, cast};
use arrow_schema::{Field, Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tributary_sdk::{Error, ErrorCode, Result};

use super::{DecodeContext, Decoded, BATCH_SIZE};
use crate::config::SchemaEvolution;
use crate::error::unreadable;

/// Decodes one Parquet file.
pub fn decode(bytes: Bytes, path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| unreadable(path, e))?;
    if matches!(
        ctx.evolution,
        SchemaEvolution::AddNewColumns | SchemaEvolution::FailOnNewColumns
    ) {
        let new_fields: Vec<Field> = builder
            .schema()
            .fields()
            .iter()
            .filter(|f| ctx.file_schema.field_with_name(f.name()).is_err())
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        if !new_fields.is_empty() {
            return Ok(Decoded {
                new_fields,
                ..Decoded::default()
            });
        }
    }
    let reader = builder
        .with_batch_size(BATCH_SIZE)
        .build()
        .map_err(|e| unreadable(path, e))?;
    let mut batches = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(path, e))?;
        batches.push(align(&batch, &ctx.file_schema, path)?);
    }
    Ok(Decoded {
        batches,
        ..Decoded::default()
    })
}

pub(crate) fn align(batch: &RecordBatch, schema: &SchemaRef, path: &str) -> Result<RecordBatch> {
    if batch.schema().fields() == schema.fields() {
        return Ok(RecordBatch::try_new(
            schema.clone(),
            batch.columns().to_vec(),
        )?);
    }
    let rows = batch.num_rows();
    let columns = schema
        .fields()
        .iter()
        .map(|field| -> Result<ArrayRef> {
            match batch.column_by_name(field.name()) {
                None => Ok(new_null_array(field.data_type(), rows)),
                Some(col) if col.data_type() == field.data_type() => Ok(col.clone()),
                Some(col) if can_cast_types(col.data_type(), field.data_type()) => {
                    cast(col, field.data_type()).map_err(|e| column_error(path, field.name(), e))
                }
                Some(col) => Err(column_error(
                    path,
                    field.name(),
                    arrow_schema::ArrowError::CastError(format!(
                        "{} cannot become {}",
                        col.data_type(),
                        field.data_type()
                    )),
                )),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

fn column_error(path: &str, column: &str, e: arrow_schema::ArrowError) -> Error {
    Error::new(
        ErrorCode::Schema,
        format!("column '{column}' of {path} does not fit the stream's schema"),
    )
    .with_context("file", path)
    .with_context("field", column)
    .with_cause(e)
}

/// The schema of the sample files, merged (columns keep their first file's order).
pub fn infer(samples: &[(String, Bytes)]) -> Result<Schema> {
    let mut merged: Option<Schema> = None;
    for (path, bytes) in samples {
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .map_err(|e| unreadable(path, e))?;
        let schema =
            Arc::unwrap_or_clone(builder.schema().clone()).with_metadata(Default::default());
        merged = Some(match merged {
            None => schema,
            Some(m) => Schema::try_merge([m, schema]).map_err(|e| {
                Error::new(
                    ErrorCode::Schema,
                    format!("the schema of {path} conflicts with the other sampled Parquet files"),
                )
                .with_context("file", path)
                .with_cause(e)
            })?,
        });
    }
    merged.ok_or_else(|| {
        Error::new(
            ErrorCode::Schema,
            "cannot infer a schema: no Parquet files yet; give the 'schema' option or add data first",
        )
        .with_context("option", crate::config::names::SCHEMA)
    })
}
