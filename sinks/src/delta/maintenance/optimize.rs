//! Compaction: deltalake's `OPTIMIZE` (bin-packing), as a manual command ([`optimize`]) and as
//! the sink's auto-compaction ([`compact`]).
//!
//! deltalake packs the files smaller than the target, in each partition, into bins of up to
//! the target size (newest first, keeping their order), rewrites each bin as one file and
//! commits one `OPTIMIZE` commit: an `add` per new file and a `remove` per old one, all with
//! `dataChange = false`, so streaming readers of the table skip it and the rows do not change.
//! The commit carries no `txn` action and needs none: the application transaction versions are
//! table state, carried from commit to commit (and into checkpoints), so the sink's last batch
//! id reads the same before and after.
//!
//! Until the commit lands, the new files are unreferenced: a crash, or a run abandoned at
//! `maintenanceTimeout`, leaves them behind harmlessly (no snapshot names them) until a full
//! vacuum deletes them ([`super::vacuum`]).

use std::collections::HashMap;
use std::num::NonZeroU64;

use deltalake::parquet::basic::Compression;
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::{DeltaTable, DeltaTableError};
use tributary_sdk::Result;

use super::open;
use crate::delta::error::to_error;

/// Databricks' `OPTIMIZE` default target (`spark.databricks.delta.optimize.maxFileSize`, 1 GB),
/// used when neither the call nor the table (`delta.targetFileSize`) gives one.
pub const DEFAULT_OPTIMIZE_TARGET: u64 = 1 << 30;

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptimizeReport {
    /// Table version before the run.
    pub version_before: Option<u64>,
    /// Table version after it (the `OPTIMIZE` commit; the same when nothing was compacted).
    pub version: Option<u64>,
    /// The target the bins were packed to.
    pub target_size: u64,
    /// Files written.
    pub files_added: u64,
    /// Files replaced (removed from the table, still on storage until vacuumed).
    pub files_removed: u64,
    /// Bytes written.
    pub bytes_added: u64,
    /// Bytes of the replaced files.
    pub bytes_removed: u64,
    /// Partitions with at least one bin compacted.
    pub partitions_optimized: u64,
    /// Files looked at.
    pub files_considered: u64,
    /// Files left as they are (at or above the target, or alone in their bin).
    pub files_skipped: u64,
}

/// Compacts the table at `location` (a local path or a URL; `storage`: object-store options)
/// into files of up to `target_size` (default: the table's `delta.targetFileSize`, else 1 GB).
pub async fn optimize(
    location: &str,
    storage: &HashMap<String, String>,
    target_size: Option<NonZeroU64>,
) -> Result<OptimizeReport> {
    let table = open(location, storage).await?;
    let target = match target_size {
        Some(t) => t,
        None => table
            .snapshot()
            .ok()
            .and_then(|s| s.table_config().target_file_size)
            .or_else(|| NonZeroU64::new(DEFAULT_OPTIMIZE_TARGET))
            .unwrap_or(NonZeroU64::MIN),
    };
    let writer = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let (_, report) = compact(table, target, writer)
        .await
        .map_err(|e| to_error("optimize", location, e))?;
    Ok(report)
}

/// One `OPTIMIZE` of `table` to `target` with the sink's Parquet settings; returns the table
/// at the version after it.
pub(crate) async fn compact(
    table: DeltaTable,
    target: NonZeroU64,
    writer: WriterProperties,
) -> std::result::Result<(DeltaTable, OptimizeReport), DeltaTableError> {
    let version_before = table.version();
    let (table, m) = table
        .optimize()
        .with_target_size(target)
        .with_writer_properties(writer)
        .await?;
    let bytes = |v: i64| u64::try_from(v).unwrap_or(0);
    let report = OptimizeReport {
        version_before,
        version: table.version(),
        target_size: target.get(),
        files_added: m.num_files_added,
        files_removed: m.num_files_removed,
        bytes_added: bytes(m.files_added.total_size),
        bytes_removed: bytes(m.files_removed.total_size),
        partitions_optimized: m.partitions_optimized,
        files_considered: u64::try_from(m.total_considered_files).unwrap_or(0),
        files_skipped: u64::try_from(m.total_files_skipped).unwrap_or(0),
    };
    Ok((table, report))
}
