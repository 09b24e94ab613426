//! Output checks run before any timing: each side of a pair must produce the same table.
//!
//! A [`Table`] summarises a decoded result: the row count, the null count per column and the
//! values (as text) of every [`sample_step`]-th row. Arrow results are read column by column;
//! value-tree results (apache-avro `Value`, prost-reflect `DynamicMessage`) row by row. Two
//! sides of a pair must give equal tables, or the benchmark panics before it measures anything.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Float64Type, Int32Type, Int64Type, TimestampMicrosecondType,
    TimestampMillisecondType, UInt64Type,
};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::{DataType, TimeUnit};

/// Every n-th row is compared value by value (10,000, fewer for small runs).
pub fn sample_step(n: usize) -> usize {
    (n / 10).clamp(1, 10_000)
}

/// Row count, nulls per column and sampled values of one side's output.
#[derive(Debug, PartialEq, Eq)]
pub struct Table {
    pub rows: usize,
    pub names: Vec<String>,
    pub nulls: Vec<usize>,
    pub samples: BTreeMap<usize, Vec<String>>,
    step: usize,
}

impl Table {
    pub fn new(names: &[&str], n: usize) -> Table {
        Table {
            rows: 0,
            names: names.iter().map(|s| s.to_string()).collect(),
            nulls: vec![0; names.len()],
            samples: BTreeMap::new(),
            step: sample_step(n),
        }
    }

    /// Whether the next row is sampled (the caller then passes its values to `push`).
    pub fn wants_sample(&self) -> bool {
        self.rows.is_multiple_of(self.step)
    }

    /// Adds one row: which columns are null, and its values when sampled.
    pub fn push(&mut self, nulls: &[bool], values: Option<Vec<String>>) {
        for (count, null) in self.nulls.iter_mut().zip(nulls) {
            *count += *null as usize;
        }
        if let Some(v) = values {
            self.samples.insert(self.rows, v);
        }
        self.rows += 1;
    }

    /// Adds a batch whose columns have the table's names.
    pub fn add_batch(&mut self, batch: &RecordBatch) {
        let columns: Vec<&dyn Array> = self
            .names
            .iter()
            .map(|n| {
                batch
                    .column_by_name(n)
                    .unwrap_or_else(|| panic!("no column '{n}' in {:?}", batch.schema()))
                    .as_ref()
            })
            .collect();
        for (count, c) in self.nulls.iter_mut().zip(&columns) {
            *count += c.null_count();
        }
        for i in 0..batch.num_rows() {
            let row = self.rows + i;
            if row.is_multiple_of(self.step) {
                let values = columns.iter().map(|c| cell(*c, i)).collect();
                self.samples.insert(row, values);
            }
        }
        self.rows += batch.num_rows();
    }

    /// Adds our decoder's output: the fields of its struct column `value` (no null rows).
    pub fn add_struct(&mut self, batch: &RecordBatch) {
        let value = batch
            .column_by_name("value")
            .expect("a value column")
            .as_any()
            .downcast_ref::<StructArray>()
            .expect("a struct value column");
        assert_eq!(value.null_count(), 0, "a record of a pair failed to decode");
        self.add_batch(&RecordBatch::from(value.clone()));
    }
}

/// Panics naming the pair when two tables differ.
pub fn assert_same(pair: &str, ours: &Table, reference: &Table) {
    assert_eq!(ours.rows, reference.rows, "{pair}: row counts differ");
    assert_eq!(ours.names, reference.names, "{pair}: columns differ");
    assert_eq!(ours.nulls, reference.nulls, "{pair}: null counts differ");
    for (row, v) in &reference.samples {
        assert_eq!(
            ours.samples.get(row),
            Some(v),
            "{pair}: values of row {row} differ"
        );
    }
    assert_eq!(
        ours.samples.len(),
        reference.samples.len(),
        "{pair}: samples differ"
    );
    println!(
        "checked {pair}: {} rows, nulls {:?}, {} sampled rows equal",
        ours.rows,
        ours.nulls,
        ours.samples.len()
    );
}

/// One value as text, the same for every library: integers, timestamps (raw count) and
/// decimals of scale 0 as integers, floats with Rust's `Display`, lists as `[a,b]`.
pub fn cell(a: &dyn Array, i: usize) -> String {
    if a.is_null(i) {
        return "null".into();
    }
    match a.data_type() {
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i).to_string(),
        DataType::Boolean => a.as_boolean().value(i).to_string(),
        DataType::Utf8 => a.as_string::<i32>().value(i).to_string(),
        DataType::Timestamp(TimeUnit::Millisecond, _) => a
            .as_primitive::<TimestampMillisecondType>()
            .value(i)
            .to_string(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => a
            .as_primitive::<TimestampMicrosecondType>()
            .value(i)
            .to_string(),
        DataType::Decimal128(_, 0) => a.as_primitive::<Decimal128Type>().value(i).to_string(),
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(i);
            let texts: Vec<String> = (0..items.len()).map(|j| cell(&items, j)).collect();
            format!("[{}]", texts.join(","))
        }
        other => panic!("no text form for {other} in the benchmark checks"),
    }
}
