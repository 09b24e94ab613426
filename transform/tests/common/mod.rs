//! Shared test data: Kafka-shaped batches (the kafka connector's schema), the same records with
//! `value` decoded into a struct (what the decode stage produces), and static dimension tables
//! written as real Parquet, CSV and Delta files.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BinaryArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    StructArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

/// One order as produced to the topic: key = the customer id, value = JSON.
#[derive(Debug, Clone)]
pub struct Order {
    pub id: i64,
    pub customer: Option<String>,
    pub amount: f64,
}

pub fn orders(from: i64, n: usize) -> Vec<Order> {
    (0..n as i64)
        .map(|i| {
            let id = from + i;
            Order {
                id,
                // every 7th record has no key (a null Kafka key)
                customer: (id % 7 != 0).then(|| format!("c{}", id % 5)),
                amount: (id % 40) as f64 + 0.5,
            }
        })
        .collect()
}

pub fn json(o: &Order) -> String {
    format!(
        r#"{{"id":{},"customer":{},"amount":{}}}"#,
        o.id,
        o.customer
            .as_ref()
            .map_or("null".to_string(), |c| format!("\"{c}\"")),
        o.amount
    )
}

fn kafka_fields(value: Field) -> Vec<Field> {
    vec![
        Field::new("key", DataType::Binary, true),
        value,
        Field::new("topic", DataType::Utf8, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("timestampType", DataType::Int32, false),
    ]
}

/// The kafka connector's schema (`key`, `value` binary, ...).
pub fn kafka_schema() -> SchemaRef {
    Arc::new(Schema::new(kafka_fields(Field::new(
        "value",
        DataType::Binary,
        true,
    ))))
}

/// The decoded value's type: struct<id int64, customer utf8, amount float64>.
pub fn order_fields() -> Fields {
    Fields::from(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("customer", DataType::Utf8, true),
        Field::new("amount", DataType::Float64, true),
    ])
}

/// The schema after the decode stage: `value` is a struct.
pub fn decoded_schema() -> SchemaRef {
    Arc::new(Schema::new(kafka_fields(Field::new(
        "value",
        DataType::Struct(order_fields()),
        true,
    ))))
}

fn meta_columns(n: usize, offset: i64) -> Vec<ArrayRef> {
    vec![
        Arc::new(StringArray::from(vec!["orders"; n])),
        Arc::new(Int32Array::from(vec![0; n])),
        Arc::new(Int64Array::from_iter_values(offset..offset + n as i64)),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(
                (0..n as i64).map(|i| 1_764_000_000_000 + i),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(Int32Array::from(vec![0; n])),
    ]
}

fn keys(orders: &[Order]) -> ArrayRef {
    Arc::new(BinaryArray::from_iter(
        orders
            .iter()
            .map(|o| o.customer.as_ref().map(|c| c.as_bytes())),
    ))
}

/// Raw records, as the kafka source reads them.
pub fn kafka_batch(orders: &[Order], offset: i64) -> RecordBatch {
    let values: Vec<String> = orders.iter().map(json).collect();
    let mut columns = vec![
        keys(orders),
        Arc::new(BinaryArray::from_iter_values(
            values.iter().map(|v| v.as_bytes()),
        )) as ArrayRef,
    ];
    columns.extend(meta_columns(orders.len(), offset));
    RecordBatch::try_new(kafka_schema(), columns).unwrap()
}

/// The same records with `value` decoded (the JSON parsed with arrow-json against the schema,
/// as the decode stage does).
pub fn decoded_batch(orders: &[Order], offset: i64) -> RecordBatch {
    let text: String = orders.iter().map(|o| json(o) + "\n").collect();
    let value_schema = Arc::new(Schema::new(order_fields()));
    let mut reader = datafusion::arrow::json::ReaderBuilder::new(value_schema)
        .with_batch_size(orders.len().max(1))
        .build(text.as_bytes())
        .unwrap();
    let values: ArrayRef = match reader.next() {
        Some(batch) => Arc::new(StructArray::from(batch.unwrap())),
        None => datafusion::arrow::array::new_empty_array(&DataType::Struct(order_fields())),
    };
    let mut columns = vec![keys(orders), values];
    columns.extend(meta_columns(orders.len(), offset));
    RecordBatch::try_new(decoded_schema(), columns).unwrap()
}

/// The customer dimension: c0..c3 (c4 is missing, to exercise unmatched rows).
pub fn customers() -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("region", DataType::Utf8, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec!["c0", "c1", "c2", "c3"])),
            Arc::new(StringArray::from(vec!["Ada", "Brendan", "Carla", "Dmitri"])),
            Arc::new(StringArray::from(vec!["eu", "us", "eu", "apac"])),
        ],
    )
    .unwrap()
}

pub fn region_of(customer: &str) -> Option<&'static str> {
    match customer {
        "c0" | "c2" => Some("eu"),
        "c1" => Some("us"),
        "c3" => Some("apac"),
        _ => None,
    }
}

pub fn write_parquet(path: &Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer =
        datafusion::parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

pub fn write_csv(path: &Path, batch: &RecordBatch) {
    let mut text = String::from("id,name,region\n");
    let col = |i: usize| {
        batch
            .column(i)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone()
    };
    let (a, b, c) = (col(0), col(1), col(2));
    for i in 0..batch.num_rows() {
        text.push_str(&format!("{},{},{}\n", a.value(i), b.value(i), c.value(i)));
    }
    std::fs::write(path, text).unwrap();
}

/// A column of a batch as strings (nulls as None), for assertions.
pub fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let column = batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", batch.schema()));
    let column = datafusion::arrow::compute::cast(column, &DataType::Utf8).unwrap();
    let column = column.as_any().downcast_ref::<StringArray>().unwrap();
    (0..column.len())
        .map(|i| column.is_valid(i).then(|| column.value(i).to_string()))
        .collect()
}

pub fn floats(batch: &RecordBatch, name: &str) -> Vec<Option<f64>> {
    let column = batch.column_by_name(name).unwrap();
    let column = column.as_any().downcast_ref::<Float64Array>().unwrap();
    (0..column.len())
        .map(|i| column.is_valid(i).then(|| column.value(i)))
        .collect()
}
