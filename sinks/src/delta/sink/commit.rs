//! One Delta commit per batch, carrying its `txn` action, retried after a lost race.
//!
//! [`DeltaSink::commit_with_retry`] is the single commit loop of the sink's writes:
//! [`tributary_sdk::Sink::write`] (record batches, deltalake's write operation; a MERGE or an
//! overwrite in `update` / `complete` output mode, [`super::upsert`]),
//! [`tributary_sdk::PartWriter::commit_batch`] and
//! [`tributary_sdk::PartitionStager::commit_staged`] (data files already written, committed as
//! `add` actions). Before each attempt it reloads the table when needed and checks the
//! application transaction: a batch whose id is not above the version recorded for the sink's
//! app id is already in the table and is skipped. A commit that lost a race
//! ([`Failure::Conflict`]) is retried with a growing, jittered delay up to `max_attempts`;
//! anything else fails the write (the table is reloaded before the next one, so a commit whose
//! outcome was unknown but did land is then seen and skipped).

use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use deltalake::checkpoints::{cleanup_metadata, create_checkpoint};
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties, TableReference};
use deltalake::kernel::{Action, Add, MetadataExt, StructType, Transaction};
use deltalake::operations::write::SchemaMode;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::table::config::TablePropertiesExt;
use deltalake::DeltaTable;
use tributary_sdk::{Error, ErrorCode, Result};

use super::DeltaSink;
use crate::delta::error::{classify, to_error, Failure};
use crate::delta::schema::{check_batch_schema, merge_schemas, SchemaChange};

/// Table property holding the checkpoint interval.
const CHECKPOINT_INTERVAL_PROPERTY: &str = "delta.checkpointInterval";

/// What one commit publishes.
#[derive(Clone, Copy)]
pub(super) enum Payload<'a> {
    /// Record batches, written by deltalake's write operation (`Sink::write`).
    Batches {
        batches: &'a [RecordBatch],
        schema: &'a SchemaRef,
    },
    /// An `update` batch, MERGEd by its key ([`super::upsert`]).
    Merge {
        batches: &'a [RecordBatch],
        schema: &'a SchemaRef,
        key: &'a [String],
    },
    /// A `complete` batch, replacing the table's rows ([`super::upsert`]).
    Overwrite {
        batches: &'a [RecordBatch],
        schema: &'a SchemaRef,
    },
    /// Data files already written (the part writer, staged partitions), with the Delta schema
    /// they were written with, its Arrow form and the partition columns.
    Files {
        adds: &'a [Add],
        file_schema: &'a StructType,
        arrow_schema: &'a SchemaRef,
        partitions: &'a [String],
    },
}

/// How [`DeltaSink::commit_with_retry`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Committed {
    /// This call committed the batch.
    Now,
    /// The table already held the batch. `tried`: this call had attempted a commit that
    /// reported a lost race, so the commit found may be its own (its files must not be deleted).
    Before { tried: bool },
}

/// The Delta transaction version of a batch id.
pub(super) fn txn_version(batch_id: u64) -> Result<i64> {
    i64::try_from(batch_id).map_err(|_| {
        Error::new(
            ErrorCode::Internal,
            "batch id too large for a Delta transaction version",
        )
        .with_context("batch", batch_id)
    })
}

impl DeltaSink {
    /// Commits `payload` as batch `batch_id` (transaction version `version`), once: see the
    /// module docs.
    pub(super) async fn commit_with_retry(
        &mut self,
        batch_id: u64,
        version: i64,
        payload: Payload<'_>,
    ) -> Result<Committed> {
        let mut delay = Duration::from_millis(20);
        for attempt in 1..=self.max_attempts {
            if self.stale {
                self.reload().await?;
            }
            if self.app_id.is_some() && self.committed.is_some_and(|c| c >= version) {
                tracing::info!(
                    batch = batch_id,
                    path = %self.location(),
                    "delta sink: batch already committed (a replay, or an earlier attempt's \
                     commit), skipped"
                );
                self.stats.skipped_replays += 1;
                return Ok(Committed::Before { tried: attempt > 1 });
            }
            let outcome = match payload {
                Payload::Batches { batches, schema } => match self.check_schema(schema) {
                    Ok(evolve) => {
                        self.commit_batches(version, batches, SaveMode::Append, evolve)
                            .await
                    }
                    Err(e) => Err(e),
                },
                Payload::Overwrite { batches, schema } => match self.check_schema(schema) {
                    Ok(evolve) => {
                        self.commit_batches(version, batches, SaveMode::Overwrite, evolve)
                            .await
                    }
                    Err(e) => Err(e),
                },
                Payload::Merge {
                    batches,
                    schema,
                    key,
                } => match self.check_schema(schema) {
                    Ok(_) => self.commit_merge(version, batches, schema, key).await,
                    Err(e) => Err(e),
                },
                Payload::Files {
                    adds,
                    file_schema,
                    arrow_schema,
                    partitions,
                } => {
                    self.commit_files(version, adds, file_schema, arrow_schema, partitions)
                        .await
                }
            }
            .inspect_err(|_| self.stale = true)?;
            match outcome {
                Ok(table) => {
                    self.after_commit(&table).await?;
                    self.table = Some(table);
                    self.committed = Some(version);
                    self.checked_schema = None;
                    self.stats.commits += 1;
                    self.maintain().await;
                    return Ok(Committed::Now);
                }
                Err(Failure::Conflict(e)) if attempt < self.max_attempts => {
                    tracing::warn!(
                        batch = batch_id,
                        attempt,
                        error = %e,
                        "delta sink: commit lost a race with another writer, retrying"
                    );
                    self.stats.conflict_retries += 1;
                    self.stale = true;
                    tokio::time::sleep(delay + jitter(delay)).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Err(Failure::Conflict(e)) | Err(Failure::Other(e)) => {
                    self.stale = true;
                    return Err(
                        to_error("write to", self.location(), e).with_context("batch", batch_id)
                    );
                }
            }
        }
        Err(Error::new(
            ErrorCode::Internal,
            "delta sink retry loop ended without a result",
        ))
    }

    /// One attempt at committing record batches with deltalake's write operation (`mode`:
    /// append, or overwrite for `complete` output); `Ok(Err(_))` is a failed commit to classify.
    pub(super) async fn commit_batches(
        &mut self,
        version: i64,
        batches: &[RecordBatch],
        mode: SaveMode,
        evolve: bool,
    ) -> Result<std::result::Result<DeltaTable, Failure>> {
        let table = self
            .table
            .clone()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "delta sink written before open"))?;
        let exists = table.version().is_some();
        let mut properties = CommitProperties::default()
            .with_create_checkpoint(self.own_checkpoint_interval.is_none())
            .with_cleanup_expired_logs(Some(false));
        if let Some(app) = &self.app_id {
            properties = properties.with_application_transaction(Transaction::new(app, version));
        }
        let mut write = table
            .write(batches.to_vec())
            .with_save_mode(mode)
            .with_writer_properties(self.writer_properties.clone())
            .with_commit_properties(properties);
        if !self.config.partition_by.is_empty() {
            write = write.with_partition_columns(self.config.partition_by.clone());
        }
        if evolve && exists {
            // Checked above: only columns added under mergeSchema, or columns left out.
            write = write.with_schema_mode(SchemaMode::Merge);
        }
        if let Some(size) = self.config.target_file_size {
            write = write.with_target_file_size(Some(size));
        }
        if !exists {
            let configuration = self.new_table_properties();
            if !configuration.is_empty() {
                write =
                    write.with_configuration(configuration.into_iter().map(|(k, v)| (k, Some(v))));
            }
        }
        Ok(write.await.map_err(classify))
    }

    /// The table properties a new table is created with.
    fn new_table_properties(&self) -> Vec<(String, String)> {
        let mut properties = self.config.maintenance.table_properties();
        if let Some(n) = self.config.checkpoint_interval {
            properties.push((CHECKPOINT_INTERVAL_PROPERTY.to_string(), n.to_string()));
        }
        properties
    }

    /// Writes a log checkpoint when the sink, not deltalake, owns the interval; after a
    /// checkpoint (deltalake's or the sink's) deletes the log entries older than the table's
    /// `delta.logRetentionDuration` (see [`crate::delta::maintenance::schedule`]).
    pub(super) async fn after_commit(&mut self, table: &DeltaTable) -> Result<()> {
        let Some(version) = table.version() else {
            return Ok(());
        };
        let Ok(state) = table.snapshot() else {
            return Ok(());
        };
        let checkpointed = match self.own_checkpoint_interval {
            Some(n) if (version + 1) % n == 0 => {
                create_checkpoint(table, None)
                    .await
                    .map_err(|e| to_error("checkpoint", self.location(), e))?;
                self.stats.checkpoints += 1;
                true
            }
            Some(_) => false,
            None => (version + 1) % state.table_config().checkpoint_interval().get() == 0,
        };
        if checkpointed && state.table_config().enable_expired_log_cleanup() {
            match cleanup_metadata(table, None).await {
                Ok(n) => self.stats.log_files_removed += u64::try_from(n).unwrap_or(0),
                // The batch is committed; the next checkpoint cleans up again.
                Err(e) => tracing::warn!(
                    path = %self.location(),
                    error = %e,
                    "delta sink: deleting expired log files failed"
                ),
            }
        }
        Ok(())
    }

    /// One attempt at committing staged files; `Ok(Err(_))` is a failed commit to classify.
    async fn commit_files(
        &mut self,
        version: i64,
        adds: &[Add],
        staging_schema: &StructType,
        staging_arrow: &SchemaRef,
        partitions: &[String],
    ) -> Result<std::result::Result<DeltaTable, Failure>> {
        let mut table = self
            .table
            .clone()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "delta sink written before open"))?;
        let mut properties = CommitProperties::default()
            .with_create_checkpoint(self.own_checkpoint_interval.is_none())
            .with_cleanup_expired_logs(Some(false));
        if let Some(app) = &self.app_id {
            properties = properties.with_application_transaction(Transaction::new(app, version));
        }
        let mut actions: Vec<Action> = adds.iter().cloned().map(Action::Add).collect();
        let Ok(state) = table.snapshot() else {
            // A new table: protocol, metadata, files and txn in one commit (version 0).
            let mut create = table
                .create()
                .with_columns(staging_schema.fields().cloned())
                .with_partition_columns(partitions.to_vec())
                .with_actions(actions)
                .with_commit_properties(properties);
            create = create.with_configuration(
                self.new_table_properties()
                    .into_iter()
                    .map(|(k, v)| (k, Some(v))),
            );
            return match create.await {
                Ok(created) => Ok(Ok(created)),
                Err(e) => {
                    // Another writer created the table first: a lost race, not a failure.
                    let exists = table
                        .log_store()
                        .is_delta_table_location()
                        .await
                        .unwrap_or(false);
                    Ok(Err(if exists {
                        Failure::Conflict(e)
                    } else {
                        classify(e)
                    }))
                }
            };
        };
        let table_partitions = state.metadata().partition_columns();
        if table_partitions != partitions {
            return Err(Error::new(
                ErrorCode::SinkWrite,
                format!(
                    "the Delta table at {} is now partitioned by '{}' but this batch was staged \
                     for '{}' (another writer created or replaced it); the batch is replayed",
                    self.location(),
                    table_partitions.join(","),
                    partitions.join(","),
                ),
            )
            .with_context("path", self.location())
            .with_retry(tributary_sdk::Retry::After(Duration::from_millis(200))));
        }
        let change = check_batch_schema(
            state.schema().as_ref(),
            staging_arrow,
            self.config.merge_schema,
        )
        .map_err(|e| e.with_context("path", self.location()))?;
        if let SchemaChange::AddsColumns(_) = change {
            let merged = merge_schemas(state.schema().as_ref(), staging_schema)?;
            let metadata =
                MetadataExt::with_schema(state.metadata().clone(), &merged).map_err(|e| {
                    Error::new(
                        ErrorCode::Schema,
                        format!(
                            "delta sink cannot evolve the schema of the table at {}",
                            self.location()
                        ),
                    )
                    .with_cause(e)
                })?;
            actions.insert(0, Action::Metadata(metadata));
        }
        let operation = DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by: (!partitions.is_empty()).then(|| partitions.to_vec()),
            predicate: None,
        };
        let committed = CommitBuilder::from(properties)
            .with_actions(actions)
            .build(
                Some(state as &dyn TableReference),
                table.log_store(),
                operation,
            )
            .await;
        match committed {
            Ok(commit) => {
                table
                    .update_incremental(Some(commit.version()))
                    .await
                    .map_err(|e| to_error("reload", self.location(), e))?;
                Ok(Ok(table))
            }
            Err(e) => Ok(Err(classify(e))),
        }
    }
}

/// Up to half of `delay`, so that writers which lost the same race do not retry in step.
fn jitter(delay: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let half = delay.as_micros() / 2;
    if half == 0 {
        return Duration::ZERO;
    }
    Duration::from_micros(u64::try_from(u128::from(nanos) % half).unwrap_or(0))
}
