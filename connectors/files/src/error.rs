//! Errors of the files source, mapped into the SDK's [`tributary_sdk::Error`] at the boundary.
//!
//! The source keeps one small private enum of what can go wrong with a file ([`FileError`]) and
//! turns each into an SDK error with a stable code and the file named in the `file` context,
//! so users match on codes (`SOURCE_READ_FAILED`, `MALFORMED_RECORD`, `SCHEMA_ERROR`,
//! `CHECKPOINT_ERROR`) and never on message text.

use tributary_sdk::{Error, ErrorCode};

/// What went wrong with one file or with the state store.
#[derive(Debug)]
pub(crate) enum FileError {
    /// The file exists but cannot be read or decoded at all (permission denied, corrupt Parquet).
    Unreadable {
        path: String,
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A record does not fit the schema and the mode is FAILFAST.
    Malformed {
        path: String,
        line: u64,
        reason: String,
    },
    /// The SQLite file-state store failed.
    State {
        what: String,
        cause: rusqlite::Error,
    },
}

impl From<FileError> for Error {
    fn from(e: FileError) -> Self {
        match e {
            FileError::Unreadable { path, cause } => Error::new(
                ErrorCode::SourceRead,
                format!("cannot read file {path}: {cause}"),
            )
            .with_context("file", path),
            FileError::Malformed { path, line, reason } => Error::new(
                ErrorCode::MalformedRecord,
                format!(
                    "malformed record in {path} at line {line} (mode FAILFAST): {reason}. \
                     Use mode PERMISSIVE to keep going and rescue the record text in the \
                     rescued data column."
                ),
            )
            .with_context("file", path)
            .with_context("row", line),
            FileError::State { what, cause } => {
                Error::new(ErrorCode::Checkpoint, format!("file state store: {what}"))
                    .with_cause(cause)
            }
        }
    }
}

/// Shorthand for a state-store error with a description of what was being done.
pub(crate) fn state_err(what: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> Error {
    let what = what.into();
    move |cause| FileError::State { what, cause }.into()
}

/// Shorthand for an unreadable-file error.
pub(crate) fn unreadable(
    path: &str,
    cause: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    FileError::Unreadable {
        path: path.to_string(),
        cause: Box::new(cause),
    }
    .into()
}

/// Shorthand for a FAILFAST malformed-record error.
pub(crate) fn malformed(path: &str, line: u64, reason: impl Into<String>) -> Error {
    FileError::Malformed {
        path: path.to_string(),
        line,
        reason: reason.into(),
    }
    .into()
}

/// Shortens a record's text for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// The error and its causes on one line (the SDKs' `Display` names only the outermost).
pub(crate) fn error_text(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
