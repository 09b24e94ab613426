//! Spark's JSON and CSV reader options, the ones users copy from `spark.read` jobs: CSV
//! `header`, `sep` / `delimiter`, `quote`, `escape`, `comment`, `nullValue`; JSON
//! `allowComments`, `primitivesAsString`; both `timestampFormat`, `dateFormat`, `encoding`
//! (alias `charset`). Each has Spark's default; an option for the other format is refused, and
//! so is what this build cannot honour (another charset than UTF-8, Spark's corrupt-record
//! column, which Auto Loader replaces by the rescued data column), naming why.

use tributary_sdk::options::conflicting;
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result};

use super::datetime;
use super::modes::{CsvOptions, ValueFormats};
use super::names::*;
use super::Format;

/// Spark's default `timestampFormat` (ISO 8601; the Arrow readers parse it themselves).
pub const SPARK_TIMESTAMP_FORMAT: &str = "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]";
/// Spark's default `dateFormat`.
pub const SPARK_DATE_FORMAT: &str = "yyyy-MM-dd";

/// What the reader options say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReaderOptions {
    /// CSV parsing.
    pub csv: CsvOptions,
    /// Text values turned into typed ones after decoding.
    pub formats: ValueFormats,
    /// JSON: comments are allowed (and skipped).
    pub allow_comments: bool,
    /// JSON inference: primitive values are strings.
    pub primitives_as_string: bool,
}

/// The reader options' declarations.
pub fn specs() -> Vec<OptionSpec> {
    vec![
        OptionSpec::bool(
            HEADER,
            "CSV: the first line of each file holds the column names.",
        )
        .default_value(false),
        OptionSpec::string(
            SEP,
            "CSV: the field separator, one character (\\t for tab).",
        )
        .default_value(","),
        OptionSpec::string(DELIMITER, "CSV: alias of sep."),
        OptionSpec::string(
            QUOTE,
            "CSV: the quote character; a quoted field may hold separators and newlines.",
        )
        .default_value("\""),
        OptionSpec::string(
            ESCAPE,
            "CSV: inside a quoted field, the character that makes the next one literal (\\\" \
             is a quote); \\u0000 turns it off. A doubled quote (\"\") is a quote too.",
        )
        .default_value("\\"),
        OptionSpec::string(
            COMMENT,
            "CSV: lines starting with this character are skipped (default: none, \\u0000).",
        ),
        OptionSpec::string(
            NULL_VALUE,
            "CSV: the text of a null value (an empty field is null too); e.g. NA or \\N.",
        )
        .default_value(""),
        OptionSpec::string(
            TIMESTAMP_FORMAT,
            "JSON and CSV: the pattern of TIMESTAMP values, in Spark's datetime pattern letters \
             (e.g. dd/MM/yyyy HH:mm:ss); default yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX] (ISO 8601). A \
             value that does not match is null and rescued. Without a zone offset in the \
             pattern, values are UTC.",
        ),
        OptionSpec::string(
            DATE_FORMAT,
            "JSON and CSV: the pattern of DATE values (e.g. dd.MM.yyyy); default yyyy-MM-dd. A \
             value that does not match is null and rescued.",
        ),
        OptionSpec::bool(
            ALLOW_COMMENTS,
            "JSON: allow Java/C++ style comments (/* ... */ and // to the end of the line) \
             outside strings; they are skipped.",
        )
        .default_value(false),
        OptionSpec::bool(
            PRIMITIVES_AS_STRING,
            "JSON with an inferred schema: infer numbers and booleans as strings (structs and \
             arrays are kept).",
        )
        .default_value(false),
        OptionSpec::string(
            ENCODING,
            "JSON and CSV: the character set of the files; UTF-8 (the default) is the one \
             supported.",
        ),
        OptionSpec::string(CHARSET, "Alias of encoding."),
        OptionSpec::string(
            INFER_SCHEMA,
            "spark.read's CSV/JSON type inference switch: refused; Auto Loader reads \
             cloudFiles.inferColumnTypes.",
        ),
        OptionSpec::string(
            CORRUPT_RECORD_COLUMN,
            "Spark's corrupt-record column: refused; Auto Loader streams keep malformed records \
             in the rescued data column (rescuedDataColumn).",
        ),
    ]
}

/// Parses the reader options for `format`; `inferred`: no `schema` option is given.
pub fn parse(p: &ParsedOptions, format: Format, inferred: bool) -> Result<ReaderOptions> {
    let csv = format == Format::Csv;
    let json = format == Format::Json;
    for option in [HEADER, SEP, DELIMITER, QUOTE, ESCAPE, COMMENT, NULL_VALUE] {
        p.refuse_ignored(option, csv, FORMAT, "applies to cloudFiles.format=csv only")?;
    }
    for option in [ALLOW_COMMENTS, PRIMITIVES_AS_STRING] {
        p.refuse_ignored(
            option,
            json,
            FORMAT,
            "applies to cloudFiles.format=json only",
        )?;
    }
    for option in [TIMESTAMP_FORMAT, DATE_FORMAT, ENCODING, CHARSET] {
        p.refuse_ignored(
            option,
            csv || json,
            FORMAT,
            "applies to cloudFiles.format=json and csv only",
        )?;
    }
    p.refuse_ignored(
        PRIMITIVES_AS_STRING,
        inferred,
        SCHEMA,
        "applies when the schema is inferred, but the 'schema' option gives it",
    )?;
    if p.is_set(CORRUPT_RECORD_COLUMN) {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{CORRUPT_RECORD_COLUMN}' is not supported: as in Auto Loader, the text \
                 of a malformed record (and values that do not fit the schema) go to the rescued \
                 data column; name it with {RESCUED} (default _rescued_data)"
            ),
        )
        .with_context("option", CORRUPT_RECORD_COLUMN));
    }
    if p.is_set(INFER_SCHEMA) {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{INFER_SCHEMA}' is spark.read's name; Auto Loader streams infer column \
                 types with {INFER_COLUMN_TYPES}=true (without it inferred columns are strings)"
            ),
        )
        .with_context("option", INFER_SCHEMA));
    }
    encoding(p)?;
    Ok(ReaderOptions {
        csv: csv_options(p)?,
        formats: ValueFormats {
            null_value: p.string(NULL_VALUE)?.filter(|v| csv && !v.is_empty()),
            timestamp_format: pattern(p, TIMESTAMP_FORMAT, SPARK_TIMESTAMP_FORMAT)?,
            date_format: pattern(p, DATE_FORMAT, SPARK_DATE_FORMAT)?,
        },
        allow_comments: p.bool(ALLOW_COMMENTS)?.unwrap_or(false),
        primitives_as_string: p.bool(PRIMITIVES_AS_STRING)?.unwrap_or(false),
    })
}

/// `encoding` / `charset`: UTF-8 only.
fn encoding(p: &ParsedOptions) -> Result<()> {
    if p.is_set(ENCODING) && p.is_set(CHARSET) {
        return Err(conflicting(
            CHARSET,
            ENCODING,
            "is an alias of 'encoding'; give only one",
        ));
    }
    let name = if p.is_set(CHARSET) { CHARSET } else { ENCODING };
    let Some(value) = p.string(name)? else {
        return Ok(());
    };
    let normal = value.trim().to_ascii_lowercase().replace(['-', '_'], "");
    if normal == "utf8" {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::InvalidOption,
        format!(
            "invalid value '{value}' for option '{name}': only UTF-8 is supported in this build \
             (no decoder for other character sets is included); convert the files to UTF-8 first \
             (e.g. iconv -f {value} -t UTF-8)"
        ),
    )
    .with_context("option", name))
}

/// A `timestampFormat` / `dateFormat` pattern in chrono syntax; `None` when absent or equal to
/// Spark's default (which the Arrow readers parse).
fn pattern(p: &ParsedOptions, option: &str, spark_default: &str) -> Result<Option<String>> {
    match p.string(option)? {
        None => Ok(None),
        Some(v) if v.trim() == spark_default => Ok(None),
        Some(v) if v.trim().is_empty() => Err(Error::new(
            ErrorCode::InvalidOption,
            format!("option '{option}' must not be empty (default {spark_default})"),
        )
        .with_context("option", option)),
        Some(v) => datetime::to_chrono(option, v.trim()).map(Some),
    }
}

/// `header`, `sep` / `delimiter`, `quote`, `escape`, `comment`.
fn csv_options(p: &ParsedOptions) -> Result<CsvOptions> {
    if p.is_set(SEP) && p.is_set(DELIMITER) {
        return Err(conflicting(
            DELIMITER,
            SEP,
            "is an alias of 'sep'; give only one",
        ));
    }
    let sep_name = if p.is_set(DELIMITER) { DELIMITER } else { SEP };
    let delimiter = one_char(sep_name, &p.required_string(sep_name)?)?
        .ok_or_else(|| must_be_char(sep_name, ""))?;
    let quote = one_char(QUOTE, &p.required_string(QUOTE)?)?.ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{QUOTE}': turning quoting off is not supported in this build (Spark \
                 does it with an empty quote); give one ASCII character (default \")"
            ),
        )
        .with_context("option", QUOTE)
    })?;
    // A quote as its own escape is the doubled quote, which is always read.
    let escape = one_char(ESCAPE, &p.required_string(ESCAPE)?)?.filter(|e| *e != quote);
    let comment = match p.string(COMMENT)? {
        Some(v) => one_char(COMMENT, &v)?,
        None => None,
    };
    for (name, value) in [(ESCAPE, escape), (COMMENT, comment)] {
        if value.is_some_and(|c| c == delimiter || (name == COMMENT && c == quote)) {
            return Err(conflicting(
                name,
                sep_name,
                "is the same character as the separator or the quote",
            ));
        }
    }
    Ok(CsvOptions {
        header: p.bool(HEADER)?.unwrap_or(false),
        delimiter,
        quote,
        escape,
        comment,
    })
}

/// One ASCII character (`\t` for tab); `None` for `\u0000` (Spark's "off"), or for the empty
/// string.
fn one_char(option: &str, value: &str) -> Result<Option<u8>> {
    match value {
        "\\t" | "\t" => Ok(Some(b'\t')),
        "\\u0000" | "\u{0}" | "" => Ok(None),
        v => match v.as_bytes() {
            [b] if b.is_ascii() => Ok(Some(*b)),
            _ => Err(must_be_char(option, value)),
        },
    }
}

fn must_be_char(option: &str, value: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "invalid value '{value}' for option '{option}': expected one ASCII character (or \\t \
             for tab)"
        ),
    )
    .with_context("option", option)
}
