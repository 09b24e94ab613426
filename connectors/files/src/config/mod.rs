//! The typed configuration of the files source, parsed once from validated options.
//!
//! [`option_specs`] declares every option (and [`names`] their spellings);
//! [`FilesConfig::parse`] turns the validated map into a [`FilesConfig`] and refuses options that
//! conflict or would be ignored (`CONFLICTING_OPTIONS` naming both). Parsing is pure: the path is made absolute by name and
//! resolved against the file system only when the source is built.

pub mod autoloader;
mod cloud;
pub mod datetime;
pub mod location;
pub(crate) mod modes;
pub mod names;
mod options;
mod path;
pub mod reader;
#[cfg(test)]
mod tests;

use std::time::Duration;

use tributary_sdk::options::conflicting;
use tributary_sdk::{Error, ErrorCode, ParsedOptions, ReadLimit, Result};

pub use self::autoloader::{PartitionColumns, QueueSettings};
pub use self::cloud::CloudOptions;
pub use self::location::{Cloud, CloudPath, SourcePath};
pub use self::modes::{CsvOptions, Mode, SchemaEvolution, ValueFormats};
pub use self::options::option_specs;
pub use crate::format::kind::Format;
use crate::globs::{glob, split_glob};

/// The validated configuration of one files source.
#[derive(Debug, Clone)]
pub struct FilesConfig {
    /// The path: a local path, absolute and normalized by name (a `file://` URL resolved to
    /// a path), or an object-store URL.
    pub path: SourcePath,
    /// Object-store access (endpoint, region, credentials).
    pub cloud: CloudOptions,
    /// `cloudFiles.useIncrementalListing`.
    pub incremental_listing: IncrementalListing,
    /// `cloudFiles.backfillInterval`.
    pub backfill_interval: Option<Duration>,
    /// `cloudFiles.useNotifications` (with `cloudFiles.queueUrl` for S3).
    pub notifications: Option<Notifications>,
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
    /// `nullValue`, `timestampFormat`, `dateFormat`.
    pub formats: ValueFormats,
    /// JSON `allowComments`.
    pub allow_comments: bool,
    /// JSON `primitivesAsString` (inference).
    pub primitives_as_string: bool,
    /// `cloudFiles.partitionColumns`.
    pub partition_columns: PartitionColumns,
    /// `cloudFiles.schemaLocation`: where the inferred schema's versions are kept (else the
    /// checkpoint's state directory).
    pub schema_location: Option<SourcePath>,
    /// `cloudFiles.resourceTag.*`, `cloudFiles.fetchParallelism`.
    pub queue: QueueSettings,
    /// Format-specific options (text: `wholeText`, `lineSep`), parsed in `crate::format::options`.
    pub format_options: crate::format::FormatOptions,
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

/// Where change notifications come from (`cloudFiles.useNotifications=true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notifications {
    /// inotify on the local directory.
    Local,
    /// S3 event notifications in this SQS queue.
    Sqs(String),
    /// S3 event notifications in a queue the source sets up itself, named from the
    /// checkpoint's id (`crate::notifications::s3_setup`).
    SqsAuto,
    /// Azure Blob events (Event Grid) in this Storage queue.
    AzureQueue(String),
}

/// `cloudFiles.useNotifications` and `cloudFiles.queueUrl`.
fn parse_notifications(p: &ParsedOptions, path: &SourcePath) -> Result<Option<Notifications>> {
    use names::*;
    let on = defaulted(p.bool(USE_NOTIFICATIONS), USE_NOTIFICATIONS)?;
    p.refuse_ignored(
        QUEUE_URL,
        on,
        USE_NOTIFICATIONS,
        "is only used when cloudFiles.useNotifications is true",
    )?;
    p.refuse_ignored(
        QUEUE_URL,
        path.as_cloud().is_some_and(|c| c.cloud == Cloud::S3),
        PATH,
        "names an SQS queue, which only s3:// paths use",
    )?;
    p.refuse_ignored(
        USE_INCREMENTAL_LISTING,
        !on,
        USE_NOTIFICATIONS,
        "chooses how the input is listed at each trigger; with notifications it is not listed",
    )?;
    let azure = path.as_cloud().is_some_and(|c| c.cloud == Cloud::Azure);
    p.refuse_ignored(
        QUEUE_NAME,
        on,
        USE_NOTIFICATIONS,
        "is only used when cloudFiles.useNotifications is true",
    )?;
    p.refuse_ignored(
        QUEUE_NAME,
        azure,
        PATH,
        "names an Azure Storage queue, which only abfss:// and az:// paths use",
    )?;
    for option in [RESOURCE_GROUP, SUBSCRIPTION_ID] {
        if p.is_set(option) {
            return Err(azure_setup_refused(option));
        }
    }
    if !on {
        return Ok(None);
    }
    match path {
        SourcePath::Local(_) => Ok(Some(Notifications::Local)),
        SourcePath::Cloud(c) if c.cloud == Cloud::S3 => match p.string(QUEUE_URL)? {
            Some(url) => Ok(Some(Notifications::Sqs(url))),
            None => Ok(Some(Notifications::SqsAuto)),
        },
        SourcePath::Cloud(c) if c.cloud == Cloud::Azure => match p.string(QUEUE_NAME)? {
            Some(name) => Ok(Some(Notifications::AzureQueue(name))),
            None => Err(azure_setup_refused(QUEUE_NAME)),
        },
        SourcePath::Cloud(c) => Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{USE_NOTIFICATIONS}': notifications from {} are not supported in this \
                 build (S3 through SQS, Azure through a Storage queue and local directories \
                 are); use directory listing with \
                 {BACKFILL_INTERVAL} instead",
                c.cloud.name()
            ),
        )
        .with_context("option", USE_NOTIFICATIONS)),
    }
}

/// Automatic Azure setup (an Event Grid subscription and its queue) is not supported.
fn azure_setup_refused(option: &str) -> Error {
    use names::*;
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "option '{option}': automatic setup of Azure notifications (an Event Grid \
             subscription and a Storage queue, with {SUBSCRIPTION_ID}/{RESOURCE_GROUP}) is not \
             supported in this build. Create an Event Grid subscription of the storage \
             account's Microsoft.Storage.BlobCreated events to a Storage queue, and give the \
             queue's name in {QUEUE_NAME} (read with {CONNECTION_STRING})"
        ),
    )
    .with_context("option", option)
}

/// `cloudFiles.useIncrementalListing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrementalListing {
    /// On while file names arrive in lexical order (object stores only).
    Auto,
    /// Always (a full listing after every 7 incremental ones).
    On,
    /// Never.
    Off,
}

/// What happens to ingested files (`cloudFiles.cleanSource`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanSource {
    /// Kept.
    Off,
    /// Deleted.
    Delete,
    /// Moved under this directory (local) or prefix (same bucket or container).
    Move(SourcePath),
}

/// `path` and the object-store options alone (the `notifications` command).
pub(crate) fn parse_store(p: &ParsedOptions) -> Result<(SourcePath, CloudOptions)> {
    let path = location::parse(names::PATH, &p.required_string(names::PATH)?)?;
    let cloud = cloud::parse(p, &path)?;
    Ok((path, cloud))
}

impl FilesConfig {
    /// Builds the configuration from options validated against [`option_specs`], refusing
    /// options that conflict or would be ignored (`CONFLICTING_OPTIONS` naming both). Pure: no
    /// file is touched (a relative path is made absolute against the current directory).
    pub fn parse(p: &ParsedOptions) -> Result<FilesConfig> {
        use names::*;
        let path = location::parse(PATH, &p.required_string(PATH)?)?;
        let pattern = match &path {
            SourcePath::Local(local) => split_glob(local).1,
            SourcePath::Cloud(c) => location::split_key_glob(&c.key).1,
        };
        if let Some(pattern) = pattern {
            glob(&pattern, true, PATH)?;
        }
        let cloud = cloud::parse(p, &path)?;
        autoloader::validate_options(p)?;
        let notifications = parse_notifications(p, &path)?;
        let lists = notifications.is_none()
            || defaulted(p.bool(INCLUDE_EXISTING), INCLUDE_EXISTING)?
            || p.duration(BACKFILL_INTERVAL)?.is_some();
        let queue = autoloader::queue_settings(p, notifications.as_ref(), lists)?;
        let path_glob_filter = p.string(PATH_GLOB_FILTER)?;
        if let Some(g) = &path_glob_filter {
            glob(g, false, PATH_GLOB_FILTER)?;
        }
        // Required, and validated as one of `Format::NAMES`.
        let format = Format::from_word(p.word(FORMAT)?.as_deref());
        let inferred = p.string(SCHEMA)?.filter(|s| !s.trim().is_empty()).is_none();
        let reader = reader::parse(p, format, inferred)?;
        let format_options = crate::format::options::parse(p, format)?;
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
        // A typo in the DDL is an option error `check` reports, not a failure at the build.
        if let Some(ddl) = &schema_ddl {
            crate::ddl::parse_ddl(ddl).map_err(|e| e.with_context("option", SCHEMA))?;
        }
        p.refuse_ignored(
            SCHEMA_LOCATION,
            inferred && !format.has_fixed_schema(),
            if inferred { FORMAT } else { SCHEMA },
            "keeps an inferred schema and its evolution, but this stream's schema is given \
             (the 'schema' option, or the fixed columns of text and binaryFile)",
        )?;
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
            max_files_per_trigger: autoloader::max_files(p)?,
            max_bytes_per_trigger: autoloader::max_bytes(p)?,
            max_file_age: autoloader::max_file_age(p)?,
            mode: match p.word(MODE)?.as_deref() {
                Some("failfast") => Mode::FailFast,
                Some("dropmalformed") => {
                    return Err(Error::new(
                        ErrorCode::InvalidOption,
                        "option 'mode': DROPMALFORMED is not supported: a dropped record would \
                         leave no trace in the output, while this source keeps every record \
                         (PERMISSIVE: nulls, the text in the rescued data column, counted in \
                         numMalformedRecords). Use PERMISSIVE and filter out rows whose rescued \
                         data column is not null in [transform], or FAILFAST",
                    )
                    .with_context("option", MODE))
                }
                _ => Mode::Permissive,
            },
            rescued_column,
            csv: reader.csv,
            formats: reader.formats,
            allow_comments: reader.allow_comments,
            primitives_as_string: reader.primitives_as_string,
            partition_columns: autoloader::partition_columns(p)?,
            schema_location: autoloader::schema_location(p)?,
            queue,
            format_options,
            ignore_missing_files: defaulted(p.bool(IGNORE_MISSING), IGNORE_MISSING)?,
            multi_line: defaulted(p.bool(MULTI_LINE), MULTI_LINE)?,
            schema_evolution,
            schema_hints,
            clean_source,
            clean_retention,
            path,
            cloud,
            incremental_listing: match p.word(USE_INCREMENTAL_LISTING)?.as_deref() {
                Some("true") => IncrementalListing::On,
                Some("false") => IncrementalListing::Off,
                _ => IncrementalListing::Auto,
            },
            backfill_interval: p.duration(BACKFILL_INTERVAL)?,
            notifications,
        })
    }

    /// Whether inference types primitive values (`cloudFiles.inferColumnTypes`, unless JSON's
    /// `primitivesAsString` keeps them strings).
    pub fn infers_types(&self) -> bool {
        self.infer_column_types && !(self.format == Format::Json && self.primitives_as_string)
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
            self.path,
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
    let parquet = format.is_self_describing();
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
        None if format.is_self_describing() => SchemaEvolution::None,
        None => SchemaEvolution::Rescue,
    };
    if format.is_self_describing() && mode == SchemaEvolution::Rescue {
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
fn parse_clean_source(p: &ParsedOptions, path: &SourcePath) -> Result<(CleanSource, Duration)> {
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
            CleanSource::Move(move_destination(path, &dest)?)
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

/// `cloudFiles.cleanSource.moveDestination`: outside the listed directory (moved files would be
/// listed again) and, for object stores, in the same bucket or container (a move there is a
/// server-side copy and a delete; across buckets every file would be downloaded and uploaded
/// again, which the reference refuses for the same reason).
fn move_destination(path: &SourcePath, raw: &str) -> Result<SourcePath> {
    use names::*;
    let invalid = |msg: String| {
        Err(Error::new(ErrorCode::InvalidOption, msg)
            .with_context("option", CLEAN_MOVE_DESTINATION))
    };
    let dest = location::parse(CLEAN_MOVE_DESTINATION, raw)?;
    let written = raw.trim();
    if dest.as_local().is_some()
        && !written.starts_with("file:")
        && !std::path::Path::new(written).is_absolute()
    {
        return invalid(format!(
            "option '{CLEAN_MOVE_DESTINATION}' must be an absolute directory, got {written}"
        ));
    }
    match (path, &dest) {
        (SourcePath::Local(path), SourcePath::Local(dest)) => {
            let (listed, _) = split_glob(path);
            if dest.starts_with(&listed) {
                return invalid(format!(
                    "option '{CLEAN_MOVE_DESTINATION}' must be a directory outside the listed \
                     directory {} (moved files would be listed again), got {}",
                    listed.display(),
                    dest.display()
                ));
            }
        }
        (SourcePath::Cloud(src), SourcePath::Cloud(to)) => {
            if !src.same_bucket(to) {
                return invalid(format!(
                    "option '{CLEAN_MOVE_DESTINATION}' must be in the same {word} as the source \
                     ({src_root}): {store} moves a file by copying it inside the {word} and \
                     deleting the original; a move to another {word} would download and upload \
                     every file again. Got {to}",
                    word = src.cloud.bucket_word(),
                    src_root = src.root_url(),
                    store = src.cloud.name(),
                ));
            }
            let (listed, _) = location::split_key_glob(&src.key);
            let inside =
                listed.is_empty() || to.key == listed || to.key.starts_with(&format!("{listed}/"));
            if inside {
                return invalid(format!(
                    "option '{CLEAN_MOVE_DESTINATION}' must be a prefix outside the listed prefix \
                     {src} (moved files would be listed again), got {to}"
                ));
            }
        }
        (SourcePath::Local(_), SourcePath::Cloud(to)) => {
            return invalid(format!(
                "option '{CLEAN_MOVE_DESTINATION}' is an object-store URL ({to}) but the source \
                 path is local; files move within one file system or bucket"
            ))
        }
        (SourcePath::Cloud(src), SourcePath::Local(to)) => {
            return invalid(format!(
                "option '{CLEAN_MOVE_DESTINATION}' is a local path ({}) but the source is {src}; \
                 give a prefix in the same {} (e.g. {}/archive)",
                to.display(),
                src.cloud.bucket_word(),
                src.root_url()
            ))
        }
    }
    Ok(dest)
}
