//! The rows the sink cases write, and how the rows read back are checked against them.
//!
//! Every micro-batch holds rows with ids unique across the suite (`batch_id * 100 + i`) and a
//! nullable `name` column with one null, so "each row exactly once" is a multiset comparison of
//! the fixture's row text. Texts that parse as JSON objects are compared without their null
//! members and with sorted keys, so `{"id":1,"name":null}` and `{"id":1}` are the same row.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::cases::Failure;

/// The schema of every row the sink cases write: `id` (int64, not null) and `name` (utf8,
/// nullable).
pub fn test_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]))
}

/// One record batch of `rows` rows with ids `first..first + rows`; the row with id
/// `first + 1` has a null name.
pub fn record_batch(first: i64, rows: usize) -> Result<RecordBatch, Failure> {
    let ids: Vec<i64> = (first..).take(rows).collect();
    let names: Vec<Option<String>> = ids
        .iter()
        .map(|&id| (id != first + 1).then(|| format!("row-{id}")))
        .collect();
    RecordBatch::try_new(
        test_schema(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(names)),
        ],
    )
    .map_err(|e| Failure(format!("cannot build the test rows: {e}")))
}

/// The record batches of micro-batch `batch_id`: an even id is one record batch of 3 rows, an odd
/// id two record batches of 2 rows (a sink must write every record batch it is given).
pub fn micro_batch(batch_id: u64) -> Result<Vec<RecordBatch>, Failure> {
    let first = i64::try_from(batch_id)
        .ok()
        .and_then(|b| b.checked_mul(100))
        .ok_or_else(|| Failure(format!("batch id {batch_id} is too large for test rows")))?;
    if batch_id.is_multiple_of(2) {
        Ok(vec![record_batch(first, 3)?])
    } else {
        Ok(vec![record_batch(first, 2)?, record_batch(first + 2, 2)?])
    }
}

/// A record batch with the test schema and no rows.
pub fn zero_row_batch() -> RecordBatch {
    RecordBatch::new_empty(test_schema())
}

/// The comparable form of one row's text: JSON objects without null members, keys sorted,
/// re-serialized; any other text trimmed.
pub fn canonical(row: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(row) {
        Ok(serde_json::Value::Object(map)) => {
            let sorted: BTreeMap<String, serde_json::Value> =
                map.into_iter().filter(|(_, v)| !v.is_null()).collect();
            serde_json::to_string(&sorted).unwrap_or_else(|_| row.trim().to_string())
        }
        _ => row.trim().to_string(),
    }
}

fn counts(rows: &[String]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(canonical(r)).or_insert(0) += 1;
    }
    m
}

/// At most `n` items, then `... (k more)`.
fn some_of(items: &[String], n: usize) -> String {
    let mut out = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        out.push_str(&format!(", ... ({} more)", items.len() - n));
    }
    format!("[{out}]")
}

/// Checks the rows read back against the rows written. With `exactly_once`, every written row
/// must show exactly once; otherwise at least once. Rows nobody wrote always fail.
pub fn check_rows(
    expected: &[String],
    found: &[String],
    exactly_once: bool,
    after: &str,
) -> Result<(), Failure> {
    let want = counts(expected);
    let got = counts(found);
    let missing: Vec<String> = want
        .keys()
        .filter(|r| !got.contains_key(*r))
        .cloned()
        .collect();
    let duplicated: Vec<String> = if exactly_once {
        got.iter()
            .filter(|(r, n)| want.get(*r).is_some_and(|w| *n > w))
            .map(|(r, n)| format!("{r} x{n}"))
            .collect()
    } else {
        Vec::new()
    };
    let unexpected: Vec<String> = got
        .keys()
        .filter(|r| !want.contains_key(*r))
        .cloned()
        .collect();
    if missing.is_empty() && duplicated.is_empty() && unexpected.is_empty() {
        return Ok(());
    }
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!(
            "{} missing {}",
            missing.len(),
            some_of(&missing, 5)
        ));
    }
    if !duplicated.is_empty() {
        problems.push(format!(
            "{} duplicated {}",
            duplicated.len(),
            some_of(&duplicated, 5)
        ));
    }
    if !unexpected.is_empty() {
        problems.push(format!(
            "{} never written {}",
            unexpected.len(),
            some_of(&unexpected, 5)
        ));
    }
    Err(Failure(format!(
        "after {after}: expected each of the {} written rows {}, read back {} rows: {}",
        expected.len(),
        if exactly_once {
            "exactly once"
        } else {
            "at least once"
        },
        found.len(),
        problems.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn null_members_and_key_order_do_not_matter() {
        assert_eq!(
            canonical(r#"{"name":null,"id":1}"#),
            canonical(r#"{"id":1}"#)
        );
        assert_eq!(canonical(" plain "), "plain");
    }

    #[test]
    fn missing_duplicated_and_unexpected_rows_are_named() {
        let expected = vec![r#"{"id":1}"#.to_string(), r#"{"id":2}"#.to_string()];
        let found = vec![
            r#"{"id":1}"#.to_string(),
            r#"{"id":1}"#.to_string(),
            r#"{"id":3}"#.to_string(),
        ];
        let e = check_rows(&expected, &found, true, "two writes").unwrap_err();
        assert!(e.0.contains("1 missing [{\"id\":2}]"), "{e}");
        assert!(e.0.contains("1 duplicated [{\"id\":1} x2]"), "{e}");
        assert!(e.0.contains("1 never written [{\"id\":3}]"), "{e}");
        let twice = vec![
            expected[0].clone(),
            expected[0].clone(),
            expected[1].clone(),
        ];
        assert!(check_rows(&expected, &twice, false, "x").is_ok());
        assert!(check_rows(&expected, &twice, true, "x").is_err());
    }

    #[test]
    fn micro_batches_have_unique_ids_and_a_null() {
        let b1 = micro_batch(1).unwrap();
        assert_eq!(b1.len(), 2);
        assert_eq!(b1.iter().map(|b| b.num_rows()).sum::<usize>(), 4);
        assert_eq!(b1[0].column(1).null_count(), 1);
        assert_eq!(micro_batch(2).unwrap()[0].num_rows(), 3);
    }
}
