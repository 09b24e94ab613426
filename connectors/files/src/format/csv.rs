//! CSV, decoded with `arrow-csv`; columns are matched by position, as Spark does with a schema.
//!
//! Fast path: the whole file through `arrow-csv` with the stream's schema. Only when that fails,
//! the file is re-read record by record with the `csv` crate (flexible field counts) into string
//! columns, which are then cast to the schema's types with safe casts:
//!
//! - a record with the wrong number of fields is malformed: nulls, and its raw text in the
//!   rescued data column;
//! - a value that does not cast (`abc` in an INT column) becomes null, and the record's rescued
//!   data column holds a JSON object of the failed values plus `_file_path`, as Auto Loader does;
//!   the record counts as malformed.
//!
//! In FAILFAST mode the first such record stops the read with `MALFORMED_RECORD` naming file
//! and line. Empty fields are nulls on both paths.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_csv::reader::Format as CsvFormat;
use arrow_csv::ReaderBuilder;
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use tributary_sdk::{Error, ErrorCode, Result};

use super::{null_as_string, rescued_array, with_rescued, DecodeContext, Decoded, BATCH_SIZE};
use crate::config::{CsvOptions, Mode};
use crate::error::{excerpt, malformed, unreadable};

/// Decodes one CSV file.
pub fn decode(bytes: &[u8], path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    let fast = ReaderBuilder::new(ctx.file_schema.clone())
        .with_header(ctx.csv.header)
        .with_delimiter(ctx.csv.delimiter)
        .with_batch_size(BATCH_SIZE)
        .build(Cursor::new(bytes))
        .and_then(|r| r.collect::<Result<Vec<_>, _>>());
    if let Ok(batches) = fast {
        let batches = batches
            .into_iter()
            .map(|b| with_rescued(b, None, ctx))
            .collect::<Result<Vec<_>>>()?;
        return Ok(Decoded {
            batches,
            ..Decoded::default()
        });
    }
    slow_path(bytes, path, ctx)
}

fn slow_path(bytes: &[u8], path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    let fields = ctx.file_schema.fields();
    let n = fields.len();
    let mut raw: Vec<Vec<Option<String>>> = vec![Vec::new(); n];
    let mut rescued: Vec<Option<String>> = Vec::new();
    let mut line_of_row: Vec<u64> = Vec::new();
    let mut malformed_rows = 0u64;
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(ctx.csv.header)
        .delimiter(ctx.csv.delimiter)
        .flexible(true)
        .from_reader(bytes);
    let mut record = ::csv::ByteRecord::new();
    loop {
        let more = reader
            .read_byte_record(&mut record)
            .map_err(|e| unreadable(path, e))?;
        if !more {
            break;
        }
        let end = reader.position().byte() as usize;
        let start = record.position().map_or(end, |p| p.byte() as usize);
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != n {
            let text = record_text(bytes, start, end);
            let reason = format!("{} fields where the schema has {n}", record.len());
            if ctx.mode == Mode::FailFast {
                return Err(malformed(
                    path,
                    line,
                    format!("{reason}; record: {}", excerpt(&text)),
                ));
            }
            for col in raw.iter_mut() {
                col.push(None);
            }
            rescued.push(Some(text));
            malformed_rows += 1;
        } else {
            for (col, value) in raw.iter_mut().zip(record.iter()) {
                col.push((!value.is_empty()).then(|| String::from_utf8_lossy(value).into_owned()));
            }
            rescued.push(None);
        }
        line_of_row.push(line);
    }

    let options = CastOptions {
        safe: true,
        ..Default::default()
    };
    let mut failed: Vec<Vec<(usize, String)>> = vec![Vec::new(); rescued.len()];
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(n);
    for (c, (field, values)) in fields.iter().zip(raw.iter()).enumerate() {
        let strings: ArrayRef =
            Arc::new(StringArray::from_iter(values.iter().map(|v| v.as_deref())));
        let cast = cast_with_options(&strings, field.data_type(), &options).map_err(|e| {
            Error::new(
                ErrorCode::Schema,
                format!(
                    "column '{}' of type {} cannot be read from CSV text",
                    field.name(),
                    field.data_type()
                ),
            )
            .with_context("file", path)
            .with_cause(e)
        })?;
        for (row, value) in values.iter().enumerate() {
            if let Some(v) = value {
                if cast.is_null(row) {
                    failed[row].push((c, v.clone()));
                }
            }
        }
        columns.push(cast);
    }
    for (row, fails) in failed.iter().enumerate() {
        if fails.is_empty() {
            continue;
        }
        if ctx.mode == Mode::FailFast {
            let (c, v) = &fails[0];
            return Err(malformed(
                path,
                line_of_row[row],
                format!(
                    "value '{}' does not fit column '{}' of type {}",
                    excerpt(v),
                    fields[*c].name(),
                    fields[*c].data_type()
                ),
            ));
        }
        // Keys in name order whatever serde_json's `preserve_order` feature says.
        let mut obj = std::collections::BTreeMap::new();
        for (c, v) in fails {
            obj.insert(fields[*c].name().as_str(), v.as_str());
        }
        obj.insert("_file_path", path);
        rescued[row] = Some(serde_json::to_string(&obj).map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot encode rescued data").with_cause(e)
        })?);
        malformed_rows += 1;
    }
    let batch = RecordBatch::try_new(ctx.file_schema.clone(), columns)?;
    let batch = with_rescued(batch, Some(rescued_array(&rescued)), ctx)?;
    Ok(Decoded {
        batches: vec![batch],
        malformed: malformed_rows,
        ..Decoded::default()
    })
}

fn record_text(bytes: &[u8], start: usize, end: usize) -> String {
    let slice = bytes.get(start..end.min(bytes.len())).unwrap_or_default();
    let slice = slice.strip_suffix(b"\n").unwrap_or(slice);
    let slice = slice.strip_suffix(b"\r").unwrap_or(slice);
    String::from_utf8_lossy(slice).into_owned()
}

/// Infers columns from the first `max_records` rows of the samples. Without a header the
/// columns are named `_c0`, `_c1`, ... as in Spark. A column whose type differs between files
/// becomes a string (or a double for integer + double).
pub fn infer(
    samples: &[(String, Bytes)],
    max_records: usize,
    infer_types: bool,
    csv: CsvOptions,
) -> Result<Schema> {
    let mut merged: Vec<Field> = Vec::new();
    let mut remaining = max_records;
    for (path, bytes) in samples {
        if remaining == 0 {
            break;
        }
        let (schema, read) = CsvFormat::default()
            .with_header(csv.header)
            .with_delimiter(csv.delimiter)
            .with_truncated_rows(true)
            .infer_schema(Cursor::new(bytes), Some(remaining))
            .map_err(|e| unreadable(path, e))?;
        remaining = remaining.saturating_sub(read.max(1));
        for (i, f) in schema.fields().iter().enumerate() {
            let name = if csv.header {
                f.name().clone()
            } else {
                format!("_c{i}")
            };
            let dt = if infer_types {
                null_as_string(f.data_type())
            } else {
                DataType::Utf8
            };
            match merged.get_mut(i) {
                Some(existing) if existing.data_type() != &dt => {
                    let wider = match (existing.data_type(), &dt) {
                        (DataType::Int64, DataType::Float64)
                        | (DataType::Float64, DataType::Int64) => DataType::Float64,
                        _ => DataType::Utf8,
                    };
                    *existing = existing.clone().with_data_type(wider);
                }
                Some(_) => {}
                None => merged.push(Field::new(name, dt, true)),
            }
        }
    }
    if merged.is_empty() {
        return Err(Error::new(
            ErrorCode::Schema,
            format!(
                "cannot infer a schema: the {} sampled CSV file(s) hold no rows; give the 'schema' \
                 option or add data first",
                samples.len()
            ),
        )
        .with_context("option", crate::config::names::SCHEMA));
    }
    Ok(Schema::new(merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Format;
    use arrow_array::{Float64Array, Int32Array};

    fn ctx(mode: Mode, header: bool) -> DecodeContext {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("price", DataType::Float64, true),
        ]));
        DecodeContext::new(
            Format::Csv,
            schema,
            "_rescued_data",
            mode,
            CsvOptions {
                header,
                delimiter: b',',
            },
        )
    }

    #[test]
    fn fast_path_reads_typed_columns_after_the_header() {
        let d = decode(
            b"id,name,price\n1,a,1.5\n2,,\n",
            "f",
            &ctx(Mode::Permissive, true),
        )
        .unwrap();
        assert_eq!(d.malformed, 0);
        let b = &d.batches[0];
        assert_eq!(b.num_rows(), 2);
        assert_eq!(
            b.column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap()
                .value(1),
            2
        );
        assert!(b.column(1).is_null(1));
        assert!(b.column(3).is_null(0));
    }

    #[test]
    fn values_that_do_not_cast_are_rescued_and_ragged_rows_are_malformed() {
        let text = b"1,a,1.5\nx,b,2.5\n3,c\n4,d,oops\n";
        let d = decode(text, "/in/f.csv", &ctx(Mode::Permissive, false)).unwrap();
        assert_eq!(d.malformed, 3);
        let b = &d.batches[0];
        assert_eq!(b.num_rows(), 4);
        let id = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(id.value(0), 1);
        assert!(id.is_null(1));
        assert_eq!(id.value(3), 4);
        let price = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(price.value(1), 2.5);
        assert!(price.is_null(3));
        let r = b.column(3).as_any().downcast_ref::<StringArray>().unwrap();
        assert!(r.is_null(0));
        assert_eq!(r.value(1), r#"{"_file_path":"/in/f.csv","id":"x"}"#);
        assert_eq!(r.value(2), "3,c");
        assert_eq!(r.value(3), r#"{"_file_path":"/in/f.csv","price":"oops"}"#);
    }

    #[test]
    fn failfast_names_the_line() {
        let e = decode(
            b"id,name,price\n1,a,1\n2,b,zz\n",
            "f.csv",
            &ctx(Mode::FailFast, true),
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::MalformedRecord);
        assert_eq!(e.context_value("row"), Some("3"));
    }

    #[test]
    fn inference_names_columns_like_spark() {
        let samples = vec![("a".into(), Bytes::from_static(b"1,x,2.5\n2,y,3\n"))];
        let opts = CsvOptions {
            header: false,
            delimiter: b',',
        };
        let s = infer(&samples, 10, true, opts).unwrap();
        assert_eq!(s.field(0).name(), "_c0");
        assert_eq!(s.field(0).data_type(), &DataType::Int64);
        assert_eq!(s.field(2).data_type(), &DataType::Float64);
        let s = infer(&samples, 10, false, opts).unwrap();
        assert!(s.fields().iter().all(|f| f.data_type() == &DataType::Utf8));
    }
}
