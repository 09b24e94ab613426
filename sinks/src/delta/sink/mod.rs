//! The Delta sink: each micro-batch is one Delta commit carrying a `txn` action.
//!
//! ## Exactly-once
//!
//! Every commit records the application transaction `(app id, version)` = (the pipeline's
//! checkpoint id, the batch id) in the same atomic log entry as the batch's data files. When the
//! sink opens it reads the last version recorded for its app id; a batch whose id is not above it
//! was committed before a crash and is skipped, any other is written. After a failed write whose
//! outcome is unknown (an object-store error during the commit) the table is reloaded before the
//! next attempt, so a commit that did land is seen and not repeated.
//!
//! ## Part by part
//!
//! The sink is also a [`PartWriter`] (see [`parts`]): the runtime streams a batch's parts into
//! Parquet files as they arrive and commits them once, with the same `txn` and retry rules.
//!
//! ## Update and complete output
//!
//! A query with state in `update` mode is written as a MERGE by its grouping keys, in
//! `complete` mode as an overwrite, each one commit with the same `txn` (see [`upsert`]).
//!
//! ## Distributed batches
//!
//! The sink is also a [`tributary_sdk::PartitionStager`] (see [`stager`]): executors write a
//! batch's input partitions as data files with the same writer and return their `add` actions;
//! the driver commits all of them in one commit with the batch's `txn`. Every commit goes
//! through one retry loop ([`commit`]).
//!
//! ## Concurrent writers
//!
//! Appends are committed with Delta's optimistic concurrency: deltalake re-checks a lost race
//! against the winning commits and retries appends that do not conflict. A commit that does
//! conflict (a concurrent schema change, two first writes both creating the table) is retried
//! here after reloading the table and checking the transaction id again, with a growing delay.
//! Two pipelines have different app ids, so their batch ids never shadow each other.

use std::collections::HashMap;
use std::fmt;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use deltalake::parquet::basic::{Compression, ZstdLevel};
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::table::config::TablePropertiesExt;
use deltalake::DeltaTable;
use tributary_sdk::{
    Delivery, Error, ErrorCode, OutputMode, OutputShape, PartWriter, PartitionStager, Result, Sink,
    SinkLedger,
};
use url::Url;

use super::config::{DeltaCompression, DeltaConfig, PARTITION_BY};
use super::error::to_error;
use super::maintenance::schedule::{check_table, AutoCompact};
use super::s3_commit::UNSAFE_RENAME_KEY;
use super::schema::{check_batch_schema, SchemaChange};
use super::table::{load_table, table_url};

mod commit;
mod maintain;
mod parts;
mod stager;
mod upsert;

use commit::{txn_version, Payload};

/// What the sink has done since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeltaSinkStats {
    /// Batches committed.
    pub commits: u64,
    /// Batches skipped because the table already held them (replays after a crash).
    pub skipped_replays: u64,
    /// Commits retried after losing a race with another writer.
    pub conflict_retries: u64,
    /// Log checkpoints written by the sink itself (`checkpointInterval` differing from the
    /// table's property).
    pub checkpoints: u64,
    /// Auto-compactions that committed (`OPTIMIZE` commits).
    pub compactions: u64,
    /// Small files those compactions replaced.
    pub files_compacted: u64,
    /// Files those compactions wrote.
    pub compacted_files_written: u64,
    /// Data files deleted by `autoVacuum`.
    pub files_vacuumed: u64,
    /// Expired log files deleted after checkpoints.
    pub log_files_removed: u64,
    /// Maintenance runs that failed or were abandoned at `maintenanceTimeout` (the batch was
    /// committed regardless).
    pub maintenance_failures: u64,
    /// Time spent in maintenance runs (compaction and vacuum) in total.
    pub maintenance_time: std::time::Duration,
    /// The longest maintenance run.
    pub longest_maintenance: std::time::Duration,
}

/// Writes micro-batches to a Delta table, exactly once per batch id.
pub struct DeltaSink {
    config: DeltaConfig,
    storage: HashMap<String, String>,
    app_id: Option<String>,
    url: Option<Url>,
    table: Option<DeltaTable>,
    /// The table must be reloaded before the next write (opened, or a write failed).
    stale: bool,
    /// The last batch id recorded for `app_id` in the loaded table.
    committed: Option<i64>,
    /// Checkpoint every N commits ourselves (the option differs from the table property).
    own_checkpoint_interval: Option<u64>,
    /// Auto-compaction, when on (resolved against the loaded table).
    auto_compact: Option<AutoCompact>,
    /// The batch schema last checked against the table schema, and whether writing it
    /// evolves the table schema.
    checked_schema: Option<(SchemaRef, bool)>,
    writer_properties: WriterProperties,
    max_attempts: u32,
    stats: DeltaSinkStats,
    /// The batch the part writer is staging.
    attempt: Option<parts::Attempt>,
    /// The output mode and update key the sink was opened with ([`upsert`]).
    shape: OutputShape,
    /// The batch the part writer collects in `update` / `complete` mode.
    collected: Option<upsert::Collected>,
}

impl fmt::Debug for DeltaSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaSink")
            .field("config", &self.config)
            .field("app_id", &self.app_id)
            .field(
                "version",
                &self.table.as_ref().and_then(DeltaTable::version),
            )
            .field("committed", &self.committed)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl DeltaSink {
    /// A sink for `config` whose commits carry `app_id` (the checkpoint id; `None` writes
    /// without a transaction id, for runs that never replay). `storage` holds the resolved
    /// object-store options.
    pub fn new(
        config: DeltaConfig,
        mut storage: HashMap<String, String>,
        app_id: Option<String>,
    ) -> Self {
        if config.allow_unsafe_rename {
            storage.insert(UNSAFE_RENAME_KEY.to_string(), "true".to_string());
        }
        let compression = match config.compression {
            DeltaCompression::Snappy => Compression::SNAPPY,
            DeltaCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
            DeltaCompression::None => Compression::UNCOMPRESSED,
        };
        DeltaSink {
            config,
            storage,
            app_id,
            url: None,
            table: None,
            stale: true,
            committed: None,
            own_checkpoint_interval: None,
            auto_compact: None,
            checked_schema: None,
            writer_properties: WriterProperties::builder()
                .set_compression(compression)
                .build(),
            max_attempts: 20,
            stats: DeltaSinkStats::default(),
            attempt: None,
            shape: OutputShape::default(),
            collected: None,
        }
    }

    /// How many times a commit that lost a race is attempted before the write fails (20).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// What the sink has done since it was created.
    pub fn stats(&self) -> DeltaSinkStats {
        self.stats
    }

    /// The table as of the last commit or load, if it exists.
    pub fn table(&self) -> Option<&DeltaTable> {
        self.table.as_ref().filter(|t| t.version().is_some())
    }

    /// The last batch id recorded in the table for this sink's app id.
    pub fn committed_batch(&self) -> Option<i64> {
        self.committed
    }

    fn location(&self) -> &str {
        &self.config.path
    }

    /// Loads the table and what this sink needs from it: its transaction version, whether its
    /// partitioning matches, and who writes checkpoints.
    async fn reload(&mut self) -> Result<()> {
        let url = match &self.url {
            Some(u) => u.clone(),
            None => {
                let u = table_url(self.location())?;
                self.url = Some(u.clone());
                u
            }
        };
        let table = load_table(&url, &self.storage, self.location()).await?;
        self.committed = None;
        self.own_checkpoint_interval = None;
        self.checked_schema = None;
        let state = table.snapshot().ok();
        if let Some(state) = state {
            check_table(&self.config.maintenance, state, self.location())?;
        }
        let previous = self.auto_compact.take();
        self.auto_compact = AutoCompact::resolve(&self.config.maintenance, state)
            .map(|auto| auto.keeping_schedule(previous.as_ref()));
        if let Some(state) = state {
            let partitions = state.metadata().partition_columns();
            if !self.config.partition_by.is_empty() && partitions != self.config.partition_by {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "option '{PARTITION_BY}' is '{}' but the Delta table at {} is partitioned \
                         by '{}'; remove the option or give the table's columns",
                        self.config.partition_by.join(","),
                        self.location(),
                        partitions.join(","),
                    ),
                )
                .with_context("option", PARTITION_BY)
                .with_context("path", self.location()));
            }
            if let Some(app) = &self.app_id {
                self.committed = state
                    .transaction_version(table.log_store().as_ref(), app)
                    .await
                    .map_err(|e| to_error("read the transaction ids of", self.location(), e))?;
            }
            if let Some(n) = self.config.checkpoint_interval {
                let table_interval = state.table_config().checkpoint_interval().get();
                if table_interval != n {
                    self.own_checkpoint_interval = Some(n);
                }
            }
        }
        self.table = Some(table);
        self.stale = false;
        Ok(())
    }

    /// Checks the batch schema against the table's; true when the write must evolve the
    /// schema (deltalake's merge mode: new columns added, missing ones written as nulls).
    fn check_schema(&mut self, schema: &SchemaRef) -> Result<bool> {
        if let Some((checked, evolve)) = &self.checked_schema {
            if checked == schema {
                return Ok(*evolve);
            }
        }
        let Some(state) = self.table.as_ref().and_then(|t| t.snapshot().ok()) else {
            for column in &self.config.partition_by {
                if schema.field_with_name(column).is_err() {
                    return Err(Error::new(
                        ErrorCode::Schema,
                        format!(
                            "partition column '{column}' (option '{PARTITION_BY}') is not a \
                             column of the batches"
                        ),
                    )
                    .with_context("option", PARTITION_BY)
                    .with_context("field", column));
                }
            }
            return Ok(false);
        };
        let change = check_batch_schema(state.schema().as_ref(), schema, self.config.merge_schema)
            .map_err(|e| e.with_context("path", self.location()))?;
        let evolve = change != SchemaChange::None;
        self.checked_schema = Some((schema.clone(), evolve));
        Ok(evolve)
    }
}

#[async_trait]
impl Sink for DeltaSink {
    fn delivery(&self) -> Delivery {
        Delivery::ExactlyOnce
    }

    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        self.shape = OutputShape::of(&schema)?;
        upsert::check_shape(&self.shape, &schema, &self.config.path)?;
        self.reload().await?;
        self.check_schema(&schema)?;
        Ok(())
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        // The output shape in the schema's metadata is for the sink, not the table: deltalake
        // compares Arrow schemas with their metadata.
        let batches: Vec<RecordBatch> = batches
            .iter()
            .filter(|b| b.num_rows() > 0)
            .map(upsert::without_shape)
            .collect::<Result<_>>()?;
        let Some(first) = batches.first() else {
            return Ok(());
        };
        let schema = first.schema();
        if let Some(other) = batches.iter().find(|b| b.schema() != schema) {
            return Err(Error::new(
                ErrorCode::Schema,
                "the record batches of one micro-batch have different schemas",
            )
            .with_context("batch", batch_id)
            .with_context("expected", schema.to_string())
            .with_context("actual", other.schema().to_string()));
        }
        let version = txn_version(batch_id)?;
        let key = self.shape.key.clone();
        let payload = match (self.shape.mode, &key) {
            (OutputMode::Update, Some(key)) => Payload::Merge {
                batches: &batches,
                schema: &schema,
                key,
            },
            (OutputMode::Complete, _) => Payload::Overwrite {
                batches: &batches,
                schema: &schema,
            },
            _ => Payload::Batches {
                batches: &batches,
                schema: &schema,
            },
        };
        self.commit_with_retry(batch_id, version, payload).await?;
        Ok(())
    }

    fn as_part_writer(&mut self) -> Option<&mut dyn PartWriter> {
        Some(self)
    }

    fn as_stager(&mut self) -> Option<&mut dyn PartitionStager> {
        Some(self)
    }

    /// Delta keeps the last batch per writer itself (the `txn` action of this checkpoint's id);
    /// a table has many writers, so it names no owner.
    async fn ledger(&mut self) -> Result<Option<SinkLedger>> {
        if self.app_id.is_none() {
            return Ok(None);
        }
        if self.stale {
            self.reload().await?;
        }
        Ok(Some(SinkLedger {
            owner: None,
            last_batch: self.committed.and_then(|v| u64::try_from(v).ok()),
        }))
    }

    async fn stop(&mut self) -> Result<()> {
        self.discard_attempt().await;
        self.table = None;
        self.stale = true;
        Ok(())
    }
}
