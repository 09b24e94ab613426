//! File formats: decoding one file's bytes into Arrow batches with the stream's schema, and
//! inferring a schema from sample files.
//!
//! Decoding is push-based ([`FileDecoder`], made by [`decoder`]): the bytes of a file go in as
//! they are fetched and batches come out as they fill, so a large JSON, CSV or text file is read
//! with memory bounded by the batch size. Each record format keeps its fast path fast (a window
//! of [`BATCH_SIZE`] records through the Arrow reader) and only when that fails looks record by
//! record, so a malformed record costs nothing for the windows that have none. JSON and CSV add
//! the rescued data column (values and records that did not fit); Parquet and Avro files are
//! aligned to the schema by column name; text and binaryFile have fixed columns.

pub mod avro;
pub mod binary;
pub(crate) mod comments;
pub mod csv;
pub(crate) mod csv_escape;
pub(crate) mod decoder;
pub(crate) mod framing;
pub mod json;
pub(crate) mod kind;
pub mod options;
pub mod parquet;
mod pull;
pub mod text;
pub(crate) mod unknown_fields;
pub(crate) mod value_formats;

pub use decoder::{FileDecoder, FileInfo};
pub use kind::Format;
pub use options::FormatOptions;

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use tributary_sdk::Result;

use crate::config::modes::{CsvOptions, Mode, SchemaEvolution, ValueFormats};

/// Rows per Arrow batch the readers produce.
pub const BATCH_SIZE: usize = 8192;

/// What decoding a file needs to know.
#[derive(Debug, Clone)]
pub struct DecodeContext {
    /// The file columns (without rescued data and metadata).
    pub file_schema: SchemaRef,
    /// The file columns plus the rescued data column (JSON and CSV), the shape of every
    /// decoded batch.
    pub decoded_schema: SchemaRef,
    /// Malformed record handling.
    pub mode: Mode,
    /// CSV options.
    pub csv: CsvOptions,
    /// JSON: each file is one document (`multiLine`).
    pub multi_line: bool,
    /// JSON: what fields that are not columns do.
    pub evolution: SchemaEvolution,
    /// The format-specific options (text).
    pub options: FormatOptions,
    /// CSV `nullValue`, JSON and CSV `timestampFormat` / `dateFormat`.
    pub formats: ValueFormats,
    /// JSON `allowComments`.
    pub allow_comments: bool,
}

impl DecodeContext {
    /// A context for `file_schema` in `format`, with the rescued column named `rescued`.
    pub fn new(
        format: Format,
        file_schema: SchemaRef,
        rescued: &str,
        mode: Mode,
        csv: CsvOptions,
    ) -> DecodeContext {
        let mut fields: Vec<Field> = file_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        if format.has_rescued_column() {
            fields.push(crate::columns::rescued_data_field(rescued));
        }
        DecodeContext {
            file_schema,
            decoded_schema: Arc::new(Schema::new(fields)),
            mode,
            csv,
            multi_line: false,
            evolution: SchemaEvolution::Rescue,
            options: FormatOptions::default(),
            formats: ValueFormats::default(),
            allow_comments: false,
        }
    }

    /// With these value formats (`nullValue`, `timestampFormat`, `dateFormat`).
    pub fn with_formats(mut self, formats: ValueFormats) -> DecodeContext {
        self.formats = formats;
        self
    }

    /// With JSON comments allowed (`allowComments`).
    pub fn with_allow_comments(mut self, allow: bool) -> DecodeContext {
        self.allow_comments = allow;
        self
    }

    /// With these format-specific options (`wholeText`, `lineSep`).
    pub fn with_options(mut self, options: FormatOptions) -> DecodeContext {
        self.options = options;
        self
    }

    /// With this schema evolution mode (JSON).
    pub fn with_schema_evolution(mut self, evolution: SchemaEvolution) -> DecodeContext {
        self.evolution = evolution;
        self
    }

    /// With `multiLine` JSON files (one document per file).
    pub fn with_multi_line(mut self, multi_line: bool) -> DecodeContext {
        self.multi_line = multi_line;
        self
    }
}

/// One decoded file.
#[derive(Debug, Default)]
pub struct Decoded {
    /// Batches with [`DecodeContext::decoded_schema`].
    pub batches: Vec<RecordBatch>,
    /// Records that did not fit (nulls + rescued text).
    pub malformed: u64,
    /// Top-level fields that are not columns, with the first value seen of each (JSON, when
    /// the schema evolution mode is addNewColumns or failOnNewColumns).
    pub new_columns: serde_json::Map<String, serde_json::Value>,
    /// Columns of the file that the stream's schema lacks, with their types (Parquet, with
    /// the same modes). When set, `batches` is empty: the file is read after evolution.
    pub new_fields: Vec<Field>,
}

/// The push decoder of one file in `format` (see [`FileDecoder`]).
pub fn decoder(
    format: Format,
    file: FileInfo<'_>,
    ctx: &DecodeContext,
) -> Result<Box<dyn FileDecoder>> {
    if matches!(format, Format::Json | Format::Csv) && ctx.formats.converts() {
        if let Some(d) = value_formats::wrap(format, file.path, ctx, |text| {
            plain_decoder(format, file, text)
        })? {
            return Ok(d);
        }
    }
    plain_decoder(format, file, ctx)
}

/// [`decoder`] without the value-format conversion.
fn plain_decoder(
    format: Format,
    file: FileInfo<'_>,
    ctx: &DecodeContext,
) -> Result<Box<dyn FileDecoder>> {
    let (path, size) = (file.path.to_string(), file.size);
    Ok(match format {
        Format::Json if ctx.allow_comments => Box::new(comments::Uncommented::new(json::decoder(
            file.path, size, ctx,
        ))),
        Format::Json => json::decoder(file.path, size, ctx),
        Format::Csv => csv::decoder(file.path, ctx),
        Format::Text => text::decoder(size, ctx),
        Format::BinaryFile => binary::decoder(file, ctx),
        Format::Avro => avro::decoder(file.path, ctx)?,
        // The footer at the end says where the columns are: the file is needed whole.
        Format::Parquet => {
            let ctx = ctx.clone();
            Box::new(decoder::Buffered::new(size, move |bytes| {
                parquet::decode(bytes, &path, &ctx)
            }))
        }
    })
}

/// Decodes one whole file held in memory. `path` names the file in errors (binaryFile's
/// modification time is unknown here: 0). The source streams through [`decoder`] instead.
#[allow(dead_code)] // for callers holding a whole file
pub fn decode(format: Format, bytes: Bytes, path: &str, ctx: &DecodeContext) -> Result<Decoded> {
    let file = FileInfo {
        path,
        size: bytes.len() as u64,
        modification_time_ms: 0,
    };
    let mut d = decoder(format, file, ctx)?;
    let mut batches = Vec::new();
    d.push(&bytes, &mut batches)?;
    let end = d.finish(&mut batches)?;
    Ok(Decoded {
        batches,
        malformed: end.malformed,
        new_columns: end.new_columns,
        new_fields: end.new_fields,
    })
}

/// Infers the file columns from sample files `(path, bytes)` (text and binaryFile: their fixed
/// columns, whatever the samples).
pub fn infer(
    format: Format,
    samples: &[(String, Bytes)],
    max_records: usize,
    infer_types: bool,
    csv: CsvOptions,
    multi_line: bool,
) -> Result<Schema> {
    match format {
        Format::Json => json::infer(samples, max_records, infer_types, multi_line),
        Format::Csv => csv::infer(samples, max_records, infer_types, csv),
        Format::Parquet => parquet::infer(samples),
        Format::Avro => avro::infer(samples),
        Format::Text => Ok(text::schema()),
        Format::BinaryFile => Ok(binary::schema()),
    }
}

/// Appends a rescued data column to batches of file columns (all null on the fast path).
pub(crate) fn with_rescued(
    batch: RecordBatch,
    rescued: Option<ArrayRef>,
    ctx: &DecodeContext,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let mut columns = batch.columns().to_vec();
    columns.push(rescued.unwrap_or_else(|| new_null_array(&DataType::Utf8, rows)));
    Ok(RecordBatch::try_new(ctx.decoded_schema.clone(), columns)?)
}

/// A rescued column from per-row texts.
pub(crate) fn rescued_array(values: &[Option<String>]) -> ArrayRef {
    Arc::new(StringArray::from_iter(values.iter().map(|v| v.as_deref())))
}

/// `dt` with every leaf type (anything but struct and list) replaced by `leaf`, nesting kept.
fn map_leaves(dt: &DataType, leaf: &dyn Fn(&DataType) -> DataType) -> DataType {
    let field = |f: &Field| f.clone().with_data_type(map_leaves(f.data_type(), leaf));
    match dt {
        DataType::Struct(fields) => {
            DataType::Struct(fields.iter().map(|f| field(f.as_ref())).collect())
        }
        DataType::List(f) => DataType::List(Arc::new(field(f.as_ref()))),
        other => leaf(other),
    }
}

/// Leaf types turned into strings, nesting kept (`cloudFiles.inferColumnTypes=false`).
pub(crate) fn leaves_as_strings(dt: &DataType) -> DataType {
    map_leaves(dt, &|_| DataType::Utf8)
}

/// `Null` (a column only ever seen empty) becomes a string column, as in Spark.
pub(crate) fn null_as_string(dt: &DataType) -> DataType {
    map_leaves(dt, &|leaf| match leaf {
        DataType::Null => DataType::Utf8,
        other => other.clone(),
    })
}
