//! CSV, decoded with `arrow-csv`; columns are matched by position, as Spark does with a schema.
//!
//! Records are streamed: the file's bytes are framed into windows of [`BATCH_SIZE`] records as
//! they arrive (a newline inside double quotes does not end a record), so memory is bounded by
//! the batch size. Fast path: each window through `arrow-csv` with the stream's schema. Only when
//! that fails, the window is re-read record by record with the `csv` crate (flexible field
//! counts) into string columns, which are then cast to the schema's types with safe casts:
//!
//! - a record with fewer fields than the schema is malformed: nulls, and its raw text in the
//!   rescued data column;
//! - fields beyond the schema are rescued, as Auto Loader does: the record's columns are read as
//!   usual and its rescued data column holds a JSON object of the extra values, named after the
//!   header (or `_c<index>` without one), plus `_file_path`;
//! - a value that does not cast (`abc` in an INT column) becomes null and goes to the same JSON
//!   object under its column's name.
//!
//! A record with rescued values counts as malformed. In FAILFAST mode the first such record
//! stops the read with `MALFORMED_RECORD` naming file and line. Empty fields are nulls on both
//! paths.
//!
//! An unclosed quote: a quote opens a quoted field only at the start of a field (as in the
//! parsers), and a quoted field may hold newlines, so a quote that never closes would make the
//! rest of the file one field and silently swallow every row after it. It cannot close later:
//! no quote follows it. So at the end of the file the record holding it, from the record's
//! start to the end of the line of the opening quote, is one malformed record (nulls, its raw
//! text in the rescued data column, counted in `numMalformedRecords`; FAILFAST: the read stops
//! naming file and line), and the lines after it are read as ordinary records. Spark's
//! PERMISSIVE mode likewise makes a record it cannot parse a malformed row; its default
//! (`multiLine=false`) never lets a quote span lines at all.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_csv::reader::Format as CsvFormat;
use arrow_csv::ReaderBuilder;
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use tributary_sdk::{Error, ErrorCode, Result};

use super::decoder::{FileDecoder, FileEnd};
use super::framing::{Framer, Quoting, Separator};
use super::{null_as_string, rescued_array, with_rescued, DecodeContext, Decoded, BATCH_SIZE};
use crate::config::{CsvOptions, Mode};
use crate::error::{excerpt, malformed, unreadable};

/// The push decoder of one CSV file: windows of [`BATCH_SIZE`] records (a newline inside quotes
/// does not end one), each through the fast path or, when that fails, the slow path.
pub(crate) fn decoder(path: &str, ctx: &DecodeContext) -> Box<dyn FileDecoder> {
    Box::new(CsvDecoder {
        framer: Framer::new(
            Separator::Newline,
            Some(Quoting {
                quote: ctx.csv.quote,
                delimiter: ctx.csv.delimiter,
                escape: ctx.csv.escape,
                comment: ctx.csv.comment,
            }),
            BATCH_SIZE,
        ),
        window: Window {
            path: path.to_string(),
            ctx: ctx.clone(),
            header_pending: ctx.csv.header,
            header: None,
            malformed: 0,
        },
    })
}

/// Decodes one whole CSV file (tests; the source streams through [`decoder`]).
#[cfg(test)]
pub fn decode(bytes: &[u8], path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    let mut d = decoder(path, ctx);
    let mut batches = Vec::new();
    d.push(bytes, &mut batches)?;
    let end = d.finish(&mut batches)?;
    Ok(Decoded {
        batches,
        malformed: end.malformed,
        ..Decoded::default()
    })
}

struct CsvDecoder {
    framer: Framer,
    window: Window,
}

/// What decoding a window needs across windows: whether the header is still to come, its names.
struct Window {
    path: String,
    ctx: DecodeContext,
    header_pending: bool,
    header: Option<Vec<String>>,
    malformed: u64,
}

impl Window {
    fn decode(&mut self, bytes: &[u8], first_line: u64, out: &mut Vec<RecordBatch>) -> Result<()> {
        let protected = super::csv_escape::protect(bytes, &self.ctx.csv);
        let bytes: &[u8] = &protected;
        let header = std::mem::take(&mut self.header_pending);
        if header {
            self.header = header_names(bytes, &self.ctx);
        }
        let ctx = &self.ctx;
        let mut fast = ReaderBuilder::new(ctx.file_schema.clone())
            .with_header(header)
            .with_delimiter(ctx.csv.delimiter)
            .with_quote(ctx.csv.quote)
            .with_batch_size(BATCH_SIZE);
        if let Some(e) = ctx.csv.escape {
            fast = fast.with_escape(e);
        }
        if let Some(c) = ctx.csv.comment {
            fast = fast.with_comment(c);
        }
        let fast = fast
            .build(Cursor::new(bytes))
            .and_then(|r| r.collect::<Result<Vec<_>, _>>());
        if let Ok(batches) = fast {
            for b in batches {
                out.push(with_rescued(b, None, ctx)?);
            }
            return Ok(());
        }
        let d = slow_path(
            bytes,
            header,
            self.header.as_deref(),
            first_line,
            &self.path,
            ctx,
        )?;
        self.malformed += d.malformed;
        out.extend(d.batches);
        Ok(())
    }
}

impl Window {
    /// A record whose quoted field never closed (see the module doc): one malformed row.
    fn unclosed(&mut self, bytes: &[u8], line: u64, out: &mut Vec<RecordBatch>) -> Result<()> {
        // A damaged first record is the damaged header: no names from it.
        self.header_pending = false;
        let text = record_text(bytes, 0, bytes.len());
        if self.ctx.mode == Mode::FailFast {
            return Err(malformed(
                &self.path,
                line,
                format!(
                    "a quoted field opened in this record never closes before the end of the                      file; record: {}",
                    excerpt(&text).replace('\r', "\\r").replace('\n', "\\n")
                ),
            ));
        }
        let columns = self
            .ctx
            .file_schema
            .fields()
            .iter()
            .map(|f| arrow_array::new_null_array(f.data_type(), 1))
            .collect();
        let batch = RecordBatch::try_new(self.ctx.file_schema.clone(), columns)?;
        out.push(with_rescued(
            batch,
            Some(rescued_array(&[Some(text)])),
            &self.ctx,
        )?);
        self.malformed += 1;
        Ok(())
    }
}

impl FileDecoder for CsvDecoder {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<RecordBatch>) -> Result<()> {
        let window = &mut self.window;
        self.framer
            .push(chunk, &mut |w, line| window.decode(w, line, out))
    }

    fn finish(mut self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        let window = &mut self.window;
        self.framer.finish_quoted(&mut |w, line, unclosed| {
            if unclosed {
                window.unclosed(w, line, out)
            } else {
                window.decode(w, line, out)
            }
        })?;
        Ok(FileEnd {
            malformed: self.window.malformed,
            ..FileEnd::default()
        })
    }
}

/// The names in the header record at the start of `bytes`.
fn header_names(bytes: &[u8], ctx: &DecodeContext) -> Option<Vec<String>> {
    let mut reader = record_reader(&ctx.csv, true).from_reader(bytes);
    let headers = reader.byte_headers().ok()?;
    Some(
        headers
            .iter()
            .map(|h| String::from_utf8_lossy(h).into_owned())
            .collect(),
    )
}

/// The `csv` crate's reader with the stream's CSV options (flexible field counts).
fn record_reader(csv: &CsvOptions, header: bool) -> ::csv::ReaderBuilder {
    let mut b = ::csv::ReaderBuilder::new();
    b.has_headers(header)
        .delimiter(csv.delimiter)
        .quote(csv.quote)
        .escape(csv.escape)
        .comment(csv.comment)
        .flexible(true);
    b
}

/// The rescued name of field `i` beyond the schema: its header name, else `_c<i>` as Spark
/// names columns without a header.
fn extra_name(header: Option<&[String]>, i: usize) -> String {
    header
        .and_then(|h| h.get(i))
        .filter(|n| !n.is_empty())
        .cloned()
        .unwrap_or_else(|| format!("_c{i}"))
}

/// Record by record. `header`: the first record is the header (skipped); `names`: the header's
/// names (for extra fields); `first_line`: the file line of the window's first line.
fn slow_path(
    bytes: &[u8],
    header: bool,
    names: Option<&[String]>,
    first_line: u64,
    path: &str,
    ctx: &DecodeContext,
) -> Result<Decoded> {
    let fields = ctx.file_schema.fields();
    let n = fields.len();
    let mut raw: Vec<Vec<Option<String>>> = vec![Vec::new(); n];
    let mut rescued: Vec<Option<String>> = Vec::new();
    // Per row: values rescued as `name -> text` (extra fields now, failed casts below).
    let mut failed: Vec<Vec<(String, String)>> = Vec::new();
    let mut line_of_row: Vec<u64> = Vec::new();
    let mut malformed_rows = 0u64;
    let mut reader = record_reader(&ctx.csv, header).from_reader(bytes);
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
        let line = record.position().map_or(0, |p| p.line()) + first_line - 1;
        let mut extra = Vec::new();
        if record.len() < n {
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
            if record.len() > n {
                if ctx.mode == Mode::FailFast {
                    let text = record_text(bytes, start, end);
                    return Err(malformed(
                        path,
                        line,
                        format!(
                            "{} fields where the schema has {n}; record: {}",
                            record.len(),
                            excerpt(&text)
                        ),
                    ));
                }
                // Fields beyond the schema are rescued by name, the others read as usual.
                for (i, value) in record.iter().enumerate().skip(n) {
                    extra.push((
                        extra_name(names, i),
                        String::from_utf8_lossy(value).into_owned(),
                    ));
                }
            }
            for (col, value) in raw.iter_mut().zip(record.iter()) {
                col.push((!value.is_empty()).then(|| String::from_utf8_lossy(value).into_owned()));
            }
            rescued.push(None);
        }
        failed.push(extra);
        line_of_row.push(line);
    }

    let options = CastOptions {
        safe: true,
        ..Default::default()
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(n);
    for (field, values) in fields.iter().zip(raw.iter()) {
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
                    if ctx.mode == Mode::FailFast {
                        return Err(malformed(
                            path,
                            line_of_row[row],
                            format!(
                                "value '{}' does not fit column '{}' of type {}",
                                excerpt(v),
                                field.name(),
                                field.data_type()
                            ),
                        ));
                    }
                    failed[row].push((field.name().clone(), v.clone()));
                }
            }
        }
        columns.push(cast);
    }
    for (row, fails) in failed.into_iter().enumerate() {
        if fails.is_empty() {
            continue;
        }
        // Keys in name order whatever serde_json's `preserve_order` feature says.
        let mut obj: std::collections::BTreeMap<String, String> = fails.into_iter().collect();
        obj.insert("_file_path".into(), path.to_string());
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
        let mut format = CsvFormat::default()
            .with_header(csv.header)
            .with_delimiter(csv.delimiter)
            .with_quote(csv.quote)
            .with_truncated_rows(true);
        if let Some(e) = csv.escape {
            format = format.with_escape(e);
        }
        if let Some(c) = csv.comment {
            format = format.with_comment(c);
        }
        let (schema, read) = format
            .infer_schema(
                Cursor::new(super::csv_escape::protect(bytes, &csv).as_ref()),
                Some(remaining),
            )
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
                ..CsvOptions::default()
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
        let opts = CsvOptions::default();
        let s = infer(&samples, 10, true, opts).unwrap();
        assert_eq!(s.field(0).name(), "_c0");
        assert_eq!(s.field(0).data_type(), &DataType::Int64);
        assert_eq!(s.field(2).data_type(), &DataType::Float64);
        let s = infer(&samples, 10, false, opts).unwrap();
        assert!(s.fields().iter().all(|f| f.data_type() == &DataType::Utf8));
    }
}
