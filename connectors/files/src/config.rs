//! Options of the files source, declared once, and the typed configuration parsed from them.
//!
//! Option names follow Databricks Auto Loader (`cloudFiles.*`) and Spark's file sources
//! (`pathGlobFilter`, `mode`, `header`, `sep`, `ignoreMissingFiles`). [`option_specs`] is the
//! single declaration: documentation, validation and "did you mean" hints all come from it.
//! [`FilesConfig::parse`] is pure (no I/O); resolving the path against the file system happens
//! when the source is built.

use std::path::PathBuf;
use std::time::Duration;

use tributary_sdk::{Error, ErrorCode, OptionSpec, Options, ReadLimit, Result};

/// Option names (the spelling used in documentation; matching is case-insensitive).
pub mod names {
    /// Directory, file or glob to ingest.
    pub const PATH: &str = "path";
    /// File format.
    pub const FORMAT: &str = "cloudFiles.format";
    /// Spark DDL schema.
    pub const SCHEMA: &str = "schema";
    /// Infer typed columns for JSON/CSV.
    pub const INFER_COLUMN_TYPES: &str = "cloudFiles.inferColumnTypes";
    /// Files sampled for inference.
    pub const SAMPLE_FILES: &str = "cloudFiles.schemaInference.sampleSize.numFiles";
    /// Records sampled for inference.
    pub const SAMPLE_RECORDS: &str = "cloudFiles.schemaInference.sampleSize.numRecords";
    /// Glob on file names.
    pub const PATH_GLOB_FILTER: &str = "pathGlobFilter";
    /// Ingest files present at the first listing.
    pub const INCLUDE_EXISTING: &str = "cloudFiles.includeExistingFiles";
    /// Re-ingest files whose modification time changed.
    pub const ALLOW_OVERWRITES: &str = "cloudFiles.allowOverwrites";
    /// Files per batch (hard).
    pub const MAX_FILES: &str = "cloudFiles.maxFilesPerTrigger";
    /// Bytes per batch (soft).
    pub const MAX_BYTES: &str = "cloudFiles.maxBytesPerTrigger";
    /// Oldest file considered.
    pub const MAX_FILE_AGE: &str = "cloudFiles.maxFileAge";
    /// PERMISSIVE or FAILFAST.
    pub const MODE: &str = "mode";
    /// Name of the rescued data column.
    pub const RESCUED: &str = "rescuedDataColumn";
    /// CSV header line.
    pub const HEADER: &str = "header";
    /// CSV separator.
    pub const SEP: &str = "sep";
    /// CSV separator (alias of `sep`).
    pub const DELIMITER: &str = "delimiter";
    /// Skip files that vanished between discovery and read.
    pub const IGNORE_MISSING: &str = "ignoreMissingFiles";
    /// JSON: each file is one document (an object, or an array of objects).
    pub const MULTI_LINE: &str = "multiLine";
    /// What new columns in the data do.
    pub const SCHEMA_EVOLUTION_MODE: &str = "cloudFiles.schemaEvolutionMode";
    /// Types for some columns of an inferred schema (DDL).
    pub const SCHEMA_HINTS: &str = "cloudFiles.schemaHints";
    /// What happens to ingested files: OFF, DELETE or MOVE.
    pub const CLEAN_SOURCE: &str = "cloudFiles.cleanSource";
    /// Where MOVE puts them.
    pub const CLEAN_MOVE_DESTINATION: &str = "cloudFiles.cleanSource.moveDestination";
    /// How long after its batch committed a file is cleaned.
    pub const CLEAN_RETENTION: &str = "cloudFiles.cleanSource.retentionDuration";
}

/// Every option the files source accepts.
pub fn option_specs() -> Vec<OptionSpec> {
    use names::*;
    vec![
        OptionSpec::string(
            PATH,
            "Directory to ingest (recursively), a single file, or a glob such as /data/*/*.json. \
             A local path or file:// URL; s3://, gs:// and abfss:// are not supported in this build.",
        )
        .required(),
        OptionSpec::one_of(FORMAT, &["json", "csv", "parquet"], "File format: json (JSON lines), csv or parquet.")
            .required(),
        OptionSpec::string(
            SCHEMA,
            "Schema as a Spark DDL string, e.g. 'id BIGINT, name STRING, ts TIMESTAMP'. \
             Without it the schema is inferred from the first files and kept in the checkpoint.",
        ),
        OptionSpec::bool(
            INFER_COLUMN_TYPES,
            "Infer column types for JSON and CSV; when false (the default) inferred columns are strings.",
        )
        .default_value(false),
        OptionSpec::int(SAMPLE_FILES, 1, i64::MAX, "How many files schema inference reads at most.")
            .default_value(10),
        OptionSpec::int(
            SAMPLE_RECORDS,
            1,
            i64::MAX,
            "How many records (JSON lines or CSV rows) schema inference reads at most, over all sampled files.",
        )
        .default_value(1000),
        OptionSpec::string(
            PATH_GLOB_FILTER,
            "Only ingest files whose name matches this glob, e.g. *.json.",
        ),
        OptionSpec::bool(
            INCLUDE_EXISTING,
            "Ingest the files present when the stream first starts; false ingests only files that arrive later.",
        )
        .default_value(true),
        OptionSpec::bool(
            ALLOW_OVERWRITES,
            "Ingest a file again when its modification time changes; by default a path is ingested once.",
        )
        .default_value(false),
        OptionSpec::int(MAX_FILES, 1, i64::MAX, "Most files per micro-batch (a hard limit).")
            .default_value(1000),
        OptionSpec::bytes(
            MAX_BYTES,
            "About this many bytes per micro-batch, e.g. 10g (a soft limit: at least one file is always taken).",
        ),
        OptionSpec::duration(
            MAX_FILE_AGE,
            "Ignore files whose modification time is older than this, e.g. 7 days.",
        ),
        OptionSpec::one_of(
            MODE,
            &["PERMISSIVE", "FAILFAST"],
            "PERMISSIVE turns a malformed record into nulls with its text in the rescued data \
             column and counts it; FAILFAST stops with MALFORMED_RECORD naming file and line.",
        )
        .default_value("PERMISSIVE"),
        OptionSpec::string(
            RESCUED,
            "Name of the column that receives records and values that do not fit the schema (JSON and CSV).",
        )
        .default_value(tributary_sdk::record::RESCUED_DATA_COLUMN),
        OptionSpec::bool(HEADER, "CSV: the first line of each file holds the column names.")
            .default_value(false),
        OptionSpec::string(SEP, "CSV: the field separator, one character (\\t for tab).")
            .default_value(","),
        OptionSpec::string(DELIMITER, "CSV: alias of sep."),
        OptionSpec::one_of(
            CLEAN_SOURCE,
            &["OFF", "DELETE", "MOVE"],
            "What happens to a file once its batch committed and the retention passed: OFF \
             (kept), DELETE, or MOVE to cloudFiles.cleanSource.moveDestination.",
        )
        .default_value("OFF"),
        OptionSpec::string(
            CLEAN_MOVE_DESTINATION,
            "MOVE: the directory files move to (their path under the source directory is kept); \
             must not be inside the source path.",
        ),
        OptionSpec::duration(
            CLEAN_RETENTION,
            "How long after its batch committed a file is cleaned.",
        )
        .default_value("30 days"),
        OptionSpec::string(
            SCHEMA_HINTS,
            "Types for some columns of an inferred schema, as DDL (`id BIGINT, ts TIMESTAMP`): \
             a hinted column gets that type, a hinted column the sample lacks is added. Applied \
             when the schema is inferred (the first run); the stored schema keeps them.",
        ),
        OptionSpec::one_of(
            SCHEMA_EVOLUTION_MODE,
            &["addNewColumns", "rescue", "failOnNewColumns", "none"],
            "JSON and Parquet: what a column that is not in the schema does. addNewColumns \
             (default with an inferred schema): the stream stops with UNKNOWN_FIELD_EXCEPTION \
             after adding the columns to the stored schema, and a restart reads them; rescue \
             (JSON; default with a given schema): the values go to the rescued data column; \
             failOnNewColumns: the stream stops and the schema is kept; none (Parquet's default \
             with a given schema): the values are dropped.",
        ),
        OptionSpec::bool(
            MULTI_LINE,
            "JSON: each file is one JSON document spanning lines (an object, or an array whose \
             elements are the rows) instead of one object per line.",
        )
        .default_value(false),
        OptionSpec::bool(
            IGNORE_MISSING,
            "Skip (and count) a file that vanished between discovery and reading instead of failing \
             with CLOUD_FILES_FILE_NOT_FOUND.",
        )
        .default_value(false),
    ]
}

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
    /// The path as the user wrote it (local path, file:// URL resolved to a path).
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
    /// Validates an option map and builds the configuration. Pure: touches no file.
    pub fn parse(options: &Options) -> Result<FilesConfig> {
        use names::*;
        let specs = option_specs();
        let p = OptionSpec::validate_all(&specs, options, "files")?;
        let path = parse_path(&p.required_string(PATH)?)?;
        let format = match p.word(FORMAT)?.as_deref() {
            Some("json") => Format::Json,
            Some("csv") => Format::Csv,
            Some("parquet") => Format::Parquet,
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!("unsupported format {other:?}"),
                )
                .with_context("option", FORMAT))
            }
        };
        if p.is_set(SEP) && p.is_set(DELIMITER) {
            return Err(Error::new(
                ErrorCode::ConflictingOptions,
                "options 'sep' and 'delimiter' are aliases; give only one",
            )
            .with_context("option", SEP));
        }
        let sep_name = if p.is_set(DELIMITER) { DELIMITER } else { SEP };
        let delimiter = parse_delimiter(sep_name, &p.required_string(sep_name)?)?;
        let rescued_column = p.required_string(RESCUED)?;
        if rescued_column.trim().is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                "option 'rescuedDataColumn' must not be empty",
            )
            .with_context("option", RESCUED));
        }
        if let Some(glob) = p.string(PATH_GLOB_FILTER)? {
            globset::Glob::new(&glob).map_err(|e| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!("invalid glob '{glob}' for option '{PATH_GLOB_FILTER}': {e}"),
                )
                .with_context("option", PATH_GLOB_FILTER)
            })?;
        }
        let multi_line = p.bool(MULTI_LINE)?.unwrap_or(false);
        if multi_line && format != Format::Json {
            return Err(Error::new(
                ErrorCode::ConflictingOptions,
                format!(
                    "option '{MULTI_LINE}' applies to cloudFiles.format=json only (the format is {})",
                    format.as_str()
                ),
            )
            .with_context("option", MULTI_LINE));
        }
        let schema_ddl = p.string(SCHEMA)?.filter(|s| !s.trim().is_empty());
        let schema_evolution = match p.word(SCHEMA_EVOLUTION_MODE)?.as_deref() {
            Some("addnewcolumns") => SchemaEvolution::AddNewColumns,
            Some("rescue") => SchemaEvolution::Rescue,
            Some("failonnewcolumns") => SchemaEvolution::FailOnNewColumns,
            Some("none") => SchemaEvolution::None,
            // Auto Loader's defaults: evolve an inferred schema, keep a given one (JSON rescues
            // the values, Parquet has no rescued column and drops them).
            _ if schema_ddl.is_none() && format != Format::Csv => SchemaEvolution::AddNewColumns,
            _ if format == Format::Parquet => SchemaEvolution::None,
            _ => SchemaEvolution::Rescue,
        };
        if format == Format::Csv && p.is_set(SCHEMA_EVOLUTION_MODE) {
            return Err(Error::new(
                ErrorCode::ConflictingOptions,
                format!(
                    "option '{SCHEMA_EVOLUTION_MODE}' applies to json and parquet in this build; \
                     CSV values that do not fit are rescued"
                ),
            )
            .with_context("option", SCHEMA_EVOLUTION_MODE));
        }
        if format == Format::Parquet && schema_evolution == SchemaEvolution::Rescue {
            return Err(Error::new(
                ErrorCode::ConflictingOptions,
                format!(
                    "{SCHEMA_EVOLUTION_MODE}=rescue needs a rescued data column, which Parquet \
                     streams do not have; use addNewColumns, failOnNewColumns or none"
                ),
            )
            .with_context("option", SCHEMA_EVOLUTION_MODE));
        }
        if schema_evolution == SchemaEvolution::AddNewColumns && schema_ddl.is_some() {
            return Err(Error::new(
                ErrorCode::ConflictingOptions,
                format!(
                    "{SCHEMA_EVOLUTION_MODE}=addNewColumns needs an inferred schema (it evolves \
                     the stored one); with the 'schema' option use rescue, failOnNewColumns or none"
                ),
            )
            .with_context("option", SCHEMA_EVOLUTION_MODE));
        }
        let schema_hints = match p.string(SCHEMA_HINTS)?.filter(|s| !s.trim().is_empty()) {
            None => None,
            Some(_) if schema_ddl.is_some() => {
                return Err(Error::new(
                    ErrorCode::ConflictingOptions,
                    format!(
                        "option '{SCHEMA_HINTS}' refines an inferred schema; with the 'schema' \
                         option give the types there"
                    ),
                )
                .with_context("option", SCHEMA_HINTS))
            }
            Some(text) => Some(crate::ddl::parse_ddl(&text).map_err(|e| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!("option '{SCHEMA_HINTS}': {}", e.message()),
                )
                .with_context("option", SCHEMA_HINTS)
            })?),
        };
        let clean_source = match p.word(CLEAN_SOURCE)?.as_deref() {
            Some("delete") => CleanSource::Delete,
            Some("move") => {
                let dest = p.string(CLEAN_MOVE_DESTINATION)?.ok_or_else(|| {
                    Error::new(
                        ErrorCode::MissingOption,
                        format!("option '{CLEAN_MOVE_DESTINATION}' is required with {CLEAN_SOURCE}=MOVE"),
                    )
                    .with_context("option", CLEAN_MOVE_DESTINATION)
                })?;
                let dest = parse_path(&dest)?;
                if !dest.is_absolute() || dest.starts_with(&path) {
                    return Err(Error::new(
                        ErrorCode::InvalidOption,
                        format!(
                            "option '{CLEAN_MOVE_DESTINATION}' must be an absolute directory outside \
                             the source path {} (moved files would be listed again), got {}",
                            path.display(),
                            dest.display()
                        ),
                    )
                    .with_context("option", CLEAN_MOVE_DESTINATION));
                }
                CleanSource::Move(dest)
            }
            _ => CleanSource::Off,
        };
        let clean_retention = p
            .duration(CLEAN_RETENTION)?
            .unwrap_or(Duration::from_secs(30 * 24 * 3600));
        let count = |name: &str| -> Result<usize> {
            Ok(usize::try_from(p.i64(name)?.unwrap_or(1)).unwrap_or(usize::MAX))
        };
        Ok(FilesConfig {
            path,
            format,
            schema_ddl,
            infer_column_types: p.bool(INFER_COLUMN_TYPES)?.unwrap_or(false),
            sample_files: count(SAMPLE_FILES)?,
            sample_records: count(SAMPLE_RECORDS)?,
            path_glob_filter: p.string(PATH_GLOB_FILTER)?,
            include_existing_files: p.bool(INCLUDE_EXISTING)?.unwrap_or(true),
            allow_overwrites: p.bool(ALLOW_OVERWRITES)?.unwrap_or(false),
            max_files_per_trigger: p.i64(MAX_FILES)?.unwrap_or(1000).max(1) as u64,
            max_bytes_per_trigger: p.bytes(MAX_BYTES)?,
            max_file_age: p.duration(MAX_FILE_AGE)?,
            mode: match p.word(MODE)?.as_deref() {
                Some("failfast") => Mode::FailFast,
                _ => Mode::Permissive,
            },
            rescued_column,
            csv: CsvOptions {
                header: p.bool(HEADER)?.unwrap_or(false),
                delimiter,
            },
            ignore_missing_files: p.bool(IGNORE_MISSING)?.unwrap_or(false),
            multi_line,
            schema_evolution,
            schema_hints,
            clean_source,
            clean_retention,
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
}

/// Turns the `path` option into a local path: a plain path or a `file://` URL. Any other URL
/// scheme is refused: only local paths are supported in this build.
fn parse_path(raw: &str) -> Result<PathBuf> {
    let text = raw.trim();
    let bad = |msg: String| {
        Error::new(ErrorCode::InvalidOption, msg)
            .with_context("option", names::PATH)
            .with_context("value", text)
    };
    if text.is_empty() {
        return Err(bad("option 'path' must not be empty".into()));
    }
    if let Some(scheme) = url_scheme(text) {
        if scheme.eq_ignore_ascii_case("file") {
            let url = url::Url::parse(text).map_err(|e| {
                bad(format!(
                    "option 'path' is not a valid file URL '{text}': {e}"
                ))
            })?;
            return url
                .to_file_path()
                .map_err(|_| bad(format!("option 'path' is not a local file URL: '{text}'")));
        }
        return Err(bad(format!(
            "option 'path' uses the scheme '{scheme}://', but only local paths (or file:// URLs) \
             are supported in this build of the files source"
        )));
    }
    Ok(PathBuf::from(text))
}

/// The scheme of `text` when it looks like a URL (`s3://...`, `dbfs:/...`); a Windows drive
/// letter (`C:\`) is not a scheme.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once(':')?;
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Options {
        pairs.iter().copied().collect()
    }

    #[test]
    fn defaults_follow_auto_loader() {
        let c =
            FilesConfig::parse(&opts(&[("path", "/d"), ("cloudFiles.format", "JSON")])).unwrap();
        assert_eq!(c.format, Format::Json);
        assert_eq!(c.max_files_per_trigger, 1000);
        assert_eq!(c.read_limit(), ReadLimit::MaxFiles(1000));
        assert!(c.include_existing_files);
        assert!(!c.allow_overwrites);
        assert!(!c.infer_column_types);
        assert_eq!(c.mode, Mode::Permissive);
        assert_eq!(c.rescued_column, "_rescued_data");
        assert_eq!(
            c.csv,
            CsvOptions {
                header: false,
                delimiter: b','
            }
        );
    }

    #[test]
    fn negative_max_files_is_refused_naming_option_and_value() {
        let e = FilesConfig::parse(&opts(&[
            ("path", "/d"),
            ("cloudFiles.format", "json"),
            ("cloudFiles.maxFilesPerTrigger", "-3"),
        ]))
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(e.message().contains("'-3'"), "{}", e.message());
        assert!(e.message().contains("cloudFiles.maxFilesPerTrigger"));
        assert!(e.message().contains("positive whole number"));
    }

    #[test]
    fn near_miss_option_gets_did_you_mean() {
        let e = FilesConfig::parse(&opts(&[
            ("path", "/d"),
            ("cloudFiles.format", "json"),
            ("cloudFiles.maxFilePerTrigger", "3"),
        ]))
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownOption);
        assert!(e
            .message()
            .contains("did you mean 'cloudFiles.maxFilesPerTrigger'"));
    }

    #[test]
    fn format_is_required_and_checked() {
        let e = FilesConfig::parse(&opts(&[("path", "/d")])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
        assert_eq!(e.context_value("option"), Some("cloudFiles.format"));
        let e =
            FilesConfig::parse(&opts(&[("path", "/d"), ("cloudFiles.format", "xml")])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(e.message().contains("json, csv, parquet"));
    }

    #[test]
    fn remote_schemes_are_refused_and_file_urls_accepted() {
        for p in [
            "s3://bucket/x",
            "gs://b/x",
            "abfss://c@a.dfs.core.windows.net/x",
        ] {
            let e = FilesConfig::parse(&opts(&[("path", p), ("cloudFiles.format", "json")]))
                .unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{p}");
            assert!(e.message().contains("only local paths"), "{}", e.message());
        }
        let c = FilesConfig::parse(&opts(&[
            ("path", "file:///tmp/in"),
            ("cloudFiles.format", "csv"),
        ]))
        .unwrap();
        assert_eq!(c.path, PathBuf::from("/tmp/in"));
    }

    #[test]
    fn bytes_limit_makes_a_composite_limit() {
        let c = FilesConfig::parse(&opts(&[
            ("path", "/d"),
            ("cloudFiles.format", "csv"),
            ("cloudFiles.maxBytesPerTrigger", "10m"),
            ("cloudFiles.maxFilesPerTrigger", "7"),
        ]))
        .unwrap();
        assert_eq!(c.read_limit().max_files(), Some(7));
        assert_eq!(c.read_limit().max_bytes(), Some(10 << 20));
    }

    #[test]
    fn csv_separator_is_one_character_and_aliases_conflict() {
        let base = [("path", "/d"), ("cloudFiles.format", "csv")];
        let mut o = opts(&base);
        o.set("sep", "\\t");
        assert_eq!(FilesConfig::parse(&o).unwrap().csv.delimiter, b'\t');
        let mut o = opts(&base);
        o.set("delimiter", ";");
        assert_eq!(FilesConfig::parse(&o).unwrap().csv.delimiter, b';');
        let mut o = opts(&base);
        o.set("sep", "||");
        assert_eq!(
            FilesConfig::parse(&o).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        let mut o = opts(&base);
        o.set("sep", ";").set("delimiter", ";");
        assert_eq!(
            FilesConfig::parse(&o).unwrap_err().code(),
            ErrorCode::ConflictingOptions
        );
    }

    #[test]
    fn bad_glob_and_mode_are_refused() {
        let base = [("path", "/d"), ("cloudFiles.format", "json")];
        let mut o = opts(&base);
        o.set("pathGlobFilter", "[abc");
        let e = FilesConfig::parse(&o).unwrap_err();
        assert_eq!(e.context_value("option"), Some("pathGlobFilter"));
        let mut o = opts(&base);
        o.set("mode", "dropmalformed");
        assert_eq!(
            FilesConfig::parse(&o).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        let mut o = opts(&base);
        o.set("mode", "failFast");
        assert_eq!(FilesConfig::parse(&o).unwrap().mode, Mode::FailFast);
    }

    #[test]
    fn multi_line_is_a_json_option() {
        let mut o = opts(&[("path", "/d"), ("cloudFiles.format", "json")]);
        o.set("multiLine", "true");
        assert!(FilesConfig::parse(&o).unwrap().multi_line);
        let mut o = opts(&[("path", "/d"), ("cloudFiles.format", "csv")]);
        o.set("multiline", "true");
        let e = FilesConfig::parse(&o).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert!(e.message().contains("format=json only"), "{}", e.message());
    }
}
