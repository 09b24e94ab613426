//! `tributary delta optimize|vacuum|checkpoint <table>`: the Delta sink's maintenance by hand,
//! on any Delta table (local path or object-store URL), with the same code the sink runs beside
//! ingestion (`tributary_sinks::delta::maintenance`).
//!
//! - `optimize`: compacts small files into files of `--target-size` (default: the table's
//!   `delta.targetFileSize`, else 1 GB), one `OPTIMIZE` commit with `dataChange=false`.
//! - `vacuum`: deletes files no version within `--retention` (default: the table's
//!   `delta.deletedFileRetentionDuration`) references; `--dry-run` lists them. A retention under
//!   7 days is refused unless `--no-retention-check`, as Delta's `retentionDurationCheck`.
//! - `checkpoint`: writes a log checkpoint at the latest version and deletes log entries older
//!   than `delta.logRetentionDuration`.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::time::Duration;

use clap::Subcommand;
use tributary_sdk::{Error, ErrorCode, Result};
use tributary_sinks::delta::maintenance;

/// The `delta` subcommands.
#[derive(Debug, Subcommand)]
pub enum DeltaCommand {
    /// Compact a table's small files (Delta OPTIMIZE; data unchanged).
    ///
    /// Example: tributary delta optimize /lake/orders --target-size 128mb
    Optimize {
        /// The table: a local path or an object-store URL (s3://, gs://, az://).
        table: String,
        /// Size of the compacted files (`128mb`, `1g`).
        #[arg(long, value_name = "SIZE")]
        target_size: Option<String>,
        /// Object-store options (`aws_region=us-east-1`), repeatable.
        #[arg(long = "storage", value_name = "KEY=VALUE")]
        storage: Vec<String>,
    },
    /// Delete files no longer referenced within the retention (Delta VACUUM).
    ///
    /// Example: tributary delta vacuum /lake/orders --retention "interval 7 days" --dry-run
    Vacuum {
        /// The table: a local path or an object-store URL.
        table: String,
        /// `interval 7 days` (Delta's syntax) or `168 hours`.
        #[arg(long, value_name = "INTERVAL")]
        retention: Option<String>,
        /// List the files that would be deleted, delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Allow a retention under 7 days (Delta's
        /// `spark.databricks.delta.retentionDurationCheck.enabled = false`): only when no reader
        /// or writer can be that far behind.
        #[arg(long)]
        no_retention_check: bool,
        /// Object-store options, repeatable.
        #[arg(long = "storage", value_name = "KEY=VALUE")]
        storage: Vec<String>,
    },
    /// Write a log checkpoint and delete expired log entries.
    ///
    /// Example: tributary delta checkpoint /lake/orders
    Checkpoint {
        /// The table: a local path or an object-store URL.
        table: String,
        /// Object-store options, repeatable.
        #[arg(long = "storage", value_name = "KEY=VALUE")]
        storage: Vec<String>,
    },
}

fn storage(pairs: &[String]) -> Result<HashMap<String, String>> {
    pairs
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .ok_or_else(|| {
                    Error::new(
                        ErrorCode::InvalidOption,
                        // the value may be a credential: the argument is not echoed
                        "--storage takes key=value; an argument has no '='",
                    )
                    .with_context("option", "storage")
                })
        })
        .collect()
}

fn retention(text: &str) -> Result<Duration> {
    maintenance::interval::parse_interval(text)
        .map(|i| i.duration)
        .or_else(|| tributary_sdk::options::parse_duration(text))
        .ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "--retention '{text}' is not {}, nor a duration such as '168 hours'",
                    maintenance::interval::INTERVAL_SYNTAX
                ),
            )
            .with_context("option", "retention")
        })
}

/// Runs one subcommand and prints its report.
pub fn run(command: DeltaCommand) -> Result<()> {
    let rt = tokio::runtime::Runtime::new()
        .map_err(|e| Error::new(ErrorCode::Internal, "starting the runtime").with_cause(e))?;
    match command {
        DeltaCommand::Optimize {
            table,
            target_size,
            storage: pairs,
        } => {
            let target = match target_size {
                None => None,
                Some(t) => Some(
                    tributary_sdk::options::parse_bytes(&t)
                        .and_then(NonZeroU64::new)
                        .ok_or_else(|| {
                            Error::new(
                                ErrorCode::InvalidOption,
                                format!("--target-size '{t}' is not a size such as 128mb or 1g"),
                            )
                            .with_context("option", "target-size")
                        })?,
                ),
            };
            let r = rt.block_on(maintenance::optimize(&table, &storage(&pairs)?, target))?;
            println!(
                "{table}: optimized to version {} (from {}): {} files ({} bytes) compacted into {} ({} bytes), target {} bytes, {} partitions",
                shown(r.version),
                shown(r.version_before),
                r.files_removed,
                r.bytes_removed,
                r.files_added,
                r.bytes_added,
                r.target_size,
                r.partitions_optimized
            );
        }
        DeltaCommand::Vacuum {
            table,
            retention: given,
            dry_run,
            no_retention_check,
            storage: pairs,
        } => {
            let options = maintenance::VacuumOptions {
                retention: given.as_deref().map(retention).transpose()?,
                dry_run,
                retention_check: !no_retention_check,
                ..maintenance::VacuumOptions::default()
            };
            let r = rt.block_on(maintenance::vacuum_opts(
                &table,
                &storage(&pairs)?,
                &options,
            ))?;
            let verb = if r.dry_run { "would delete" } else { "deleted" };
            println!(
                "{table}: vacuum at version {} with retention {}s {verb} {} files",
                shown(r.version),
                r.retention.as_secs(),
                r.files_deleted
            );
            for f in &r.files {
                println!("  {f}");
            }
        }
        DeltaCommand::Checkpoint {
            table,
            storage: pairs,
        } => {
            let r = rt.block_on(maintenance::checkpoint(&table, &storage(&pairs)?))?;
            println!(
                "{table}: checkpoint at version {}; {} expired log files removed, {} remain",
                shown(r.version),
                r.log_files_removed,
                r.log_files
            );
        }
    }
    Ok(())
}

fn shown(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}
