//! Checks a batch schema against a Delta table's schema before writing.
//!
//! Both sides are compared as Delta (kernel) types, after deltalake's own normalisation of Arrow
//! types (`Utf8View` is a string, a millisecond timestamp with a time zone is a Delta
//! `timestamp`), so only real differences count:
//!
//! - a column (or nested struct field) the table lacks is added when `mergeSchema` is on and is
//!   an error naming the column otherwise;
//! - a column whose type differs is always an error naming the column (dot path for nested
//!   fields) and both types: Delta's schema evolution adds columns, it does not change them.
//!
//! deltalake would refuse most of these too, but with a message that names neither the column
//! nor the option to change, so the check is written here.

use std::sync::Arc;

use arrow::datatypes::Schema as ArrowSchema;
use deltalake::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake::kernel::{ArrayType, DataType, StructField, StructType};
use deltalake::schema::normalize_for_delta;
use tributary_sdk::{Error, ErrorCode, Result};

use super::config::MERGE_SCHEMA;

/// What writing a batch of this schema does to the table's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChange {
    /// Same columns.
    None,
    /// The batch lacks some of the table's columns (written as nulls).
    LacksColumns,
    /// The batch adds these columns (dot paths); allowed with `mergeSchema`.
    AddsColumns(Vec<String>),
}

/// The Delta form of an Arrow schema.
pub fn to_delta_schema(schema: &ArrowSchema) -> Result<StructType> {
    let normalized = normalize_for_delta(&Arc::new(schema.clone()));
    normalized.as_ref().try_into_kernel().map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            "the batch schema has a type Delta cannot store",
        )
        .with_cause(e)
    })
}

/// Compares a batch schema with the table schema; `Err` for a type change, or for new columns
/// without `mergeSchema`.
pub fn check_batch_schema(
    table: &StructType,
    batch: &ArrowSchema,
    merge_schema: bool,
) -> Result<SchemaChange> {
    let batch = to_delta_schema(batch)?;
    let mut added = Vec::new();
    compare_struct(table, &batch, "", &mut added)?;
    if added.is_empty() {
        return Ok(if lacks_fields(table, &batch) {
            SchemaChange::LacksColumns
        } else {
            SchemaChange::None
        });
    }
    if !merge_schema {
        return Err(Error::new(
            ErrorCode::Schema,
            format!(
                "the batch has column(s) {} that the Delta table does not have; set \
                 '{MERGE_SCHEMA}' to true to add them",
                added
                    .iter()
                    .map(|c| format!("'{c}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_context("field", added.join(","))
        .with_context("option", MERGE_SCHEMA));
    }
    Ok(SchemaChange::AddsColumns(added))
}

/// The table schema with the batch's new columns (and new nested struct fields, also inside
/// arrays) appended, each nullable because the existing rows lack it. Call after
/// [`check_batch_schema`] has accepted the batch: types of existing columns are kept as they are.
pub fn merge_schemas(table: &StructType, batch: &StructType) -> Result<StructType> {
    let mut fields: Vec<StructField> = Vec::new();
    for field in table.fields() {
        let mut merged = field.clone();
        if let Some(other) = batch.field(field.name()) {
            merged.data_type = merge_types(field.data_type(), other.data_type())?;
        }
        fields.push(merged);
    }
    for field in batch.fields() {
        if table.field(field.name()).is_none() {
            let mut added = field.clone();
            added.nullable = true;
            fields.push(added);
        }
    }
    StructType::try_new(fields).map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            "cannot merge the batch schema into the Delta table schema",
        )
        .with_cause(e)
    })
}

fn merge_types(table: &DataType, batch: &DataType) -> Result<DataType> {
    Ok(match (table, batch) {
        (DataType::Struct(t), DataType::Struct(b)) => {
            DataType::Struct(Box::new(merge_schemas(t, b)?))
        }
        (DataType::Array(t), DataType::Array(b)) => DataType::Array(Box::new(ArrayType::new(
            merge_types(t.element_type(), b.element_type())?,
            t.contains_null(),
        ))),
        _ => table.clone(),
    })
}

/// True when `batch` lacks a field of `table` (at any struct depth).
fn lacks_fields(table: &StructType, batch: &StructType) -> bool {
    table.fields().any(|t| match batch.field(t.name()) {
        None => true,
        Some(b) => match (t.data_type(), b.data_type()) {
            (DataType::Struct(ts), DataType::Struct(bs)) => lacks_fields(ts, bs),
            _ => false,
        },
    })
}

fn compare_struct(
    table: &StructType,
    batch: &StructType,
    prefix: &str,
    added: &mut Vec<String>,
) -> Result<()> {
    for field in batch.fields() {
        let path = format!("{prefix}{}", field.name());
        match table.field(field.name()) {
            None => added.push(path),
            Some(existing) => {
                compare_type(existing.data_type(), field.data_type(), &path, added)?;
            }
        }
    }
    Ok(())
}

fn compare_type(
    table: &DataType,
    batch: &DataType,
    path: &str,
    added: &mut Vec<String>,
) -> Result<()> {
    match (table, batch) {
        (DataType::Struct(t), DataType::Struct(b)) => {
            compare_struct(t, b, &format!("{path}."), added)
        }
        (DataType::Array(t), DataType::Array(b)) => compare_type(
            t.element_type(),
            b.element_type(),
            &format!("{path}.element"),
            added,
        ),
        (DataType::Map(t), DataType::Map(b)) => {
            compare_type(t.key_type(), b.key_type(), &format!("{path}.key"), added)?;
            compare_type(
                t.value_type(),
                b.value_type(),
                &format!("{path}.value"),
                added,
            )
        }
        (t, b) if t == b => Ok(()),
        (t, b) => Err(Error::new(
            ErrorCode::Schema,
            format!(
                "column '{path}' has type {} in the Delta table but {} in the batch; a column's \
                 type cannot change ('{MERGE_SCHEMA}' only adds columns): cast it back, or write \
                 to a new column or table",
                type_name(t),
                type_name(b)
            ),
        )
        .with_context("field", path)
        .with_context("expected", type_name(t))
        .with_context("actual", type_name(b))),
    }
}

/// A Delta type as users read it in Spark SQL (`bigint`, `string`, `struct<a: int>`).
pub fn type_name(t: &DataType) -> String {
    match t {
        DataType::Primitive(p) => match serde_json::to_value(p) {
            Ok(serde_json::Value::String(s)) => s,
            _ => format!("{p:?}"),
        },
        DataType::Array(a) => format!("array<{}>", type_name(a.element_type())),
        DataType::Map(m) => format!(
            "map<{}, {}>",
            type_name(m.key_type()),
            type_name(m.value_type())
        ),
        DataType::Struct(s) => format!(
            "struct<{}>",
            s.fields()
                .map(|f| format!("{}: {}", f.name(), type_name(f.data_type())))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::Variant(_) => "variant".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType as A, Field, Fields, TimeUnit};

    fn schema(fields: Vec<Field>) -> ArrowSchema {
        ArrowSchema::new(fields)
    }

    fn table(fields: Vec<Field>) -> StructType {
        to_delta_schema(&schema(fields)).unwrap()
    }

    #[test]
    fn equal_after_normalisation() {
        let t = table(vec![
            Field::new("s", A::Utf8, true),
            Field::new(
                "ts",
                A::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ]);
        let b = schema(vec![
            Field::new("s", A::Utf8View, true),
            Field::new(
                "ts",
                A::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                true,
            ),
        ]);
        assert_eq!(
            check_batch_schema(&t, &b, false).unwrap(),
            SchemaChange::None
        );
        // A batch lacking a column is fine (nulls).
        let b = schema(vec![Field::new("s", A::Utf8, true)]);
        assert_eq!(
            check_batch_schema(&t, &b, false).unwrap(),
            SchemaChange::LacksColumns
        );
    }

    #[test]
    fn new_columns_need_merge_schema() {
        let t = table(vec![Field::new("a", A::Int64, true)]);
        let b = schema(vec![
            Field::new("a", A::Int64, true),
            Field::new("b", A::Utf8, true),
        ]);
        let e = check_batch_schema(&t, &b, false).unwrap_err();
        assert!(
            e.to_string().contains("'b'") && e.to_string().contains("mergeSchema"),
            "{e}"
        );
        assert_eq!(
            check_batch_schema(&t, &b, true).unwrap(),
            SchemaChange::AddsColumns(vec!["b".into()])
        );
    }

    #[test]
    fn type_change_names_column_and_both_types() {
        let inner = |t: A| {
            A::Struct(Fields::from(vec![
                Field::new("id", A::Int64, true),
                Field::new("amount", t, true),
            ]))
        };
        let t = table(vec![Field::new("value", inner(A::Int64), true)]);
        let b = schema(vec![Field::new("value", inner(A::Utf8), true)]);
        let e = check_batch_schema(&t, &b, true).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("'value.amount'"), "{msg}");
        assert!(msg.contains("long") && msg.contains("string"), "{msg}");
        assert_eq!(e.context_value("field"), Some("value.amount"));
    }
}
