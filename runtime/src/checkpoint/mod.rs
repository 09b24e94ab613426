//! The checkpoint: a write-ahead log of batch ranges and commits.
//!
//! Layout of a checkpoint directory (the same idea as Spark's):
//!
//! ```text
//! metadata.json        pipeline id and the source identity it was created for
//! offsets/<n>          {"batchId": n, "start": ..., "end": ...}  written before batch n is read
//! commits/<n>          {"batchId": n, "rows": ...}                written after the sink wrote batch n
//! sources/0/           state owned by the source (e.g. the files source's file-state store)
//! ```
//!
//! Every file is written atomically: temp file, fsync, rename, fsync of the directory. On restart
//! an `offsets/<n>` without its `commits/<n>` is replayed with exactly the same range. Before
//! that, the parts are checked against each other ([`verify`]): a damaged checkpoint is refused,
//! never re-created.

pub mod verify;

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, LoggedBatch, Offset, Result, SourceIdentity};

/// `metadata.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointMetadata {
    /// A random id given when the checkpoint was created.
    pub id: String,
    /// The source this checkpoint belongs to.
    pub source: SourceIdentity,
}

/// One `offsets/<n>` entry: the range of batch n.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetEntry {
    /// Batch id.
    pub batch_id: u64,
    /// First position (inclusive).
    pub start: Offset,
    /// End position (exclusive).
    pub end: Offset,
    /// When the entry was written, ms since the epoch.
    pub timestamp_ms: i64,
}

/// One `commits/<n>` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitEntry {
    /// Batch id.
    pub batch_id: u64,
    /// Rows the sink wrote.
    pub rows: u64,
    /// When the entry was written, ms since the epoch.
    pub timestamp_ms: i64,
}

/// Where a (re)started pipeline continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// A new checkpoint: start at the source's initial offset with batch 0.
    Fresh,
    /// Batch `entry.batch_id` was planned but not committed: replay exactly that range.
    Replay {
        /// The uncommitted entry.
        entry: OffsetEntry,
    },
    /// Everything planned was committed: continue after `last`.
    Continue {
        /// The last committed entry.
        last: OffsetEntry,
    },
}

/// A checkpoint directory.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    dir: PathBuf,
}

fn ck_err(what: &str, path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(
        ErrorCode::Checkpoint,
        format!("checkpoint: cannot {what} {}", path.display()),
    )
    .with_context("path", path.display())
    .with_cause(e)
}

/// Writes a file atomically: temp file in the same directory, fsync, rename, fsync directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::new(ErrorCode::Internal, "path without parent"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = File::create(&tmp)
        .map_err(|e| ck_err("create", &tmp, e))
        .and_then(|mut f| {
            f.write_all(bytes).map_err(|e| ck_err("write", &tmp, e))?;
            f.sync_all().map_err(|e| ck_err("fsync", &tmp, e))
        })
        .and_then(|()| fs::rename(&tmp, path).map_err(|e| ck_err("rename into", path, e)));
    if let Err(e) = written {
        // A full disk or a failed fsync leaves no half-written file behind.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| ck_err("fsync", dir, e))?;
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Checkpoint {
    /// Opens (creating if needed) a checkpoint directory.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        for sub in ["offsets", "commits", "sources/0"] {
            let p = dir.join(sub);
            fs::create_dir_all(&p).map_err(|e| ck_err("create", &p, e))?;
        }
        Ok(Checkpoint { dir })
    }

    /// Opens an existing checkpoint without creating anything.
    pub fn open_existing(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        if !dir.join("metadata.json").is_file() {
            return Err(Error::new(
                ErrorCode::Checkpoint,
                format!("{} is not a checkpoint (no metadata.json)", dir.display()),
            )
            .with_context("path", dir.display()));
        }
        Ok(Checkpoint { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The state directory of the (single) source.
    pub fn source_state_dir(&self) -> PathBuf {
        self.dir.join("sources").join("0")
    }

    /// Where the stages keep their state: `state/<position of the stage>/<batch>.arrow`.
    pub fn stage_state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// Reads `metadata.json`, if present.
    pub fn metadata(&self) -> Result<Option<CheckpointMetadata>> {
        let p = self.dir.join("metadata.json");
        if !p.exists() {
            return Ok(None);
        }
        let text = fs::read_to_string(&p).map_err(|e| ck_err("read", &p, e))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ck_err("parse", &p, e))
    }

    /// Checks that this checkpoint belongs to `source` (writing the metadata on first use).
    /// A checkpoint created for another source is refused.
    pub fn bind(&self, source: &SourceIdentity) -> Result<CheckpointMetadata> {
        match self.metadata()? {
            Some(meta) if &meta.source == source => Ok(meta),
            Some(meta) => Err(self.incompatible(&meta, source)),
            None => {
                let meta = CheckpointMetadata {
                    id: new_id(),
                    source: source.clone(),
                };
                let bytes = serde_json::to_vec_pretty(&meta)
                    .map_err(|e| Error::new(ErrorCode::Internal, "metadata").with_cause(e))?;
                write_atomic(&self.dir.join("metadata.json"), &bytes)?;
                Ok(meta)
            }
        }
    }

    /// Checks, without writing, that this checkpoint (if bound) belongs to `source`.
    pub fn check_source(&self, source: &SourceIdentity) -> Result<()> {
        match self.metadata()? {
            Some(meta) if &meta.source != source => Err(self.incompatible(&meta, source)),
            _ => Ok(()),
        }
    }

    fn incompatible(&self, meta: &CheckpointMetadata, source: &SourceIdentity) -> Error {
        Error::new(
                ErrorCode::CheckpointIncompatible,
                format!(
                    "checkpoint {} was written for source '{}' reading '{}', but this pipeline's \
                     source is '{}' reading '{}'; use a new checkpoint location for a different source",
                    self.dir.display(),
                    meta.source.connector,
                    meta.source.target,
                    source.connector,
                    source.target
                ),
            )
            .with_context("path", self.dir.display())
    }

    fn ids(&self, sub: &str) -> Result<Vec<u64>> {
        let p = self.dir.join(sub);
        let mut ids: Vec<u64> = fs::read_dir(&p)
            .map_err(|e| ck_err("list", &p, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn read_json<T: serde::de::DeserializeOwned>(&self, sub: &str, id: u64) -> Result<T> {
        let p = self.dir.join(sub).join(id.to_string());
        let text = fs::read_to_string(&p).map_err(|e| ck_err("read", &p, e))?;
        serde_json::from_str(&text).map_err(|e| ck_err("parse", &p, e))
    }

    /// All offset entries in batch order.
    pub fn offsets(&self) -> Result<Vec<OffsetEntry>> {
        self.ids("offsets")?
            .into_iter()
            .map(|id| self.read_json("offsets", id))
            .collect()
    }

    /// The batch ids that have a commit.
    pub fn committed_ids(&self) -> Result<Vec<u64>> {
        self.ids("commits")
    }

    /// The offsets log with each batch's commit state, as connectors receive it
    /// ([`tributary_sdk::StateRequest`]).
    pub fn logged_batches(&self) -> Result<Vec<LoggedBatch>> {
        let committed: BTreeSet<u64> = self.committed_ids()?.into_iter().collect();
        Ok(self
            .offsets()?
            .into_iter()
            .map(|o| LoggedBatch {
                committed: committed.contains(&o.batch_id),
                batch_id: o.batch_id,
                start: o.start,
                end: o.end,
            })
            .collect())
    }

    /// Where to continue.
    pub fn recovery(&self) -> Result<Recovery> {
        let Some(last_planned) = self.ids("offsets")?.last().copied() else {
            return Ok(Recovery::Fresh);
        };
        let entry: OffsetEntry = self.read_json("offsets", last_planned)?;
        let committed = self
            .dir
            .join("commits")
            .join(last_planned.to_string())
            .exists();
        if committed {
            Ok(Recovery::Continue { last: entry })
        } else {
            Ok(Recovery::Replay { entry })
        }
    }

    /// Writes `offsets/<n>` (before the batch is read).
    pub fn write_offsets(
        &self,
        batch_id: u64,
        start: &Offset,
        end: &Offset,
    ) -> Result<OffsetEntry> {
        let entry = OffsetEntry {
            batch_id,
            start: start.clone(),
            end: end.clone(),
            timestamp_ms: now_ms(),
        };
        let bytes = serde_json::to_vec(&entry)
            .map_err(|e| Error::new(ErrorCode::Internal, "offset entry").with_cause(e))?;
        write_atomic(&self.dir.join("offsets").join(batch_id.to_string()), &bytes)?;
        Ok(entry)
    }

    /// Writes `commits/<n>` (after the sink wrote the batch).
    pub fn write_commit(&self, batch_id: u64, rows: u64) -> Result<()> {
        let entry = CommitEntry {
            batch_id,
            rows,
            timestamp_ms: now_ms(),
        };
        let bytes = serde_json::to_vec(&entry)
            .map_err(|e| Error::new(ErrorCode::Internal, "commit entry").with_cause(e))?;
        write_atomic(&self.dir.join("commits").join(batch_id.to_string()), &bytes)
    }
}

fn new_id() -> String {
    let r: u128 = rand::random();
    format!("{r:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(target: &str) -> SourceIdentity {
        SourceIdentity {
            connector: "files".into(),
            target: target.into(),
        }
    }

    fn off(n: u64) -> Offset {
        Offset::from_json(serde_json::json!({ "seq": n }))
    }

    #[test]
    fn recovery_follows_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let ck = Checkpoint::open(dir.path()).unwrap();
        assert_eq!(ck.recovery().unwrap(), Recovery::Fresh);
        let e0 = ck.write_offsets(0, &off(0), &off(5)).unwrap();
        assert_eq!(
            ck.recovery().unwrap(),
            Recovery::Replay { entry: e0.clone() }
        );
        ck.write_commit(0, 10).unwrap();
        assert_eq!(ck.recovery().unwrap(), Recovery::Continue { last: e0 });
        let e1 = ck.write_offsets(1, &off(5), &off(9)).unwrap();
        // Reopening reads the same entry back, exactly.
        let again = Checkpoint::open(dir.path()).unwrap();
        assert_eq!(again.recovery().unwrap(), Recovery::Replay { entry: e1 });
        assert_eq!(again.committed_ids().unwrap(), vec![0]);
    }

    #[test]
    fn a_checkpoint_refuses_another_source() {
        let dir = tempfile::tempdir().unwrap();
        let ck = Checkpoint::open(dir.path()).unwrap();
        let m = ck.bind(&ident("/a")).unwrap();
        assert_eq!(ck.bind(&ident("/a")).unwrap(), m);
        let e = ck.bind(&ident("/b")).unwrap_err();
        assert_eq!(e.code(), ErrorCode::CheckpointIncompatible);
        assert!(e.message().contains("'/a'") && e.message().contains("'/b'"));
    }

    #[test]
    fn corrupt_entry_is_a_checkpoint_error() {
        let dir = tempfile::tempdir().unwrap();
        let ck = Checkpoint::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("offsets/0"), b"{garbage").unwrap();
        assert_eq!(ck.recovery().unwrap_err().code(), ErrorCode::Checkpoint);
    }

    #[test]
    fn no_temp_files_are_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let ck = Checkpoint::open(dir.path()).unwrap();
        ck.write_offsets(0, &off(0), &off(1)).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path().join("offsets"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("0")]);
    }
}
