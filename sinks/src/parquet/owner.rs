//! Who writes a Parquet directory, and how far: the sink's [`SinkLedger`].
//!
//! Batch ids are the file names (`part-<batch>.parquet`), so two checkpoints writing one
//! directory overwrite each other's batches, and a checkpoint that lost its offsets log writes
//! batch 0 again over the first batch. The directory therefore names its owner:
//! `_owner.json`, `{"checkpointId": "<id>"}`, written atomically by the first commit of a
//! pipeline with a checkpoint (readers skip names starting with `_`). The ledger reports it with
//! the highest batch the directory holds (from the `part-*` names and the `_commits/` records);
//! the runtime refuses an output owned by another checkpoint, or holding a batch beyond the
//! checkpoint's log, before anything is written.
//!
//! A directory written before owners were recorded has none: it is claimed by the next commit
//! of a checkpoint whose log reaches at least its highest batch (the runtime refuses the others).

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Result, SinkLedger};

use super::stager::COMMITS_DIR;
use super::{sync_dir, ParquetSink};

/// The owner record, in the sink's directory.
pub const OWNER_FILE: &str = "_owner.json";

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Owner {
    checkpoint_id: String,
}

/// The batch id of a published file name: `part-<20 digits>.parquet` or
/// `part-<20 digits>-<5 digits>.parquet`.
fn batch_of_part(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("part-")?.strip_suffix(".parquet")?;
    let digits = rest.split('-').next()?;
    (digits.len() == 20).then(|| digits.parse().ok()).flatten()
}

/// The batch id of a commit record name: `<20 digits>.json`.
fn batch_of_record(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".json")?;
    (digits.len() == 20).then(|| digits.parse().ok()).flatten()
}

impl ParquetSink {
    fn owner_path(&self) -> PathBuf {
        self.dir.join(OWNER_FILE)
    }

    fn read_owner(&self) -> Result<Option<String>> {
        let path = self.owner_path();
        match fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str::<Owner>(&text)
                .map(|o| Some(o.checkpoint_id))
                .map_err(|e| {
                    Error::new(
                        ErrorCode::CheckpointDamaged,
                        format!(
                            "parquet sink: {} cannot be parsed; it names the checkpoint that \
                             writes this directory (restore it, or write to a new directory)",
                            path.display()
                        ),
                    )
                    .with_context("path", path.display())
                    .with_cause(e)
                }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_err("read", &path, e)),
        }
    }

    /// The highest batch the directory holds.
    fn last_batch(&self) -> Result<Option<u64>> {
        let mut last = None;
        let mut scan = |dir: PathBuf, parse: fn(&str) -> Option<u64>| -> Result<()> {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(self.io_err("list", &dir, e)),
            };
            for entry in entries.flatten() {
                if let Some(b) = parse(&entry.file_name().to_string_lossy()) {
                    last = last.max(Some(b));
                }
            }
            Ok(())
        };
        scan(self.dir.clone(), batch_of_part)?;
        scan(self.dir.join(COMMITS_DIR), batch_of_record)?;
        Ok(last)
    }

    /// The ledger: `None` for a sink without a checkpoint (nothing to compare with).
    pub(super) fn read_ledger(&mut self) -> Result<Option<SinkLedger>> {
        if self.checkpoint_id.is_none() {
            return Ok(None);
        }
        Ok(Some(SinkLedger {
            owner: self.read_owner()?,
            last_batch: self.last_batch()?,
        }))
    }

    /// Records this sink's checkpoint as the directory's owner, once, before its first
    /// publish; a directory that names an owner is left as it is (the runtime compared it).
    pub(super) fn claim(&mut self) -> Result<()> {
        let Some(id) = self.checkpoint_id.clone() else {
            return Ok(());
        };
        if self.claimed {
            return Ok(());
        }
        if self.read_owner()?.is_none() {
            fs::create_dir_all(&self.dir)
                .map_err(|e| self.io_err("create directory", &self.dir, e))?;
            let json = serde_json::to_vec(&Owner { checkpoint_id: id }).map_err(|e| {
                Error::new(ErrorCode::Internal, "parquet sink cannot encode its owner")
                    .with_cause(e)
            })?;
            let tmp = self
                .dir
                .join(format!(".{OWNER_FILE}.{}.tmp", std::process::id()));
            let mut file = File::create(&tmp).map_err(|e| self.io_err("create", &tmp, e))?;
            file.write_all(&json)
                .and_then(|()| file.sync_all())
                .map_err(|e| self.io_err("write", &tmp, e))?;
            drop(file);
            let path = self.owner_path();
            fs::rename(&tmp, &path).map_err(|e| self.io_err("rename into", &path, e))?;
            sync_dir(&self.dir).map_err(|e| self.io_err("fsync directory", &self.dir, e))?;
        }
        self.claimed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_ids_come_from_published_names_only() {
        assert_eq!(batch_of_part("part-00000000000000000007.parquet"), Some(7));
        assert_eq!(
            batch_of_part("part-00000000000000000012-00003.parquet"),
            Some(12)
        );
        assert_eq!(
            batch_of_part(".part-00000000000000000007.parquet.tmp"),
            None
        );
        assert_eq!(batch_of_part("part-7.parquet"), None);
        assert_eq!(batch_of_record("00000000000000000004.json"), Some(4));
        assert_eq!(batch_of_record(".00000000000000000004.json.1.tmp"), None);
    }

    #[tokio::test]
    async fn the_first_commit_claims_and_the_ledger_reports() {
        use arrow::array::{Int64Array, RecordBatch};
        use arrow::datatypes::{DataType, Field, Schema};
        use std::sync::Arc;
        use tributary_sdk::Sink;

        let dir = tempfile::tempdir().unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2]))])
                .unwrap();
        let mut sink = ParquetSink::new(dir.path());
        sink.checkpoint_id = Some("ck-a".into());
        sink.open(schema.clone()).await.unwrap();
        assert_eq!(
            sink.ledger().await.unwrap(),
            Some(SinkLedger {
                owner: None,
                last_batch: None
            })
        );
        sink.write(0, std::slice::from_ref(&batch)).await.unwrap();
        sink.write(3, std::slice::from_ref(&batch)).await.unwrap();
        assert_eq!(
            sink.ledger().await.unwrap(),
            Some(SinkLedger {
                owner: Some("ck-a".into()),
                last_batch: Some(3)
            })
        );
        // Another checkpoint sees the owner; it never overwrites it.
        let mut other = ParquetSink::new(dir.path());
        other.checkpoint_id = Some("ck-b".into());
        other.open(schema).await.unwrap();
        let ledger = other.ledger().await.unwrap().unwrap();
        assert_eq!(ledger.owner.as_deref(), Some("ck-a"));
        // Without a checkpoint there is nothing to compare with.
        let mut plain = ParquetSink::new(dir.path());
        assert_eq!(plain.ledger().await.unwrap(), None);
    }
}
