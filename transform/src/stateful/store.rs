//! State versions on disk: one Arrow IPC file per committed batch, `<dir>/<version>.arrow`,
//! written atomically (temporary file, fsync, rename, directory fsync) and carrying the query's
//! signature in its schema metadata, so that a changed query is refused instead of reading
//! state of another shape.
//!
//! Each version is a full snapshot of the state (every group). Version `n` is written before
//! `commits/<n>`; versions `n - 1` and `n` are kept (a crash before `commits/<n>` replays batch
//! `n` from `n - 1`), older ones are removed.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use datafusion::arrow::ipc::reader::FileReader;
use datafusion::arrow::ipc::writer::FileWriter;
use tributary_sdk::{Error, ErrorCode, Result};

/// The schema-metadata key holding the query's signature.
const SIGNATURE: &str = "tributary.state.signature";
/// The schema-metadata keys holding the watermarks (epoch milliseconds) the next batch uses:
/// for eviction, and for late rows (Spark's two watermarks of a batch).
const WATERMARK: &str = "tributary.state.watermarkMs";
const LATE_WATERMARK: &str = "tributary.state.lateWatermarkMs";

/// The watermarks saved with a version: `(late rows, eviction)`.
pub(crate) type Marks = (Option<i64>, Option<i64>);

fn version_path(dir: &Path, version: u64) -> PathBuf {
    dir.join(format!("{version}.arrow"))
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Checkpoint,
        format!("[transform] state: cannot {what} {}: {e}", path.display()),
    )
    .with_context("path", path.display())
}

/// Writes `state` as version `version` under `dir` and removes versions below `version - 1`.
pub(crate) fn save(
    dir: &Path,
    version: u64,
    signature: &str,
    marks: Marks,
    state: &RecordBatch,
) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    let mut metadata = HashMap::new();
    metadata.insert(SIGNATURE.to_string(), signature.to_string());
    if let Some(w) = marks.0 {
        metadata.insert(LATE_WATERMARK.to_string(), w.to_string());
    }
    if let Some(w) = marks.1 {
        metadata.insert(WATERMARK.to_string(), w.to_string());
    }
    let schema = Arc::new(Schema::new_with_metadata(
        state.schema().fields().clone(),
        metadata,
    ));
    let batch = RecordBatch::try_new(Arc::clone(&schema), state.columns().to_vec())
        .map_err(|e| io("encode the state for", dir, e))?;
    let target = version_path(dir, version);
    let tmp = dir.join(format!(".{version}.arrow.tmp"));
    {
        let file = File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
        let mut writer =
            FileWriter::try_new(BufWriter::new(file), &schema).map_err(|e| io("write", &tmp, e))?;
        writer.write(&batch).map_err(|e| io("write", &tmp, e))?;
        writer.finish().map_err(|e| io("write", &tmp, e))?;
        let file = writer
            .into_inner()
            .map_err(|e| io("write", &tmp, e))?
            .into_inner()
            .map_err(|e| io("write", &tmp, e.error()))?;
        file.sync_all().map_err(|e| io("sync", &tmp, e))?;
    }
    fs::rename(&tmp, &target).map_err(|e| io("rename", &target, e))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    for old in versions(dir)? {
        if old.saturating_add(1) < version {
            let p = version_path(dir, old);
            fs::remove_file(&p).map_err(|e| io("remove", &p, e))?;
        }
    }
    Ok(())
}

/// The versions present under `dir`, ascending.
pub(crate) fn versions(dir: &Path) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io("list", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io("list", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(v) = name
            .strip_suffix(".arrow")
            .and_then(|v| v.parse::<u64>().ok())
        {
            out.push(v);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Reads version `version` from `dir`, checked against this query's `signature` and state
/// `schema`; returns the state and the watermarks saved with it.
pub(crate) fn load(
    dir: &Path,
    version: u64,
    signature: &str,
    schema: &SchemaRef,
) -> Result<(RecordBatch, Marks)> {
    let path = version_path(dir, version);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::new(
                ErrorCode::CheckpointDamaged,
                format!(
                    "[transform] the state of {signature} for committed batch {version} is missing ({}): the checkpoint was made by a query without this operator, or its state was deleted; resuming would start it from nothing. Restore the state directory or start a new checkpoint",
                    path.display()
                ),
            )
            .with_context("path", path.display()))
        }
        Err(e) => return Err(io("open", &path, e)),
    };
    let reader = FileReader::try_new(file, None).map_err(|e| io("read", &path, e))?;
    let stored = reader
        .schema()
        .metadata()
        .get(SIGNATURE)
        .cloned()
        .unwrap_or_default();
    if stored != signature {
        return Err(Error::new(
            ErrorCode::CheckpointIncompatible,
            format!(
                "[transform] the checkpoint's state was written by another query: it holds {stored}, the query now computes {signature}; changing the grouping keys, aggregate functions or deduplication columns of a stateful query needs a new checkpoint"
            ),
        )
        .with_context("option", "transform.sql"));
    }
    let mark = |k: &str| {
        reader
            .schema()
            .metadata()
            .get(k)
            .and_then(|w| w.parse::<i64>().ok())
    };
    let marks = (mark(LATE_WATERMARK), mark(WATERMARK));
    let mut batches = Vec::new();
    for b in reader {
        let b = b.map_err(|e| io("read", &path, e))?;
        batches.push(
            RecordBatch::try_new(Arc::clone(schema), b.columns().to_vec())
                .map_err(|e| io("decode", &path, e))?,
        );
    }
    let state = datafusion::arrow::compute::concat_batches(schema, &batches)
        .map_err(|e| io("decode", &path, e))?;
    Ok((state, marks))
}

/// What the newest saved version of one stateful stage holds (`tributary state --operators`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorState {
    /// The stage's position in the pipeline's stage list (its directory name).
    pub stage: String,
    /// The operator, as progress events name it (`dedupe`, `dedupeWithinWatermark`,
    /// `stateStoreSave`).
    pub operator: String,
    /// The newest version (batch id) saved.
    pub version: u64,
    /// Groups held.
    pub rows: u64,
    /// The state's size in memory, as Arrow holds it.
    pub bytes: u64,
    /// The eviction watermark the next batch uses (epoch milliseconds), when there is one.
    pub watermark_ms: Option<i64>,
    /// The query's grouping keys and aggregate functions.
    pub signature: String,
}

/// The newest saved version of every stateful stage under `dir` (`checkpoint/state`), in
/// stage order; empty when the pipeline keeps no state.
pub fn describe(dir: &Path) -> Result<Vec<OperatorState>> {
    let mut stages: Vec<(u64, PathBuf)> = Vec::new();
    match fs::read_dir(dir) {
        Ok(entries) => {
            for e in entries {
                let e = e.map_err(|e| io("list", dir, e))?;
                if let Ok(i) = e.file_name().to_string_lossy().parse::<u64>() {
                    stages.push((i, e.path()));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("list", dir, e)),
    }
    stages.sort();
    let mut out = Vec::new();
    // per stage, its operators in the order rows meet them: a deduplication, an aggregation
    let operators = stages
        .into_iter()
        .flat_map(|(i, path)| [(i, path.join("dedup")), (i, path)]);
    for (i, path) in operators {
        let Some(&version) = versions(&path)?.last() else {
            continue;
        };
        let file = version_path(&path, version);
        let reader =
            FileReader::try_new(File::open(&file).map_err(|e| io("open", &file, e))?, None)
                .map_err(|e| io("read", &file, e))?;
        let metadata = reader.schema().metadata().clone();
        let (mut rows, mut bytes) = (0u64, 0u64);
        for b in reader {
            let b = b.map_err(|e| io("read", &file, e))?;
            rows += b.num_rows() as u64;
            bytes += b.get_array_memory_size() as u64;
        }
        let signature = metadata.get(SIGNATURE).cloned().unwrap_or_default();
        let operator = if signature.starts_with("DEDUP WITHIN WATERMARK") {
            "dedupeWithinWatermark"
        } else if signature.starts_with("DEDUP") {
            "dedupe"
        } else {
            "stateStoreSave"
        };
        out.push(OperatorState {
            stage: i.to_string(),
            operator: operator.into(),
            version,
            rows,
            bytes,
            watermark_ms: metadata.get(WATERMARK).and_then(|w| w.parse().ok()),
            signature,
        });
    }
    Ok(out)
}
