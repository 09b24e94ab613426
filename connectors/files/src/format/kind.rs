//! The file formats the source decodes, named as in Spark and Auto Loader (`cloudFiles.format`).

/// The file formats the source decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON lines (or one document per file with `multiLine`).
    Json,
    /// Comma (or `sep`) separated values.
    Csv,
    /// Apache Parquet.
    Parquet,
    /// Avro object container files.
    Avro,
    /// Text: one row per line (or per file with `wholeText`) in the `value` column.
    Text,
    /// Whole files as bytes: `path`, `modificationTime`, `length`, `content`.
    BinaryFile,
}

impl Format {
    /// The values `cloudFiles.format` accepts, as documented.
    pub const NAMES: &'static [&'static str] =
        &["json", "csv", "parquet", "avro", "text", "binaryFile"];

    /// The format a validated (lower-cased) `cloudFiles.format` value names; JSON when absent.
    pub fn from_word(word: Option<&str>) -> Format {
        match word {
            Some("csv") => Format::Csv,
            Some("parquet") => Format::Parquet,
            Some("avro") => Format::Avro,
            Some("text") => Format::Text,
            Some("binaryfile") => Format::BinaryFile,
            _ => Format::Json,
        }
    }

    /// The option value naming this format.
    pub fn as_str(&self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::Avro => "avro",
            Format::Text => "text",
            Format::BinaryFile => "binaryFile",
        }
    }

    /// True when the format has a rescued data column (JSON and CSV).
    pub fn has_rescued_column(&self) -> bool {
        matches!(self, Format::Json | Format::Csv)
    }

    /// True when the columns are fixed by the format (text, binaryFile): nothing to infer.
    pub fn has_fixed_schema(&self) -> bool {
        matches!(self, Format::Text | Format::BinaryFile)
    }

    /// True when files carry their own typed schema (Parquet, Avro): aligned by column name.
    pub fn is_self_describing(&self) -> bool {
        matches!(self, Format::Parquet | Format::Avro)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in Format::NAMES {
            let f = Format::from_word(Some(&name.to_ascii_lowercase()));
            assert_eq!(f.as_str(), *name);
        }
    }
}
