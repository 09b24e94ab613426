//! The one public error type of Tributary.
//!
//! Every failure a connector or the runtime reports is an [`Error`]: a stable [`ErrorCode`]
//! (a machine-readable string that never changes once released), a human message, structured
//! context (`option`, `topic`, `partition`, `file`, ...), the domain that caused it and a retry hint.
//! Connectors keep their own private error enums and map them into this type at the boundary,
//! so users match on [`Error::code`] and the `is_*` predicates, never on message text.

use std::fmt;
use std::time::Duration;

/// Result alias used throughout the SDK.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Stable, machine-readable error codes.
///
/// The string form ([`ErrorCode::as_str`]) is part of the public contract: scripts and alerting
/// match on it. New codes may be added (the enum is non-exhaustive); existing ones never change.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// An option has a value outside its allowed range or type.
    InvalidOption,
    /// An option name is not known to the connector.
    UnknownOption,
    /// A required option is missing.
    MissingOption,
    /// Options that exclude each other were given together (or none of a required group).
    ConflictingOptions,
    /// A pipeline file cannot be parsed or is inconsistent.
    InvalidPipeline,
    /// A checkpoint was written by an incompatible pipeline or source.
    CheckpointIncompatible,
    /// A checkpoint file is corrupt or cannot be written.
    Checkpoint,
    /// The parts of a checkpoint disagree (a log with a hole, a lost `metadata.json`, a source
    /// state behind the log, a sink ahead of it): resuming would lose or duplicate rows.
    CheckpointDamaged,
    /// A secret reference cannot be resolved.
    SecretNotFound,
    /// Authentication or authorisation failed.
    Authentication,
    /// A remote system could not be reached within the allowed time.
    Connection,
    /// An operation timed out.
    Timeout,
    /// A source could not read its input (a file, a partition, a shard).
    SourceRead,
    /// A sink could not write a batch.
    SinkWrite,
    /// A schema is invalid or unsupported.
    Schema,
    /// A record could not be decoded and the mode is FAILFAST.
    MalformedRecord,
    /// Records hold columns the stream's schema does not (Auto Loader's
    /// `UNKNOWN_FIELD_EXCEPTION`). With schema evolution the new columns were added to the
    /// stored schema and a restart reads them.
    UnknownField,
    /// Data was lost or skipped; the kind gives the precise code.
    DataLoss(DataLossKind),
    /// A plugin could not be loaded or broke its contract.
    Plugin,
    /// No connector with that name is registered.
    UnknownConnector,
    /// Local I/O failed.
    Io,
    /// A bug in Tributary or in a connector (an invariant did not hold, a panic was caught).
    Internal,
}

/// The kinds of data loss a source can detect. Each has a stable code.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataLossKind {
    /// The position to read from is below the earliest available offset (retention, trimming).
    OffsetOutOfRange,
    /// A partition (or topic) that was being read no longer exists.
    PartitionDeleted,
    /// A partition's offsets went backwards: the topic was deleted and recreated.
    PartitionRecreated,
    /// A partition discovered after the start does not begin at offset 0.
    AddedPartitionNotFromStart,
    /// The records returned skip offsets that were requested (not explained by transaction markers).
    OffsetGap,
    /// The end of a planned range is below its start.
    EndBeforeStart,
    /// A Kinesis shard expired before it was read to the planned end.
    ShardExpired,
    /// A stream read before a restart no longer exists.
    StreamRemoved,
    /// A file that was discovered disappeared before it was read.
    FileVanished,
}

impl DataLossKind {
    pub(crate) const ALL: [DataLossKind; 9] = [
        DataLossKind::OffsetOutOfRange,
        DataLossKind::PartitionDeleted,
        DataLossKind::PartitionRecreated,
        DataLossKind::AddedPartitionNotFromStart,
        DataLossKind::OffsetGap,
        DataLossKind::EndBeforeStart,
        DataLossKind::ShardExpired,
        DataLossKind::StreamRemoved,
        DataLossKind::FileVanished,
    ];

    /// The stable error code of this kind.
    pub fn code(&self) -> &'static str {
        match self {
            DataLossKind::OffsetOutOfRange => "DATA_LOSS.START_OFFSET_RESET",
            DataLossKind::PartitionDeleted => "DATA_LOSS.PARTITIONS_DELETED",
            DataLossKind::PartitionRecreated => "DATA_LOSS.PARTITION_OFFSET_CHANGED",
            DataLossKind::AddedPartitionNotFromStart => {
                "DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"
            }
            DataLossKind::OffsetGap => "DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
            DataLossKind::EndBeforeStart => "DATA_LOSS.END_OFFSET_BEFORE_START_OFFSET",
            DataLossKind::ShardExpired => "KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET",
            DataLossKind::StreamRemoved => "KINESIS_SOURCE_STREAMS_REMOVED_ON_RESTART",
            DataLossKind::FileVanished => "CLOUD_FILES_FILE_NOT_FOUND",
        }
    }

    /// Parses a code produced by [`DataLossKind::code`].
    pub fn parse(code: &str) -> Option<DataLossKind> {
        Self::ALL.iter().copied().find(|k| k.code() == code)
    }
}

impl ErrorCode {
    /// The stable string form of the code.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorCode::InvalidOption => "INVALID_OPTION",
            ErrorCode::UnknownOption => "UNKNOWN_OPTION",
            ErrorCode::MissingOption => "MISSING_OPTION",
            ErrorCode::ConflictingOptions => "CONFLICTING_OPTIONS",
            ErrorCode::InvalidPipeline => "INVALID_PIPELINE",
            ErrorCode::CheckpointIncompatible => "CHECKPOINT_INCOMPATIBLE",
            ErrorCode::Checkpoint => "CHECKPOINT_ERROR",
            ErrorCode::CheckpointDamaged => "CHECKPOINT_DAMAGED",
            ErrorCode::SecretNotFound => "SECRET_NOT_FOUND",
            ErrorCode::Authentication => "AUTHENTICATION_FAILED",
            ErrorCode::Connection => "CONNECTION_FAILED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::SourceRead => "SOURCE_READ_FAILED",
            ErrorCode::SinkWrite => "SINK_WRITE_FAILED",
            ErrorCode::Schema => "SCHEMA_ERROR",
            ErrorCode::MalformedRecord => "MALFORMED_RECORD",
            ErrorCode::UnknownField => "UNKNOWN_FIELD_EXCEPTION",
            ErrorCode::DataLoss(kind) => kind.code(),
            ErrorCode::Plugin => "PLUGIN_ERROR",
            ErrorCode::UnknownConnector => "UNKNOWN_CONNECTOR",
            ErrorCode::Io => "IO_ERROR",
            ErrorCode::Internal => "INTERNAL_ERROR",
        }
    }

    /// Parses the stable string form back into a code (used across the plugin boundary).
    pub fn parse(code: &str) -> Option<ErrorCode> {
        const ALL: &[ErrorCode] = &[
            ErrorCode::InvalidOption,
            ErrorCode::UnknownOption,
            ErrorCode::MissingOption,
            ErrorCode::ConflictingOptions,
            ErrorCode::InvalidPipeline,
            ErrorCode::CheckpointIncompatible,
            ErrorCode::Checkpoint,
            ErrorCode::CheckpointDamaged,
            ErrorCode::SecretNotFound,
            ErrorCode::Authentication,
            ErrorCode::Connection,
            ErrorCode::Timeout,
            ErrorCode::SourceRead,
            ErrorCode::SinkWrite,
            ErrorCode::Schema,
            ErrorCode::MalformedRecord,
            ErrorCode::UnknownField,
            ErrorCode::Plugin,
            ErrorCode::UnknownConnector,
            ErrorCode::Io,
            ErrorCode::Internal,
        ];
        ALL.iter()
            .copied()
            .find(|c| c.as_str() == code)
            .or_else(|| DataLossKind::parse(code).map(ErrorCode::DataLoss))
    }

    /// The domain a code belongs to by default.
    pub fn default_domain(&self) -> Domain {
        match self {
            ErrorCode::InvalidOption
            | ErrorCode::UnknownOption
            | ErrorCode::MissingOption
            | ErrorCode::ConflictingOptions
            | ErrorCode::InvalidPipeline
            | ErrorCode::CheckpointIncompatible
            | ErrorCode::CheckpointDamaged
            | ErrorCode::SecretNotFound
            | ErrorCode::Schema
            | ErrorCode::UnknownConnector
            | ErrorCode::MalformedRecord
            | ErrorCode::UnknownField
            | ErrorCode::DataLoss(_) => Domain::User,
            ErrorCode::Authentication
            | ErrorCode::Connection
            | ErrorCode::Timeout
            | ErrorCode::SourceRead
            | ErrorCode::SinkWrite
            | ErrorCode::Io
            | ErrorCode::Checkpoint
            | ErrorCode::Plugin => Domain::External,
            ErrorCode::Internal => Domain::Internal,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who is responsible for an error (the classification Arroyo settled on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Domain {
    /// The user's configuration or data; retrying does not help.
    User,
    /// An external system (broker, file system, network); retrying may help.
    External,
    /// A bug.
    Internal,
}

/// Whether retrying the failed operation may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Retrying is pointless.
    Never,
    /// Retrying may succeed, preferably after the given delay.
    After(Duration),
}

/// The Tributary error: a stable code, a message, context and a retry hint.
///
/// The message text is for humans and is not promised to stay the same; match on [`Error::code`].
/// Messages never contain secret values (secrets are [`crate::Secret`]s, which print `***`).
pub struct Error {
    code: ErrorCode,
    message: String,
    context: Vec<(&'static str, String)>,
    domain: Domain,
    retry: Retry,
    cause: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error with a code and a message; domain and retry hint follow from the code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let domain = code.default_domain();
        let retry = match domain {
            Domain::External => Retry::After(Duration::from_secs(1)),
            _ => Retry::Never,
        };
        Error {
            code,
            message: crate::redact::mask_url_userinfo(&message.into()).into_owned(),
            context: Vec::new(),
            domain,
            retry,
            cause: None,
        }
    }

    /// Adds a context entry (`option`, `topic`, `partition`, `file`, `batch`, ...).
    pub fn with_context(mut self, key: &'static str, value: impl ToString) -> Self {
        let value = value.to_string();
        self.context
            .push((key, crate::redact::mask_url_userinfo(&value).into_owned()));
        self
    }

    /// Sets the underlying cause.
    pub fn with_cause(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// Puts `prefix: ` before the message (the file an error was found in), keeping the code,
    /// context and cause.
    pub fn prefixed(mut self, prefix: impl std::fmt::Display) -> Self {
        self.message =
            crate::redact::mask_url_userinfo(&format!("{prefix}: {}", self.message)).into_owned();
        self
    }

    /// Overrides the retry hint.
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }

    /// Overrides the domain.
    pub fn with_domain(mut self, domain: Domain) -> Self {
        self.domain = domain;
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The human message, without context.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Context entries in the order they were added.
    pub fn context(&self) -> &[(&'static str, String)] {
        &self.context
    }

    /// The value of one context entry.
    pub fn context_value(&self, key: &str) -> Option<&str> {
        self.context
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Who is responsible.
    pub fn domain(&self) -> Domain {
        self.domain
    }

    /// The retry hint.
    pub fn retry(&self) -> Retry {
        self.retry
    }

    /// True when retrying may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self.retry, Retry::After(_))
    }

    /// True for configuration errors (invalid, unknown, missing or conflicting options, bad pipeline).
    pub fn is_config(&self) -> bool {
        matches!(
            self.code,
            ErrorCode::InvalidOption
                | ErrorCode::UnknownOption
                | ErrorCode::MissingOption
                | ErrorCode::ConflictingOptions
                | ErrorCode::InvalidPipeline
        )
    }

    /// True for data-loss errors raised under `failOnDataLoss=true`.
    pub fn is_data_loss(&self) -> bool {
        matches!(self.code, ErrorCode::DataLoss(_))
    }

    /// Serialises the error to the JSON form used across the plugin boundary and in progress output.
    pub fn to_json(&self) -> serde_json::Value {
        let mut ctx = serde_json::Map::new();
        for (k, v) in &self.context {
            ctx.insert((*k).to_string(), serde_json::Value::String(v.clone()));
        }
        serde_json::json!({
            "code": self.code.as_str(),
            "message": self.message_with_cause(),
            "context": ctx,
            "domain": self.domain,
            "retryAfterMs": match self.retry { Retry::Never => None, Retry::After(d) => Some(d.as_millis() as u64) },
        })
    }

    /// Rebuilds an error from [`Error::to_json`] output. Unknown codes become `PLUGIN_ERROR`.
    pub fn from_json(value: &serde_json::Value) -> Error {
        let code = value
            .get("code")
            .and_then(|c| c.as_str())
            .and_then(ErrorCode::parse)
            .unwrap_or(ErrorCode::Plugin);
        let message = value
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or("error without message")
            .to_string();
        let mut err = Error::new(code, message);
        if let Some(ctx) = value.get("context").and_then(|c| c.as_object()) {
            for (k, v) in ctx {
                let key: &'static str = intern_context_key(k);
                err = err.with_context(key, v.as_str().unwrap_or_default());
            }
        }
        if let Some(d) = value.get("domain").cloned() {
            if let Ok(d) = serde_json::from_value::<Domain>(d) {
                err.domain = d;
            }
        }
        err.retry = match value.get("retryAfterMs").and_then(|r| r.as_u64()) {
            Some(ms) => Retry::After(Duration::from_millis(ms)),
            None => Retry::Never,
        };
        err
    }

    fn message_with_cause(&self) -> String {
        match &self.cause {
            Some(cause) => format!(
                "{}: {}",
                self.message,
                crate::redact::mask_url_userinfo(&cause.to_string())
            ),
            None => self.message.clone(),
        }
    }
}

/// Context keys are `&'static str`; keys coming back across the plugin boundary are mapped onto
/// the well-known ones, anything else onto `detail`.
fn intern_context_key(key: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "option",
        "value",
        "allowed",
        "connector",
        "topic",
        "partition",
        "offset",
        "stream",
        "shard",
        "file",
        "path",
        "batch",
        "row",
        "plugin",
        "schema",
        "subject",
        "field",
        "expected",
        "actual",
        "reason",
        "location",
        "conflicts_with",
        "feature",
        "bucket",
        "consumer",
    ];
    KNOWN
        .iter()
        .find(|k| **k == key)
        .copied()
        .unwrap_or("detail")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)?;
        if let Some(cause) = &self.cause {
            write!(
                f,
                ": {}",
                crate::one_line::one_line(&crate::redact::mask_url_userinfo(&cause.to_string()))
            )?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("code", &self.code.as_str())
            .field("message", &self.message);
        if !self.context.is_empty() {
            d.field("context", &self.context);
        }
        d.field("domain", &self.domain).field("retry", &self.retry);
        if let Some(c) = &self.cause {
            d.field("cause", &crate::redact::mask_url_userinfo(&c.to_string()));
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorCode::Io, "I/O error").with_cause(e)
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::new(ErrorCode::Internal, "Arrow error").with_cause(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_string_form() {
        for code in [
            ErrorCode::InvalidOption,
            ErrorCode::CheckpointIncompatible,
            ErrorCode::CheckpointDamaged,
            ErrorCode::DataLoss(DataLossKind::OffsetOutOfRange),
            ErrorCode::DataLoss(DataLossKind::ShardExpired),
            ErrorCode::Internal,
        ] {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::parse("NOT_A_CODE"), None);
    }

    #[test]
    fn json_round_trip_keeps_code_context_and_retry() {
        let e = Error::new(ErrorCode::Connection, "broker down")
            .with_context("topic", "t1")
            .with_context("partition", 3);
        let back = Error::from_json(&e.to_json());
        assert_eq!(back.code(), ErrorCode::Connection);
        assert_eq!(back.context_value("partition"), Some("3"));
        assert!(back.is_retryable());
        assert_eq!(back.domain(), Domain::External);
    }

    #[test]
    fn display_shows_code_and_cause() {
        let e =
            Error::new(ErrorCode::Io, "cannot open").with_cause(std::io::Error::other("denied"));
        assert_eq!(e.to_string(), "[IO_ERROR] cannot open: denied");
    }
}
