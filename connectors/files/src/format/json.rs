//! JSON lines: one JSON object per line, decoded with `arrow-json`. With `multiLine` a file is
//! one JSON document (an object, or an array of objects) whose records are turned into lines
//! first (serde_json parses the document; arrow-json has no reader for a top-level array).
//!
//! Lines are streamed ([`LinesDecoder`]): the file's bytes are framed into windows of
//! [`BATCH_SIZE`] lines as they arrive, so memory is bounded by the batch size. Fast path: each
//! window through one strict decoder, reused from window to window (unknown fields are an error,
//! numbers and booleans are accepted into string columns as Spark does). Only when a window
//! fails, each of its lines is checked on its own:
//!
//! - it decodes strictly: kept as is;
//! - it decodes once unknown fields are allowed: kept, and its unknown fields, at any depth
//!   (inside struct columns, array elements and map values, see [`super::unknown_fields`]), go
//!   to the rescued data column as a JSON object with the record's nesting (Auto Loader's
//!   behaviour for columns that are not in the schema);
//! - otherwise (not JSON, not an object, a value that does not fit its column): malformed. In
//!   PERMISSIVE mode the row is all nulls with the raw line in the rescued data column and it
//!   is counted; in FAILFAST mode the read stops with `MALFORMED_RECORD` naming file and line.
//!
//! The cleaned window (malformed lines replaced by `{}`) is then decoded in one go, so the rows
//! stay in file order and every line yields exactly one row.
//!
//! Nesting is bounded: a line whose arrays and objects nest deeper than [`MAX_DEPTH`] levels
//! is malformed before any decoder sees it (arrow-json builds its error message for such a
//! line recursively and would overflow the stack). A window is checked with one `memchr` pass
//! counting `[` and `{` per line; only a line with more than `MAX_DEPTH` of them is scanned
//! exactly (brackets inside strings do not count).

use std::io::Cursor;

use arrow_array::RecordBatch;
use arrow_json::reader::{infer_json_schema_from_iterator, Decoder, ReaderBuilder};
use arrow_schema::{ArrowError, DataType, Schema};
use bytes::Bytes;
use tributary_sdk::{Error, ErrorCode, Result};

use super::decoder::{Buffered, FileDecoder, FileEnd};
use super::framing::{Framer, Separator};
use super::unknown_fields::{merge_sample, rescued_fields, unknown_fields};
use super::{
    leaves_as_strings, null_as_string, rescued_array, with_rescued, DecodeContext, Decoded,
    BATCH_SIZE,
};
use crate::config::{Mode, SchemaEvolution};
use crate::error::{excerpt, malformed, unreadable};

/// The deepest nesting of arrays and objects a JSON line may have; deeper is malformed.
pub const MAX_DEPTH: usize = 512;

/// True when some line of `window` nests deeper than [`MAX_DEPTH`].
fn any_line_too_deep(window: &[u8]) -> bool {
    let mut line_start = 0;
    let mut openers = 0usize;
    for at in memchr::memchr3_iter(b'[', b'{', b'\n', window) {
        if window[at] == b'\n' {
            if openers > MAX_DEPTH && too_deep(&window[line_start..at]) {
                return true;
            }
            line_start = at + 1;
            openers = 0;
        } else {
            openers += 1;
        }
    }
    openers > MAX_DEPTH && too_deep(&window[line_start..])
}

/// True when `line`'s arrays and objects nest deeper than [`MAX_DEPTH`] (outside strings).
fn too_deep(line: &[u8]) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in line {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn builder(ctx: &DecodeContext, strict: bool) -> ReaderBuilder {
    ReaderBuilder::new(ctx.file_schema.clone())
        .with_batch_size(BATCH_SIZE)
        .with_coerce_primitive(true)
        .with_strict_mode(strict)
}

/// Decodes one whole JSON file: JSON lines, or with `multiLine` one document per file.
pub fn decode(bytes: &[u8], path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    if ctx.multi_line {
        return decode_document(bytes, path, ctx);
    }
    let mut decoder = LinesDecoder::new(path, ctx);
    let mut batches = Vec::new();
    decoder.push(bytes, &mut batches)?;
    let end = Box::new(decoder).finish(&mut batches)?;
    Ok(Decoded {
        batches,
        malformed: end.malformed,
        new_columns: end.new_columns,
        new_fields: end.new_fields,
    })
}

/// The push decoder of one JSON file (lines streamed; a `multiLine` document buffered).
pub(crate) fn decoder(path: &str, size: u64, ctx: &DecodeContext) -> Box<dyn FileDecoder> {
    if ctx.multi_line {
        let (path, ctx) = (path.to_string(), ctx.clone());
        return Box::new(Buffered::new(size, move |bytes| {
            decode_document(&bytes, &path, &ctx)
        }));
    }
    Box::new(LinesDecoder::new(path, ctx))
}

/// JSON lines decoded window by window ([`BATCH_SIZE`] lines): each window through one strict
/// decoder (reused while windows decode), and only a window that fails goes line by line.
pub(crate) struct LinesDecoder {
    framer: Framer,
    windows: Windows,
}

/// What decoding windows keeps from one to the next.
struct Windows {
    path: String,
    ctx: DecodeContext,
    strict: Option<Decoder>,
    malformed: u64,
    new_columns: serde_json::Map<String, serde_json::Value>,
}

impl LinesDecoder {
    pub(crate) fn new(path: &str, ctx: &DecodeContext) -> LinesDecoder {
        LinesDecoder {
            framer: Framer::new(Separator::Newline, None, BATCH_SIZE),
            windows: Windows {
                path: path.to_string(),
                ctx: ctx.clone(),
                strict: None,
                malformed: 0,
                new_columns: serde_json::Map::new(),
            },
        }
    }
}

impl Windows {
    fn decode(&mut self, window: &[u8], first_line: u64, out: &mut Vec<RecordBatch>) -> Result<()> {
        // A line nested too deep never reaches arrow-json: straight to the line-by-line check.
        let fast = if any_line_too_deep(window) {
            Err(())
        } else {
            self.fast(window)
        };
        match fast {
            Ok(Some(batch)) => out.push(with_rescued(batch, None, &self.ctx)?),
            Ok(None) => {}
            Err(()) => {
                let d = slow_path(window, first_line, &self.path, &self.ctx)?;
                self.malformed += d.malformed;
                merge_sample(&mut self.new_columns, d.new_columns);
                out.extend(d.batches);
            }
        }
        Ok(())
    }

    /// The window through the strict decoder: its rows, `None` for blank lines only, or an error
    /// (the decoder is dropped: its state after an error is not reused).
    fn fast(&mut self, window: &[u8]) -> std::result::Result<Option<RecordBatch>, ()> {
        let decoder = match &mut self.strict {
            Some(d) => d,
            None => self
                .strict
                .insert(builder(&self.ctx, true).build_decoder().map_err(|_| ())?),
        };
        let result = match decoder.decode(window) {
            Ok(read) if read == window.len() => decoder.flush().map_err(|_| ()),
            _ => Err(()),
        };
        if result.is_err() {
            self.strict = None;
        }
        result
    }
}

impl FileDecoder for LinesDecoder {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<RecordBatch>) -> Result<()> {
        let windows = &mut self.windows;
        self.framer
            .push(chunk, &mut |w, line| windows.decode(w, line, out))
    }

    fn finish(mut self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        let windows = &mut self.windows;
        self.framer
            .finish(&mut |w, line| windows.decode(w, line, out))?;
        Ok(FileEnd {
            malformed: self.windows.malformed,
            new_columns: std::mem::take(&mut self.windows.new_columns),
            ..FileEnd::default()
        })
    }
}

/// A `multiLine` file: the document's records become JSON lines (an array's elements, or the
/// one object) and go through the line decoder, so a bad element is one malformed row (its
/// number is the element's). A file that is not JSON at all is one malformed record: in
/// PERMISSIVE mode a row of nulls with the file's text rescued, as Spark does.
fn decode_document(bytes: &[u8], path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    match document_lines(bytes) {
        Ok(lines) => decode(&lines, path, &ctx.clone().with_multi_line(false)),
        Err(reason) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            if ctx.mode == Mode::FailFast {
                return Err(malformed(
                    path,
                    1,
                    format!("{reason}; record: {}", excerpt(&text)),
                ));
            }
            let batches = read_all(ctx, false, b"{}").map_err(|e| unreadable(path, e))?;
            let batches = batches
                .into_iter()
                .map(|b| with_rescued(b, Some(rescued_array(&[Some(text.clone())])), ctx))
                .collect::<Result<Vec<_>>>()?;
            Ok(Decoded {
                batches,
                malformed: 1,
                ..Decoded::default()
            })
        }
    }
}

/// A JSON document as JSON lines: one line per array element, or the document itself.
fn document_lines(bytes: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let doc: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JSON document: {e}"))?;
    let mut out = Vec::with_capacity(bytes.len());
    let mut push = |v: &serde_json::Value| {
        // Writing a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, v);
        out.push(b'\n');
    };
    match &doc {
        serde_json::Value::Array(items) => items.iter().for_each(&mut push),
        other => push(other),
    }
    Ok(out)
}

fn read_all(
    ctx: &DecodeContext,
    strict: bool,
    bytes: &[u8],
) -> Result<Vec<RecordBatch>, ArrowError> {
    builder(ctx, strict).build(Cursor::new(bytes))?.collect()
}

enum Outcome {
    Good,
    /// Decodes leniently; these fields are not columns (possibly none: a line can fail the
    /// strict decoder for reasons the lenient one accepts).
    Extra(serde_json::Map<String, serde_json::Value>),
    Bad(String),
}

/// Checks single lines, reusing a decoder until one fails (a failed decoder is rebuilt).
struct LineChecker<'a> {
    ctx: &'a DecodeContext,
    strict: Option<Decoder>,
    lenient: Option<Decoder>,
}

impl LineChecker<'_> {
    fn check_with(
        slot: &mut Option<Decoder>,
        ctx: &DecodeContext,
        strict: bool,
        line: &[u8],
    ) -> Result<(), ArrowError> {
        let decoder = match slot {
            Some(d) => d,
            None => slot.insert(builder(ctx, strict).build_decoder()?),
        };
        let result = decoder.decode(line).and_then(|read| {
            if read != line.len() {
                return Err(ArrowError::JsonError(
                    "more than one JSON value on the line".into(),
                ));
            }
            match decoder.flush()? {
                Some(b) if b.num_rows() == 1 => Ok(()),
                Some(b) => Err(ArrowError::JsonError(format!(
                    "{} JSON values on the line",
                    b.num_rows()
                ))),
                None => Err(ArrowError::JsonError("no JSON value on the line".into())),
            }
        });
        if result.is_err() {
            *slot = None;
        }
        result
    }

    fn classify(&mut self, line: &[u8]) -> Outcome {
        if too_deep(line) {
            return Outcome::Bad(format!(
                "arrays and objects nested deeper than {MAX_DEPTH} levels"
            ));
        }
        if Self::check_with(&mut self.strict, self.ctx, true, line).is_ok() {
            return Outcome::Good;
        }
        match Self::check_with(&mut self.lenient, self.ctx, false, line) {
            Ok(()) => Outcome::Extra(self.unknown_fields(line)),
            Err(e) => Outcome::Bad(e.to_string()),
        }
    }

    /// The fields of `line` that are not columns (empty when there are none).
    fn unknown_fields(&self, line: &[u8]) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::from_slice(line) {
            Ok(serde_json::Value::Object(map)) => match self.ctx.evolution {
                SchemaEvolution::Rescue => rescued_fields(&map, self.ctx.file_schema.fields()),
                _ => unknown_fields(&map, self.ctx.file_schema.fields()),
            },
            _ => serde_json::Map::new(),
        }
    }
}

/// Non-blank lines with their 1-based line numbers, the first being `first`.
fn lines(bytes: &[u8], first: u64) -> impl Iterator<Item = (u64, &[u8])> {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .map(move |(i, l)| (i as u64 + first, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
}

fn slow_path(bytes: &[u8], first_line: u64, path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    let mut checker = LineChecker {
        ctx,
        strict: None,
        lenient: None,
    };
    let mut cleaned = Vec::with_capacity(bytes.len());
    let mut rescued: Vec<Option<String>> = Vec::new();
    let mut malformed_rows = 0u64;
    let mut new_columns = serde_json::Map::new();
    for (no, line) in lines(bytes, first_line) {
        match checker.classify(line) {
            Outcome::Good => {
                cleaned.extend_from_slice(line);
                rescued.push(None);
            }
            Outcome::Extra(extra) => {
                cleaned.extend_from_slice(line);
                match ctx.evolution {
                    SchemaEvolution::Rescue if !extra.is_empty() => {
                        rescued.push(Some(serde_json::Value::Object(extra).to_string()))
                    }
                    SchemaEvolution::AddNewColumns | SchemaEvolution::FailOnNewColumns => {
                        merge_sample(&mut new_columns, extra);
                        rescued.push(None);
                    }
                    _ => rescued.push(None),
                }
            }
            Outcome::Bad(reason) => {
                let text = String::from_utf8_lossy(line).into_owned();
                if ctx.mode == Mode::FailFast {
                    return Err(malformed(
                        path,
                        no,
                        format!("{reason}; record: {}", excerpt(&text)),
                    ));
                }
                cleaned.extend_from_slice(b"{}");
                rescued.push(Some(text));
                malformed_rows += 1;
            }
        }
        cleaned.push(b'\n');
    }
    let batches = read_all(ctx, false, &cleaned).map_err(|e| {
        // Every line decoded on its own, so this is not the data's fault.
        Error::new(
            ErrorCode::Internal,
            format!("decoding the checked lines of {path} failed"),
        )
        .with_context("file", path)
        .with_cause(e)
    })?;
    let mut out = Vec::with_capacity(batches.len());
    let mut row = 0;
    for b in batches {
        let n = b.num_rows();
        let Some(slice) = rescued.get(row..row + n) else {
            return Err(unreadable(
                path,
                ArrowError::JsonError("row count changed while decoding".into()),
            ));
        };
        out.push(with_rescued(b, Some(rescued_array(slice)), ctx)?);
        row += n;
    }
    Ok(Decoded {
        batches: out,
        malformed: malformed_rows,
        new_columns,
        ..Decoded::default()
    })
}

/// Infers columns from the first `max_records` JSON objects of the samples (lines that are
/// not JSON objects are skipped). Columns are sorted by name, as Spark's JSON inference does.
pub fn infer(
    samples: &[(String, Bytes)],
    max_records: usize,
    infer_types: bool,
    multi_line: bool,
) -> Result<Schema> {
    let mut values = Vec::new();
    'files: for (_, bytes) in samples {
        // A multiLine file that is not a JSON document holds no sample.
        let doc;
        let bytes: &[u8] = if multi_line {
            doc = document_lines(bytes).unwrap_or_default();
            &doc
        } else {
            bytes
        };
        for (_, line) in lines(bytes, 1) {
            if values.len() >= max_records {
                break 'files;
            }
            if let Ok(v @ serde_json::Value::Object(_)) = serde_json::from_slice(line) {
                values.push(v);
            }
        }
    }
    if values.is_empty() {
        return Err(Error::new(
            ErrorCode::Schema,
            format!(
                "cannot infer a schema: the {} sampled file(s) hold no JSON object lines; give the \
                 'schema' option or add data first",
                samples.len()
            ),
        )
        .with_context("option", crate::config::names::SCHEMA));
    }
    let schema = infer_json_schema_from_iterator(values.iter().map(Ok)).map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            "cannot infer a schema from the JSON sample",
        )
        .with_cause(e)
    })?;
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| {
            let dt = if infer_types {
                null_as_string(f.data_type())
            } else {
                leaves_as_strings(f.data_type())
            };
            f.as_ref()
                .clone()
                .with_data_type(sort_struct_fields(&dt))
                .with_nullable(true)
        })
        .collect();
    // Spark orders inferred JSON columns by name, at every level. Sort explicitly: the order
    // the inference returns depends on serde_json's `preserve_order` feature, which another
    // crate of the build may turn on.
    let mut fields = fields;
    fields.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(Schema::new(fields))
}

fn sort_struct_fields(dt: &DataType) -> DataType {
    match dt {
        DataType::Struct(fs) => {
            let mut fs: Vec<arrow_schema::Field> = fs
                .iter()
                .map(|f| {
                    f.as_ref()
                        .clone()
                        .with_data_type(sort_struct_fields(f.data_type()))
                })
                .collect();
            fs.sort_by(|a, b| a.name().cmp(b.name()));
            DataType::Struct(fs.into())
        }
        DataType::List(item) => DataType::List(std::sync::Arc::new(
            item.as_ref()
                .clone()
                .with_data_type(sort_struct_fields(item.data_type())),
        )),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CsvOptions, Format};
    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field};
    use std::sync::Arc;

    fn ctx(mode: Mode) -> DecodeContext {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        DecodeContext::new(
            Format::Json,
            schema,
            "_rescued_data",
            mode,
            CsvOptions::default(),
        )
    }

    #[test]
    fn fast_path_coerces_numbers_into_strings() {
        let d = decode(
            b"{\"id\": 1, \"name\": 5}\n\n{\"id\": 2}\n",
            "f",
            &ctx(Mode::Permissive),
        )
        .unwrap();
        assert_eq!(d.malformed, 0);
        let b = &d.batches[0];
        assert_eq!(b.num_rows(), 2);
        let name = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(name.value(0), "5");
        assert!(b.column(2).is_null(0) && b.column(2).is_null(1));
    }

    #[test]
    fn bad_lines_become_null_rows_with_rescued_text_and_extra_fields_are_rescued() {
        let text = b"{\"id\": 1, \"name\": \"a\"}\n{\"id\": \"x\"}\nnot json\r\n{\"id\": 3, \"more\": [1]}\n";
        let d = decode(text, "f", &ctx(Mode::Permissive)).unwrap();
        assert_eq!(d.malformed, 2);
        let b = &d.batches[0];
        assert_eq!(b.num_rows(), 4);
        let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(id.value(0), 1);
        assert!(id.is_null(1) && id.is_null(2));
        assert_eq!(id.value(3), 3);
        let r = b.column(2).as_any().downcast_ref::<StringArray>().unwrap();
        assert!(r.is_null(0));
        assert_eq!(r.value(1), "{\"id\": \"x\"}");
        assert_eq!(r.value(2), "not json");
        assert_eq!(r.value(3), "{\"more\":[1]}");
    }

    #[test]
    fn nesting_depth_counts_brackets_outside_strings_only() {
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(too_deep(deep.as_bytes()));
        let at_limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(!too_deep(at_limit.as_bytes()));
        let in_string = format!("{{\"s\": \"\\\"{}\"}}", "[".repeat(2 * MAX_DEPTH));
        assert!(!too_deep(in_string.as_bytes()));
        let window = format!("{{\"id\": 1}}\n{in_string}\n{at_limit}\n{deep}");
        assert!(any_line_too_deep(window.as_bytes()));
        assert!(!any_line_too_deep(
            window.as_bytes()[..window.len() - deep.len()].as_ref()
        ));
    }

    #[test]
    fn failfast_names_the_line() {
        let e = decode(
            b"{\"id\": 1}\n{\"id\": 2}\n{\"id\": tru\n",
            "/x/f.json",
            &ctx(Mode::FailFast),
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::MalformedRecord);
        assert_eq!(e.context_value("file"), Some("/x/f.json"));
        assert_eq!(e.context_value("row"), Some("3"));
    }

    #[test]
    fn inference_sorts_columns_like_spark_and_gives_strings_by_default() {
        let samples = vec![(
            "a".to_string(),
            Bytes::from_static(b"{\"b\": 1, \"a\": {\"x\": true}}\nbad\n{\"c\": 1.5}\n"),
        )];
        let s = infer(&samples, 100, false, false).unwrap();
        let names: Vec<_> = s.fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(s.field(1).data_type(), &DataType::Utf8);
        assert!(
            matches!(s.field(0).data_type(), DataType::Struct(f) if f[0].data_type() == &DataType::Utf8)
        );
        let s = infer(&samples, 100, true, false).unwrap();
        assert_eq!(s.field(1).data_type(), &DataType::Int64);
        assert_eq!(s.field(2).data_type(), &DataType::Float64);
        assert_eq!(
            infer(&[], 10, true, false).unwrap_err().code(),
            ErrorCode::Schema
        );
    }

    #[test]
    fn multi_line_documents_become_rows() {
        let ctx = ctx(Mode::Permissive).with_multi_line(true);
        let pretty =
            b"[\n  {\"id\": 1,\n   \"name\": \"a\"},\n  {\"id\": 2, \"extra\": true},\n  7\n]\n";
        let d = decode(pretty, "f", &ctx).unwrap();
        assert_eq!(d.malformed, 1);
        let b = &d.batches[0];
        assert_eq!(b.num_rows(), 3);
        let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!((id.value(0), id.value(1)), (1, 2));
        assert!(id.is_null(2));
        let r = b.column(2).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(r.value(1), "{\"extra\":true}");
        assert_eq!(r.value(2), "7");

        let one = decode(b"{\n \"id\": 5\n}", "f", &ctx).unwrap();
        assert_eq!(one.batches[0].num_rows(), 1);
        assert_eq!(one.malformed, 0);
    }

    #[test]
    fn a_multi_line_file_that_is_not_json_is_one_malformed_record() {
        let text = b"[{\"id\": 1},\n oops";
        let d = decode(text, "f", &ctx(Mode::Permissive).with_multi_line(true)).unwrap();
        assert_eq!(d.malformed, 1);
        let b = &d.batches[0];
        assert_eq!(b.num_rows(), 1);
        assert!(b.column(0).is_null(0));
        let r = b.column(2).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(r.value(0).as_bytes(), text);
        let e = decode(
            text,
            "/x/doc.json",
            &ctx(Mode::FailFast).with_multi_line(true),
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::MalformedRecord);
        assert_eq!(e.context_value("file"), Some("/x/doc.json"));
    }

    #[test]
    fn multi_line_inference_reads_the_documents() {
        let samples = vec![
            (
                "a".to_string(),
                Bytes::from_static(b"[\n {\"b\": 1},\n {\"a\": \"x\"}\n]"),
            ),
            ("bad".to_string(), Bytes::from_static(b"{ not json")),
        ];
        let s = infer(&samples, 100, true, true).unwrap();
        let names: Vec<_> = s.fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["a", "b"]);
        // Read as lines, only the one line that happens to be a whole object counts.
        let s = infer(&samples, 100, true, false).unwrap();
        assert_eq!(s.fields().len(), 1);
    }
}
