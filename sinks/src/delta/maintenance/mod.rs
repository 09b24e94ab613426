//! Delta table maintenance: compaction (`OPTIMIZE`), `VACUUM`, and log checkpoints with the
//! clean-up of expired log entries, on deltalake 1.1's own operations.
//!
//! An ingestion stream writes one commit and a few small files per batch; after a month at a
//! batch every 10 s that is about 260,000 of each, and loading the table slows down. The sink
//! keeps a table healthy beside ingestion (see [`options`] for the Databricks-named options and
//! [`schedule`] for when each step runs); the same steps are public functions for a manual
//! command (`tributary delta optimize|vacuum|checkpoint <table>`):
//!
//! - [`optimize`] / [`OptimizeReport`]: bin-packing compaction ([`mod@optimize`]);
//! - [`vacuum`], [`vacuum_opts`] / [`VacuumReport`]: deleting unreferenced files past the
//!   retention ([`mod@vacuum`]);
//! - [`checkpoint`] / [`CheckpointReport`]: a checkpoint at the latest version, then the expired
//!   log entries removed ([`mod@checkpoint`]).
//!
//! Each takes the table location (local path or object-store URL) and the resolved object-store
//! options (`storage.*` without the prefix); S3 settings that make commits unsafe are refused as
//! for the sink ([`super::s3_commit`]).
//!
//! ## Crash safety
//!
//! Each step publishes its result with one atomic Delta commit (or, for vacuum, deletes only
//! files no current snapshot references), so a crash at any point leaves a readable table with
//! the same rows: an interrupted compaction leaves unreferenced files (removed by a later full
//! vacuum), an interrupted vacuum leaves some unreferenced files undeleted, an interrupted
//! checkpoint leaves a checkpoint that `_last_checkpoint` does not point to yet or a partial
//! clean-up of entries that are all older than a complete checkpoint.

use std::collections::{BTreeMap, HashMap};

use deltalake::DeltaTable;
use tributary_sdk::Result;

pub mod checkpoint;
pub mod interval;
pub mod optimize;
pub mod options;
pub(crate) mod schedule;
pub mod vacuum;

pub use checkpoint::{checkpoint, count_log_files, CheckpointReport};
pub use optimize::{optimize, OptimizeReport};
pub use options::MaintenanceConfig;
pub use vacuum::{vacuum, vacuum_opts, VacuumOptions, VacuumReport};

use super::config::url_scheme;
use super::s3_commit::{check_environment, check_storage};
use super::table::load_existing;

/// Loads an existing table for a maintenance command, refusing unsafe S3 commit settings.
async fn open(location: &str, storage: &HashMap<String, String>) -> Result<DeltaTable> {
    let scheme = url_scheme(location);
    check_environment(scheme.as_deref(), false)?;
    let sorted: BTreeMap<String, String> = storage
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    check_storage(&sorted, false)?;
    load_existing(location, storage).await
}
