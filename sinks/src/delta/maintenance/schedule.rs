//! When the sink maintains its table: after a batch's commit, in the sink's own task, so
//! maintenance never races the sink's appends.
//!
//! - **Compaction** (`delta.autoOptimize.autoCompact`): when the table holds at least
//!   `minNumFiles` files smaller than the target *more* than right after the previous run (at
//!   open: at least `minNumFiles`), one `OPTIMIZE` packs them ([`super::optimize`]).
//! - **Vacuum** (`autoVacuum`): right after a compaction, VACUUM LITE deletes the files that
//!   earlier commits removed once older than `delta.deletedFileRetentionDuration`
//!   ([`super::vacuum`]).
//! - **Checkpoint and log clean-up**: after the commit a checkpoint is due at (deltalake's, at
//!   the table's `delta.checkpointInterval`, or the sink's own for a differing
//!   `checkpointInterval`), the log entries older than `delta.logRetentionDuration` are
//!   deleted (the sink's commits turn off deltalake's clean-up after *every* commit, which
//!   lists the whole log each time).
//!
//! ## Bound on holding up ingestion
//!
//! One run (compaction, then vacuum) is bounded by `maintenanceTimeout` (default 2 minutes):
//! past it the run is dropped, its commit not made (the files it wrote stay unreferenced until
//! a full vacuum) and the next batch goes on. (deltalake rewrites each bin in a spawned task;
//! a bin already being rewritten finishes in the background, uncommitted, so for a moment it
//! shares the machine with ingestion.) A run starts at most once per `minNumFiles`
//! small files written, whatever its outcome (a failed, abandoned or fruitless run is not
//! retried on the next batch), and rewrites only files below the target, in bins of at most the
//! target. A failed run never fails the batch, which is already committed: it is logged and
//! counted ([`crate::delta::DeltaSinkStats::maintenance_failures`]).

use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use deltalake::parquet::file::properties::WriterProperties;
use deltalake::table::config::TablePropertiesExt;
use deltalake::table::state::DeltaTableState;
use deltalake::DeltaTable;
use tributary_sdk::{Error, ErrorCode, Result};

use super::optimize::{compact, OptimizeReport};
use super::options::{
    check_table_retention, MaintenanceConfig, DEFAULT_AUTO_COMPACT_TARGET, DELETED_FILE_RETENTION,
    LOG_RETENTION,
};
use super::vacuum::{self, VacuumOptions, VacuumReport};

/// The sink's auto-compaction, resolved against the loaded table.
#[derive(Debug, Clone)]
pub(crate) struct AutoCompact {
    target: NonZeroU64,
    min_num_files: usize,
    vacuum: Option<VacuumOptions>,
    timeout: Duration,
    /// No run before the table holds this many small files.
    next_at: usize,
}

/// What one run did.
pub(crate) struct Ran {
    pub(crate) table: DeltaTable,
    pub(crate) compaction: OptimizeReport,
    pub(crate) vacuum: Option<VacuumReport>,
    pub(crate) took: Duration,
}

/// Checks the retention options against an existing table (see [`super::options`]).
pub(crate) fn check_table(
    config: &MaintenanceConfig,
    state: &DeltaTableState,
    location: &str,
) -> Result<()> {
    let props = state.table_config();
    check_table_retention(
        LOG_RETENTION,
        config.log_retention.as_ref(),
        props.log_retention_duration(),
        location,
    )?;
    check_table_retention(
        DELETED_FILE_RETENTION,
        config.deleted_file_retention.as_ref(),
        props.deleted_file_retention_duration(),
        location,
    )
}

impl AutoCompact {
    /// The auto-compaction of a table (`state`: `None` before the first commit creates it),
    /// or `None` when it is off (the option, else the table's `delta.autoOptimize.autoCompact`).
    pub(crate) fn resolve(
        config: &MaintenanceConfig,
        state: Option<&DeltaTableState>,
    ) -> Option<AutoCompact> {
        let props = state.map(DeltaTableState::table_config);
        let on = config
            .auto_compact
            .or_else(|| props.and_then(|p| p.auto_compact))
            .unwrap_or(false);
        if !on {
            return None;
        }
        let target = config
            .target_file_size
            .or_else(|| props.and_then(|p| p.target_file_size))
            .or_else(|| NonZeroU64::new(DEFAULT_AUTO_COMPACT_TARGET))
            .unwrap_or(NonZeroU64::MIN);
        Some(AutoCompact {
            target,
            min_num_files: config.min_num_files,
            vacuum: config.auto_vacuum.then_some(VacuumOptions {
                retention: None,
                dry_run: false,
                full: false,
                retention_check: config.retention_check,
            }),
            timeout: config.timeout,
            next_at: config.min_num_files,
        })
    }

    /// Keeps the schedule of the sink's previous resolution (a reload after a failed run must
    /// not make the next batch try again at once).
    pub(crate) fn keeping_schedule(mut self, previous: Option<&AutoCompact>) -> AutoCompact {
        if let Some(p) = previous {
            self.next_at = self.next_at.max(p.next_at);
        }
        self
    }

    /// The number of files below the target, when a run is due.
    pub(crate) fn due(&self, table: &DeltaTable) -> Option<usize> {
        let small = small_files(table, self.target);
        (small >= self.next_at.max(self.min_num_files)).then_some(small)
    }

    /// One run: compaction, then (with `autoVacuum`) a lite vacuum, within the timeout. Whatever
    /// the outcome, the next run waits for `minNumFiles` more small files.
    pub(crate) async fn run(
        &mut self,
        table: DeltaTable,
        writer: WriterProperties,
        small_before: usize,
    ) -> Result<Ran> {
        let started = Instant::now();
        let target = self.target;
        let vacuum = self.vacuum.clone();
        let work = async move {
            let (table, compaction) = compact(table, target, writer).await?;
            let (table, vacuum) = match &vacuum {
                Some(options) if compaction.files_removed > 0 => {
                    let (t, r) = vacuum::run(table, options).await?;
                    (t, Some(r))
                }
                _ => (table, None),
            };
            Ok::<_, deltalake::DeltaTableError>((table, compaction, vacuum))
        };
        let outcome = tokio::time::timeout(self.timeout, work).await;
        self.next_at = small_before.saturating_add(self.min_num_files);
        let (table, compaction, vacuum) = match outcome {
            Err(_) => {
                return Err(Error::new(
                    ErrorCode::SinkWrite,
                    format!(
                        "delta sink maintenance took longer than maintenanceTimeout ({:?}) and \
                         was abandoned; its unfinished files are unreferenced (a full vacuum \
                         removes them)",
                        self.timeout
                    ),
                ))
            }
            Ok(Err(e)) => {
                return Err(
                    Error::new(ErrorCode::SinkWrite, "delta sink maintenance failed").with_cause(e),
                )
            }
            Ok(Ok(done)) => done,
        };
        self.next_at = small_files(&table, self.target).saturating_add(self.min_num_files);
        Ok(Ran {
            table,
            compaction,
            vacuum,
            took: started.elapsed(),
        })
    }
}

/// Files of the loaded version smaller than `target`.
fn small_files(table: &DeltaTable, target: NonZeroU64) -> usize {
    let Ok(state) = table.snapshot() else {
        return 0;
    };
    let target = i64::try_from(target.get()).unwrap_or(i64::MAX);
    state
        .log_data()
        .iter()
        .filter(|f| f.size() < target)
        .count()
}
