//! State versions on disk, as a changelog with periodic snapshots (Spark's changelog
//! checkpointing): version `n` of an operator's state is the rows batch `n` changed,
//! `<dir>/<n>.delta.arrow` (rows upserted by key, keys deleted; [`changelog`]), or a snapshot
//! of every row, `<dir>/<n>.arrow`. Saving writes the delta, so it costs what the batch
//! changed; every [`SNAPSHOT_EVERY`] versions a background thread ([`Compactor`]) replays the
//! newest snapshot and the deltas after it from disk into a new snapshot, off the commit path
//! (Spark's state maintenance task), so restoring reads one snapshot and a few deltas. A
//! snapshot is written on the commit path instead when there is no chain behind the new version
//! on disk (the first version, a lost file), when the changes are half the state or more, for a
//! state without keys (one row), and when background snapshots fell [`SNAPSHOT_EVERY`] × 4
//! versions behind.
//!
//! Files are written atomically (temporary file, fsync, rename, directory fsync) and carry the
//! operator's signature, its number of key columns and the watermarks in their schema metadata,
//! so that a changed query is refused instead of reading state of another shape. Version `n` is
//! written before `commits/<n>`; what restoring `n - 1` or `n` needs is kept (a crash before
//! `commits/<n>` replays batch `n` from `n - 1`), older files are removed by a background
//! thread ([`Compactor::sweep`], as Spark's maintenance task deletes them), off the commit
//! path: on a file system mounted with `discard` one unlink of a snapshot cost ~0.5 ms, a
//! third of a small batch's save.

pub(crate) mod changelog;
mod describe;
mod replay;

pub use describe::{describe, OperatorState};
pub(crate) use replay::{replay, Replayed};

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

/// The schema-metadata key holding the operator's signature.
const SIGNATURE: &str = "tributary.state.signature";
/// The schema-metadata keys holding the watermarks (epoch milliseconds) the next batch uses:
/// for eviction, and for late rows (Spark's two watermarks of a batch).
const WATERMARK: &str = "tributary.state.watermarkMs";
const LATE_WATERMARK: &str = "tributary.state.lateWatermarkMs";
/// The schema-metadata key holding the number of key columns (the first ones).
const KEYS: &str = "tributary.state.keys";

/// A snapshot is written at least every this many versions (Spark's
/// `stateStore.minDeltasForSnapshot` default).
pub(crate) const SNAPSHOT_EVERY: u64 = 10;

/// The watermarks saved with a version: `(late rows, eviction)`.
pub(crate) type Marks = (Option<i64>, Option<i64>);

/// How a version is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stored {
    Snapshot,
    Delta,
}

fn path(dir: &Path, version: u64, kind: Stored) -> PathBuf {
    match kind {
        Stored::Snapshot => dir.join(format!("{version}.arrow")),
        Stored::Delta => dir.join(format!("{version}.delta.arrow")),
    }
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Checkpoint,
        format!("[transform] state: cannot {what} {}: {e}", path.display()),
    )
    .with_context("path", path.display())
}

/// What one operator saves: its signature, key columns and watermarks.
pub(crate) struct Header<'a> {
    pub(crate) signature: &'a str,
    pub(crate) keys: usize,
    pub(crate) marks: Marks,
}

/// Background maintenance of one operator's state files: snapshots, one at a time, and the
/// removal of files no version still restorable needs.
#[derive(Debug, Default)]
pub(crate) struct Compactor {
    running: Option<std::thread::JoinHandle<()>>,
    sweeping: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Compactor {
    /// Files being removed are removed before the operator goes (a few unlinks); a snapshot
    /// being written is not waited for (restoring never needs it).
    fn drop(&mut self) {
        self.swept();
    }
}

impl Compactor {
    /// Removes `files` on a background thread (after the removal started before, if any).
    fn sweep(&mut self, files: Vec<PathBuf>) {
        if files.is_empty() {
            return;
        }
        self.swept();
        self.sweeping = Some(std::thread::spawn(move || {
            for f in files {
                if let Err(e) = remove_if_present(&f) {
                    // left for the next save's sweep, which lists the directory again
                    tracing::warn!("[transform] old state file not removed: {e}");
                }
            }
        }));
    }

    /// Waits for the files being removed, if any.
    fn swept(&mut self) {
        if let Some(h) = self.sweeping.take() {
            let _ = h.join();
        }
    }

    /// Whether a snapshot is being written (a finished one is reaped).
    fn busy(&mut self) -> bool {
        if self.running.as_ref().is_some_and(|h| !h.is_finished()) {
            return true;
        }
        self.snapshot_written();
        false
    }

    /// Waits for the snapshot being written, if any.
    fn snapshot_written(&mut self) {
        if let Some(h) = self.running.take() {
            let _ = h.join();
        }
    }

    /// Waits for the snapshot being written and the files being removed, if any.
    pub(crate) fn wait(&mut self) {
        self.snapshot_written();
        self.swept();
    }

    /// Writes a snapshot of `version` (already on disk as a delta) from `scan`, a consistent
    /// view of a spilled state as of `version`.
    fn start_scan(
        &mut self,
        dir: &Path,
        version: u64,
        metadata: HashMap<String, String>,
        schema: SchemaRef,
        scan: Scan,
    ) {
        let dir = dir.to_path_buf();
        self.running = Some(std::thread::spawn(move || {
            if let Err(e) = write_with(&dir, version, Stored::Snapshot, metadata, &schema, scan) {
                tracing::warn!("[transform] state snapshot of version {version} not written: {e}");
            }
        }));
    }

    /// Writes a snapshot of `version` (already on disk as a delta) from the files.
    fn start(&mut self, dir: &Path, version: u64) {
        let dir = dir.to_path_buf();
        self.running = Some(std::thread::spawn(move || {
            let written = load_chain(&dir, version, &|_| Ok(())).and_then(|(state, metadata)| {
                write(&dir, version, Stored::Snapshot, metadata, &state)
            });
            if let Err(e) = written {
                // a snapshot only shortens restoring; the deltas stay the truth
                tracing::warn!("[transform] state snapshot of version {version} not written: {e}");
            }
        }));
    }
}

/// Every row of a state as of one version, handed over in chunks (a spilled state's scan).
pub(crate) type Scan =
    Box<dyn FnOnce(&mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> + Send>;

/// Where a snapshot's rows come from.
pub(crate) enum Full<'a> {
    /// The state held in memory, made when a snapshot is written on the commit path (a
    /// background snapshot replays the files instead).
    Memory(Box<dyn FnOnce() -> Result<RecordBatch> + 'a>),
    /// A consistent view of a spilled state as of the version saved (of this schema), scanned
    /// in chunks on the commit path or by the background snapshot.
    Scan(SchemaRef, Scan),
}

/// Writes version `version` under `dir`: the delta `changes` (rows in
/// [`changelog::changes_schema`]) when one may be written, else the snapshot of `full`'s rows;
/// starts a background snapshot when one is due; then removes what restoring `version - 1` or
/// `version` no longer needs.
pub(crate) fn save(
    dir: &Path,
    version: u64,
    header: &Header<'_>,
    changes: Option<RecordBatch>,
    rows_held: usize,
    compactor: &mut Compactor,
    full: Full<'_>,
) -> Result<Stored> {
    fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    let on_disk = versions(dir)?;
    let base = version
        .checked_sub(1)
        .and_then(|prev| chain_base(&on_disk, prev));
    let delta = match (changes, base) {
        // without keys (a global aggregate) the state is one row: a snapshot costs no more
        (Some(c), Some(b))
            if header.keys > 0
                && version - b < SNAPSHOT_EVERY * 4
                && c.num_rows().saturating_mul(2) < rows_held.max(1) =>
        {
            Some((c, b))
        }
        _ => None,
    };
    let metadata = header.metadata();
    let kind = match delta {
        Some((c, base)) => {
            write(dir, version, Stored::Delta, metadata.clone(), &c)?;
            if version - base >= SNAPSHOT_EVERY && !compactor.busy() {
                match full {
                    Full::Memory(_) => compactor.start(dir, version),
                    Full::Scan(schema, scan) => {
                        compactor.start_scan(dir, version, metadata, schema, scan)
                    }
                }
            }
            Stored::Delta
        }
        None => {
            compactor.snapshot_written();
            match full {
                Full::Memory(full) => write(dir, version, Stored::Snapshot, metadata, &full()?)?,
                Full::Scan(schema, scan) => {
                    write_with(dir, version, Stored::Snapshot, metadata, &schema, scan)?
                }
            }
            Stored::Snapshot
        }
    };
    // a replay may have left a snapshot of this version's first attempt, which would serve
    // before the new delta
    if kind == Stored::Delta && !compactor.busy() {
        remove_if_present(&path(dir, version, Stored::Snapshot))?;
    }
    // keep what restoring version - 1 and version needs; the rest goes in the background
    let on_disk = versions(dir)?;
    let keep_from = version
        .checked_sub(1)
        .and_then(|prev| chain_base(&on_disk, prev))
        .or_else(|| chain_base(&on_disk, version))
        .unwrap_or(version);
    compactor.sweep(
        on_disk
            .into_iter()
            .filter(|&(v, _)| v < keep_from)
            .map(|(v, kind)| path(dir, v, kind))
            .collect(),
    );
    Ok(kind)
}

fn remove_if_present(p: &Path) -> Result<()> {
    match fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove", p, e)),
    }
}

/// The snapshot version restoring `version` starts from, when every version from it to
/// `version` is on disk.
fn chain_base(on_disk: &[(u64, Stored)], version: u64) -> Option<u64> {
    let mut want = version;
    for &(v, kind) in on_disk.iter().rev() {
        if v > want {
            continue;
        }
        if v != want {
            return None;
        }
        if kind == Stored::Snapshot {
            return Some(v);
        }
        want = want.checked_sub(1)?;
    }
    None
}

impl Header<'_> {
    fn metadata(&self) -> HashMap<String, String> {
        let mut metadata = HashMap::new();
        metadata.insert(SIGNATURE.to_string(), self.signature.to_string());
        metadata.insert(KEYS.to_string(), self.keys.to_string());
        if let Some(w) = self.marks.0 {
            metadata.insert(LATE_WATERMARK.to_string(), w.to_string());
        }
        if let Some(w) = self.marks.1 {
            metadata.insert(WATERMARK.to_string(), w.to_string());
        }
        metadata
    }
}

fn write(
    dir: &Path,
    version: u64,
    kind: Stored,
    metadata: HashMap<String, String>,
    rows: &RecordBatch,
) -> Result<()> {
    let rows = rows.clone();
    let schema = rows.schema();
    write_with(
        dir,
        version,
        kind,
        metadata,
        &schema,
        Box::new(move |each: &mut dyn FnMut(RecordBatch) -> Result<()>| each(rows)),
    )
}

/// Writes one file atomically (temporary file, fsync, rename, directory fsync) with the rows
/// `fill` hands over in chunks, each of `schema`'s columns.
fn write_with(
    dir: &Path,
    version: u64,
    kind: Stored,
    metadata: HashMap<String, String>,
    schema: &SchemaRef,
    fill: Scan,
) -> Result<()> {
    let schema = Arc::new(Schema::new_with_metadata(schema.fields().clone(), metadata));
    let target = path(dir, version, kind);
    let tmp = dir.join(format!(
        ".{}.tmp",
        target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    {
        let file = File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
        let mut writer =
            FileWriter::try_new(BufWriter::new(file), &schema).map_err(|e| io("write", &tmp, e))?;
        fill(&mut |rows: RecordBatch| {
            let batch = RecordBatch::try_new(Arc::clone(&schema), rows.columns().to_vec())
                .map_err(|e| io("encode the state for", dir, e))?;
            writer.write(&batch).map_err(|e| io("write", &tmp, e))
        })?;
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
    Ok(())
}

/// The versions present under `dir`, ascending (a snapshot before a delta of the same
/// version, which a crash between writing one and removing the other can leave).
pub(crate) fn versions(dir: &Path) -> Result<Vec<(u64, Stored)>> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io("list", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io("list", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(v) = name.strip_suffix(".delta.arrow") {
            if let Ok(v) = v.parse::<u64>() {
                out.push((v, Stored::Delta));
            }
        } else if let Some(v) = name.strip_suffix(".arrow") {
            if let Ok(v) = v.parse::<u64>() {
                out.push((v, Stored::Snapshot));
            }
        }
    }
    out.sort_unstable_by_key(|&(v, kind)| (v, kind == Stored::Delta));
    // of two files for one version, the snapshot serves
    out.dedup_by_key(|&mut (v, _)| v);
    Ok(out)
}

/// One file's rows and metadata.
struct Read {
    rows: RecordBatch,
    metadata: HashMap<String, String>,
}

fn read(p: &Path) -> Result<Read> {
    let file = File::open(p).map_err(|e| io("open", p, e))?;
    let reader = FileReader::try_new(file, None).map_err(|e| io("read", p, e))?;
    let schema = reader.schema();
    let metadata = schema.metadata().clone();
    let plain = Arc::new(Schema::new(schema.fields().clone()));
    let mut batches = Vec::new();
    for b in reader {
        let b = b.map_err(|e| io("read", p, e))?;
        batches.push(
            RecordBatch::try_new(Arc::clone(&plain), b.columns().to_vec())
                .map_err(|e| io("decode", p, e))?,
        );
    }
    let rows = datafusion::arrow::compute::concat_batches(&plain, &batches)
        .map_err(|e| io("decode", p, e))?;
    Ok(Read { rows, metadata })
}

/// The error for a committed version whose files are not all there.
fn missing(dir: &Path, version: u64) -> Error {
    let p = path(dir, version, Stored::Snapshot);
    Error::new(
        ErrorCode::CheckpointDamaged,
        format!(
            "[transform] the state for committed batch {version} is missing ({}, or {version}.delta.arrow and the deltas back to a snapshot): the checkpoint was made by a query without this operator, or its state was deleted; resuming would start it from nothing. Restore the state directory or start a new checkpoint",
            p.display()
        ),
    )
    .with_context("path", p.display())
}

/// The state as of `version` from the files under `dir` (its snapshot and the deltas after
/// it) and the metadata of `version`'s file; `check` sees each file's signature first.
fn load_chain(
    dir: &Path,
    version: u64,
    check: &dyn Fn(&str) -> Result<()>,
) -> Result<(RecordBatch, HashMap<String, String>)> {
    let on_disk = versions(dir)?;
    let base = chain_base(&on_disk, version).ok_or_else(|| missing(dir, version))?;
    let snapshot = read(&path(dir, base, Stored::Snapshot))?;
    let signature = |m: &HashMap<String, String>| m.get(SIGNATURE).cloned().unwrap_or_default();
    check(&signature(&snapshot.metadata))?;
    let keys: usize = snapshot
        .metadata
        .get(KEYS)
        .and_then(|k| k.parse().ok())
        .unwrap_or(0);
    let mut deltas = Vec::new();
    let mut metadata = snapshot.metadata;
    for v in base + 1..=version {
        let d = read(&path(dir, v, Stored::Delta))?;
        check(&signature(&d.metadata))?;
        deltas.push(d.rows);
        metadata = d.metadata;
    }
    let state = changelog::apply(snapshot.rows, &deltas, keys)?;
    Ok((state, metadata))
}

/// Reads version `version` from `dir`, checked against the operator's `signature` and state
/// `schema`; returns the state and the watermarks saved with it.
pub(crate) fn load(
    dir: &Path,
    version: u64,
    signature: &str,
    schema: &SchemaRef,
) -> Result<(RecordBatch, Marks)> {
    let (state, metadata) = load_chain(dir, version, &|stored| same_query(stored, signature))?;
    let marks = marks(&metadata);
    let state = RecordBatch::try_new(Arc::clone(schema), state.columns().to_vec())
        .map_err(|e| io("decode", dir, e))?;
    Ok((state, marks))
}

/// The watermarks in a file's metadata.
fn marks(metadata: &HashMap<String, String>) -> Marks {
    let mark = |k: &str| metadata.get(k).and_then(|w| w.parse::<i64>().ok());
    (mark(LATE_WATERMARK), mark(WATERMARK))
}

/// Refuses state written by another query than the one computing `signature`.
fn same_query(stored: &str, signature: &str) -> Result<()> {
    if stored == signature {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::CheckpointIncompatible,
        format!(
            "[transform] the checkpoint's state was written by another query: it holds {stored}, the query now computes {signature}; changing the grouping keys, aggregate functions or deduplication columns of a stateful query needs a new checkpoint"
        ),
    )
    .with_context("option", "transform.sql"))
}
