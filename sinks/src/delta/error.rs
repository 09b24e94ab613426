//! deltalake errors mapped onto the SDK error, with a retry hint.
//!
//! A lost commit race (another writer committed the version this one tried, or a metadata change
//! that conflicts with this commit) is a [`Failure::Conflict`]: the sink reloads the table,
//! checks its transaction id again and retries. Object-store failures are external and
//! retryable; everything else (schema mismatch, invalid table) is the user's and is not.

use std::time::Duration;

use deltalake::kernel::transaction::TransactionError;
use deltalake::DeltaTableError;
use tributary_sdk::{Error, ErrorCode, Retry};

/// How the sink reacts to a failed write.
#[derive(Debug)]
pub enum Failure {
    /// Another writer won the commit race: reload, re-check, retry.
    Conflict(DeltaTableError),
    /// Anything else.
    Other(DeltaTableError),
}

/// Classifies a deltalake error.
pub fn classify(e: DeltaTableError) -> Failure {
    let conflict = match &e {
        DeltaTableError::VersionAlreadyExists(_) | DeltaTableError::VersionMismatch(..) => true,
        DeltaTableError::Transaction { source } => matches!(
            source,
            TransactionError::CommitConflict(_)
                | TransactionError::MaxCommitAttempts(_)
                | TransactionError::VersionAlreadyExists(_)
        ),
        _ => false,
    };
    if conflict {
        Failure::Conflict(e)
    } else {
        Failure::Other(e)
    }
}

/// The SDK error for a deltalake error met while doing `what` on the table at `location`.
pub fn to_error(what: &str, location: &str, e: DeltaTableError) -> Error {
    let (code, retry) = match &e {
        DeltaTableError::ObjectStore { .. } | DeltaTableError::Io { .. } => {
            (ErrorCode::SinkWrite, Retry::After(Duration::from_secs(1)))
        }
        DeltaTableError::Transaction { .. } | DeltaTableError::VersionAlreadyExists(_) => (
            ErrorCode::SinkWrite,
            Retry::After(Duration::from_millis(200)),
        ),
        DeltaTableError::SchemaMismatch { .. } | DeltaTableError::Arrow { .. } => {
            (ErrorCode::Schema, Retry::Never)
        }
        DeltaTableError::InvalidTableLocation(_) | DeltaTableError::MissingFeature { .. } => {
            (ErrorCode::InvalidOption, Retry::Never)
        }
        _ => (ErrorCode::SinkWrite, Retry::Never),
    };
    let mut err = Error::new(
        code,
        format!("delta sink cannot {what} the table at {location}"),
    )
    .with_context("path", location)
    .with_cause(e)
    .with_retry(retry);
    if code == ErrorCode::InvalidOption {
        err = err.with_context("option", super::config::PATH);
    }
    err
}
