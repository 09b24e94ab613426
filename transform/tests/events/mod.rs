//! The event rows the stateful operators' tests stream: an event time `ts`, a key `k` and a
//! value `v`.

#![allow(dead_code)]

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// `ts` (event time, ms, UTC), `k` (key), `v` (value), all nullable.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("k", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
    ]))
}
