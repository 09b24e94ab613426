//! Auto Loader options beyond discovery and formats: `cloudFiles.partitionColumns`,
//! `cloudFiles.schemaLocation`, `cloudFiles.maxFileAge` (with Databricks' minimum),
//! `cloudFiles.validateOptions`, `cloudFiles.fetchParallelism`, `cloudFiles.resourceTag.*`,
//! and Spark's file-source spellings of the rate limits (`maxFilesPerTrigger`,
//! `maxBytesPerTrigger`), accepted as aliases of the `cloudFiles.` ones.

use std::time::Duration;

use tributary_sdk::options::conflicting;
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result};

use super::location::{self, SourcePath};
use super::names::*;
use super::Notifications;

/// Databricks' minimum `cloudFiles.maxFileAge`.
pub const MIN_FILE_AGE: Duration = Duration::from_secs(14 * 24 * 3600);

/// `cloudFiles.partitionColumns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionColumns {
    /// Not given: Hive-style `key=value` directories discovered (inferred schema), or the
    /// schema's columns found as keys (given schema).
    Discover,
    /// These columns (an empty list for `""`: none).
    Named(Vec<String>),
}

/// What notification set-up and polling do (`cloudFiles.resourceTag.*`,
/// `cloudFiles.fetchParallelism`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueSettings {
    /// Tags put on the queue the source creates.
    pub tags: Vec<(String, String)>,
    /// `cloudFiles.fetchParallelism` when given: concurrent receive requests per poll of an
    /// SQS queue ([`QueueSettings::receive_requests`]), and the listing's requests at once (an
    /// object store's prefixes, a local directory's walk threads; when not given, one request
    /// stream and the walk's default).
    pub fetch_parallelism: Option<usize>,
}

impl QueueSettings {
    /// Receive requests per poll of an SQS queue (the option's default, 1, when not given).
    pub fn receive_requests(&self) -> usize {
        self.fetch_parallelism.unwrap_or(1)
    }
}

/// The declarations.
pub fn specs() -> Vec<OptionSpec> {
    vec![
        OptionSpec::int(SPARK_MAX_FILES, 1, i64::MAX, "Spark's name of cloudFiles.maxFilesPerTrigger (give one of the two, or both with the same value)."),
        OptionSpec::bytes(SPARK_MAX_BYTES, "Spark's name of cloudFiles.maxBytesPerTrigger (give one of the two, or both with the same value)."),
        OptionSpec::string(
            PARTITION_COLUMNS,
            "Comma-separated Hive-style partition columns read from the directory names \
             (<path>/year=2026/month=12/f.json gives year and month); a file whose path lacks \
             one has null there. Default: with an inferred schema every key=value directory \
             of the sampled files (kept with the schema); with a given schema none: name them \
             here, and they must be columns of the schema, whose types they keep. \"\" adds \
             none. Inferred types: int, bigint, double, date or string with \
             cloudFiles.inferColumnTypes=true, else strings.",
        ),
        OptionSpec::string(
            SCHEMA_LOCATION,
            "A directory (local path, file:// URL, or an object-store prefix such as \
             s3://bucket/schemas/orders, read with the source's credentials) keeping the \
             inferred schema and its evolution history as versions _schemas/0, _schemas/1, \
             ...; the newest is read at start, an evolution writes the next one, created once \
             (never overwritten). Several streams may share one. Without it the schema is \
             kept in the checkpoint.",
        ),
        OptionSpec::bool(
            VALIDATE_OPTIONS,
            "Validate the options and fail on unknown or inconsistent ones. Always on: false \
             is refused (an option that is not understood would be ignored).",
        )
        .default_value(true),
        OptionSpec::int(
            FETCH_PARALLELISM,
            1,
            64,
            "Requests sent at once: a listing of an object store lists this many of its \
             prefixes at once (the first level below the path with more than one sub-prefix; \
             default one request stream) and a local directory is walked on this many threads \
             (default: the cores, 2 to 8); with notifications from an SQS queue, receive \
             requests per poll.",
        )
        .default_value(1),
        OptionSpec::prefix(
            RESOURCE_TAG,
            "cloudFiles.resourceTag.<key>=<value>: a tag on the SQS queue the source creates \
             (cloudFiles.useNotifications on s3:// without cloudFiles.queueUrl).",
        ),
    ]
}

/// `cloudFiles.maxFilesPerTrigger` or its Spark alias (declared with a minimum of 1).
pub fn max_files(p: &ParsedOptions) -> Result<u64> {
    let value = match (p.is_set(SPARK_MAX_FILES), p.is_set(MAX_FILES)) {
        (true, true) => {
            let (a, b) = (p.i64(SPARK_MAX_FILES)?, p.i64(MAX_FILES)?);
            if a != b {
                return Err(alias_conflict(SPARK_MAX_FILES, MAX_FILES));
            }
            a
        }
        (true, false) => p.i64(SPARK_MAX_FILES)?,
        _ => p.i64(MAX_FILES)?,
    };
    Ok(value.unwrap_or(1000).unsigned_abs())
}

/// `cloudFiles.maxBytesPerTrigger` or its Spark alias.
pub fn max_bytes(p: &ParsedOptions) -> Result<Option<u64>> {
    match (p.is_set(SPARK_MAX_BYTES), p.is_set(MAX_BYTES)) {
        (true, true) => {
            let (a, b) = (p.bytes(SPARK_MAX_BYTES)?, p.bytes(MAX_BYTES)?);
            if a != b {
                return Err(alias_conflict(SPARK_MAX_BYTES, MAX_BYTES));
            }
            Ok(a)
        }
        (true, false) => p.bytes(SPARK_MAX_BYTES),
        _ => p.bytes(MAX_BYTES),
    }
}

fn alias_conflict(alias: &str, name: &str) -> Error {
    conflicting(
        alias,
        name,
        "is Spark's name of the same limit and the two values differ; give one of them",
    )
}

/// `cloudFiles.maxFileAge`, at least [`MIN_FILE_AGE`].
pub fn max_file_age(p: &ParsedOptions) -> Result<Option<Duration>> {
    let age = p.duration(MAX_FILE_AGE)?;
    if let Some(age) = age {
        if age < MIN_FILE_AGE {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "invalid value '{}' for option '{MAX_FILE_AGE}': the minimum is 14 days, as \
                     in Auto Loader (file-state entries older than it are forgotten, so a \
                     shorter age risks ingesting a late or re-listed file twice)",
                    p.string(MAX_FILE_AGE)?.unwrap_or_default()
                ),
            )
            .with_context("option", MAX_FILE_AGE));
        }
    }
    Ok(age)
}

/// `cloudFiles.validateOptions`: true only.
pub fn validate_options(p: &ParsedOptions) -> Result<()> {
    if p.bool(VALIDATE_OPTIONS)? == Some(false) {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{VALIDATE_OPTIONS}=false' is not supported: options are always \
                 validated, because an option this source does not understand would otherwise \
                 be silently ignored; remove the unknown or inconsistent options instead (the \
                 error names each one)"
            ),
        )
        .with_context("option", VALIDATE_OPTIONS));
    }
    Ok(())
}

/// `cloudFiles.partitionColumns`.
pub fn partition_columns(p: &ParsedOptions) -> Result<PartitionColumns> {
    let Some(text) = p.string(PARTITION_COLUMNS)? else {
        return Ok(PartitionColumns::Discover);
    };
    let mut names: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("option '{PARTITION_COLUMNS}' names column '{name}' twice"),
            )
            .with_context("option", PARTITION_COLUMNS));
        }
        names.push(name.to_string());
    }
    Ok(PartitionColumns::Named(names))
}

/// `cloudFiles.schemaLocation`: a local directory or an object-store prefix.
pub fn schema_location(p: &ParsedOptions) -> Result<Option<SourcePath>> {
    match p.string(SCHEMA_LOCATION)?.filter(|s| !s.trim().is_empty()) {
        None => Ok(None),
        Some(raw) => location::parse(SCHEMA_LOCATION, &raw).map(Some),
    }
}

/// `cloudFiles.resourceTag.*` and `cloudFiles.fetchParallelism`, refused where they would be
/// ignored.
///
/// `lists`: the stream lists its input (directory listing, or notifications with
/// `cloudFiles.includeExistingFiles` or `cloudFiles.backfillInterval`).
pub fn queue_settings(
    p: &ParsedOptions,
    notifications: Option<&Notifications>,
    lists: bool,
) -> Result<QueueSettings> {
    // The prefix is removed, the key kept as written.
    let tags: Vec<(String, String)> = p.prefixed(RESOURCE_TAG);
    if tags.iter().any(|(k, _)| k.trim().is_empty()) {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!("option '{RESOURCE_TAG}': give the tag's key after the prefix, e.g. {RESOURCE_TAG}team=ingest"),
        )
        .with_context("option", RESOURCE_TAG));
    }
    if !tags.is_empty() && !matches!(notifications, Some(Notifications::SqsAuto)) {
        let option = format!("{RESOURCE_TAG}{}", tags[0].0);
        let why = match notifications {
            Some(Notifications::Sqs(_)) => {
                "tags the queue the source creates; with cloudFiles.queueUrl the queue exists \
                 already and is not changed"
            }
            Some(Notifications::AzureQueue(_)) => {
                "tags resources of automatic Azure setup, which this build does not do (the \
                 queue in cloudFiles.queueName exists already)"
            }
            Some(Notifications::Local) => {
                "tags cloud notification resources; local directories use inotify"
            }
            _ => "tags the notification queue, which only cloudFiles.useNotifications=true sets up",
        };
        return Err(conflicting(&option, USE_NOTIFICATIONS, why));
    }
    let sqs = matches!(
        notifications,
        Some(Notifications::Sqs(_) | Notifications::SqsAuto)
    );
    p.refuse_ignored(
        FETCH_PARALLELISM,
        sqs || lists,
        INCLUDE_EXISTING,
        "sets how many listing requests (or SQS receive requests) run at once, but this \
         stream never lists its input (notifications without cloudFiles.includeExistingFiles \
         or cloudFiles.backfillInterval) and reads no SQS queue",
    )?;
    // Declared from 1 to 64.
    let parallelism = match p.i64(FETCH_PARALLELISM)? {
        Some(n) if p.is_set(FETCH_PARALLELISM) => Some(usize::try_from(n).unwrap_or(1).max(1)),
        _ => None,
    };
    Ok(QueueSettings {
        tags,
        fetch_parallelism: parallelism,
    })
}
