//! The Arrow record model: the fixed, documented schema of each built-in source.
//!
//! Records move as Arrow `RecordBatch`es. These functions are the single definition of each
//! source's columns; connectors build their batches against them and decoders replace the binary
//! payload columns with typed ones.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

/// Name of the file metadata column added by the files source.
pub const METADATA_COLUMN: &str = "_metadata";
/// Name of the column holding values that did not fit the schema.
pub const RESCUED_DATA_COLUMN: &str = "_rescued_data";

fn ts_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// Kafka: `key` binary, `value` binary, `topic` utf8, `partition` int32, `offset` int64,
/// `timestamp` timestamp(ms, UTC), `timestampType` int32, and `headers`
/// list<struct<key utf8, value binary>> when `include_headers`.
pub fn kafka_schema(include_headers: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
        Field::new("topic", DataType::Utf8, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
        Field::new("timestamp", ts_ms(), true),
        Field::new("timestampType", DataType::Int32, false),
    ];
    if include_headers {
        fields.push(Field::new("headers", kafka_headers_type(), true));
    }
    Arc::new(Schema::new(fields))
}

/// The type of the Kafka `headers` column.
pub fn kafka_headers_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Binary, true),
        ])),
        false,
    )))
}

/// Kinesis: `partitionKey` utf8, `data` binary, `stream` utf8, `shardId` utf8,
/// `sequenceNumber` utf8, `approximateArrivalTimestamp` timestamp(ms, UTC).
pub fn kinesis_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partitionKey", DataType::Utf8, false),
        Field::new("data", DataType::Binary, true),
        Field::new("stream", DataType::Utf8, false),
        Field::new("shardId", DataType::Utf8, false),
        Field::new("sequenceNumber", DataType::Utf8, false),
        Field::new("approximateArrivalTimestamp", ts_ms(), true),
    ]))
}

/// The fields of the files source's `_metadata` struct: `file_path`, `file_name`, `file_size`,
/// `file_modification_time` (the names Databricks uses).
pub fn file_metadata_fields() -> Fields {
    Fields::from(vec![
        Field::new("file_path", DataType::Utf8, false),
        Field::new("file_name", DataType::Utf8, false),
        Field::new("file_size", DataType::Int64, false),
        Field::new("file_modification_time", ts_ms(), false),
    ])
}

/// The files source's `_metadata` column.
pub fn file_metadata_field() -> Field {
    Field::new(
        METADATA_COLUMN,
        DataType::Struct(file_metadata_fields()),
        false,
    )
}

/// The files source's `_rescued_data` column.
pub fn rescued_data_field() -> Field {
    Field::new(RESCUED_DATA_COLUMN, DataType::Utf8, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_headers_column_only_when_asked() {
        assert_eq!(kafka_schema(false).fields().len(), 7);
        let s = kafka_schema(true);
        assert_eq!(s.fields().len(), 8);
        assert_eq!(s.field(7).name(), "headers");
    }
}
