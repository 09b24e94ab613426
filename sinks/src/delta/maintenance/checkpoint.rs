//! A log checkpoint and the clean-up of expired log entries, with deltalake's
//! `checkpoints::create_checkpoint` and `cleanup_metadata`.
//!
//! A checkpoint is a Parquet file holding the table state at a version (files, `txn`
//! versions, metadata), so a reader loads it and only the JSON commits after it. Once it exists,
//! the commits and older checkpoints before it that are older than the table's
//! `delta.logRetentionDuration` (30 days by default) are deleted: time travel to those versions
//! ends, the latest version still loads. deltalake only deletes entries strictly before a
//! checkpoint that is itself outside the retention, so the table always keeps a complete
//! starting point.

use std::collections::HashMap;

use deltalake::checkpoints::{cleanup_metadata, create_checkpoint};
use deltalake::{DeltaTable, DeltaTableError};
use futures::StreamExt;
use tributary_sdk::Result;

use super::open;
use crate::delta::error::to_error;

/// What a checkpoint run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointReport {
    /// The version checkpointed.
    pub version: Option<u64>,
    /// Expired log files deleted (JSON commits and older checkpoints).
    pub log_files_removed: u64,
    /// Files under `_delta_log/` after the run.
    pub log_files: u64,
}

/// Checkpoints the table at `location` at its latest version and deletes expired log files.
pub async fn checkpoint(
    location: &str,
    storage: &HashMap<String, String>,
) -> Result<CheckpointReport> {
    let table = open(location, storage).await?;
    let mut report = run(&table, true)
        .await
        .map_err(|e| to_error("checkpoint", location, e))?;
    report.log_files = count_log_files(&table)
        .await
        .map_err(|e| to_error("list the log of", location, e))?;
    Ok(report)
}

/// Checkpoints `table` at its loaded version; `cleanup`: then delete expired log files.
pub(crate) async fn run(
    table: &DeltaTable,
    cleanup: bool,
) -> std::result::Result<CheckpointReport, DeltaTableError> {
    create_checkpoint(table, None).await?;
    let removed = if cleanup {
        cleanup_metadata(table, None).await?
    } else {
        0
    };
    Ok(CheckpointReport {
        version: table.version(),
        log_files_removed: u64::try_from(removed).unwrap_or(u64::MAX),
        log_files: 0,
    })
}

/// The number of files under the table's `_delta_log/`.
pub async fn count_log_files(table: &DeltaTable) -> std::result::Result<u64, DeltaTableError> {
    let store = table.log_store();
    let log = store.log_path().clone();
    let mut listing = store.object_store(None).list(Some(&log));
    let mut n = 0u64;
    while let Some(entry) = listing.next().await {
        entry?;
        n += 1;
    }
    Ok(n)
}
