//! The typed configuration of the files source, parsed once from validated options.
//!
//! [`option_specs`] declares every option (and [`names`] their spellings);
//! [`FilesConfig::parse`] turns the validated map into a [`FilesConfig`] and refuses options that
//! conflict or would be ignored (`CONFLICTING_OPTIONS` naming both). Parsing is pure: the path is made absolute by name and
//! resolved against the file system only when the source is built.

mod options;
mod path;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

use tributary_sdk::options::conflicting;
use tributary_sdk::{Error, ErrorCode, ParsedOptions, ReadLimit, Result};

pub use self::options::{names, option_specs};
use crate::discovery::{glob, split_glob};

/// The file formats the source decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON lines.
    Json,
    /// Comma (or `sep`) separated values.
    Csv,
    /// Apache Parquet.
    Parquet,
}

impl Format {
    /// The option value naming this format.
    pub fn as_str(&self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }

    /// True when the format has a rescued data column.
    pub fn has_rescued_column(&self) -> bool {
        !matches!(self, Format::Parquet)
    }
}

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

/// CSV parsing options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvOptions {
    /// The first line holds column names.
    pub header: bool,
    /// Field separator.
    pub delimiter: u8,
}

/// The validated configuration of one files source.
#[derive(Debug, Clone)]
pub struct FilesConfig {
    /// The path: absolute and normalized by name (a `file://` URL resolved to a path).
    pub path: PathBuf,
    /// File format.
    pub format: Format,
    /// DDL schema, if given.
    pub schema_ddl: Option<String>,
    /// Infer typed columns for JSON/CSV.
    pub infer_column_types: bool,
    /// Files read by schema inference.
    pub sample_files: usize,
    /// Records read by schema inference.
    pub sample_records: usize,
    /// Glob on file names.
    pub path_glob_filter: Option<String>,
    /// Ingest files present at the first listing.
    pub include_existing_files: bool,
    /// Re-ingest files whose modification time changed.
    pub allow_overwrites: bool,
    /// Files per batch.
    pub max_files_per_trigger: u64,
    /// Bytes per batch (soft).
    pub max_bytes_per_trigger: Option<u64>,
    /// Oldest file considered.
    pub max_file_age: Option<Duration>,
    /// Malformed record handling.
    pub mode: Mode,
    /// Name of the rescued data column.
    pub rescued_column: String,
    /// CSV options.
    pub csv: CsvOptions,
    /// Skip vanished files.
    pub ignore_missing_files: bool,
    /// JSON: one document per file.
    pub multi_line: bool,
    /// What new columns do.
    pub schema_evolution: SchemaEvolution,
    /// `cloudFiles.schemaHints`, parsed.
    pub schema_hints: Option<arrow_schema::Schema>,
    /// `cloudFiles.cleanSource` and its retention.
    pub clean_source: CleanSource,
    /// How long after the commit a file is cleaned.
    pub clean_retention: Duration,
}

/// What happens to ingested files (`cloudFiles.cleanSource`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanSource {
    /// Kept.
    Off,
    /// Deleted.
    Delete,
    /// Moved under this directory.
    Move(PathBuf),
}

impl FilesConfig {
    /// Builds the configuration from options validated against [`option_specs`], refusing
    /// options that conflict or would be ignored (`CONFLICTING_OPTIONS` naming both). Pure: no
    /// file is touched (a relative path is made absolute against the current directory).
    pub fn parse(p: &ParsedOptions) -> Result<FilesConfig> {
        use names::*;
        let path = path::resolve(&p.required_string(PATH)?)?;
        if let (_, Some(pattern)) = split_glob(&path) {
            glob(&pattern, true, PATH)?;
        }
        let path_glob_filter = p.string(PATH_GLOB_FILTER)?;
        if let Some(g) = &path_glob_filter {
            glob(g, false, PATH_GLOB_FILTER)?;
        }
        // Required, and validated as one of these three words.
        let format = match p.word(FORMAT)?.as_deref() {
            Some("csv") => Format::Csv,
            Some("parquet") => Format::Parquet,
            _ => Format::Json,
        };
        let csv = parse_csv(p, format)?;
        p.refuse_ignored(
            MULTI_LINE,
            format == Format::Json,
            FORMAT,
            "applies to cloudFiles.format=json only (CSV fields may span lines inside quotes \
             without it)",
        )?;
        let rescues = format.has_rescued_column();
        p.refuse_ignored(
            RESCUED,
            rescues,
            FORMAT,
            "names a column that Parquet streams do not have (JSON and CSV only)",
        )?;
        p.refuse_ignored(
            MODE,
            rescues,
            FORMAT,
            "applies to JSON and CSV records; a Parquet file that cannot be decoded fails with \
             SOURCE_READ_FAILED",
        )?;
        let rescued_column = defaulted(p.string(RESCUED), RESCUED)?;
        if rescued_column.trim().is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                "option 'rescuedDataColumn' must not be empty",
            )
            .with_context("option", RESCUED));
        }
        let schema_ddl = p.string(SCHEMA)?.filter(|s| !s.trim().is_empty());
        let inferred = schema_ddl.is_none();
        let schema_hints = parse_inference(p, format, inferred)?;
        let schema_evolution = parse_schema_evolution(p, format, inferred)?;
        let (clean_source, clean_retention) = parse_clean_source(p, &path)?;
        let count = |name: &str| -> Result<usize> {
            Ok(usize::try_from(defaulted(p.i64(name), name)?).unwrap_or(usize::MAX))
        };
        Ok(FilesConfig {
            format,
            schema_ddl,
            infer_column_types: defaulted(p.bool(INFER_COLUMN_TYPES), INFER_COLUMN_TYPES)?,
            sample_files: count(SAMPLE_FILES)?,
            sample_records: count(SAMPLE_RECORDS)?,
            path_glob_filter,
            include_existing_files: defaulted(p.bool(INCLUDE_EXISTING), INCLUDE_EXISTING)?,
            allow_overwrites: defaulted(p.bool(ALLOW_OVERWRITES), ALLOW_OVERWRITES)?,
            // Declared with a minimum of 1.
            max_files_per_trigger: defaulted(p.i64(MAX_FILES), MAX_FILES)?.unsigned_abs(),
            max_bytes_per_trigger: p.bytes(MAX_BYTES)?,
            max_file_age: p.duration(MAX_FILE_AGE)?,
            mode: match p.word(MODE)?.as_deref() {
                Some("failfast") => Mode::FailFast,
                _ => Mode::Permissive,
            },
            rescued_column,
            csv,
            ignore_missing_files: defaulted(p.bool(IGNORE_MISSING), IGNORE_MISSING)?,
            multi_line: defaulted(p.bool(MULTI_LINE), MULTI_LINE)?,
            schema_evolution,
            schema_hints,
            clean_source,
            clean_retention,
            path,
        })
    }

    /// The read limit the options ask for: `maxFilesPerTrigger` and, when given,
    /// `maxBytesPerTrigger`.
    pub fn read_limit(&self) -> ReadLimit {
        match self.max_bytes_per_trigger {
            Some(bytes) => ReadLimit::Composite(vec![
                ReadLimit::MaxFiles(self.max_files_per_trigger),
                ReadLimit::MaxBytes(bytes),
            ]),
            None => ReadLimit::MaxFiles(self.max_files_per_trigger),
        }
    }

    /// The checkpoint target: what is listed (path and glob), the format and the name glob,
    /// e.g. `/data/in?format=json&pathGlobFilter=*.json`. Computed from the config alone.
    pub fn target(&self) -> String {
        format!(
            "{}?format={}&pathGlobFilter={}",
            self.path.display(),
            self.format.as_str(),
            self.path_glob_filter.as_deref().unwrap_or("")
        )
    }
}

/// The value of an option declared with a default (always present once validated).
fn defaulted<T>(value: Result<Option<T>>, name: &str) -> Result<T> {
    value?.ok_or_else(|| {
        Error::new(
            ErrorCode::Internal,
            format!("option '{name}' is read as if it had a default, but declares none"),
        )
        .with_context("option", name)
    })
}

/// `header`, `sep` / `delimiter`: CSV only.
fn parse_csv(p: &ParsedOptions, format: Format) -> Result<CsvOptions> {
    use names::*;
    for option in [HEADER, SEP, DELIMITER] {
        p.refuse_ignored(
            option,
            format == Format::Csv,
            FORMAT,
            "applies to cloudFiles.format=csv only",
        )?;
    }
    if p.is_set(SEP) && p.is_set(DELIMITER) {
        return Err(conflicting(
            DELIMITER,
            SEP,
            "is an alias of 'sep'; give only one",
        ));
    }
    let sep_name = if p.is_set(DELIMITER) { DELIMITER } else { SEP };
    Ok(CsvOptions {
        header: defaulted(p.bool(HEADER), HEADER)?,
        delimiter: parse_delimiter(sep_name, &p.required_string(sep_name)?)?,
    })
}

/// The options of schema inference, refused with a given schema (inference does not run) or
/// where the format has no use for them; returns the parsed `cloudFiles.schemaHints`.
fn parse_inference(
    p: &ParsedOptions,
    format: Format,
    inferred: bool,
) -> Result<Option<arrow_schema::Schema>> {
    use names::*;
    let not_inferred = "applies when the schema is inferred, but the 'schema' option gives it";
    for option in [
        INFER_COLUMN_TYPES,
        SAMPLE_FILES,
        SAMPLE_RECORDS,
        SCHEMA_HINTS,
    ] {
        p.refuse_ignored(option, inferred, SCHEMA, not_inferred)?;
    }
    let parquet = format == Format::Parquet;
    p.refuse_ignored(
        INFER_COLUMN_TYPES,
        !parquet,
        FORMAT,
        "applies to JSON and CSV; Parquet columns keep the types stored in the files",
    )?;
    p.refuse_ignored(
        SAMPLE_RECORDS,
        !parquet,
        FORMAT,
        "counts JSON lines or CSV rows; Parquet inference reads the schema in each sampled \
         file's footer",
    )?;
    match p.string(SCHEMA_HINTS)?.filter(|s| !s.trim().is_empty()) {
        None => Ok(None),
        Some(text) => crate::ddl::parse_ddl(&text).map(Some).map_err(|e| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("option '{SCHEMA_HINTS}': {}", e.message()),
            )
            .with_context("option", SCHEMA_HINTS)
        }),
    }
}

/// `cloudFiles.schemaEvolutionMode`, with Auto Loader's defaults: evolve an inferred schema,
/// keep a given one (JSON rescues the values, Parquet has no rescued column and drops them).
fn parse_schema_evolution(
    p: &ParsedOptions,
    format: Format,
    inferred: bool,
) -> Result<SchemaEvolution> {
    use names::*;
    p.refuse_ignored(
        SCHEMA_EVOLUTION_MODE,
        format != Format::Csv,
        FORMAT,
        "applies to json and parquet in this build (CSV values that do not fit are rescued)",
    )?;
    let mode = match p.word(SCHEMA_EVOLUTION_MODE)?.as_deref() {
        Some("addnewcolumns") => SchemaEvolution::AddNewColumns,
        Some("rescue") => SchemaEvolution::Rescue,
        Some("failonnewcolumns") => SchemaEvolution::FailOnNewColumns,
        Some(_) => SchemaEvolution::None,
        None if inferred && format != Format::Csv => SchemaEvolution::AddNewColumns,
        None if format == Format::Parquet => SchemaEvolution::None,
        None => SchemaEvolution::Rescue,
    };
    if format == Format::Parquet && mode == SchemaEvolution::Rescue {
        return Err(conflicting(
            SCHEMA_EVOLUTION_MODE,
            FORMAT,
            "is rescue, which needs a rescued data column that Parquet streams do not have \
             (use addNewColumns, failOnNewColumns or none)",
        ));
    }
    if mode == SchemaEvolution::AddNewColumns && !inferred {
        return Err(conflicting(
            SCHEMA_EVOLUTION_MODE,
            SCHEMA,
            "is addNewColumns, which evolves an inferred schema (with the 'schema' option use \
             rescue, failOnNewColumns or none)",
        ));
    }
    Ok(mode)
}

/// `cloudFiles.cleanSource` with its destination and retention, each refused when the mode
/// does not use it.
fn parse_clean_source(
    p: &ParsedOptions,
    path: &std::path::Path,
) -> Result<(CleanSource, Duration)> {
    use names::*;
    let clean_source = match p.word(CLEAN_SOURCE)?.as_deref() {
        Some("delete") => CleanSource::Delete,
        Some("move") => {
            let dest = p.string(CLEAN_MOVE_DESTINATION)?.ok_or_else(|| {
                Error::new(
                    ErrorCode::MissingOption,
                    format!(
                        "option '{CLEAN_MOVE_DESTINATION}' is required with {CLEAN_SOURCE}=MOVE"
                    ),
                )
                .with_context("option", CLEAN_MOVE_DESTINATION)
            })?;
            let dest = path::parse_path(CLEAN_MOVE_DESTINATION, &dest)?;
            // Moved files must never be listed again: not under the directory that is listed.
            let (listed, _) = split_glob(path);
            let absolute = dest.is_absolute();
            let dest = path::normalize(&dest);
            if !absolute || dest.starts_with(&listed) {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "option '{CLEAN_MOVE_DESTINATION}' must be an absolute directory outside \
                         the listed directory {} (moved files would be listed again), got {}",
                        listed.display(),
                        dest.display()
                    ),
                )
                .with_context("option", CLEAN_MOVE_DESTINATION));
            }
            CleanSource::Move(dest)
        }
        _ => CleanSource::Off,
    };
    p.refuse_ignored(
        CLEAN_MOVE_DESTINATION,
        matches!(clean_source, CleanSource::Move(_)),
        CLEAN_SOURCE,
        "is only used when cloudFiles.cleanSource is MOVE",
    )?;
    p.refuse_ignored(
        CLEAN_RETENTION,
        clean_source != CleanSource::Off,
        CLEAN_SOURCE,
        "is only used when cloudFiles.cleanSource is DELETE or MOVE",
    )?;
    Ok((
        clean_source,
        defaulted(p.duration(CLEAN_RETENTION), CLEAN_RETENTION)?,
    ))
}

fn parse_delimiter(option: &str, value: &str) -> Result<u8> {
    let v = match value {
        "\\t" | "\t" => return Ok(b'\t'),
        v => v,
    };
    match v.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "invalid value '{value}' for option '{option}': expected one ASCII character \
                 (or \\t for tab)"
            ),
        )
        .with_context("option", option)),
    }
}
