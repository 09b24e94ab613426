//! The catalog of one operator's stored versions: which versions are on disk and where each
//! one's rows are (a snapshot file `<n>.arrow`, a record of the state [`log`], a delta file
//! `<n>.delta.arrow`). It is built by listing the directory and scanning the log once, and
//! the operator's [`super::Store`] keeps it up to date as it writes and removes, so a save
//! lists nothing.
//!
//! Of what one version may have on disk, a snapshot file serves first (the background
//! snapshot is made from the same chain), then the version's last log record, then a delta
//! file. Saving a version first removes any file of that version a replayed batch's first
//! attempt left (durably), and writes to the log when the log already has a record of it, so
//! what serves is always the newest attempt.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{Cursor, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use datafusion::arrow::ipc::reader::FileReader;
use tributary_sdk::Result;

use super::log::{self, Record, Scanned};
use super::{io, Stored};

/// Where one version's rows are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    File(PathBuf),
    Log(Record),
}

/// What is on disk for one version.
#[derive(Debug, Default, Clone)]
struct Held {
    snapshot_file: bool,
    delta_file: bool,
    log: Option<(Stored, Record)>,
}

impl Held {
    fn is_empty(&self) -> bool {
        !self.snapshot_file && !self.delta_file && self.log.is_none()
    }
}

pub(crate) fn file_path(dir: &Path, version: u64, kind: Stored) -> PathBuf {
    match kind {
        Stored::Snapshot => dir.join(format!("{version}.arrow")),
        Stored::Delta => dir.join(format!("{version}.delta.arrow")),
    }
}

/// One operator's stored versions.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    versions: BTreeMap<u64, Held>,
    /// Every log segment and the newest version recorded in it (`None`: no record).
    segments: BTreeMap<u64, Option<u64>>,
    /// The newest segment's scan, where a writer opened on this catalog appends.
    last: Option<Scanned>,
}

impl Catalog {
    /// Lists `dir`'s version files and scans its log segments.
    pub(crate) fn scan(dir: &Path) -> Result<Catalog> {
        let mut c = Catalog::default();
        let entries = match fs::read_dir(dir) {
            Ok(e) => Some(e),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io("list", dir, e)),
        };
        for entry in entries.into_iter().flatten() {
            let entry = entry.map_err(|e| io("list", dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(v) = name.strip_suffix(".delta.arrow") {
                if let Ok(v) = v.parse::<u64>() {
                    c.versions.entry(v).or_default().delta_file = true;
                }
            } else if let Some(v) = name.strip_suffix(".arrow") {
                if let Ok(v) = v.parse::<u64>() {
                    c.versions.entry(v).or_default().snapshot_file = true;
                }
            }
        }
        for seq in log::segments(dir)? {
            let Some(s) = log::scan(dir, seq)? else {
                continue;
            };
            c.segments
                .insert(seq, s.records.iter().map(|&(v, _, _)| v).max());
            for &(v, kind, rec) in &s.records {
                // in the order written: the last record of a version serves
                c.versions.entry(v).or_default().log = Some((kind, rec));
            }
            c.last = Some(s);
        }
        Ok(c)
    }

    /// The newest segment's scan (taken by the writer opened on it).
    pub(crate) fn take_last(&mut self) -> Option<Scanned> {
        self.last.take()
    }

    /// The versions on disk, ascending, each with how the one that serves is stored.
    pub(crate) fn kinds(&self) -> Vec<(u64, Stored)> {
        self.versions
            .iter()
            .filter_map(|(&v, h)| self.serving(h).map(|(kind, _)| (v, kind)))
            .collect()
    }

    fn serving(&self, h: &Held) -> Option<(Stored, Option<Record>)> {
        if h.snapshot_file {
            return Some((Stored::Snapshot, None));
        }
        if let Some((kind, rec)) = h.log {
            return Some((kind, Some(rec)));
        }
        h.delta_file.then_some((Stored::Delta, None))
    }

    /// Where version `version`'s rows are, and how they are stored.
    pub(crate) fn place(&self, dir: &Path, version: u64) -> Option<(Stored, Place)> {
        let (kind, rec) = self.serving(self.versions.get(&version)?)?;
        Some(match rec {
            Some(rec) => (kind, Place::Log(rec)),
            None => (kind, Place::File(file_path(dir, version, kind))),
        })
    }

    /// The newest version on disk.
    pub(crate) fn newest(&self) -> Option<u64> {
        self.kinds().last().map(|&(v, _)| v)
    }

    /// The newest version on disk at or before `version`.
    pub(crate) fn newest_at_or_before(&self, version: u64) -> Option<u64> {
        self.kinds()
            .iter()
            .rev()
            .map(|&(v, _)| v)
            .find(|&v| v <= version)
    }

    /// Whether the log holds a record of `version`.
    pub(crate) fn in_log(&self, version: u64) -> bool {
        self.versions.get(&version).is_some_and(|h| h.log.is_some())
    }

    /// The files of `version` (not its log records), forgotten.
    pub(crate) fn take_files(&mut self, dir: &Path, version: u64) -> Vec<PathBuf> {
        let Some(h) = self.versions.get_mut(&version) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if std::mem::take(&mut h.snapshot_file) {
            out.push(file_path(dir, version, Stored::Snapshot));
        }
        if std::mem::take(&mut h.delta_file) {
            out.push(file_path(dir, version, Stored::Delta));
        }
        if h.is_empty() {
            self.versions.remove(&version);
        }
        out
    }

    /// Notes a record appended to the log.
    pub(crate) fn logged(&mut self, version: u64, kind: Stored, rec: Record) {
        self.versions.entry(version).or_default().log = Some((kind, rec));
        let newest = self.segments.entry(rec.seq).or_default();
        *newest = Some(newest.map_or(version, |n| n.max(version)));
    }

    /// Notes a file written.
    pub(crate) fn filed(&mut self, version: u64, kind: Stored) {
        let h = self.versions.entry(version).or_default();
        match kind {
            Stored::Snapshot => h.snapshot_file = true,
            Stored::Delta => h.delta_file = true,
        }
    }

    /// Forgets, and returns to be removed, the files of versions before `keep_from` and the
    /// log segments (other than `writing`, the one appended to) holding only such versions.
    pub(crate) fn take_before(
        &mut self,
        dir: &Path,
        keep_from: u64,
        writing: Option<u64>,
    ) -> Vec<PathBuf> {
        let old: Vec<u64> = self.versions.range(..keep_from).map(|(&v, _)| v).collect();
        let mut out = Vec::new();
        for v in old {
            out.extend(self.take_files(dir, v));
        }
        // never the newest segment: it is appended to, or will be by a writer opened on it
        let top = self.segments.keys().next_back().copied().max(writing);
        let gone: Vec<u64> = self
            .segments
            .iter()
            .filter(|&(&seq, newest)| Some(seq) < top && newest.is_none_or(|n| n < keep_from))
            .map(|(&seq, _)| seq)
            .collect();
        for seq in gone {
            self.segments.remove(&seq);
            out.push(log::segment_path(dir, seq));
            self.versions.retain(|_, h| {
                if h.log.is_some_and(|(_, rec)| rec.seq == seq) {
                    h.log = None;
                }
                !h.is_empty()
            });
        }
        out
    }
}

/// One version's rows and metadata.
pub(crate) struct Read {
    pub(crate) rows: RecordBatch,
    pub(crate) metadata: HashMap<String, String>,
}

/// A source of an Arrow IPC file: a file of its own, or a log record's bytes.
trait Source: std::io::Read + Seek {}
impl<T: std::io::Read + Seek> Source for T {}

/// An Arrow IPC reader of the version at `place`, and the path to name in errors.
fn reader(dir: &Path, place: &Place) -> Result<(FileReader<Box<dyn Source>>, PathBuf)> {
    let (source, p): (Box<dyn Source>, PathBuf) = match place {
        Place::File(p) => (
            Box::new(File::open(p).map_err(|e| io("open", p, e))?),
            p.clone(),
        ),
        Place::Log(rec) => (
            Box::new(Cursor::new(log::read(dir, rec)?)),
            log::segment_path(dir, rec.seq),
        ),
    };
    let reader = FileReader::try_new(source, None).map_err(|e| io("read", &p, e))?;
    Ok((reader, p))
}

/// Hands the record batches of the version at `place` to `f` (without the schema metadata),
/// after `check` saw the metadata; returns the metadata and the schema the batches have.
pub(crate) fn each(
    dir: &Path,
    place: &Place,
    check: &dyn Fn(&HashMap<String, String>) -> Result<()>,
    f: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<(HashMap<String, String>, SchemaRef)> {
    let (reader, p) = reader(dir, place)?;
    let schema = reader.schema();
    let metadata = schema.metadata().clone();
    check(&metadata)?;
    let plain = Arc::new(Schema::new(schema.fields().clone()));
    for b in reader {
        let b = b.map_err(|e| io("read", &p, e))?;
        f(
            RecordBatch::try_new(Arc::clone(&plain), b.columns().to_vec())
                .map_err(|e| io("decode", &p, e))?,
        )?;
    }
    Ok((metadata, plain))
}

/// The rows and metadata of the version at `place`.
pub(crate) fn read(dir: &Path, place: &Place) -> Result<Read> {
    let mut batches = Vec::new();
    let (metadata, plain) = each(dir, place, &|_| Ok(()), &mut |b| {
        batches.push(b);
        Ok(())
    })?;
    let rows = datafusion::arrow::compute::concat_batches(&plain, &batches)
        .map_err(|e| io("decode", dir, e))?;
    Ok(Read { rows, metadata })
}
