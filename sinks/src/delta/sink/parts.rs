//! The Delta sink's [`PartWriter`]: a micro-batch staged part by part, committed once.
//!
//! - [`PartWriter::begin_batch`] reloads the table if needed and checks the `txn` action: a
//!   batch already in the table is skipped (its parts are ignored). Otherwise it checks the
//!   batch schema (as `write` does: `mergeSchema`, partition columns) and opens deltalake's
//!   file writer ([`DeltaWriter`]) on the table's physical schema, merged with the batch's new
//!   columns under `mergeSchema`.
//! - [`PartWriter::write_part`] brings each part to that schema ([`super::super::conform`]) and
//!   streams it into the open Parquet file(s), which are cut at `targetFileSize` (one file per
//!   partition and batch when unset). Memory holds the part and the open files' row groups,
//!   not the batch.
//! - [`PartWriter::commit_batch`] closes the files and commits all their `add` actions in ONE
//!   Delta commit with the `txn` action (and, for a new table, its protocol and metadata; under
//!   `mergeSchema`, the evolved metadata). A lost race is retried as in `write`: the table is
//!   reloaded, the `txn` checked again, and the same files committed against the new version;
//!   they are not written again.
//!
//! ## Staged files of an unfinished attempt
//!
//! Data files are invisible until a commit names them. A replayed `begin_batch` (or a failed
//! staging) aborts the open writer, which aborts its in-progress multipart uploads; files it
//! had already completed, and the files of an attempt that crashed the process, are never in
//! the log and are left to `VACUUM`, which deletes unreferenced files older than the retention
//! period. Files of an attempt whose commit failed are deleted here only when the reloaded
//! table proves the batch was committed by an earlier attempt (so they can never be
//! referenced); after an error whose outcome is unknown they are left to `VACUUM` too.

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use async_trait::async_trait;
use deltalake::datafile::writer::{DeltaWriter, WriterConfig};
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties, TableReference};
use deltalake::kernel::{Action, Add, MetadataExt, StructType, Transaction};
use deltalake::operations::write::WriterStatsConfig;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::{DeltaTable, TableProperty};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tributary_sdk::{Error, ErrorCode, PartWriter, Result};

use super::{jitter, DeltaSink};
use crate::delta::conform::conform;
use crate::delta::error::{classify, to_error, Failure};
use crate::delta::schema::{check_batch_schema, merge_schemas, to_delta_schema, SchemaChange};

/// The batch being staged by the part writer.
pub(super) struct Attempt {
    batch_id: u64,
    version: i64,
    /// `None` when the table already holds the batch: its parts are ignored.
    staging: Option<Staging>,
}

/// Files being written for one batch.
struct Staging {
    writer: DeltaWriter,
    /// The Delta schema the files are written with (the table's, merged with the batch's new
    /// columns), and its Arrow form.
    file_schema: StructType,
    arrow_schema: SchemaRef,
    partitions: Vec<String>,
    rows: u64,
}

impl DeltaSink {
    /// Abandons an unfinished attempt (see the module docs).
    pub(super) async fn discard_attempt(&mut self) {
        let Some(attempt) = self.attempt.take() else {
            return;
        };
        if let Some(staging) = attempt.staging {
            tracing::info!(
                batch = attempt.batch_id,
                path = %self.location(),
                "delta sink: discarding the unfinished attempt of a batch (its completed \
                 files are unreferenced and left to VACUUM)"
            );
            if let Err(e) = staging.writer.abort().await {
                tracing::warn!(error = %e, "delta sink: aborting staged uploads failed");
            }
        }
    }

    /// Opens the file writer for a batch of `schema` (the table's schema must accept it).
    fn open_staging(&mut self, schema: &SchemaRef, evolve: bool) -> Result<Staging> {
        let state = self.table.as_ref().and_then(|t| t.snapshot().ok());
        let batch_schema = to_delta_schema(schema)?;
        let (file_schema, partitions, stats) = match state {
            Some(state) => {
                let table_schema = state.schema();
                let file_schema = if evolve {
                    merge_schemas(table_schema.as_ref(), &batch_schema)?
                } else {
                    table_schema.as_ref().clone()
                };
                (
                    file_schema,
                    state.metadata().partition_columns().to_vec(),
                    WriterStatsConfig::from_config(state.snapshot().table_configuration()),
                )
            }
            None => (
                batch_schema,
                self.config.partition_by.clone(),
                WriterStatsConfig::new(Default::default(), None),
            ),
        };
        let arrow: ArrowSchema = (&file_schema).try_into_arrow().map_err(|e| {
            Error::new(
                ErrorCode::Schema,
                "the Delta table schema has no Arrow form",
            )
            .with_cause(e)
        })?;
        let arrow_schema = Arc::new(arrow);
        let table = self
            .table
            .as_ref()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "delta sink written before open"))?;
        let config = WriterConfig::new(
            arrow_schema.clone(),
            partitions.clone(),
            Some(self.writer_properties.clone()),
            self.config.target_file_size,
            None,
            stats.num_indexed_cols,
            stats.stats_columns,
        );
        Ok(Staging {
            writer: DeltaWriter::new(table.object_store(), config),
            file_schema,
            arrow_schema,
            partitions,
            rows: 0,
        })
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
            .with_create_checkpoint(self.own_checkpoint_interval.is_none());
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
            if let Some(n) = self.config.checkpoint_interval {
                create = create.with_configuration_property(
                    TableProperty::CheckpointInterval,
                    Some(n.to_string()),
                );
            }
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

    /// Deletes staged files that can never be referenced (best effort).
    async fn delete_files(&mut self, adds: &[Add]) {
        let Some(store) = self.table.as_ref().map(DeltaTable::object_store) else {
            return;
        };
        let paths: Vec<_> = adds
            .iter()
            .map(|a| Ok(deltalake::Path::from(a.path.as_str())))
            .collect();
        let mut deleted = store.delete_stream(futures::stream::iter(paths).boxed());
        while let Some(result) = deleted.next().await {
            if let Err(e) = result {
                tracing::warn!(error = %e, "delta sink: deleting an unreferenced staged file failed");
            }
        }
    }
}

#[async_trait]
impl PartWriter for DeltaSink {
    async fn begin_batch(&mut self, batch_id: u64, schema: SchemaRef) -> Result<()> {
        self.discard_attempt().await;
        let version = i64::try_from(batch_id).map_err(|_| {
            Error::new(
                ErrorCode::Internal,
                "batch id too large for a Delta transaction version",
            )
            .with_context("batch", batch_id)
        })?;
        if self.stale {
            self.reload().await?;
        }
        if self.app_id.is_some() && self.committed.is_some_and(|c| c >= version) {
            tracing::info!(
                batch = batch_id,
                path = %self.location(),
                "delta sink: batch already committed (replay after a restart), skipped"
            );
            self.stats.skipped_replays += 1;
            self.attempt = Some(Attempt {
                batch_id,
                version,
                staging: None,
            });
            return Ok(());
        }
        let evolve = self.check_schema(&schema)?;
        let staging = self.open_staging(&schema, evolve)?;
        self.attempt = Some(Attempt {
            batch_id,
            version,
            staging: Some(staging),
        });
        Ok(())
    }

    async fn write_part(&mut self, part: &RecordBatch) -> Result<()> {
        let Some(attempt) = self.attempt.as_mut() else {
            return Err(Error::new(
                ErrorCode::Internal,
                "delta sink: write_part without begin_batch",
            ));
        };
        let batch_id = attempt.batch_id;
        let Some(staging) = attempt.staging.as_mut() else {
            return Ok(());
        };
        if part.num_rows() == 0 {
            return Ok(());
        }
        let part =
            conform(part, &staging.arrow_schema).map_err(|e| e.with_context("batch", batch_id))?;
        match staging.writer.write(&part).await {
            Ok(()) => {
                staging.rows += part.num_rows() as u64;
                Ok(())
            }
            Err(e) => {
                self.discard_attempt().await;
                self.stale = true;
                Err(to_error("stage data files of", self.location(), e)
                    .with_context("batch", batch_id))
            }
        }
    }

    async fn commit_batch(&mut self) -> Result<()> {
        let Some(attempt) = self.attempt.take() else {
            return Err(Error::new(
                ErrorCode::Internal,
                "delta sink: commit_batch without begin_batch",
            ));
        };
        let (batch_id, version) = (attempt.batch_id, attempt.version);
        let Some(staging) = attempt.staging else {
            return Ok(());
        };
        let Staging {
            writer,
            file_schema,
            arrow_schema,
            partitions,
            rows,
        } = staging;
        let adds = writer.close().await.map_err(|e| {
            self.stale = true;
            to_error("finish the data files of", self.location(), e).with_context("batch", batch_id)
        })?;
        if rows == 0 || adds.is_empty() {
            // Nothing to commit, as `write` does with an empty batch.
            return Ok(());
        }
        let mut delay = Duration::from_millis(20);
        for attempt in 1..=self.max_attempts {
            if self.stale {
                self.reload().await?;
            }
            if self.app_id.is_some() && self.committed.is_some_and(|c| c >= version) {
                tracing::info!(
                    batch = batch_id,
                    path = %self.location(),
                    "delta sink: batch committed by an earlier attempt; its staged files are removed"
                );
                self.delete_files(&adds).await;
                self.stats.skipped_replays += 1;
                return Ok(());
            }
            let outcome = self
                .commit_files(version, &adds, &file_schema, &arrow_schema, &partitions)
                .await
                .inspect_err(|_| self.stale = true)?;
            match outcome {
                Ok(table) => {
                    self.after_commit(&table).await?;
                    self.table = Some(table);
                    self.committed = Some(version);
                    self.checked_schema = None;
                    self.stats.commits += 1;
                    return Ok(());
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
}
