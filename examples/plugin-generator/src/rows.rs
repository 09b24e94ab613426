//! The generator's rows: offsets, the schema, partitions and record batches.
//!
//! Row `i` is `{id: i, value: "row-i", partition: i % partitions}`. An offset is a global row
//! position (`{"rows": N}` = the next row), whatever partitions are assigned: a source that reads
//! a subset of partitions skips the other rows, so a range always yields the same rows.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Offset, Result};

use crate::config::MalformedMode;

/// The generator's offset: the number of rows before the position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsOffset {
    /// Rows before this position.
    pub rows: u64,
}

impl RowsOffset {
    /// The row position of an offset.
    pub fn of(offset: &Offset) -> Result<u64> {
        Ok(offset.to_typed::<RowsOffset>()?.rows)
    }

    /// The offset of a row position.
    pub fn at(rows: u64) -> Result<Offset> {
        Offset::from_typed(&RowsOffset { rows })
    }
}

/// `id` int64, `value` utf8 (null for a malformed row read permissively), `partition` int32.
pub fn row_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("value", DataType::Utf8, true),
        Field::new("partition", DataType::Int32, false),
    ]))
}

/// Which rows belong to the partitions a source reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioning {
    partitions: u64,
    assigned: Vec<u64>,
}

impl Partitioning {
    /// `partitions` partitions (at least 1) of which `assigned` (sorted, distinct, each below
    /// `partitions`, not empty) are read.
    pub fn new(partitions: u32, assigned: &[u32]) -> Self {
        let partitions = u64::from(partitions.max(1));
        let mut assigned: Vec<u64> = assigned
            .iter()
            .map(|p| u64::from(*p))
            .filter(|p| *p < partitions)
            .collect();
        if assigned.is_empty() {
            assigned = (0..partitions).collect();
        }
        Partitioning {
            partitions,
            assigned,
        }
    }

    /// The partition of row `row`.
    pub fn partition_of(&self, row: u64) -> u64 {
        row % self.partitions
    }

    /// True when row `row` is in an assigned partition.
    pub fn is_assigned(&self, row: u64) -> bool {
        self.assigned.binary_search(&self.partition_of(row)).is_ok()
    }

    /// Assigned rows below `row`.
    fn assigned_below(&self, row: u64) -> u64 {
        let rest = self.partition_of(row);
        (row / self.partitions) * self.assigned.len() as u64
            + self.assigned.iter().take_while(|p| **p < rest).count() as u64
    }

    /// The position just after the `count`-th assigned row at or after `from` (`from` itself
    /// when `count` is 0); saturates at `u64::MAX`.
    pub fn end_after(&self, from: u64, count: u64) -> u64 {
        if count == 0 {
            return from;
        }
        let per_cycle = self.assigned.len() as u64;
        let Some(index) = self.assigned_below(from).checked_add(count - 1) else {
            return u64::MAX;
        };
        let within = self.assigned[(index % per_cycle) as usize];
        (index / per_cycle)
            .checked_mul(self.partitions)
            .and_then(|r| r.checked_add(within + 1))
            .unwrap_or(u64::MAX)
    }
}

/// What [`build_batches`] produced.
#[derive(Debug, Default)]
pub struct Built {
    /// The record batches.
    pub batches: Vec<RecordBatch>,
    /// Rows in them.
    pub rows: u64,
    /// Malformed rows read as null values.
    pub malformed: u64,
}

/// The assigned rows of `[from, to)` in record batches of at most `rows_per_batch` rows.
/// A row in `malformed` becomes a null value (PERMISSIVE) or fails the read (FAILFAST).
pub fn build_batches(
    schema: &SchemaRef,
    partitioning: &Partitioning,
    (from, to): (u64, u64),
    rows_per_batch: u64,
    malformed: &BTreeSet<u64>,
    mode: MalformedMode,
) -> Result<Built> {
    let capacity = usize::try_from(rows_per_batch.min(to.saturating_sub(from))).unwrap_or(0);
    let mut built = Built::default();
    let mut ids = Int64Builder::with_capacity(capacity);
    let mut values = StringBuilder::with_capacity(capacity, capacity * 10);
    let mut partitions = Int32Builder::with_capacity(capacity);
    let mut in_batch = 0u64;
    for row in (from..to).filter(|r| partitioning.is_assigned(*r)) {
        let id = i64::try_from(row).map_err(|_| {
            Error::new(
                ErrorCode::SourceRead,
                format!("row {row} exceeds the id range"),
            )
        })?;
        ids.append_value(id);
        if malformed.contains(&row) {
            if mode == MalformedMode::FailFast {
                return Err(Error::new(
                    ErrorCode::MalformedRecord,
                    format!(
                        "row {row} is malformed (mode FAILFAST); set the option 'mode' to \
                         PERMISSIVE to read it as a null value"
                    ),
                )
                .with_context("row", row)
                .with_context("option", "mode"));
            }
            values.append_null();
            built.malformed += 1;
        } else {
            values.append_value(format!("row-{row}"));
        }
        // The partition is below MAX_PARTITIONS (1024), so it fits.
        partitions.append_value(partitioning.partition_of(row) as i32);
        in_batch += 1;
        if in_batch == rows_per_batch {
            built
                .batches
                .push(finish(schema, &mut ids, &mut values, &mut partitions)?);
            built.rows += in_batch;
            in_batch = 0;
        }
    }
    if in_batch > 0 {
        built
            .batches
            .push(finish(schema, &mut ids, &mut values, &mut partitions)?);
        built.rows += in_batch;
    }
    Ok(built)
}

fn finish(
    schema: &SchemaRef,
    ids: &mut Int64Builder,
    values: &mut StringBuilder,
    partitions: &mut Int32Builder,
) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ids.finish()),
        Arc::new(values.finish()),
        Arc::new(partitions.finish()),
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_after_counts_only_assigned_rows() {
        let all = Partitioning::new(1, &[0]);
        assert_eq!(all.end_after(5, 3), 8);
        assert_eq!(all.end_after(5, 0), 5);
        // Partitions 0 and 2 of 3: rows 0, 2, 3, 5, 6, 8, ...
        let p = Partitioning::new(3, &[0, 2]);
        assert_eq!(p.end_after(0, 1), 1);
        assert_eq!(p.end_after(0, 2), 3);
        assert_eq!(p.end_after(0, 3), 4);
        assert_eq!(p.end_after(1, 1), 3);
        assert_eq!(p.end_after(4, 2), 7);
        assert_eq!(p.end_after(u64::MAX - 1, 5), u64::MAX);
    }

    #[test]
    fn batches_hold_assigned_rows_and_null_malformed_values() {
        let p = Partitioning::new(3, &[0, 2]);
        let schema = row_schema();
        let malformed: BTreeSet<u64> = [3].into_iter().collect();
        let b = build_batches(
            &schema,
            &p,
            (0, 7),
            2,
            &malformed,
            MalformedMode::Permissive,
        )
        .unwrap();
        assert_eq!(b.rows, 5);
        assert_eq!(b.malformed, 1);
        assert_eq!(
            b.batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            vec![2, 2, 1]
        );
        let e =
            build_batches(&schema, &p, (0, 7), 2, &malformed, MalformedMode::FailFast).unwrap_err();
        assert_eq!(e.code(), ErrorCode::MalformedRecord);
    }
}
