//! The Delta sink's staged write ([`PartitionStager`]): executors write data files, the driver
//! commits them in one transaction.
//!
//! - [`PartitionStager::begin_partition`] (executor) reloads the table and opens the same file
//!   writer as the part writer ([`super::parts`]): deltalake's `DeltaWriter`, on the table's
//!   schema (merged with the batch's new columns under `mergeSchema`), cut at `targetFileSize`.
//!   A batch the table already holds for the sink's app id is not staged.
//! - [`PartitionStager::stage_part`] streams each part into the partition's Parquet files in
//!   the table location; their names are unique (deltalake puts a UUID in each), so a retried
//!   task never overwrites another attempt's files.
//! - [`PartitionStager::finish_partition`] closes the files and returns the manifest
//!   `{"adds": [<Delta add actions, paths relative to the table root>], "schema": <the Delta
//!   schema the files were written with>, "partitionColumns": [...]}`; no secret is in it.
//! - [`PartitionStager::commit_staged`] (driver) commits every manifest's adds in ONE Delta
//!   commit carrying the batch's `txn` action (app id = the checkpoint id, version = the batch
//!   id), with the conflict retry of every commit of this sink (`commit_with_retry`): skipped
//!   when the table's transaction version for the app id already reached the batch (a replay, or
//!   a second call with the same manifests). Schemas that differ between manifests (a column
//!   added by `mergeSchema` while the tasks ran) are merged; partition columns must agree.
//!
//! ## Files of failed attempts
//!
//! Data files are invisible until a commit names them. The files of a task attempt that died
//! or failed, and those a replay staged for a batch already committed, are never in the log:
//! they stay unreferenced and `VACUUM` deletes them once older than the retention period. The
//! driver does not delete them, since it cannot tell a replay's files from those of a commit
//! it is asked to repeat.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use async_trait::async_trait;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::kernel::{Add, StructType};
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, PartWriter, PartitionStager, Result, StagedOutput};

use super::commit::{txn_version, Committed, Payload};
use super::DeltaSink;
use crate::delta::schema::merge_schemas;

/// The sink's manifest of one staged partition.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    /// The data files' add actions (paths relative to the table root).
    adds: Vec<Add>,
    /// The Delta schema the files were written with (`None` when nothing was staged).
    schema: Option<StructType>,
    partition_columns: Vec<String>,
}

/// Refuses a staged output the driver cannot commit.
fn refuse(batch_id: u64, output: &StagedOutput, why: &str) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("delta sink cannot commit a staged output: {why}"),
    )
    .with_context("batch", batch_id)
    .with_context("partition", output.partition)
}

/// An add action's path must be a file under the table root, as deltalake's writer makes it.
fn relative_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains("://")
        && !path.split('/').any(|segment| segment == "..")
}

#[async_trait]
impl PartitionStager for DeltaSink {
    async fn begin_partition(
        &mut self,
        batch_id: u64,
        partition: usize,
        schema: SchemaRef,
    ) -> Result<()> {
        // An executor's sink may serve many batches: read the table's current schema and
        // transaction version for each partition.
        self.stale = true;
        self.begin_attempt(batch_id, Some(partition), schema).await
    }

    async fn stage_part(&mut self, part: &RecordBatch) -> Result<()> {
        if self.attempt_partition().is_none() {
            return Err(Error::new(
                ErrorCode::Internal,
                "delta sink: stage_part without begin_partition",
            ));
        }
        PartWriter::write_part(self, part).await
    }

    async fn finish_partition(&mut self) -> Result<StagedOutput> {
        let Some(partition) = self.attempt_partition() else {
            return Err(Error::new(
                ErrorCode::Internal,
                "delta sink: finish_partition without begin_partition",
            ));
        };
        let closed = self.close_attempt("finish_partition").await?;
        let (manifest, rows) = match closed.files {
            Some(files) => (
                Manifest {
                    adds: files.adds,
                    schema: Some(files.file_schema),
                    partition_columns: files.partitions,
                },
                files.rows,
            ),
            None => (
                Manifest {
                    adds: Vec::new(),
                    schema: None,
                    partition_columns: Vec::new(),
                },
                0,
            ),
        };
        let bytes = manifest
            .adds
            .iter()
            .map(|a| u64::try_from(a.size).unwrap_or(0))
            .sum();
        let manifest = serde_json::to_value(&manifest).map_err(|e| {
            Error::new(ErrorCode::Internal, "delta sink cannot encode a manifest").with_cause(e)
        })?;
        Ok(StagedOutput {
            batch_id: closed.batch_id,
            partition,
            rows,
            bytes,
            manifest,
        })
    }

    async fn commit_staged(&mut self, batch_id: u64, outputs: Vec<StagedOutput>) -> Result<()> {
        let version = txn_version(batch_id)?;
        let mut seen = BTreeSet::new();
        let mut adds: Vec<Add> = Vec::new();
        let mut schema: Option<StructType> = None;
        let mut partitions: Option<Vec<String>> = None;
        for output in &outputs {
            if output.batch_id != batch_id {
                return Err(refuse(batch_id, output, "it belongs to another batch")
                    .with_context("output batch", output.batch_id));
            }
            if !seen.insert(output.partition) {
                return Err(refuse(
                    batch_id,
                    output,
                    "two outputs for one partition (commit one per partition)",
                ));
            }
            let manifest: Manifest =
                serde_json::from_value(output.manifest.clone()).map_err(|e| {
                    refuse(
                        batch_id,
                        output,
                        "its manifest is not a Delta sink manifest",
                    )
                    .with_cause(e)
                })?;
            let Some(file_schema) = manifest.schema else {
                continue;
            };
            if manifest.adds.is_empty() {
                continue;
            }
            if let Some(bad) = manifest.adds.iter().find(|a| !relative_path(&a.path)) {
                return Err(refuse(
                    batch_id,
                    output,
                    "an add action is not under the table root",
                )
                .with_context("file", &bad.path));
            }
            match &partitions {
                Some(p) if *p != manifest.partition_columns => {
                    return Err(refuse(
                        batch_id,
                        output,
                        "its partition columns differ from another partition's (the table was \
                         replaced while the batch was staged); the batch is replayed",
                    )
                    .with_retry(tributary_sdk::Retry::After(
                        std::time::Duration::from_millis(200),
                    )));
                }
                Some(_) => {}
                None => partitions = Some(manifest.partition_columns),
            }
            schema = Some(match schema {
                Some(s) if s != file_schema => merge_schemas(&s, &file_schema)?,
                Some(s) => s,
                None => file_schema,
            });
            adds.extend(manifest.adds);
        }
        let (Some(file_schema), Some(partitions)) = (schema, partitions) else {
            // Nothing staged: an empty batch, or one the executors found already committed.
            return Ok(());
        };
        let arrow: ArrowSchema = (&file_schema).try_into_arrow().map_err(|e| {
            Error::new(
                ErrorCode::Schema,
                "the staged Delta schema has no Arrow form",
            )
            .with_cause(e)
        })?;
        let arrow_schema: SchemaRef = Arc::new(arrow);
        let payload = Payload::Files {
            adds: &adds,
            file_schema: &file_schema,
            arrow_schema: &arrow_schema,
            partitions: &partitions,
        };
        if let Committed::Before { .. } = self.commit_with_retry(batch_id, version, payload).await?
        {
            tracing::info!(
                batch = batch_id,
                path = %self.location(),
                files = adds.len(),
                "delta sink: staged batch already committed; files not in the log are left \
                 to VACUUM"
            );
        }
        Ok(())
    }
}

impl DeltaSink {
    /// The input partition of the current attempt, when it is a staged partition.
    fn attempt_partition(&self) -> Option<usize> {
        self.attempt.as_ref().and_then(|a| a.partition())
    }
}
