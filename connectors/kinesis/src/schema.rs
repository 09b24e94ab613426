//! The Arrow schema of the records the Kinesis source emits (and the columns the sink reads by
//! default): the names and types of the Databricks Kinesis source.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// The column carrying the record data, which a decode stage decodes.
pub const PAYLOAD_COLUMN: &str = "data";
/// The column carrying the partition key.
pub const KEY_COLUMN: &str = "partitionKey";

/// `partitionKey` utf8, `data` binary, `stream` utf8, `shardId` utf8, `sequenceNumber` utf8,
/// `approximateArrivalTimestamp` timestamp(ms, UTC).
pub fn kinesis_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(KEY_COLUMN, DataType::Utf8, false),
        Field::new(PAYLOAD_COLUMN, DataType::Binary, false),
        Field::new("stream", DataType::Utf8, false),
        Field::new("shardId", DataType::Utf8, false),
        Field::new("sequenceNumber", DataType::Utf8, false),
        Field::new(
            "approximateArrivalTimestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_in_databricks_order() {
        let s = kinesis_schema();
        let names: Vec<&str> = s.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            names,
            [
                "partitionKey",
                "data",
                "stream",
                "shardId",
                "sequenceNumber",
                "approximateArrivalTimestamp"
            ]
        );
        assert_eq!(s.field(1).data_type(), &DataType::Binary);
    }
}
