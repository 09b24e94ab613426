//! The small enums and structs of the files config that the format readers use too
//! (`mode`, `cloudFiles.schemaEvolutionMode`, the CSV options, the value formats). A leaf module.

/// What columns that are not in the schema do (`cloudFiles.schemaEvolutionMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaEvolution {
    /// Add them to the stored schema and stop; a restart reads them.
    AddNewColumns,
    /// Put their values in the rescued data column.
    Rescue,
    /// Stop without changing the schema.
    FailOnNewColumns,
    /// Drop their values.
    None,
}

/// What to do with a malformed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nulls + rescued text + a counter.
    Permissive,
    /// Stop with `MALFORMED_RECORD`.
    FailFast,
}

/// CSV parsing options (Spark's names: `header`, `sep`, `quote`, `escape`, `comment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvOptions {
    /// The first line holds column names.
    pub header: bool,
    /// Field separator.
    pub delimiter: u8,
    /// The quote character (`"`).
    pub quote: u8,
    /// Inside a quoted field, the character that makes the next one literal (Spark: `\`).
    pub escape: Option<u8>,
    /// Lines starting with this character are skipped (Spark: none).
    pub comment: Option<u8>,
}

impl Default for CsvOptions {
    /// Spark's defaults: no header, `,`, `"`, escape `\`, no comment character.
    fn default() -> CsvOptions {
        CsvOptions {
            header: false,
            delimiter: b',',
            quote: b'"',
            escape: Some(b'\\'),
            comment: None,
        }
    }
}

/// How JSON and CSV text values become typed values, beyond what the Arrow readers do
/// (`nullValue`, `timestampFormat`, `dateFormat`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValueFormats {
    /// CSV: the text that stands for null (besides an empty field); `None` with Spark's
    /// default (the empty string).
    pub null_value: Option<String>,
    /// The `timestampFormat` pattern, converted to chrono's syntax; `None` with Spark's
    /// default (ISO 8601, which the Arrow readers parse).
    pub timestamp_format: Option<String>,
    /// The `dateFormat` pattern, converted to chrono's syntax; `None` with Spark's default.
    pub date_format: Option<String>,
}

impl ValueFormats {
    /// True when values are read as text and converted after decoding.
    pub fn converts(&self) -> bool {
        self.null_value.is_some() || self.timestamp_format.is_some() || self.date_format.is_some()
    }
}
