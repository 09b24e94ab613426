//! State versions on disk, as a changelog with periodic snapshots (Spark's changelog
//! checkpointing): version `n` of an operator's state is the rows batch `n` changed (rows
//! upserted by key, keys deleted; [`changelog`]), or a snapshot of every row. Saving writes the
//! delta, so it costs what the batch changed; every [`SNAPSHOT_EVERY`] versions a background
//! thread ([`Store`]) replays the newest snapshot and the deltas after it into a new snapshot
//! file, `<dir>/<n>.arrow`, off the commit path (Spark's state maintenance task), so restoring
//! reads one snapshot and a few deltas. A snapshot is written on the commit path instead when
//! there is no chain behind the new version on disk (the first version, a lost file), when the
//! changes are half the state or more, for a state without keys (one row), and when background
//! snapshots fell [`SNAPSHOT_EVERY`] × 4 versions behind.
//!
//! A version written on the commit path is appended to the operator's state [`log`] (one
//! `fdatasync` into a segment zero-filled ahead of time) when it is small, else written as a
//! file of its own (`<n>.arrow`, `<n>.delta.arrow`: temporary file, fsync, rename, directory
//! fsync). Every version carries the operator's signature, its number of key columns and the
//! watermarks in its schema metadata, so that a changed query is refused instead of reading
//! state of another shape. Version `n` is written before `commits/<n>`; what restoring `n - 1`
//! or `n` needs is kept (a crash before `commits/<n>` replays batch `n` from `n - 1`); older
//! files and log segments holding only older versions are removed by a background thread
//! ([`Store::sweep`], as Spark's maintenance task deletes them), off the commit path: on a file
//! system mounted with `discard` one unlink of a snapshot cost ~0.5 ms. Where each version is
//! is the [`catalog`]'s.

mod catalog;
pub(crate) mod changelog;
mod describe;
mod log;
mod replay;

pub use describe::{describe, stored_versions, OperatorState, StoredVersion};
pub(crate) use replay::{replay, Replayed};

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use datafusion::arrow::ipc::writer::FileWriter;
use tributary_sdk::{Error, ErrorCode, Result};

use catalog::{file_path, Catalog, Place};

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

/// One operator's state on disk: the [`Catalog`] of its versions, the [`log::Writer`] it
/// appends versions to, and background maintenance (Spark's maintenance task): a snapshot, one
/// at a time, and the removal of files no version still restorable needs.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// The snapshot being written; it returns the version written.
    running: Option<std::thread::JoinHandle<Option<u64>>>,
    sweeping: Option<std::thread::JoinHandle<()>>,
    open: Option<Opened>,
}

/// The directory a [`Store`] saves to, as it knows it.
#[derive(Debug)]
struct Opened {
    dir: PathBuf,
    catalog: Catalog,
    log: Option<log::Writer>,
}

impl Opened {
    /// The log writer, opened after the newest segment the catalog found the first time.
    fn writer(&mut self) -> Result<&mut log::Writer> {
        match self.log {
            Some(ref mut w) => Ok(w),
            None => {
                let last = self.catalog.take_last();
                Ok(self
                    .log
                    .insert(log::Writer::open(&self.dir, last.as_ref())?))
            }
        }
    }
}

/// The version a background snapshot wrote, or `None` (warned: a snapshot only shortens
/// restoring; the deltas stay the truth).
fn snapshot_of(version: u64, written: Result<()>) -> Option<u64> {
    match written {
        Ok(()) => Some(version),
        Err(e) => {
            tracing::warn!("[transform] state snapshot of version {version} not written: {e}");
            None
        }
    }
}

impl Drop for Store {
    /// Files being removed are removed before the operator goes (a few unlinks); a snapshot
    /// being written is not waited for (restoring never needs it).
    fn drop(&mut self) {
        self.swept();
    }
}

impl Store {
    /// The catalog and writer of `dir`, listed and scanned the first time.
    fn opened(&mut self, dir: &Path) -> Result<&mut Opened> {
        if self.open.as_ref().is_none_or(|o| o.dir != dir) {
            self.open = None;
            fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
            self.open = Some(Opened {
                dir: dir.to_path_buf(),
                catalog: Catalog::scan(dir)?,
                log: None,
            });
        }
        match self.open.as_mut() {
            Some(o) => Ok(o),
            None => Err(io("open", dir, "the state directory is not open")),
        }
    }

    /// Removes `files` on a background thread (after the removal started before, if any).
    fn sweep(&mut self, files: Vec<PathBuf>) {
        if files.is_empty() {
            return;
        }
        self.swept();
        self.sweeping = Some(std::thread::spawn(move || {
            for f in files {
                if let Err(e) = remove_if_present(&f) {
                    // left on disk: the next scan finds it and a later save removes it
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

    /// Whether a snapshot is being written (a finished one is reaped into the catalog).
    fn busy(&mut self) -> bool {
        if self.running.as_ref().is_some_and(|h| !h.is_finished()) {
            return true;
        }
        self.snapshot_written();
        false
    }

    /// Waits for the snapshot being written, if any, and notes it in the catalog.
    fn snapshot_written(&mut self) {
        if let Some(h) = self.running.take() {
            if let (Ok(Some(v)), Some(o)) = (h.join(), self.open.as_mut()) {
                o.catalog.filed(v, Stored::Snapshot);
            }
        }
    }

    /// Waits for the snapshot being written and the files being removed, forgets what it
    /// knew of the directory, and opens `dir` again (at a restore): its catalog, and the log
    /// writer, with its segment and the next one made before the first batch.
    pub(crate) fn reset(&mut self, dir: &Path) -> Result<()> {
        self.snapshot_written();
        self.swept();
        self.open = None;
        self.opened(dir)?.writer()?;
        Ok(())
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
            snapshot_of(
                version,
                write_with(&dir, version, Stored::Snapshot, metadata, &schema, scan),
            )
        }));
    }

    /// Writes a snapshot of `version` (already on disk as a delta) from the files.
    fn start(&mut self, dir: &Path, version: u64) {
        let dir = dir.to_path_buf();
        self.running = Some(std::thread::spawn(move || {
            let written = load_chain(&dir, version, &|_| Ok(())).and_then(|(state, metadata)| {
                write(&dir, version, Stored::Snapshot, metadata, &state)
            });
            snapshot_of(version, written)
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
    store: &mut Store,
    full: Full<'_>,
) -> Result<Stored> {
    // a background snapshot that finished is in the catalog before the chain is looked at
    store.busy();
    let on_disk = store.opened(dir)?.catalog.kinds();
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
    // a replayed batch's first attempt may have left files of this version, which would serve
    // before the new one: removed first, and durably, so that a crash cannot bring them back
    let stale = store.opened(dir)?.catalog.take_files(dir, version);
    if !stale.is_empty() {
        store.snapshot_written();
        for f in &stale {
            remove_if_present(f)?;
        }
        sync_dir(dir)?;
    }
    let metadata = header.metadata();
    let kind = match delta {
        Some((c, base)) => {
            put(store, dir, version, Stored::Delta, metadata.clone(), &c)?;
            if version - base >= SNAPSHOT_EVERY && !store.busy() {
                match full {
                    Full::Memory(_) => store.start(dir, version),
                    Full::Scan(schema, scan) => {
                        store.start_scan(dir, version, metadata, schema, scan)
                    }
                }
            }
            Stored::Delta
        }
        None => {
            store.snapshot_written();
            match full {
                Full::Memory(full) => {
                    put(store, dir, version, Stored::Snapshot, metadata, &full()?)?
                }
                Full::Scan(schema, scan) => {
                    write_with(dir, version, Stored::Snapshot, metadata, &schema, scan)?;
                    store.opened(dir)?.catalog.filed(version, Stored::Snapshot);
                }
            }
            Stored::Snapshot
        }
    };
    // keep what restoring version - 1 and version needs; the rest goes in the background
    let opened = store.opened(dir)?;
    let on_disk = opened.catalog.kinds();
    let keep_from = version
        .checked_sub(1)
        .and_then(|prev| chain_base(&on_disk, prev))
        .or_else(|| chain_base(&on_disk, version))
        .unwrap_or(version);
    let writing = opened.log.as_ref().and_then(log::Writer::seq);
    let old = opened.catalog.take_before(dir, keep_from, writing);
    store.sweep(old);
    Ok(kind)
}

/// Writes `rows` as version `version`: appended to the log when small (or when the log already
/// has a record of this version, which a file would not replace), else as a file.
fn put(
    store: &mut Store,
    dir: &Path,
    version: u64,
    kind: Stored,
    metadata: HashMap<String, String>,
    rows: &RecordBatch,
) -> Result<()> {
    let schema = Arc::new(Schema::new_with_metadata(
        rows.schema().fields().clone(),
        metadata,
    ));
    let rows = RecordBatch::try_new(Arc::clone(&schema), rows.columns().to_vec())
        .map_err(|e| io("encode the state for", dir, e))?;
    // room for the log record's header before the Arrow IPC file
    let mut writer = FileWriter::try_new(vec![0u8; log::HEADER], &schema)
        .map_err(|e| io("encode the state for", dir, e))?;
    writer
        .write(&rows)
        .and_then(|()| writer.finish())
        .map_err(|e| io("encode the state for", dir, e))?;
    let buf = writer
        .into_inner()
        .map_err(|e| io("encode the state for", dir, e))?;
    let opened = store.opened(dir)?;
    if buf.len() - log::HEADER <= log::MAX_RECORD || opened.catalog.in_log(version) {
        let rec = opened.writer()?.append(version, kind, buf)?;
        opened.catalog.logged(version, kind, rec);
    } else {
        let target = file_path(dir, version, kind);
        atomically(dir, &target, |w| {
            w.write_all(&buf[log::HEADER..])
                .map_err(|e| io("write", &target, e))
        })?;
        opened.catalog.filed(version, kind);
    }
    Ok(())
}

fn remove_if_present(p: &Path) -> Result<()> {
    match fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove", p, e)),
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("sync", dir, e))
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

/// Writes one version's file with the rows `fill` hands over in chunks, each of `schema`'s
/// columns.
fn write_with(
    dir: &Path,
    version: u64,
    kind: Stored,
    metadata: HashMap<String, String>,
    schema: &SchemaRef,
    fill: Scan,
) -> Result<()> {
    let schema = Arc::new(Schema::new_with_metadata(schema.fields().clone(), metadata));
    let target = file_path(dir, version, kind);
    atomically(dir, &target, |out| {
        let mut writer = FileWriter::try_new(out, &schema).map_err(|e| io("write", &target, e))?;
        fill(&mut |rows: RecordBatch| {
            let batch = RecordBatch::try_new(Arc::clone(&schema), rows.columns().to_vec())
                .map_err(|e| io("encode the state for", dir, e))?;
            writer.write(&batch).map_err(|e| io("write", &target, e))
        })?;
        writer.finish().map_err(|e| io("write", &target, e))
    })
}

/// Writes `target` atomically (temporary file, fsync, rename, directory fsync) with what
/// `fill` writes.
fn atomically(
    dir: &Path,
    target: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let tmp = dir.join(format!(
        ".{}.tmp",
        target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    {
        let file = File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
        let mut out = BufWriter::new(file);
        fill(&mut out)?;
        let file = out.into_inner().map_err(|e| io("write", &tmp, e.error()))?;
        file.sync_all().map_err(|e| io("sync", &tmp, e))?;
    }
    fs::rename(&tmp, target).map_err(|e| io("rename", target, e))?;
    sync_dir(dir)
}

/// The error for a committed version whose files are not all there.
fn missing(dir: &Path, version: u64) -> Error {
    let p = file_path(dir, version, Stored::Snapshot);
    Error::new(
        ErrorCode::CheckpointDamaged,
        format!(
            "[transform] the state for committed batch {version} is missing ({}, or {version}.delta.arrow and the deltas back to a snapshot): the checkpoint was made by a query without this operator, or its state was deleted; resuming would start it from nothing. Restore the state directory or start a new checkpoint",
            p.display()
        ),
    )
    .with_context("path", p.display())
}

/// Where the rows of version `version` under `dir` are: its snapshot's place, then each
/// delta's after it, oldest first.
fn chain(dir: &Path, version: u64) -> Result<Vec<Place>> {
    let catalog = Catalog::scan(dir)?;
    let base = chain_base(&catalog.kinds(), version).ok_or_else(|| missing(dir, version))?;
    (base..=version)
        .map(|v| {
            catalog
                .place(dir, v)
                .map(|(_, place)| place)
                .ok_or_else(|| missing(dir, version))
        })
        .collect()
}

/// The state as of `version` from the files under `dir` (its snapshot and the deltas after
/// it) and the metadata of `version`'s file; `check` sees each file's signature first.
fn load_chain(
    dir: &Path,
    version: u64,
    check: &dyn Fn(&str) -> Result<()>,
) -> Result<(RecordBatch, HashMap<String, String>)> {
    let mut chain = chain(dir, version)?.into_iter();
    let first = chain.next().ok_or_else(|| missing(dir, version))?;
    let snapshot = catalog::read(dir, &first)?;
    let signature = |m: &HashMap<String, String>| m.get(SIGNATURE).cloned().unwrap_or_default();
    check(&signature(&snapshot.metadata))?;
    let keys: usize = snapshot
        .metadata
        .get(KEYS)
        .and_then(|k| k.parse().ok())
        .unwrap_or(0);
    let mut deltas = Vec::new();
    let mut metadata = snapshot.metadata;
    for place in chain {
        let d = catalog::read(dir, &place)?;
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
