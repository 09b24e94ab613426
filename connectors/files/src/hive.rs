//! Hive-style partition columns (`cloudFiles.partitionColumns`): `key=value` directory names
//! between the listed directory and a file (`<path>/year=2026/month=12/f.json`) give the file's
//! rows typed columns, as Auto Loader does.
//!
//! Which columns: the names in `cloudFiles.partitionColumns` (`""`: none); without the option,
//! with an inferred schema, every key of the sampled files' directories, in the order first
//! seen; with a given schema, none unless named (the named columns must then be in the schema,
//! whose type they keep). A file whose path lacks a column, or holds
//! `__HIVE_DEFAULT_PARTITION__`, has null there. Values are URL-unescaped (`%3A` is `:`).
//!
//! Types: strings, unless `cloudFiles.inferColumnTypes=true`, then as Spark infers partition
//! values: int, else bigint, else double, else date (`yyyy-MM-dd`), else string, widened over
//! the sampled files. The partition columns follow the file's columns and the rescued data
//! column, before `_metadata`; a data column of the same name is replaced by the partition
//! column (the path wins, as in Spark).

use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, StringArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field};
use tributary_sdk::{Error, ErrorCode, Result};

/// Hive's name for a null partition value.
pub const DEFAULT_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// The `key=value` directories of `relative` (a file's path below the listed directory, `/`
/// separated; its last segment is the file name), unescaped; `None` values are null.
pub fn path_values(relative: &str) -> Vec<(String, Option<String>)> {
    let mut segments: Vec<&str> = relative.split('/').filter(|s| !s.is_empty()).collect();
    segments.pop();
    segments
        .into_iter()
        .filter_map(|segment| {
            let (key, value) = segment.split_once('=')?;
            if key.is_empty() {
                return None;
            }
            let value = unescape(value);
            Some((unescape(key), (value != DEFAULT_PARTITION).then_some(value)))
        })
        .collect()
}

/// `%xx` escapes decoded (an invalid escape is kept as written).
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The partition keys of the sampled files' relative paths, in the order first seen.
pub fn discovered_keys(relatives: &[String]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for r in relatives {
        for (k, _) in path_values(r) {
            if !keys.iter().any(|seen| seen.eq_ignore_ascii_case(&k)) {
                keys.push(k);
            }
        }
    }
    keys
}

/// The field of partition column `name` from the sampled values: strings, or with
/// `infer_types` the narrowest of int, bigint, double, date, string that holds every value.
pub fn infer_field(name: &str, relatives: &[String], infer_types: bool) -> Field {
    let values: Vec<String> = relatives
        .iter()
        .flat_map(|r| path_values(r))
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .filter_map(|(_, v)| v)
        .collect();
    let dt = if !infer_types || values.is_empty() {
        DataType::Utf8
    } else if values.iter().all(|v| v.parse::<i32>().is_ok()) {
        DataType::Int32
    } else if values.iter().all(|v| v.parse::<i64>().is_ok()) {
        DataType::Int64
    } else if values
        .iter()
        .all(|v| v.parse::<f64>().is_ok_and(f64::is_finite))
    {
        DataType::Float64
    } else if values
        .iter()
        .all(|v| chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok() && v.len() == 10)
    {
        DataType::Date32
    } else {
        DataType::Utf8
    };
    Field::new(name, dt, true)
}

/// The partition columns of one file (`rows` rows): each field's value from the file's path,
/// cast to its type (a value that does not cast is null).
pub fn columns(relative: &str, fields: &[Field], rows: usize) -> Result<Vec<ArrayRef>> {
    let values = path_values(relative);
    fields
        .iter()
        .map(|f| {
            let value = values
                .iter()
                .rev()
                .find(|(k, _)| k.eq_ignore_ascii_case(f.name()))
                .and_then(|(_, v)| v.clone());
            let Some(value) = value else {
                return Ok(new_null_array(f.data_type(), rows));
            };
            let text: ArrayRef = Arc::new(StringArray::from(vec![value.as_str()]));
            let one = cast_with_options(
                &text,
                f.data_type(),
                &CastOptions {
                    safe: true,
                    ..Default::default()
                },
            )
            .map_err(|e| {
                Error::new(
                    ErrorCode::Schema,
                    format!(
                        "partition column '{}' of type {} cannot be read from a path",
                        f.name(),
                        f.data_type()
                    ),
                )
                .with_cause(e)
            })?;
            repeat(&one, rows)
        })
        .collect()
}

/// A one-row array repeated `rows` times.
fn repeat(one: &ArrayRef, rows: usize) -> Result<ArrayRef> {
    if one.is_null(0) {
        return Ok(new_null_array(one.data_type(), rows));
    }
    let indices = arrow_array::UInt32Array::from(vec![0u32; rows]);
    Ok(arrow_select::take::take(one.as_ref(), &indices, None)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Date32Array, Int32Array};

    #[test]
    fn key_value_directories_become_typed_values() {
        assert_eq!(
            path_values("year=2026/x/month=12/a=b%3Dc/f=1.json"),
            vec![
                ("year".into(), Some("2026".into())),
                ("month".into(), Some("12".into())),
                ("a".into(), Some("b=c".into())),
            ]
        );
        assert_eq!(
            path_values("d=__HIVE_DEFAULT_PARTITION__/f.csv"),
            vec![("d".into(), None)]
        );
        let rel = vec![
            "year=2026/month=12/day=2026-12-01/a.json".to_string(),
            "year=2027/month=1/day=2027-01-02/b.json".to_string(),
            "year=2027/f.json".to_string(),
        ];
        assert_eq!(discovered_keys(&rel), ["year", "month", "day"]);
        assert_eq!(
            infer_field("year", &rel, true).data_type(),
            &DataType::Int32
        );
        assert_eq!(
            infer_field("day", &rel, true).data_type(),
            &DataType::Date32
        );
        assert_eq!(
            infer_field("year", &rel, false).data_type(),
            &DataType::Utf8
        );
        let fields = [
            infer_field("year", &rel, true),
            infer_field("day", &rel, true),
            Field::new("missing", DataType::Utf8, true),
        ];
        let cols = columns(&rel[1], &fields, 3).unwrap();
        let year = cols[0].as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(year.values().as_ref(), [2027, 2027, 2027]);
        let day = cols[1].as_any().downcast_ref::<Date32Array>().unwrap();
        assert_eq!(day.value(2), 20_820);
        assert_eq!(cols[2].null_count(), 3);
    }
}
