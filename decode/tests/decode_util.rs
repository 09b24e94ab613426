//! Helpers shared by the decode tests (included with `#[path]`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(any(feature = "json", feature = "avro", feature = "protobuf"))]
#![allow(dead_code)]

use std::sync::Arc;

use arrow_array::{BinaryArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use tributary_decode::{DecodeMode, StreamDecoder};
use tributary_sdk::{ResolvedSchema, SchemaFormat, SourceMetrics, StreamSchemas, WireFormat};

/// A Kafka-shaped batch: null keys, the given values, partition 0, offsets from 100.
pub fn kafka_batch(values: Vec<Option<Vec<u8>>>) -> RecordBatch {
    let n = values.len();
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
        Field::new("topic", DataType::Utf8, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
    ]));
    let keys: BinaryArray = (0..n).map(|_| None::<&[u8]>).collect();
    let vals: BinaryArray = values.iter().map(|v| v.as_deref()).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(keys),
            Arc::new(vals),
            Arc::new(StringArray::from(vec!["orders"; n])),
            Arc::new(Int32Array::from(vec![3; n])),
            Arc::new(Int64Array::from((100..100 + n as i64).collect::<Vec<_>>())),
        ],
    )
    .unwrap()
}

pub fn payload(format: SchemaFormat, text: &str) -> StreamSchemas {
    StreamSchemas {
        key: None,
        payload: Some(ResolvedSchema {
            format,
            text: text.to_string(),
            wire: WireFormat::Plain,
            registry_id: None,
        }),
    }
}

/// Decodes values with a payload schema; returns the value column's type, its rows as JSON
/// lines, and the metrics.
pub fn decode_values(
    schemas: &StreamSchemas,
    mode: DecodeMode,
    values: Vec<Option<Vec<u8>>>,
) -> tributary_sdk::Result<(DataType, Vec<String>, SourceMetrics)> {
    let mut d = StreamDecoder::new(schemas, mode, "value")?;
    let out = d.decode(&kafka_batch(values))?;
    let col = out.column_by_name("value").unwrap().clone();
    let dt = col.data_type().clone();
    Ok((dt, rows_json(&out), d.metrics()))
}

/// The `value` column of a batch as one JSON text per row (`null` for a null struct).
pub fn rows_json(batch: &RecordBatch) -> Vec<String> {
    let idx = batch.schema().index_of("value").unwrap();
    let col = batch.column(idx).clone();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "value",
        col.data_type().clone(),
        true,
    )]));
    let one = RecordBatch::try_new(schema, vec![col]).unwrap();
    let mut buf = Vec::new();
    {
        let mut w = arrow_json::LineDelimitedWriter::new(&mut buf);
        w.write(&one).unwrap();
        w.finish().unwrap();
    }
    String::from_utf8(buf)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.get("value")
                .cloned()
                .unwrap_or(serde_json::Value::Null)
                .to_string()
        })
        .collect()
}

pub fn metric(m: &SourceMetrics, name: &str) -> u64 {
    m.get(name).and_then(|v| v.as_u64()).unwrap_or(0)
}
