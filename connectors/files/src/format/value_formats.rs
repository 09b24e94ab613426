//! Text values the Arrow readers cannot type themselves: CSV `nullValue` (e.g. `NA`) and the
//! `timestampFormat` / `dateFormat` patterns of JSON and CSV.
//!
//! The file is decoded with those columns as strings (every CSV column when `nullValue` is
//! given; the TIMESTAMP and DATE columns with a pattern), then each batch is converted: the
//! null text becomes null, timestamps and dates are parsed with the pattern (chrono), other
//! columns cast as the readers would. A value that does not convert is null, and its text goes
//! to the rescued data column as `{"<column>": "<text>", "_file_path": ...}` (merged into what
//! the row already rescued), counted as a malformed record; in FAILFAST mode the read stops
//! with `MALFORMED_RECORD`, as for any value that does not fit its column.
//!
//! CSV inference with `cloudFiles.inferColumnTypes=true` uses the same options
//! ([`retype_csv`]): the null text does not make a number column a string column, and values
//! matching `dateFormat` / `timestampFormat` make DATE / TIMESTAMP columns.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Date32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use chrono::{DateTime, NaiveDate, NaiveDateTime};
use tributary_sdk::{Error, ErrorCode, Result};

use super::decoder::{FileDecoder, FileEnd};
use super::{DecodeContext, Format};
use crate::config::{datetime, Mode};
use crate::error::{excerpt, malformed};

/// How one column converts.
#[derive(Debug, Clone)]
enum Conversion {
    /// Cast from text (after the null text is removed).
    Cast,
    /// Parsed with a timestamp pattern (chrono syntax).
    Timestamp(String),
    /// Parsed with a date pattern (chrono syntax).
    Date(String),
}

/// The columns (by index in the file schema) decoded as text, and how each converts.
fn conversions(format: Format, ctx: &DecodeContext) -> Vec<(usize, Conversion)> {
    let f = &ctx.formats;
    let all = format == Format::Csv && f.null_value.is_some();
    ctx.file_schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, field)| {
            let c = match field.data_type() {
                DataType::Timestamp(..) => f.timestamp_format.clone().map(Conversion::Timestamp),
                DataType::Date32 => f.date_format.clone().map(Conversion::Date),
                _ => None,
            };
            match c {
                Some(c) => Some((i, c)),
                None if all => Some((i, Conversion::Cast)),
                None => None,
            }
        })
        .collect()
}

/// `inner` built for the text context, wrapped to convert its batches; `None` when no column
/// needs converting. `build` makes the inner decoder from a context.
pub(crate) fn wrap(
    format: Format,
    path: &str,
    ctx: &DecodeContext,
    build: impl FnOnce(&DecodeContext) -> Result<Box<dyn FileDecoder>>,
) -> Result<Option<Box<dyn FileDecoder>>> {
    let columns = conversions(format, ctx);
    if columns.is_empty() {
        return Ok(None);
    }
    let mut fields: Vec<Field> = ctx
        .file_schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    for (i, _) in &columns {
        fields[*i] = fields[*i].clone().with_data_type(DataType::Utf8);
    }
    let mut text_ctx = DecodeContext::new(
        format,
        Arc::new(Schema::new(fields)),
        rescued_name(ctx),
        ctx.mode,
        ctx.csv,
    );
    text_ctx.multi_line = ctx.multi_line;
    text_ctx.evolution = ctx.evolution;
    text_ctx.options = ctx.options.clone();
    text_ctx.allow_comments = ctx.allow_comments;
    let inner = build(&text_ctx)?;
    Ok(Some(Box::new(Converting {
        inner,
        ctx: ctx.clone(),
        columns,
        path: path.to_string(),
        malformed: 0,
        rows: 0,
    })))
}

fn rescued_name(ctx: &DecodeContext) -> &str {
    ctx.decoded_schema
        .fields()
        .last()
        .map(|f| f.name().as_str())
        .unwrap_or(crate::columns::RESCUED_DATA_COLUMN)
}

struct Converting {
    inner: Box<dyn FileDecoder>,
    ctx: DecodeContext,
    columns: Vec<(usize, Conversion)>,
    path: String,
    malformed: u64,
    rows: u64,
}

impl FileDecoder for Converting {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<RecordBatch>) -> Result<()> {
        let mut text = Vec::new();
        self.inner.push(chunk, &mut text)?;
        for b in text {
            out.push(self.convert(b)?);
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        let mut text = Vec::new();
        let inner = std::mem::replace(&mut self.inner, Box::new(Nothing));
        let mut end = inner.finish(&mut text)?;
        for b in text {
            out.push(self.convert(b)?);
        }
        end.malformed += self.malformed;
        Ok(end)
    }
}

/// Stands in for the inner decoder once it finished.
struct Nothing;

impl FileDecoder for Nothing {
    fn push(&mut self, _chunk: &[u8], _out: &mut Vec<RecordBatch>) -> Result<()> {
        Ok(())
    }
    fn finish(self: Box<Self>, _out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        Ok(FileEnd::default())
    }
}

impl Converting {
    fn convert(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut columns = batch.columns().to_vec();
        let rescued_at = columns.len() - 1;
        // Per row: the values that did not convert.
        let mut failed: Vec<Vec<(String, String)>> = vec![Vec::new(); rows];
        for (i, conversion) in &self.columns {
            let field = self.ctx.file_schema.field(*i);
            let Some(text) = columns[*i].as_any().downcast_ref::<StringArray>() else {
                continue;
            };
            let null_text = self.ctx.formats.null_value.as_deref();
            let cleaned: StringArray = text
                .iter()
                .map(|v| v.filter(|v| Some(*v) != null_text))
                .collect();
            let typed = convert_column(&cleaned, field.data_type(), conversion)?;
            for (row, value) in cleaned.iter().enumerate() {
                if let Some(v) = value {
                    if typed.is_null(row) {
                        if self.ctx.mode == Mode::FailFast {
                            return Err(malformed(
                                &self.path,
                                self.rows + row as u64 + 1,
                                format!(
                                    "value '{}' does not fit column '{}' of type {} (record {} \
                                     of the file)",
                                    excerpt(v),
                                    field.name(),
                                    field.data_type(),
                                    self.rows + row as u64 + 1
                                ),
                            ));
                        }
                        failed[row].push((field.name().clone(), v.to_string()));
                    }
                }
            }
            columns[*i] = typed;
        }
        if failed.iter().any(|f| !f.is_empty()) {
            let old = columns[rescued_at]
                .as_any()
                .downcast_ref::<StringArray>()
                .cloned()
                .unwrap_or_else(|| StringArray::from(vec![None::<&str>; rows]));
            let mut merged: Vec<Option<String>> = Vec::with_capacity(rows);
            for (row, fails) in failed.into_iter().enumerate() {
                let before = old.is_valid(row).then(|| old.value(row).to_string());
                if fails.is_empty() {
                    merged.push(before);
                    continue;
                }
                let mut obj = match before
                    .as_deref()
                    .map(serde_json::from_str::<serde_json::Value>)
                {
                    Some(Ok(serde_json::Value::Object(o))) => o,
                    // The raw text of a malformed record: the row is rescued already.
                    Some(_) => {
                        merged.push(before);
                        continue;
                    }
                    None => {
                        self.malformed += 1;
                        serde_json::Map::new()
                    }
                };
                for (k, v) in fails {
                    obj.insert(k, serde_json::Value::String(v));
                }
                obj.insert(
                    "_file_path".into(),
                    serde_json::Value::String(self.path.clone()),
                );
                merged.push(Some(serde_json::Value::Object(obj).to_string()));
            }
            columns[rescued_at] = Arc::new(StringArray::from(merged));
        }
        self.rows += rows as u64;
        Ok(RecordBatch::try_new(
            self.ctx.decoded_schema.clone(),
            columns,
        )?)
    }
}

/// One text column as `target`.
fn convert_column(text: &StringArray, target: &DataType, c: &Conversion) -> Result<ArrayRef> {
    match (c, target) {
        (Conversion::Timestamp(pattern), DataType::Timestamp(unit, tz)) => {
            let micros = text
                .iter()
                .map(|v| v.and_then(|v| parse_timestamp(v, pattern)));
            let values: Vec<Option<i64>> = micros
                .map(|m| {
                    m.map(|us| match unit {
                        TimeUnit::Second => us.div_euclid(1_000_000),
                        TimeUnit::Millisecond => us.div_euclid(1_000),
                        TimeUnit::Microsecond => us,
                        TimeUnit::Nanosecond => us.saturating_mul(1_000),
                    })
                })
                .collect();
            let tz = tz.clone();
            Ok(match unit {
                TimeUnit::Second => {
                    Arc::new(TimestampSecondArray::from(values).with_timezone_opt(tz))
                }
                TimeUnit::Millisecond => {
                    Arc::new(TimestampMillisecondArray::from(values).with_timezone_opt(tz))
                }
                TimeUnit::Microsecond => {
                    Arc::new(TimestampMicrosecondArray::from(values).with_timezone_opt(tz))
                }
                TimeUnit::Nanosecond => {
                    Arc::new(TimestampNanosecondArray::from(values).with_timezone_opt(tz))
                }
            })
        }
        (Conversion::Date(pattern), DataType::Date32) => {
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
            let days: Date32Array = text
                .iter()
                .map(|v| {
                    v.and_then(|v| NaiveDate::parse_from_str(v.trim(), pattern).ok())
                        .and_then(|d| i32::try_from((d - epoch).num_days()).ok())
                })
                .collect();
            Ok(Arc::new(days))
        }
        _ => {
            let strings: ArrayRef = Arc::new(text.clone());
            cast_with_options(
                &strings,
                target,
                &CastOptions {
                    safe: true,
                    ..Default::default()
                },
            )
            .map_err(|e| {
                Error::new(
                    ErrorCode::Schema,
                    format!("type {target} cannot be read from text"),
                )
                .with_cause(e)
            })
        }
    }
}

/// Microseconds since the epoch of `value` read with chrono pattern `pattern`: with an offset
/// in the pattern as that instant, without as UTC; a pattern without a time of day reads
/// midnight.
fn parse_timestamp(value: &str, pattern: &str) -> Option<i64> {
    let value = value.trim();
    if datetime::has_offset(pattern) {
        return DateTime::parse_from_str(value, pattern)
            .ok()
            .map(|t| t.timestamp_micros());
    }
    if datetime::has_time(pattern) {
        return NaiveDateTime::parse_from_str(value, pattern)
            .ok()
            .map(|t| t.and_utc().timestamp_micros());
    }
    NaiveDate::parse_from_str(value, pattern)
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_micros())
}

/// CSV inference (`cloudFiles.inferColumnTypes=true`) with `nullValue`, `dateFormat` or
/// `timestampFormat`: a column the Arrow inference left as strings is typed again from the
/// sampled values without the null text: bigint, double, date (the pattern), timestamp (the
/// pattern), in that order, as Spark's CSV inference does with these options.
pub(crate) fn retype_csv(
    schema: Schema,
    samples: &[(String, bytes::Bytes)],
    max_records: usize,
    csv: crate::config::CsvOptions,
    formats: &crate::config::ValueFormats,
) -> Result<Schema> {
    if !formats.converts() {
        return Ok(schema);
    }
    let n = schema.fields().len();
    let mut values: Vec<Vec<String>> = vec![Vec::new(); n];
    let mut seen = 0;
    'files: for (path, bytes) in samples {
        let protected = super::csv_escape::protect(bytes, &csv);
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(csv.header)
            .delimiter(csv.delimiter)
            .quote(csv.quote)
            .escape(csv.escape)
            .comment(csv.comment)
            .flexible(true)
            .from_reader(protected.as_ref());
        for record in reader.records() {
            if seen >= max_records {
                break 'files;
            }
            seen += 1;
            let record = record.map_err(|e| crate::error::unreadable(path, e))?;
            for (i, v) in record.iter().enumerate().take(n) {
                if !v.is_empty() && Some(v) != formats.null_value.as_deref() {
                    values[i].push(v.to_string());
                }
            }
        }
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(values)
        .map(|(f, vals)| {
            if f.data_type() != &DataType::Utf8 || vals.is_empty() {
                return f.as_ref().clone();
            }
            let all = |ok: &dyn Fn(&str) -> bool| vals.iter().all(|v| ok(v));
            let dt = if all(&|v| v.parse::<i64>().is_ok()) {
                DataType::Int64
            } else if all(&|v| v.parse::<f64>().is_ok()) {
                DataType::Float64
            } else if formats
                .date_format
                .as_deref()
                .is_some_and(|p| all(&|v| NaiveDate::parse_from_str(v.trim(), p).is_ok()))
            {
                DataType::Date32
            } else if formats
                .timestamp_format
                .as_deref()
                .is_some_and(|p| all(&|v| parse_timestamp(v, p).is_some()))
            {
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            } else {
                DataType::Utf8
            };
            f.as_ref().clone().with_data_type(dt)
        })
        .collect();
    Ok(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_with_and_without_offsets() {
        let p = datetime::to_chrono("o", "dd/MM/yyyy HH:mm:ss").unwrap();
        assert_eq!(
            parse_timestamp("02/01/1970 00:00:01", &p),
            Some(86_401_000_000)
        );
        assert_eq!(parse_timestamp("1970-01-02 00:00:01", &p), None);
        let p = datetime::to_chrono("o", "yyyy-MM-dd HH:mmXXX").unwrap();
        assert_eq!(parse_timestamp("1970-01-01 01:00+01:00", &p), Some(0));
        let p = datetime::to_chrono("o", "yyyyMMdd").unwrap();
        assert_eq!(parse_timestamp("19700102", &p), Some(86_400_000_000));
    }
}
