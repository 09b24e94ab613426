//! `VACUUM`: deleting data files the table no longer references, once older than the
//! retention, with deltalake's `VacuumBuilder`.
//!
//! Two modes, as in Databricks:
//!
//! - **full** (the manual command's default): lists every object under the table and deletes
//!   the data files no `add` of the current version names and that are older than the
//!   retention — files removed by commits (compaction) and files no commit ever named (a crashed
//!   batch attempt's, an interrupted compaction's).
//! - **lite** (the sink's `autoVacuum`): only the files the log's `remove` actions name, older
//!   than the retention; it reads the log and lists nothing, so it is cheap beside ingestion.
//!
//! The retention defaults to the table's `delta.deletedFileRetentionDuration` (7 days). A
//! shorter one is refused unless the retention check is turned off
//! ([`VacuumOptions::retention_check`], Delta's `retentionDurationCheck.enabled = false`): a
//! reader or writer working on an older version may still need the files.

use std::collections::HashMap;
use std::time::Duration;

use deltalake::operations::vacuum::VacuumMode;
use deltalake::{DeltaTable, DeltaTableError};
use tributary_sdk::Result;

use super::open;
use super::options::check_file_retention;
use crate::delta::error::to_error;

/// What a vacuum deleted (or, in a dry run, would delete).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VacuumReport {
    /// Table version after the run (a vacuum that deletes files adds two commits,
    /// `VACUUM START` and `VACUUM END`).
    pub version: Option<u64>,
    /// Nothing was deleted: `files` is what would be.
    pub dry_run: bool,
    /// Full (listing) or lite (log only).
    pub full: bool,
    /// The retention applied.
    pub retention: Duration,
    /// Number of files deleted (or to delete), as deltalake counts them: a removed file that
    /// an earlier vacuum already deleted counts again while its tombstone is in the log.
    pub files_deleted: u64,
    /// Their paths, relative to the table root.
    pub files: Vec<String>,
}

/// How to vacuum ([`vacuum_opts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VacuumOptions {
    /// Files younger than this are kept; `None`: the table's
    /// `delta.deletedFileRetentionDuration` (default 7 days).
    pub retention: Option<Duration>,
    /// Only report what would be deleted.
    pub dry_run: bool,
    /// List the table to find unreferenced files too (Databricks' default); `false` is LITE.
    pub full: bool,
    /// Refuse a retention shorter than 7 days or than the table's property (Delta's
    /// `retentionDurationCheck.enabled`, default true).
    pub retention_check: bool,
}

impl Default for VacuumOptions {
    fn default() -> Self {
        VacuumOptions {
            retention: None,
            dry_run: false,
            full: true,
            retention_check: true,
        }
    }
}

/// Full vacuum of the table at `location` with `retention` (default: the table's) and the
/// retention check on; `dry_run` lists without deleting.
pub async fn vacuum(
    location: &str,
    storage: &HashMap<String, String>,
    retention: Option<Duration>,
    dry_run: bool,
) -> Result<VacuumReport> {
    vacuum_opts(
        location,
        storage,
        &VacuumOptions {
            retention,
            dry_run,
            ..VacuumOptions::default()
        },
    )
    .await
}

/// Vacuum with every setting ([`VacuumOptions`]).
pub async fn vacuum_opts(
    location: &str,
    storage: &HashMap<String, String>,
    options: &VacuumOptions,
) -> Result<VacuumReport> {
    if let Some(r) = options.retention {
        check_file_retention(r, options.retention_check)
            .map_err(|e| e.with_context("path", location))?;
    }
    let table = open(location, storage).await?;
    let (_, report) = run(table, options)
        .await
        .map_err(|e| to_error("vacuum", location, e))?;
    Ok(report)
}

/// One vacuum of `table`; returns the table after it.
pub(crate) async fn run(
    table: DeltaTable,
    options: &VacuumOptions,
) -> std::result::Result<(DeltaTable, VacuumReport), DeltaTableError> {
    let retention = match options.retention {
        Some(r) => r,
        None => {
            use deltalake::table::config::TablePropertiesExt;
            table
                .snapshot()?
                .table_config()
                .deleted_file_retention_duration()
        }
    };
    let chrono_retention = chrono::Duration::from_std(retention)
        .map_err(|e| DeltaTableError::Generic(format!("retention out of range: {e}")))?;
    let (table, m) = table
        .vacuum()
        .with_retention_period(chrono_retention)
        .with_enforce_retention_duration(options.retention_check)
        .with_dry_run(options.dry_run)
        .with_mode(if options.full {
            VacuumMode::Full
        } else {
            VacuumMode::Lite
        })
        .await?;
    let report = VacuumReport {
        version: table.version(),
        dry_run: m.dry_run,
        full: options.full,
        retention,
        files_deleted: u64::try_from(m.files_deleted.len()).unwrap_or(u64::MAX),
        files: m.files_deleted,
    };
    Ok((table, report))
}
