//! Local notification mode: inotify (through the `notify` crate) on the listed directory,
//! recursively. A file counts when it is closed after writing or renamed into the directory
//! (the two ways a complete file appears); its size and modification time are read then. A new
//! subdirectory is listed when it appears (inotify watches it only from then on).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use object_store::path::Path as ObjectPath;
use object_store::ObjectMeta;
use tributary_sdk::{Error, ErrorCode, Result};

use super::Polled;
use crate::discovery::{now_ms, Discovery};

/// A watcher and the events it delivered.
pub(crate) struct LocalNotifier {
    // Kept alive: dropping it stops the watch.
    _watcher: RecommendedWatcher,
    events: Receiver<notify::Result<notify::Event>>,
    root: PathBuf,
    pending: u64,
}

impl std::fmt::Debug for LocalNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalNotifier")
            .field("root", &self.root)
            .finish()
    }
}

/// Every file under `dir`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

impl LocalNotifier {
    /// Watches the directory `d` lists.
    pub fn open(d: &Discovery) -> Result<LocalNotifier> {
        let root = d
            .local_root()
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Internal,
                    "local notifications on a non-local path",
                )
            })?
            .to_path_buf();
        let (tx, events) = channel();
        let watch_error = |e: notify::Error| {
            Error::new(
                ErrorCode::SourceRead,
                format!(
                    "cannot watch {} for new files (inotify): {e}",
                    root.display()
                ),
            )
            .with_context("path", root.display())
        };
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })
        .map_err(watch_error)?;
        watcher
            .watch(&root, RecursiveMode::Recursive)
            .map_err(watch_error)?;
        Ok(LocalNotifier {
            _watcher: watcher,
            events,
            root,
            pending: 0,
        })
    }

    /// Events waiting to be polled (counted at the last poll).
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Files closed after writing or renamed in since the last poll.
    pub fn poll(&mut self, d: &Discovery) -> Result<Polled> {
        let mut paths: Vec<PathBuf> = Vec::new();
        for event in self.events.try_iter() {
            let event = event.map_err(|e| {
                Error::new(
                    ErrorCode::SourceRead,
                    format!("inotify on {} failed: {e}", self.root.display()),
                )
            })?;
            let complete = matches!(
                event.kind,
                EventKind::Access(AccessKind::Close(AccessMode::Write))
                    | EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both))
            );
            if complete {
                // A rename event of both names lists the new name last.
                if let Some(p) = event.paths.last() {
                    paths.push(p.clone());
                }
            } else if matches!(event.kind, EventKind::Create(_)) {
                // A new directory is watched only once inotify reports it: files written into
                // it before then have no event, so its content is listed.
                for dir in event.paths.iter().filter(|p| p.is_dir()) {
                    walk(dir, &mut paths);
                }
            }
        }
        self.pending = 0;
        paths.sort();
        paths.dedup();
        let oldest = d.max_file_age_ms().map(|age| now_ms() - age);
        let mut out = Polled::default();
        for path in paths {
            if let Some(file) = self.listed(d, &path, oldest)? {
                out.files.push(file);
            }
        }
        Ok(out)
    }

    fn listed(
        &self,
        d: &Discovery,
        path: &Path,
        oldest: Option<i64>,
    ) -> Result<Option<crate::state::ListedFile>> {
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(None); // gone again
        };
        if !meta.is_file() {
            return Ok(None);
        }
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return Ok(None);
        };
        let Some(rel) = rel.to_str() else {
            return Ok(None);
        };
        let modified = meta
            .modified()
            .map(chrono::DateTime::<chrono::Utc>::from)
            .unwrap_or_default();
        let object = ObjectMeta {
            location: ObjectPath::from(rel),
            last_modified: modified,
            size: meta.len(),
            e_tag: None,
            version: None,
        };
        d.eligible(&object, oldest)
    }
}
