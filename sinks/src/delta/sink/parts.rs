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
//! table proves the batch was committed by an earlier attempt before this one tried to commit
//! (so they can never be referenced); after a lost race (the commit found may be this
//! attempt's own, whose success was reported as a conflict) or an error whose outcome is
//! unknown they are left to `VACUUM` too.
//!
//! The stager of distributed batches ([`super::stager`]) stages its partitions with the same
//! writer (`begin_attempt`, [`PartWriter::write_part`], `close_attempt`) and commits them
//! with the same retry (`commit_with_retry`).

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use async_trait::async_trait;
use deltalake::datafile::writer::{DeltaWriter, WriterConfig};
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::kernel::{Add, StructType};
use deltalake::operations::write::WriterStatsConfig;
use deltalake::DeltaTable;
use futures::StreamExt;
use std::sync::Arc;
use tributary_sdk::{Error, ErrorCode, OutputMode, PartWriter, Result};

use super::commit::{txn_version, Committed, Payload};
use super::upsert::Collected;
use super::DeltaSink;
use crate::delta::conform::conform;
use crate::delta::error::to_error;
use crate::delta::schema::{merge_schemas, to_delta_schema};

/// The batch being staged by the part writer (or one input partition of it, staged by the
/// stager of a distributed batch).
pub(super) struct Attempt {
    batch_id: u64,
    version: i64,
    /// The input partition, when staged by [`tributary_sdk::PartitionStager`].
    partition: Option<usize>,
    /// `None` when the table already holds the batch: its parts are ignored.
    staging: Option<Staging>,
}

impl Attempt {
    /// The input partition, when staged by [`tributary_sdk::PartitionStager`].
    pub(super) fn partition(&self) -> Option<usize> {
        self.partition
    }
}

/// A finished attempt: its data files written and closed, not yet committed.
pub(super) struct Closed {
    pub(super) batch_id: u64,
    pub(super) version: i64,
    /// `None` when the table already held the batch, or no row was written.
    pub(super) files: Option<ClosedFiles>,
}

/// The data files of a finished attempt.
pub(super) struct ClosedFiles {
    pub(super) adds: Vec<Add>,
    /// The Delta schema the files were written with, and its Arrow form.
    pub(super) file_schema: StructType,
    pub(super) arrow_schema: SchemaRef,
    pub(super) partitions: Vec<String>,
    pub(super) rows: u64,
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

impl DeltaSink {
    /// Starts staging batch `batch_id` (or its input partition `partition`): skipped when the
    /// table already holds the batch, else the file writer is opened.
    pub(super) async fn begin_attempt(
        &mut self,
        batch_id: u64,
        partition: Option<usize>,
        schema: SchemaRef,
    ) -> Result<()> {
        self.discard_attempt().await;
        let version = txn_version(batch_id)?;
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
                partition,
                staging: None,
            });
            return Ok(());
        }
        let evolve = self.check_schema(&schema)?;
        let staging = self.open_staging(&schema, evolve)?;
        self.attempt = Some(Attempt {
            batch_id,
            version,
            partition,
            staging: Some(staging),
        });
        Ok(())
    }

    /// Closes the current attempt's files (see [`Closed`]); `what` names the caller in errors.
    pub(super) async fn close_attempt(&mut self, what: &str) -> Result<Closed> {
        let Some(attempt) = self.attempt.take() else {
            return Err(Error::new(
                ErrorCode::Internal,
                format!("delta sink: {what} without a begun batch"),
            ));
        };
        let Attempt {
            batch_id,
            version,
            staging,
            ..
        } = attempt;
        let mut closed = Closed {
            batch_id,
            version,
            files: None,
        };
        let Some(staging) = staging else {
            return Ok(closed);
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
        if rows > 0 && !adds.is_empty() {
            closed.files = Some(ClosedFiles {
                adds,
                file_schema,
                arrow_schema,
                partitions,
                rows,
            });
        }
        Ok(closed)
    }
}

#[async_trait]
impl PartWriter for DeltaSink {
    async fn begin_batch(&mut self, batch_id: u64, schema: SchemaRef) -> Result<()> {
        if self.shape.mode != OutputMode::Append {
            self.collected = Some(Collected {
                batch_id,
                parts: Vec::new(),
            });
            return Ok(());
        }
        self.begin_attempt(batch_id, None, schema).await
    }

    async fn write_part(&mut self, part: &RecordBatch) -> Result<()> {
        if let Some(collected) = self.collected.as_mut() {
            collected.parts.push(part.clone());
            return Ok(());
        }
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
        if let Some(collected) = self.collected.take() {
            return self.write_collected(collected).await;
        }
        if self.attempt.as_ref().is_some_and(|a| a.partition.is_some()) {
            self.discard_attempt().await;
            return Err(Error::new(
                ErrorCode::Internal,
                "delta sink: commit_batch on a staged partition (use finish_partition)",
            ));
        }
        let closed = self.close_attempt("commit_batch").await?;
        let Some(files) = closed.files else {
            // Already in the table, or nothing to commit (as `write` does with an empty batch).
            return Ok(());
        };
        let payload = Payload::Files {
            adds: &files.adds,
            file_schema: &files.file_schema,
            arrow_schema: &files.arrow_schema,
            partitions: &files.partitions,
        };
        let committed = self
            .commit_with_retry(closed.batch_id, closed.version, payload)
            .await?;
        if committed == (Committed::Before { tried: false }) {
            // Committed by an earlier attempt before this one tried: these files were
            // written by this attempt only and can never be referenced. After a lost race the
            // commit found may be this attempt's own: its files are left to VACUUM.
            self.delete_files(&files.adds).await;
        }
        Ok(())
    }
}
