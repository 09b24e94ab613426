//! `cloudFiles.cleanSource`: deleting or moving files whose batch committed, after a retention.
//!
//! Runs in `commit`, which the runtime calls only after the batch is durable in the checkpoint
//! and written by the sinks, so a cleaned file is never needed again (a replay never reaches a
//! committed batch). A file is touched only if it is still the version that was ingested (same
//! size and modification time): one overwritten since is left alone. A file already gone counts
//! as cleaned. A file that cannot be deleted or moved is logged and tried again at the next
//! commit; cleaning never fails the stream. MOVE keeps the file's path under the source
//! directory below `moveDestination`.
//!
//! Clean-up never leaves the input directory: a local file is deleted or moved only while its
//! resolved path (every symbolic link followed) is still under the resolved input directory. A
//! file reached through a link that leads elsewhere (a directory replaced by a link since it
//! was read, say) is skipped, counted in `numFilesCleanSkipped`, and logged with its path. The
//! path itself is what is deleted or renamed (a link inside the input, not its target). MOVE
//! keeps the file's relative path below `moveDestination`, and only when that place, resolved,
//! is still under the resolved destination and not under the input (a link inside the
//! destination cannot take the file elsewhere) and is not itself a link; otherwise the file is
//! skipped the same way.
//!
//! Local files: plain `std::fs` (same file system: rename; otherwise copy, sync, then delete;
//! the store is rooted at the listed directory and cannot reach the destination). Object
//! stores: `head` (the version check: size, and modification time to the second, the
//! resolution of HTTP dates), then a server-side `copy` inside the bucket and a `delete`. A
//! crash between the two leaves both; the next commit copies again (same content) and deletes.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;
use tributary_sdk::Result;

use crate::config::{CleanSource, SourcePath};
use crate::discovery::{resolves_under, Discovery};
use crate::state::{FileStateStore, QueuedFile};

/// Counts of one clean-up pass (and running totals in the source's metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cleaned {
    /// Files deleted or moved.
    pub done: u64,
    /// Files left because they changed since ingestion or were already gone.
    pub skipped: u64,
    /// Files that could not be deleted or moved (tried again later).
    pub failed: u64,
}

/// Cleans every file whose batch committed at least `retention` before `now_ms`.
pub(crate) async fn clean(
    state: &mut FileStateStore,
    mode: &CleanSource,
    retention: Duration,
    discovery: &Discovery,
    now_ms: i64,
) -> Result<Cleaned> {
    let mut out = Cleaned::default();
    if *mode == CleanSource::Off {
        return Ok(out);
    }
    let cutoff = now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
    for file in state.cleanable(cutoff)? {
        let outcome = match discovery.local_root() {
            Some(root) => clean_local(&file, mode, root).map_err(Into::into),
            None => clean_object(&file, mode, discovery).await,
        };
        match outcome {
            Ok(true) => out.done += 1,
            Ok(false) => out.skipped += 1,
            Err(e) => {
                tracing::warn!(path = %file.path, error = %e, "cleanSource could not clean a file; trying again at the next commit");
                out.failed += 1;
                continue;
            }
        }
        state.mark_cleaned(file.seq, now_ms)?;
    }
    Ok(out)
}

/// Deletes or moves one object (same bucket): Ok(true) when done, Ok(false) when it is gone
/// or changed.
async fn clean_object(
    file: &QueuedFile,
    mode: &CleanSource,
    discovery: &Discovery,
) -> std::result::Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    let store = discovery.store();
    let location = discovery.location(&file.path)?;
    let meta = match store.head(&location).await {
        Ok(m) => m,
        Err(object_store::Error::NotFound { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let same_second = meta.last_modified.timestamp() == file.modification_time_ms.div_euclid(1000);
    if meta.size != file.size || !same_second {
        return Ok(false);
    }
    match mode {
        CleanSource::Off => Ok(false),
        CleanSource::Delete => {
            store.delete(&location).await?;
            Ok(true)
        }
        CleanSource::Move(SourcePath::Cloud(dest)) => {
            let rel = discovery.relative_key(&location);
            let to = if dest.key.is_empty() {
                ObjectPath::parse(rel)?
            } else {
                ObjectPath::parse(format!("{}/{rel}", dest.key))?
            };
            store.copy(&location, &to).await?;
            store.delete(&location).await?;
            Ok(true)
        }
        CleanSource::Move(SourcePath::Local(_)) => {
            Err("a local move destination for an object-store source (refused when parsing)".into())
        }
    }
}

/// Deletes or moves one local file: Ok(true) when done, Ok(false) when it is gone, changed,
/// or (through a symbolic link) resolves outside `root`, the canonical input directory.
fn clean_local(file: &QueuedFile, mode: &CleanSource, root: &Path) -> std::io::Result<bool> {
    let path = Path::new(&file.path);
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(false); // gone (a dangling link counts as there, and is checked below)
    }
    if !resolves_under(root, path) {
        let resolved = path.canonicalize().map(|p| p.display().to_string());
        tracing::warn!(
            path = %file.path,
            resolved = %resolved.unwrap_or_else(|e| format!("unresolvable: {e}")),
            root = %root.display(),
            "cleanSource skips a file that a symbolic link leads out of the input directory"
        );
        return Ok(false);
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let mtime_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64);
    if meta.len() != file.size || mtime_ms != Some(file.modification_time_ms) {
        return Ok(false);
    }
    match mode {
        CleanSource::Off => Ok(false),
        CleanSource::Delete => std::fs::remove_file(path).map(|_| true),
        CleanSource::Move(SourcePath::Cloud(_)) => Err(std::io::Error::other(
            "an object-store move destination for a local source (refused when parsing)",
        )),
        CleanSource::Move(SourcePath::Local(dest_root)) => {
            let Some(dest) = destination(path, root, dest_root)? else {
                return Ok(false);
            };
            if std::fs::rename(path, &dest).is_err() {
                // Another file system: copy (synced), then delete.
                std::fs::copy(path, &dest)?;
                std::fs::File::open(&dest)?.sync_all()?;
                std::fs::remove_file(path)?;
            }
            Ok(true)
        }
    }
}

/// `path`'s place under `dest_root` (its path relative to the source root, or its name), with
/// its directory created; `None` (logged) when that place would not be inside the resolved
/// destination, would be inside the input directory `root`, or is a symbolic link.
fn destination(path: &Path, root: &Path, dest_root: &Path) -> std::io::Result<Option<PathBuf>> {
    let refuse = |why: &str| {
        tracing::warn!(
            path = %path.display(),
            destination = %dest_root.display(),
            "cleanSource skips moving a file: {why}"
        );
        Ok(None)
    };
    let rel = match path.strip_prefix(root) {
        Ok(rel) => rel,
        Err(_) => match path.file_name() {
            Some(name) => Path::new(name),
            None => return refuse("it has no file name"),
        },
    };
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return refuse("its relative path is not plain");
    }
    let dest = dest_root.join(rel);
    let (Some(parent), Some(dest_resolved)) = (dest.parent(), resolve(dest_root)) else {
        return refuse("the destination cannot be resolved");
    };
    let stays = |p: &Path| {
        resolve(p).is_some_and(|p| p.starts_with(&dest_resolved) && !p.starts_with(root))
    };
    // Checked before anything is created below it, and again once its directory exists.
    if !stays(parent) {
        return refuse("a symbolic link leads its place outside the destination");
    }
    std::fs::create_dir_all(parent)?;
    if !stays(parent) {
        return refuse("a symbolic link leads its place outside the destination");
    }
    if std::fs::symlink_metadata(&dest).is_ok_and(|m| m.file_type().is_symlink()) {
        return refuse("its place in the destination is a symbolic link");
    }
    Ok(Some(dest))
}

/// `p` resolved: its deepest existing ancestor canonicalized, the part that does not exist yet
/// appended (plain names only, else `None`).
fn resolve(p: &Path) -> Option<PathBuf> {
    let mut existing = p;
    let mut tail = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        tail.push(existing.file_name()?);
        existing = existing.parent()?;
    }
    let mut out = existing.canonicalize().ok()?;
    for name in tail.iter().rev() {
        out.push(name);
    }
    Some(out)
}
