//! The local listing: a walk of the input directory in path order, on several threads.
//!
//! Written on `std::fs` rather than through `object_store`'s `LocalFileSystem::list`, which
//! costs an `lstat` and a `stat` per file, percent-encodes names and lists in no order. Here a
//! directory's entries come with their type (`getdents`), so a plain file costs one `stat`
//! (`fstatat` relative to its directory); hidden and temporary directories (`.`/`_`) are
//! pruned rather than walked; and each directory's entries are visited in the order that
//! makes the walk's output sorted by full path, byte for byte (a directory `a` is visited as
//! `a/`, so `a.json` comes before `a/x.json`). Sorted output is what lets the file state check
//! a listing with range scans ([`crate::state::FileStateStore::sift`]).
//!
//! Parallelism: the directories of the first levels (expanded until there are enough of them)
//! are the jobs; each of `workers` threads takes runs of consecutive jobs and sends their files
//! in sorted chunks of at most [`CHUNK`]. A chunk never spans two runs, so chunks from
//! different threads cover disjoint ranges of paths.
//!
//! Links are followed as `object_store` follows them (a broken link is skipped), but a file or
//! directory whose link leads out of the input directory is skipped with a warning, and a
//! directory link back to one of its own ancestors (a loop) is skipped with a warning instead
//! of failing the listing.

use std::fs::{DirEntry, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use tokio::sync::mpsc::Sender;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::chunks::Chunk;
use crate::discovery::{is_hidden, Discovery};
use crate::state::ListedFile;

/// Files per chunk handed to the file state.
pub(crate) const CHUNK: usize = 8192;

/// Stop expanding the first levels into jobs at this many per worker.
const JOBS_PER_WORKER: usize = 8;

/// How far down the first levels are expanded into jobs.
const MAX_EXPANSION_DEPTH: usize = 3;

/// Threads walking a local directory: the machine's parallelism, at least 2 (a walk waits on
/// the file system as much as on the CPU), at most 8.
pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// What a walk needs of the discovery.
pub(crate) struct Walk {
    d: Discovery,
    root: PathBuf,
    /// Only files whose path relative to the root sorts after this (incremental listing).
    after: Option<String>,
    oldest_ms: Option<i64>,
    /// Files modified after this are left out (an available-now run's snapshot).
    newest_ms: Option<i64>,
    stop: AtomicBool,
}

/// A directory to walk: its path, its path relative to the root, and the (device, inode) of
/// it and every ancestor (loop detection).
#[derive(Clone)]
struct Job {
    abs: PathBuf,
    rel: String,
    ancestors: Vec<(u64, u64)>,
}

enum Kind {
    Dir((u64, u64)),
    /// A link to a directory (resolved inside the root).
    LinkDir((u64, u64)),
    File(DirEntry),
    /// A link to a file, its target's metadata.
    LinkFile(Box<Metadata>),
}

struct Item {
    /// The name, with `/` appended for a directory: the sort key.
    key: String,
    kind: Kind,
}

/// Starts walking `root` on `workers` threads; chunks and the first error go to `tx`, and
/// the walk stops when `tx`'s receiver is dropped.
pub(crate) fn spawn(
    d: Discovery,
    root: PathBuf,
    after: Option<String>,
    (oldest_ms, newest_ms): (Option<i64>, Option<i64>),
    workers: usize,
    tx: Sender<Chunk>,
) {
    let walk = Arc::new(Walk {
        d,
        root,
        after,
        oldest_ms,
        newest_ms,
        stop: AtomicBool::new(false),
    });
    let spawned = std::thread::Builder::new()
        .name("files-walk".into())
        .spawn({
            let tx = tx.clone();
            move || walk.run(workers, &tx)
        });
    if let Err(e) = spawned {
        let _ = tx.blocking_send(Err(Error::new(
            ErrorCode::SourceRead,
            "cannot start a thread to list the input directory",
        )
        .with_cause(e)));
    }
}

impl Walk {
    fn run(self: Arc<Self>, workers: usize, tx: &Sender<Chunk>) {
        if let Err(e) = self.clone().run_jobs(workers, tx) {
            self.stop.store(true, Ordering::Relaxed);
            let _ = tx.blocking_send(Err(e));
        }
    }

    /// Expands the first levels into jobs (sending their files), then walks the jobs.
    fn run_jobs(self: Arc<Self>, workers: usize, tx: &Sender<Chunk>) -> Result<()> {
        let meta = std::fs::metadata(&self.root).map_err(|e| self.error(&self.root, e))?;
        let mut level = vec![Job {
            abs: self.root.clone(),
            rel: String::new(),
            ancestors: vec![(meta.dev(), meta.ino())],
        }];
        for _ in 0..MAX_EXPANSION_DEPTH {
            if level.len() >= workers * JOBS_PER_WORKER {
                break;
            }
            let mut next = Vec::new();
            let mut chunk = Vec::new();
            for job in &level {
                for item in self.read(job)? {
                    match self.child(job, item, &mut chunk)? {
                        // The directory's files are sent by whoever walks it: the files
                        // before it go now, so no chunk's range spans another's.
                        Some(dir) => {
                            if !chunk.is_empty() && !self.send(tx, &mut chunk) {
                                return Ok(());
                            }
                            next.push(dir);
                        }
                        None => {
                            if chunk.len() >= CHUNK && !self.send(tx, &mut chunk) {
                                return Ok(());
                            }
                        }
                    }
                }
                if !chunk.is_empty() && !self.send(tx, &mut chunk) {
                    return Ok(());
                }
            }
            level = next;
            if level.is_empty() {
                return Ok(());
            }
        }
        let jobs = Arc::new(level);
        // Runs of consecutive jobs: few enough range boundaries, enough runs to share out.
        let run = (jobs.len() / (workers * JOBS_PER_WORKER)).max(1);
        let next = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let (jobs, next, this) = (jobs.clone(), next.clone(), self.clone());
                    scope.spawn(move || -> Result<()> {
                        let mut chunk = Vec::new();
                        loop {
                            let first = next.fetch_add(run, Ordering::Relaxed);
                            if first >= jobs.len() || this.stop.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            for job in &jobs[first..(first + run).min(jobs.len())] {
                                this.walk(job, &mut chunk, tx)?;
                            }
                            if !chunk.is_empty() && !this.send(tx, &mut chunk) {
                                return Ok(());
                            }
                        }
                    })
                })
                .collect();
            let mut first_error = None;
            for h in handles {
                match h.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        self.stop.store(true, Ordering::Relaxed);
                        first_error.get_or_insert(e);
                    }
                    Err(_) => {
                        self.stop.store(true, Ordering::Relaxed);
                        first_error.get_or_insert(Error::new(
                            ErrorCode::Internal,
                            "a thread listing the input directory panicked",
                        ));
                    }
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }

    /// Walks `job` depth first, in path order, adding its files to `chunk`.
    fn walk(&self, job: &Job, chunk: &mut Vec<ListedFile>, tx: &Sender<Chunk>) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        for item in self.read(job)? {
            if let Some(dir) = self.child(job, item, chunk)? {
                self.walk(&dir, chunk, tx)?;
            } else if chunk.len() >= CHUNK && !self.send(tx, chunk) {
                self.stop.store(true, Ordering::Relaxed);
                return Ok(());
            }
        }
        Ok(())
    }

    /// Sends `chunk`; false when nobody listens any more.
    fn send(&self, tx: &Sender<Chunk>, chunk: &mut Vec<ListedFile>) -> bool {
        let full = std::mem::replace(chunk, Vec::with_capacity(CHUNK));
        tx.blocking_send(Ok(full)).is_ok()
    }

    /// A directory's visible entries in walk order (see the module documentation).
    fn read(&self, job: &Job) -> Result<Vec<Item>> {
        let entries = match std::fs::read_dir(&job.abs) {
            Ok(entries) => entries,
            // Removed while listing: nothing to list.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.error(&job.abs, e)),
        };
        let mut items = Vec::new();
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(self.error(&job.abs, e)),
            };
            let name = match entry.file_name().into_string() {
                Ok(name) => name,
                Err(raw) => {
                    let path = job.abs.join(&raw);
                    self.d
                        .warn_once(&path, "skipping a file whose name is not UTF-8");
                    continue;
                }
            };
            if is_hidden(&name) {
                continue;
            }
            let file_type = match entry.file_type() {
                Ok(t) => t,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(self.error(&entry.path(), e)),
            };
            let kind = if file_type.is_dir() {
                match entry.metadata() {
                    Ok(m) => Kind::Dir((m.dev(), m.ino())),
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(self.error(&entry.path(), e)),
                }
            } else if file_type.is_symlink() {
                // Followed, as object_store follows links; a broken link is skipped.
                match std::fs::metadata(entry.path()) {
                    Ok(m) if m.is_dir() => Kind::LinkDir((m.dev(), m.ino())),
                    Ok(m) if m.is_file() => Kind::LinkFile(Box::new(m)),
                    _ => continue,
                }
            } else if file_type.is_file() {
                Kind::File(entry)
            } else {
                continue; // sockets, pipes, devices
            };
            let key = match kind {
                Kind::Dir(_) | Kind::LinkDir(_) => format!("{name}/"),
                _ => name,
            };
            items.push(Item { key, kind });
        }
        items.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        Ok(items)
    }

    /// Handles one entry of `job`: a directory to walk is returned, a file is added to `chunk`
    /// when every filter accepts it.
    fn child(&self, job: &Job, item: Item, chunk: &mut Vec<ListedFile>) -> Result<Option<Job>> {
        let name = item.key.strip_suffix('/').unwrap_or(&item.key);
        let rel = if job.rel.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", job.rel)
        };
        let abs = job.abs.join(name);
        let dir = |id: (u64, u64)| {
            let mut ancestors = job.ancestors.clone();
            ancestors.push(id);
            Job {
                abs: abs.clone(),
                rel: rel.clone(),
                ancestors,
            }
        };
        let meta = match item.kind {
            Kind::Dir(id) => return Ok(Some(dir(id))),
            Kind::LinkDir(id) => {
                if !crate::discovery::resolves_under(&self.root, &abs) {
                    self.d.warn_outside(&self.root, &abs);
                    return Ok(None);
                }
                if job.ancestors.contains(&id) {
                    self.d.warn_once(
                        &abs,
                        "skipping a directory link that leads back to one of its own parent directories (a loop)",
                    );
                    return Ok(None);
                }
                return Ok(Some(dir(id)));
            }
            Kind::File(entry) => match entry.metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(self.error(&abs, e)),
            },
            Kind::LinkFile(m) => {
                if !crate::discovery::resolves_under(&self.root, &abs) {
                    self.d.warn_outside(&self.root, &abs);
                    return Ok(None);
                }
                *m
            }
        };
        if self
            .after
            .as_deref()
            .is_some_and(|after| rel.as_str() <= after)
        {
            return Ok(None);
        }
        let mtime = modified_ms(&meta);
        if self.newest_ms.is_some_and(|newest| mtime > newest) {
            return Ok(None);
        }
        if !self.d.accepts(&rel, name, mtime, self.oldest_ms) {
            return Ok(None);
        }
        chunk.push(ListedFile {
            path: format!("{}/{rel}", self.d.root_text()),
            size: meta.len(),
            modification_time_ms: mtime,
        });
        Ok(None)
    }

    fn error(&self, path: &Path, e: std::io::Error) -> Error {
        Error::new(
            ErrorCode::SourceRead,
            format!("cannot list {}: {e}", path.display()),
        )
        .with_context("path", path.display())
        .with_cause(e)
    }
}

/// Modification time in milliseconds since the epoch (negative before it).
fn modified_ms(meta: &Metadata) -> i64 {
    match meta.modified() {
        Ok(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            Err(e) => -(e.duration().as_millis() as i64),
        },
        Err(_) => 0,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn walk(root: &Path, workers: usize) -> Vec<String> {
        let options: tributary_sdk::Options = [
            ("path", root.to_str().unwrap()),
            ("cloudFiles.format", "json"),
            ("schema", "id BIGINT"),
        ]
        .into_iter()
        .collect();
        let parsed = tributary_sdk::OptionSpec::validate_all(
            &crate::config::option_specs(),
            &options,
            "files",
        )
        .unwrap();
        let config = crate::config::FilesConfig::parse(&parsed).unwrap();
        let d = Discovery::new(&config, &tributary_sdk::EnvSecretStore, false).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::channel(4);
        spawn(
            d,
            root.canonicalize().unwrap(),
            None,
            (None, None),
            workers,
            tx,
        );
        let mut chunks = Vec::new();
        while let Some(chunk) = rx.blocking_recv() {
            let chunk: Vec<String> = chunk.unwrap().into_iter().map(|f| f.path).collect();
            let mut sorted = chunk.clone();
            sorted.sort();
            assert_eq!(chunk, sorted, "a chunk is in path order");
            chunks.push(chunk);
        }
        let root = root.canonicalize().unwrap().display().to_string();
        let mut all: Vec<String> = chunks
            .into_iter()
            .flatten()
            .map(|p| p.strip_prefix(&root).unwrap().to_string())
            .collect();
        all.sort();
        all
    }

    #[test]
    fn every_visible_file_once_in_sorted_chunks_with_any_number_of_workers() {
        let dir = tempfile::tempdir().unwrap();
        let mut expected = Vec::new();
        for d in 0..40 {
            for sub in ["x", "x.y"] {
                let p = dir.path().join(format!("d{d:02}")).join(sub);
                std::fs::create_dir_all(&p).unwrap();
                for f in 0..3 {
                    std::fs::write(p.join(format!("f{f}.json")), b"{}").unwrap();
                    expected.push(format!("/d{d:02}/{sub}/f{f}.json"));
                }
            }
            std::fs::write(dir.path().join(format!("d{d:02}.json")), b"{}").unwrap();
            expected.push(format!("/d{d:02}.json"));
        }
        std::fs::create_dir_all(dir.path().join("_tmp")).unwrap();
        std::fs::write(dir.path().join("_tmp/hidden.json"), b"{}").unwrap();
        std::fs::write(dir.path().join(".crc"), b"{}").unwrap();
        expected.sort();
        for workers in [1, 2, 5] {
            assert_eq!(walk(dir.path(), workers), expected, "{workers} workers");
        }
    }

    #[test]
    fn a_link_loop_is_skipped_and_a_broken_link_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/f.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("a/b/up")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("broken")).unwrap();
        assert_eq!(walk(dir.path(), 2), ["/a/b/f.json"]);
    }
}
