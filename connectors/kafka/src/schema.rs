//! The Arrow schema of the records the Kafka source emits (and the `headers` type the sink
//! accepts): the names and types of Spark's Kafka source.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

/// The column carrying the record value, which a decode stage decodes.
pub const PAYLOAD_COLUMN: &str = "value";
/// The column carrying the record key.
pub const KEY_COLUMN: &str = "key";

/// `key` binary, `value` binary, `topic` utf8, `partition` int32, `offset` int64,
/// `timestamp` timestamp(ms, UTC), `timestampType` int32, and `headers`
/// list<struct<key utf8, value binary>> when `include_headers`.
pub fn kafka_schema(include_headers: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new(KEY_COLUMN, DataType::Binary, true),
        Field::new(PAYLOAD_COLUMN, DataType::Binary, true),
        Field::new("topic", DataType::Utf8, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("timestampType", DataType::Int32, false),
    ];
    if include_headers {
        fields.push(Field::new("headers", kafka_headers_type(), true));
    }
    Arc::new(Schema::new(fields))
}

/// The type of the `headers` column: list<struct<key utf8, value binary>>.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_column_only_when_asked() {
        assert_eq!(kafka_schema(false).fields().len(), 7);
        let s = kafka_schema(true);
        assert_eq!(s.fields().len(), 8);
        assert_eq!(s.field(7).name(), "headers");
        assert_eq!(s.field(7).data_type(), &kafka_headers_type());
    }
}
