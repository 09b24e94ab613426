//! The columns the files source adds itself: `_metadata` and the rescued data column,
//! defined once. A leaf module (the config, the formats and the schema use them).

use arrow_schema::{DataType, Field, Fields, TimeUnit};

/// Name of the file metadata column the source appends to every row.
pub const METADATA_COLUMN: &str = "_metadata";
/// Default name of the column holding records and values that did not fit the schema
/// (`rescuedDataColumn`).
pub const RESCUED_DATA_COLUMN: &str = "_rescued_data";

/// The fields of the `_metadata` struct: `file_path`, `file_name`, `file_size`,
/// `file_modification_time` (timestamp, ms, UTC) — the names Databricks uses.
pub fn file_metadata_fields() -> Fields {
    Fields::from(vec![
        Field::new("file_path", DataType::Utf8, false),
        Field::new("file_name", DataType::Utf8, false),
        Field::new("file_size", DataType::Int64, false),
        Field::new(
            "file_modification_time",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
    ])
}

/// The `_metadata` column (last column of every batch).
pub fn file_metadata_field() -> Field {
    Field::new(
        METADATA_COLUMN,
        DataType::Struct(file_metadata_fields()),
        false,
    )
}

/// The rescued data column named `name` (nullable text; JSON and CSV only).
pub fn rescued_data_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
}
