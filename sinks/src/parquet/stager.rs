//! The Parquet sink's staged write ([`PartitionStager`]): executors stage one file per input
//! partition, the driver publishes the batch once.
//!
//! ## Layout (under the sink's `path`)
//!
//! - `_staging/<batch, 20 digits>/<partition, 5 digits>-<attempt id>.parquet`: a partition
//!   staged by one task attempt, streamed part by part (a row group every 64 MiB) and fsynced
//!   with its directory entry before the manifest `{"file": <path relative to the sink's
//!   directory>, "rows": n}` is returned (`"file": null` when the partition had no rows). The
//!   attempt id (process id, clock, counter; the file is created exclusively) makes every
//!   attempt's name its own, so a retried task never overwrites or publishes another's file.
//! - `part-<batch, 20 digits>-<partition, 5 digits>.parquet`: the published files.
//! - `_commits/<batch, 20 digits>.json`: the commit record, `{"batch", "state", "files"}`,
//!   written atomically (temp file, fsync, rename, directory fsync).
//!
//! Readers must ignore `_staging/` and `_commits/`, as they ignore `.` temp files: Spark and
//! pyarrow's datasets skip names starting with `_` or `.`; [`super::read_dir_batches`] reads
//! only `part-*` files of the directory itself.
//!
//! ## Commit ([`PartitionStager::commit_staged`])
//!
//! 1. A record in state `committed` means the batch is published: the call is skipped (a second
//!    commit of the same manifests, or a replay of a batch whose `commits/N` was not written) and
//!    the batch's staging directory, with anything a replay staged, is removed.
//! 2. Otherwise the record is written in state `pending`, naming the files this commit will
//!    publish plus those a `pending` record of an interrupted earlier commit named.
//! 3. Each manifest's file is renamed to its final name (a replay's file replaces the earlier
//!    attempt's), then the directory is fsynced. A staged file already gone whose final file
//!    exists was renamed by an interrupted call with the same manifests: it counts as done.
//! 4. Final files of the batch that this commit did not publish are removed: those of the
//!    interrupted commit (a replay split into other partitions), and `part-<batch>.parquet`
//!    of an embedded-engine attempt.
//! 5. The record is rewritten in state `committed`; the batch's staging directory (orphans of
//!    failed attempts with it) and the staging directories and records of earlier batches are
//!    removed. Only the last batch's record is kept: the driver never commits an earlier batch
//!    again once a later one is committed.
//!
//! So after any crash and the replay of the batch (staged again, committed again) the directory
//! holds each row of the batch exactly once. Conversely, the embedded engine's write of batch `n`
//! removes the files and the record of a distributed commit of `n` (a pipeline moved back to
//! the embedded engine after a crash).
//!
//! ## What a reader can see
//!
//! The renames are not one atomic step: a reader listing the directory during step 3 sees some
//! of the batch's partitions (and, during a replay, partitions of the interrupted attempt next to
//! the new one's; with a different split the same rows twice until step 4). This is the window
//! Spark's file sink has without its `_spark_metadata` log; a reader that needs atomic batches
//! reads the files named by `committed` records, or waits for the pipeline's `commits/N`.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, PartitionStager, Result, StagedOutput};

use super::{sync_dir, ParquetSink};

/// The directory staged files are written to, under the sink's directory.
pub const STAGING_DIR: &str = "_staging";
/// The directory of commit records, under the sink's directory.
pub const COMMITS_DIR: &str = "_commits";

/// The partition a task attempt is staging.
#[derive(Debug)]
pub(super) struct PartitionAttempt {
    pub(super) partition: usize,
    /// The staged file, relative to the sink's directory (the manifest's `file`).
    relative: String,
    pub(super) path: PathBuf,
}

/// The sink's manifest of one staged partition.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    /// The staged file relative to the sink's directory; `None` for a partition without rows.
    file: Option<String>,
    rows: u64,
}

/// The commit record of a batch (`_commits/<batch>.json`).
#[derive(Debug, Serialize, Deserialize)]
struct CommitRecord {
    batch: u64,
    state: CommitState,
    /// Final file names (in the sink's directory) the commit publishes or published.
    files: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum CommitState {
    /// Renames may have started: the files named may exist.
    Pending,
    /// The batch is published.
    Committed,
}

/// An id unique to a task attempt: process, clock and a counter (the file is also created
/// exclusively, so a collision is an error rather than an overwrite).
fn attempt_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{nanos:x}-{}-{n}", std::process::id())
}

/// The final name of a partition of a distributed batch.
fn partition_file_name(batch_id: u64, partition: usize) -> String {
    format!("part-{batch_id:020}-{partition:05}.parquet")
}

fn not_found(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::NotFound
}

impl ParquetSink {
    fn staging_dir(&self, batch_id: u64) -> PathBuf {
        self.dir.join(STAGING_DIR).join(format!("{batch_id:020}"))
    }

    fn commits_dir(&self) -> PathBuf {
        self.dir.join(COMMITS_DIR)
    }

    fn record_path(&self, batch_id: u64) -> PathBuf {
        self.commits_dir().join(format!("{batch_id:020}.json"))
    }

    fn read_record(&self, batch_id: u64) -> Result<Option<CommitRecord>> {
        let path = self.record_path(batch_id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if not_found(&e) => return Ok(None),
            Err(e) => return Err(self.io_err("read", &path, e)),
        };
        let record: CommitRecord = serde_json::from_slice(&bytes).map_err(|e| {
            Error::new(
                ErrorCode::SinkWrite,
                format!(
                    "parquet sink cannot parse the commit record {}",
                    path.display()
                ),
            )
            .with_context("path", path.display())
            .with_cause(e)
        })?;
        Ok(Some(record))
    }

    /// Writes a commit record atomically: temp file, fsync, rename, directory fsync.
    fn write_record(&self, record: &CommitRecord) -> Result<()> {
        let dir = self.commits_dir();
        fs::create_dir_all(&dir).map_err(|e| self.io_err("create directory", &dir, e))?;
        let path = self.record_path(record.batch);
        let tmp = dir.join(format!(".{:020}.json.{}.tmp", record.batch, attempt_id()));
        let json = serde_json::to_vec(record).map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                "parquet sink cannot encode a commit record",
            )
            .with_cause(e)
        })?;
        let mut file = File::create(&tmp).map_err(|e| self.io_err("create", &tmp, e))?;
        file.write_all(&json)
            .and_then(|()| file.sync_all())
            .map_err(|e| self.io_err("write", &tmp, e))?;
        drop(file);
        fs::rename(&tmp, &path).map_err(|e| self.io_err("rename into", &path, e))?;
        sync_dir(&dir).map_err(|e| self.io_err("fsync directory", &dir, e))
    }

    /// Removes a file of the sink's directory; true if it existed.
    fn remove_final(&self, name: &str) -> Result<bool> {
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(self.io_err("remove", &path, e)),
        }
    }

    /// Removes a staging directory or commit record that is no longer needed (best effort).
    fn remove_quietly(&self, path: &Path) {
        let removed = if path.is_dir() {
            fs::remove_dir_all(path)
        } else {
            fs::remove_file(path)
        };
        if let Err(e) = removed {
            if !not_found(&e) {
                tracing::warn!(path = %path.display(), error = %e, "parquet sink: cleanup failed");
            }
        }
    }

    /// Removes the staging directories and commit records of batches before `batch_id`.
    fn prune_before(&self, batch_id: u64) {
        for dir in [self.dir.join(STAGING_DIR), self.commits_dir()] {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let id = name.strip_suffix(".json").unwrap_or(&name);
                if id.len() == 20 && id.parse::<u64>().is_ok_and(|id| id < batch_id) {
                    self.remove_quietly(&entry.path());
                }
            }
        }
    }

    /// The embedded engine wrote batch `batch_id` as one file: the files and record of a
    /// distributed commit of the same batch (an earlier attempt) must go.
    pub(super) fn drop_distributed_commit(&self, batch_id: u64) -> Result<()> {
        let staging = self.staging_dir(batch_id);
        if staging.exists() {
            self.remove_quietly(&staging);
        }
        let Some(record) = self.read_record(batch_id)? else {
            return Ok(());
        };
        let mut removed = false;
        for name in &record.files {
            removed |= self.remove_final(name)?;
        }
        if removed {
            sync_dir(&self.dir).map_err(|e| self.io_err("fsync directory", &self.dir, e))?;
        }
        let path = self.record_path(batch_id);
        fs::remove_file(&path).map_err(|e| self.io_err("remove", &path, e))?;
        Ok(())
    }

    /// Checks one output and says which staged file goes to which final name.
    fn plan(&self, batch_id: u64, output: &StagedOutput) -> Result<Option<(PathBuf, String)>> {
        let refuse = |why: &str| {
            Error::new(
                ErrorCode::Internal,
                format!("parquet sink cannot commit a staged output: {why}"),
            )
            .with_context("batch", batch_id)
            .with_context("partition", output.partition)
        };
        if output.batch_id != batch_id {
            return Err(
                refuse("it belongs to another batch").with_context("output batch", output.batch_id)
            );
        }
        let manifest: Manifest = serde_json::from_value(output.manifest.clone())
            .map_err(|e| refuse("its manifest is not a Parquet sink manifest").with_cause(e))?;
        let Some(file) = manifest.file else {
            return Ok(None);
        };
        // The manifest names a file of this batch's staging directory, nothing else.
        let prefix = format!("{STAGING_DIR}/{batch_id:020}/{:05}-", output.partition);
        let valid = file
            .strip_prefix(&prefix)
            .is_some_and(|rest| !rest.contains(['/', '\\']) && rest.ends_with(".parquet"));
        if !valid {
            return Err(
                refuse("its file is not a staged file of this batch and partition")
                    .with_context("file", &file),
            );
        }
        Ok(Some((
            self.dir.join(&file),
            partition_file_name(batch_id, output.partition),
        )))
    }
}

#[async_trait]
impl PartitionStager for ParquetSink {
    async fn begin_partition(
        &mut self,
        batch_id: u64,
        partition: usize,
        schema: SchemaRef,
    ) -> Result<()> {
        self.discard_staged();
        let dir = self.staging_dir(batch_id);
        fs::create_dir_all(&dir).map_err(|e| self.io_err("create directory", &dir, e))?;
        let name = format!("{partition:05}-{}.parquet", attempt_id());
        self.partition = Some(PartitionAttempt {
            partition,
            relative: format!("{STAGING_DIR}/{batch_id:020}/{name}"),
            path: dir.join(name),
        });
        self.batch = Some(batch_id);
        self.schema = Some(schema);
        Ok(())
    }

    async fn stage_part(&mut self, part: &RecordBatch) -> Result<()> {
        if self.partition.is_none() {
            return Err(Error::new(
                ErrorCode::Internal,
                "parquet sink: stage_part without begin_partition",
            ));
        }
        self.append_part(part)
            .inspect_err(|_| self.discard_staged())
    }

    async fn finish_partition(&mut self) -> Result<StagedOutput> {
        let (Some(attempt), Some(batch_id)) = (self.partition.take(), self.batch.take()) else {
            return Err(Error::new(
                ErrorCode::Internal,
                "parquet sink: finish_partition without begin_partition",
            ));
        };
        let (manifest, rows, bytes) = match self.staged.take() {
            None => (
                Manifest {
                    file: None,
                    rows: 0,
                },
                0,
                0,
            ),
            Some(staged) => {
                let (_, rows, bytes) = self.finish_file(staged)?;
                // The file's directory entry (and the staging directories' own entries) must
                // survive a crash of this machine too.
                for dir in [
                    self.staging_dir(batch_id),
                    self.dir.join(STAGING_DIR),
                    self.dir.clone(),
                ] {
                    sync_dir(&dir).map_err(|e| self.io_err("fsync directory", &dir, e))?;
                }
                (
                    Manifest {
                        file: Some(attempt.relative),
                        rows,
                    },
                    rows,
                    bytes,
                )
            }
        };
        let manifest = serde_json::to_value(&manifest).map_err(|e| {
            Error::new(ErrorCode::Internal, "parquet sink cannot encode a manifest").with_cause(e)
        })?;
        Ok(StagedOutput {
            batch_id,
            partition: attempt.partition,
            rows,
            bytes,
            manifest,
        })
    }

    async fn commit_staged(&mut self, batch_id: u64, outputs: Vec<StagedOutput>) -> Result<()> {
        self.discard_staged();
        fs::create_dir_all(&self.dir).map_err(|e| self.io_err("create directory", &self.dir, e))?;
        let mut partitions = BTreeSet::new();
        let mut plan = Vec::new();
        for output in &outputs {
            if !partitions.insert(output.partition) {
                return Err(Error::new(
                    ErrorCode::Internal,
                    "parquet sink: two staged outputs for one partition (commit one per partition)",
                )
                .with_context("batch", batch_id)
                .with_context("partition", output.partition));
            }
            plan.extend(self.plan(batch_id, output)?);
        }
        let earlier = self.read_record(batch_id)?;
        if let Some(CommitRecord {
            state: CommitState::Committed,
            ..
        }) = earlier
        {
            tracing::info!(
                batch = batch_id,
                path = %self.dir.display(),
                "parquet sink: batch already committed (replay), staged files removed"
            );
            self.remove_quietly(&self.staging_dir(batch_id));
            return Ok(());
        }
        self.claim()?;
        let publish: BTreeSet<String> = plan.iter().map(|(_, name)| name.clone()).collect();
        let mut files = earlier.map(|r| r.files).unwrap_or_default();
        files.extend(publish.iter().cloned());
        self.write_record(&CommitRecord {
            batch: batch_id,
            state: CommitState::Pending,
            files: files.clone(),
        })?;
        for (staged, name) in &plan {
            let dest = self.dir.join(name);
            match fs::rename(staged, &dest) {
                Ok(()) => {}
                // Renamed by an interrupted call with the same manifests.
                Err(e) if not_found(&e) && dest.exists() => {}
                Err(e) => return Err(self.io_err("rename into", &dest, e)),
            }
        }
        // The interrupted commit's files this one did not replace, and the embedded engine's.
        let single = self
            .batch_file(batch_id)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for name in files.difference(&publish).chain([&single]) {
            self.remove_final(name)?;
        }
        sync_dir(&self.dir).map_err(|e| self.io_err("fsync directory", &self.dir, e))?;
        self.write_record(&CommitRecord {
            batch: batch_id,
            state: CommitState::Committed,
            files: publish,
        })?;
        self.remove_quietly(&self.staging_dir(batch_id));
        self.prune_before(batch_id);
        Ok(())
    }
}
