//! The table-maintenance options of the `delta` sink, with Databricks' names, and their parsed
//! form [`MaintenanceConfig`].
//!
//! | option | default | what |
//! |---|---|---|
//! | `delta.autoOptimize.autoCompact` | `false` | compact small files after a batch's commit (`true`, `auto` = `true`, `false`) |
//! | `delta.targetFileSize` | `128mb` | size compaction bins files up to (Databricks' auto-compaction default) |
//! | `spark.databricks.delta.autoCompact.minNumFiles` | `50` | small files (below the target) in the table that trigger a compaction |
//! | `delta.checkpointInterval` | table's (100) | alias of `checkpointInterval` |
//! | `delta.logRetentionDuration` | `interval 30 days` | log entries older than this are removed after a checkpoint |
//! | `delta.deletedFileRetentionDuration` | `interval 1 week` | files removed from the table are vacuumed once older than this |
//! | `autoVacuum` | `false` | after a compaction, delete the files earlier compactions removed, once past the retention (VACUUM LITE) |
//! | `spark.databricks.delta.retentionDurationCheck.enabled` | `true` | refuse a file retention below 7 days |
//! | `maintenanceTimeout` | `2m` | longest a compaction (and the vacuum after it) may hold up the next batch |
//!
//! `spark.databricks.delta.autoCompact.minNumFiles` is a Spark session setting in Databricks,
//! not a table property; the sink takes it under that spelling so a Databricks user finds it.
//! There is no Delta or Databricks setting for vacuuming beside ingestion (Databricks leaves
//! it to scheduled jobs or predictive optimization), hence a sink option in the sink's own
//! style, `autoVacuum`; it runs Databricks' `VACUUM ... LITE` (the files the log says were
//! removed), which reads the log only. A full vacuum, which also deletes files no commit ever
//! named (a crashed attempt's, an interrupted compaction's) lists the whole table and is left
//! to the manual command ([`super::vacuum`]).
//!
//! A new table gets the Delta table properties among them (`delta.autoOptimize.autoCompact`,
//! `delta.targetFileSize`, `delta.checkpointInterval`, `delta.logRetentionDuration`,
//! `delta.deletedFileRetentionDuration`). For an existing table whose retention property differs
//! from the option the sink refuses to open ([`check_table_retention`]): deltalake cleans the
//! log after every commit with the table's value, so the option would be ignored.

use std::num::NonZeroU64;
use std::time::Duration;

use tributary_sdk::options::conflicting;
use tributary_sdk::options::decl::{self, DeclaredOption, Defaulted, Dur, Flag, Int, OneOf};
use tributary_sdk::options::decl::{OptionDecl, Size, Text};
use tributary_sdk::options::invalid_value;
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result};

use super::interval::{parse_interval, Interval, INTERVAL_SYNTAX};

/// `delta.autoOptimize.autoCompact`.
pub const AUTO_COMPACT: &str = "delta.autoOptimize.autoCompact";
/// `delta.targetFileSize`.
pub const DELTA_TARGET_FILE_SIZE: &str = "delta.targetFileSize";
/// `spark.databricks.delta.autoCompact.minNumFiles`.
pub const MIN_NUM_FILES: &str = "spark.databricks.delta.autoCompact.minNumFiles";
/// `delta.checkpointInterval` (alias of `checkpointInterval`).
pub const DELTA_CHECKPOINT_INTERVAL: &str = "delta.checkpointInterval";
/// `delta.logRetentionDuration`.
pub const LOG_RETENTION: &str = "delta.logRetentionDuration";
/// `delta.deletedFileRetentionDuration`.
pub const DELETED_FILE_RETENTION: &str = "delta.deletedFileRetentionDuration";
/// `autoVacuum`.
pub const AUTO_VACUUM: &str = "autoVacuum";
/// `spark.databricks.delta.retentionDurationCheck.enabled`.
pub const RETENTION_CHECK: &str = "spark.databricks.delta.retentionDurationCheck.enabled";
/// `maintenanceTimeout`.
pub const MAINTENANCE_TIMEOUT: &str = "maintenanceTimeout";

/// Delta's shortest safe file retention (`delta.deletedFileRetentionDuration` default).
pub const MIN_FILE_RETENTION: Duration = Duration::from_secs(7 * 86_400);
/// The compaction target when neither the option nor the table sets one (Databricks'
/// auto-compaction default, `spark.databricks.delta.autoCompact.maxFileSize`).
pub const DEFAULT_AUTO_COMPACT_TARGET: u64 = 128 << 20;

const AUTO_COMPACT_DECL: OptionDecl<OneOf> = decl::one_of(
    AUTO_COMPACT,
    &["true", "false", "auto"],
    "Compact small files after a batch's commit, on the sink's own schedule (an OPTIMIZE \
     commit; data unchanged). 'auto' is 'true' (Databricks' 'legacy' mode is not offered). \
     Default: the table's property, else false. Set as a table property on a new table.",
);
const TARGET_DECL: OptionDecl<Size, Defaulted> = decl::bytes(
    DELTA_TARGET_FILE_SIZE,
    "Compaction packs small files into files of up to this size (the table's property when \
     unset, else 128mb); set as a table property on a new table.",
)
.default("128mb");
const MIN_NUM_FILES_DECL: OptionDecl<Int, Defaulted> = decl::int(
    MIN_NUM_FILES,
    2,
    2_147_483_647,
    "Auto-compaction runs when the table holds at least this many files smaller than \
     delta.targetFileSize (Databricks' session setting of the same name).",
)
.default(50);
const DELTA_CHECKPOINT_DECL: OptionDecl<Int> = decl::int(
    DELTA_CHECKPOINT_INTERVAL,
    1,
    4_294_967_295,
    "Alias of checkpointInterval (Delta's table property name); giving both with different \
     values is refused.",
);
const LOG_RETENTION_DECL: OptionDecl<Text, Defaulted> = decl::text(
    LOG_RETENTION,
    "Log entries older than this are deleted after a checkpoint, e.g. 'interval 30 days'; \
     set as a table property on a new table (an existing table must have the same value).",
)
.default("interval 30 days");
const FILE_RETENTION_DECL: OptionDecl<Text, Defaulted> = decl::text(
    DELETED_FILE_RETENTION,
    "Files removed from the table (by compaction) are vacuumed once older than this, e.g. \
     'interval 1 week'; below 7 days only with \
     spark.databricks.delta.retentionDurationCheck.enabled = false. Set as a table property on \
     a new table (an existing table must have the same value).",
)
.default("interval 1 week");
const AUTO_VACUUM_DECL: OptionDecl<Flag, Defaulted> = decl::flag(
    AUTO_VACUUM,
    "After each compaction, delete the data files that earlier commits removed once they are \
     older than delta.deletedFileRetentionDuration (VACUUM LITE: reads the log, lists nothing).",
)
.default(false);
const RETENTION_CHECK_DECL: OptionDecl<Flag, Defaulted> = decl::flag(
    RETENTION_CHECK,
    "Refuse a delta.deletedFileRetentionDuration below 7 days (Delta's safety check: a \
     reader or a writer still using an older version may need those files).",
)
.default(true);
const TIMEOUT_DECL: OptionDecl<Dur, Defaulted> = decl::duration(
    MAINTENANCE_TIMEOUT,
    "Longest one maintenance run (compaction, then vacuum) may hold up the next batch; a run \
     that takes longer is abandoned (its unfinished files are unreferenced, removed by a full \
     vacuum) and not tried again until minNumFiles more small files were written.",
)
.default("2m");

/// The specs of the maintenance options (appended to the sink's).
pub fn option_specs() -> Vec<OptionSpec> {
    decl::specs(&[
        &AUTO_COMPACT_DECL as &dyn DeclaredOption,
        &TARGET_DECL,
        &MIN_NUM_FILES_DECL,
        &DELTA_CHECKPOINT_DECL,
        &LOG_RETENTION_DECL,
        &FILE_RETENTION_DECL,
        &AUTO_VACUUM_DECL,
        &RETENTION_CHECK_DECL,
        &TIMEOUT_DECL,
    ])
}

/// The parsed maintenance options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenanceConfig {
    /// `Some` when given: overrides the table's `delta.autoOptimize.autoCompact`.
    pub auto_compact: Option<bool>,
    /// `Some` when given (else the table's `delta.targetFileSize`, else 128 MB).
    pub target_file_size: Option<NonZeroU64>,
    /// Small files that trigger a compaction.
    pub min_num_files: usize,
    /// `Some` when given: the table must have this log retention (written on a new table).
    pub log_retention: Option<Interval>,
    /// `Some` when given: the table must have this file retention (written on a new table).
    pub deleted_file_retention: Option<Interval>,
    /// Vacuum (lite) after each compaction.
    pub auto_vacuum: bool,
    /// Delta's retention check (false only when the user turned it off).
    pub retention_check: bool,
    /// Bound on one maintenance run.
    pub timeout: Duration,
}

impl Default for MaintenanceConfig {
    fn default() -> Self {
        MaintenanceConfig {
            auto_compact: None,
            target_file_size: None,
            min_num_files: 50,
            log_retention: None,
            deleted_file_retention: None,
            auto_vacuum: false,
            retention_check: true,
            timeout: Duration::from_secs(120),
        }
    }
}

impl MaintenanceConfig {
    /// The Delta table properties a new table is created with.
    pub fn table_properties(&self) -> Vec<(String, String)> {
        let mut props = Vec::new();
        if let Some(on) = self.auto_compact {
            props.push((AUTO_COMPACT.to_string(), on.to_string()));
        }
        if let Some(size) = self.target_file_size {
            props.push((DELTA_TARGET_FILE_SIZE.to_string(), size.to_string()));
        }
        if let Some(i) = &self.log_retention {
            props.push((LOG_RETENTION.to_string(), i.text.clone()));
        }
        if let Some(i) = &self.deleted_file_retention {
            props.push((DELETED_FILE_RETENTION.to_string(), i.text.clone()));
        }
        props
    }
}

/// Parses the maintenance options (no I/O).
pub fn parse(p: &ParsedOptions) -> Result<MaintenanceConfig> {
    let auto_compact = AUTO_COMPACT_DECL
        .get(p)?
        .map(|v| matches!(v, "true" | "auto"));
    let target_file_size = match TARGET_DECL.given(p)? {
        None => None,
        Some(n) => Some(NonZeroU64::new(n).ok_or_else(|| {
            invalid_value(DELTA_TARGET_FILE_SIZE, "0", "a size above 0, e.g. 128mb")
        })?),
    };
    let min_num_files = usize::try_from(MIN_NUM_FILES_DECL.get(p)?).unwrap_or(usize::MAX);
    if MIN_NUM_FILES_DECL.is_set(p) && auto_compact != Some(true) {
        return Err(conflicting(
            MIN_NUM_FILES,
            AUTO_COMPACT,
            "only applies with auto-compaction on ('delta.autoOptimize.autoCompact' = true)",
        ));
    }
    let interval = |d: &OptionDecl<Text, Defaulted>| -> Result<Option<Interval>> {
        match d.given(p)? {
            None => Ok(None),
            Some(text) => parse_interval(&text)
                .map(Some)
                .ok_or_else(|| invalid_value(d.name, &text, INTERVAL_SYNTAX)),
        }
    };
    let log_retention = interval(&LOG_RETENTION_DECL)?;
    let deleted_file_retention = interval(&FILE_RETENTION_DECL)?;
    let retention_check = RETENTION_CHECK_DECL.get(p)?;
    let auto_vacuum = AUTO_VACUUM_DECL.get(p)?;
    if let Some(r) = &deleted_file_retention {
        check_file_retention(r.duration, retention_check)
            .map_err(|e| e.with_context("value", &r.text))?;
    }
    if RETENTION_CHECK_DECL.is_set(p) && deleted_file_retention.is_none() && !auto_vacuum {
        return Err(conflicting(
            RETENTION_CHECK,
            DELETED_FILE_RETENTION,
            "only applies with 'delta.deletedFileRetentionDuration' or 'autoVacuum'",
        ));
    }
    let timeout = TIMEOUT_DECL.get(p)?;
    if TIMEOUT_DECL.is_set(p) && auto_compact != Some(true) {
        return Err(conflicting(
            MAINTENANCE_TIMEOUT,
            AUTO_COMPACT,
            "only applies with auto-compaction on ('delta.autoOptimize.autoCompact' = true)",
        ));
    }
    if timeout.is_zero() {
        return Err(invalid_value(
            MAINTENANCE_TIMEOUT,
            "0",
            "a duration above 0, e.g. 2m",
        ));
    }
    Ok(MaintenanceConfig {
        auto_compact,
        target_file_size,
        min_num_files,
        log_retention,
        deleted_file_retention,
        auto_vacuum,
        retention_check,
        timeout,
    })
}

/// Resolves `checkpointInterval` and its alias `delta.checkpointInterval` (the name of the
/// other option, `checkpointInterval`, is passed by the caller).
pub fn checkpoint_interval(p: &ParsedOptions, plain: &str) -> Result<Option<u64>> {
    let plain_value = p.i64(plain)?;
    let alias = DELTA_CHECKPOINT_DECL.get(p)?;
    let value = match (plain_value, alias) {
        (Some(a), Some(b)) if a != b => {
            return Err(conflicting(
                DELTA_CHECKPOINT_INTERVAL,
                plain,
                &format!(
                    "is {b} but '{plain}' is {a} (the two names are one setting; give one of \
                     them)"
                ),
            ))
        }
        (a, b) => a.or(b),
    };
    Ok(value.map(|n| u64::try_from(n).unwrap_or(1)))
}

/// Delta's retention check: a file retention below 7 days is refused unless the check is off.
pub fn check_file_retention(retention: Duration, check: bool) -> Result<()> {
    if check && retention < MIN_FILE_RETENTION {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "a file retention of {} is below Delta's safe minimum of 7 days (168 hours): \
                 readers and writers still using an older table version may need the files \
                 it deletes; give 'interval 7 days' or more, or set '{RETENTION_CHECK}' = false \
                 if no reader or writer can be that far behind",
                humantime_secs(retention)
            ),
        )
        .with_context("option", DELETED_FILE_RETENTION)
        .with_context("allowed", "interval 7 days or more"));
    }
    Ok(())
}

/// The table's value of a retention property must be the option's (see the module docs).
pub fn check_table_retention(
    option: &str,
    wanted: Option<&Interval>,
    table_value: Duration,
    location: &str,
) -> Result<()> {
    let Some(wanted) = wanted else {
        return Ok(());
    };
    if wanted.duration == table_value {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::ConflictingOptions,
        format!(
            "option '{option}' is '{}' but the Delta table at {location} keeps {} (its \
             '{option}' property, or Delta's default); Delta writers, deltalake included, apply \
             the table's value, so the option would be ignored: remove the option, or set the \
             table property to the same value (ALTER TABLE ... SET TBLPROPERTIES)",
            wanted.text,
            humantime_secs(table_value)
        ),
    )
    .with_context("option", option)
    .with_context("path", location))
}

fn humantime_secs(d: Duration) -> String {
    let s = d.as_secs();
    let (n, unit) = if s.is_multiple_of(86_400) && s > 0 {
        (s / 86_400, "day")
    } else if s.is_multiple_of(3600) && s > 0 {
        (s / 3600, "hour")
    } else {
        (s, "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}
