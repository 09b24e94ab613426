//! Discovery: listing the input directory through `object_store`.
//!
//! The `path` option names a directory (listed recursively), a single file, or a glob such as
//! `/data/*/part-*.json` (the part before the first glob character is the directory listed; the
//! rest is matched against each file's path relative to it, `*` not crossing `/`).
//! `pathGlobFilter` is matched against the file name. As in Spark, hidden and temporary files
//! and directories (names starting with `.` or `_`) are skipped, and `cloudFiles.maxFileAge`
//! ignores files modified longer ago than the given age.
//!
//! Listing goes through [`object_store::ObjectStore`] (a `LocalFileSystem` rooted at the
//! directory in this build), so other stores plug in here later.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::TryStreamExt;
use globset::{GlobBuilder, GlobMatcher};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::config::{names, FilesConfig};
use crate::state::ListedFile;

/// Where and what to list.
#[derive(Debug, Clone)]
pub struct Discovery {
    root: PathBuf,
    root_url: url::Url,
    root_text: String,
    store: Arc<LocalFileSystem>,
    path_glob: Option<(String, GlobMatcher)>,
    name_glob: Option<(String, GlobMatcher)>,
    max_file_age: Option<Duration>,
}

impl Discovery {
    /// Resolves the configured path (absolute already) against the file system. The directory
    /// must exist.
    pub fn new(config: &FilesConfig) -> Result<Discovery> {
        let path = config.path.clone();
        let (dir, pattern) = split_glob(&path);
        let (root, path_glob) = match pattern {
            Some(pattern) => (dir, Some(glob(&pattern, true, names::PATH)?)),
            None if path.is_file() => {
                let name = path
                    .file_name()
                    .map(|n| globset::escape(&n.to_string_lossy()))
                    .ok_or_else(|| path_error(&path, "has no file name"))?;
                let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
                (parent, Some(glob(&name, true, names::PATH)?))
            }
            None => (path, None),
        };
        let root = root
            .canonicalize()
            .map_err(|e| path_error(&root, "does not exist or cannot be opened").with_cause(e))?;
        if !root.is_dir() {
            return Err(path_error(&root, "is not a directory"));
        }
        let store = LocalFileSystem::new_with_prefix(&root).map_err(|e| {
            Error::new(
                ErrorCode::SourceRead,
                format!("cannot open the directory {}", root.display()),
            )
            .with_context("path", root.display())
            .with_cause(e)
        })?;
        let name_glob = config
            .path_glob_filter
            .as_deref()
            .map(|g| glob(g, false, names::PATH_GLOB_FILTER))
            .transpose()?;
        let root_url = url::Url::from_directory_path(&root)
            .map_err(|_| path_error(&root, "cannot be expressed as a file URL"))?;
        Ok(Discovery {
            root_text: root.display().to_string(),
            root,
            root_url,
            store: Arc::new(store),
            path_glob,
            name_glob,
            max_file_age: config.max_file_age,
        })
    }

    /// The canonical directory listed.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The store the files are read from.
    pub fn store(&self) -> &Arc<LocalFileSystem> {
        &self.store
    }

    /// The canonical directory listed and the path glob, for messages (the checkpoint identity
    /// is [`FilesConfig::target`], computed without touching the file system).
    pub fn target(&self) -> String {
        let mut t = self.root.display().to_string();
        if let Some((g, _)) = &self.path_glob {
            t.push('/');
            t.push_str(g);
        }
        t
    }

    /// The location in the store of an absolute path produced by [`Discovery::list`].
    pub fn location(&self, absolute: &str) -> Result<ObjectPath> {
        let outside = || {
            Error::new(
                ErrorCode::Checkpoint,
                format!(
                    "file {absolute} from the file state is not under {}",
                    self.root.display()
                ),
            )
            .with_context("file", absolute)
        };
        let file_url = url::Url::from_file_path(absolute).map_err(|_| outside())?;
        let rel = file_url
            .path()
            .strip_prefix(self.root_url.path())
            .ok_or_else(outside)?;
        ObjectPath::from_url_path(rel).map_err(|e| outside().with_cause(e))
    }

    /// Lists every eligible file now.
    pub async fn list(&self) -> Result<Vec<ListedFile>> {
        let oldest_ms = self
            .max_file_age
            .map(|age| now_ms() - age.as_millis() as i64);
        let mut out = Vec::new();
        let mut stream = self.store.list(None);
        while let Some(meta) = stream.try_next().await.map_err(|e| {
            Error::new(
                ErrorCode::SourceRead,
                format!("cannot list {}", self.root.display()),
            )
            .with_context("path", self.root.display())
            .with_cause(e)
        })? {
            // Filters work on the store's relative location without allocating; the few names
            // object_store had to percent-encode are decoded through the file system mapping.
            let location = meta.location.as_ref();
            if meta.location.parts().any(|p| is_hidden(p.as_ref())) {
                continue;
            }
            let decoded;
            let rel_path = if location.contains('%') {
                let absolute = self.store.path_to_filesystem(&meta.location).map_err(|e| {
                    Error::new(
                        ErrorCode::SourceRead,
                        format!("cannot map {} to a file", meta.location),
                    )
                    .with_cause(e)
                })?;
                let Ok(rel) = absolute.strip_prefix(&self.root) else {
                    continue;
                };
                decoded = rel.to_string_lossy().into_owned();
                decoded.as_str()
            } else {
                location
            };
            if let Some((_, g)) = &self.path_glob {
                if !g.is_match(rel_path) {
                    continue;
                }
            }
            if let Some((_, g)) = &self.name_glob {
                let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
                if !g.is_match(name) {
                    continue;
                }
            }
            let mtime = meta.last_modified.timestamp_millis();
            if oldest_ms.is_some_and(|oldest| mtime < oldest) {
                continue;
            }
            let mut path = String::with_capacity(self.root_text.len() + 1 + rel_path.len());
            path.push_str(&self.root_text);
            path.push('/');
            path.push_str(rel_path);
            out.push(ListedFile {
                path,
                size: meta.size,
                modification_time_ms: mtime,
            });
        }
        Ok(out)
    }
}

/// Hidden or temporary names, skipped as Spark does.
fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// Splits `/a/b/*/c*.json` into (`/a/b`, `*/c*.json`); no glob characters gives (path, None).
pub(crate) fn split_glob(path: &Path) -> (PathBuf, Option<String>) {
    let mut dir = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    for comp in path.components() {
        let text = comp.as_os_str().to_string_lossy();
        if !rest.is_empty() || text.contains(['*', '?', '[', '{']) {
            rest.push(text.into_owned());
        } else {
            dir.push(comp);
        }
    }
    if rest.is_empty() {
        (dir, None)
    } else {
        (dir, Some(rest.join("/")))
    }
}

/// Compiles a glob, naming `option` when it is invalid.
pub(crate) fn glob(
    pattern: &str,
    literal_separator: bool,
    option: &str,
) -> Result<(String, GlobMatcher)> {
    let g = GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .build()
        .map_err(|e| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("invalid glob '{pattern}' in option '{option}': {e}"),
            )
            .with_context("option", option)
        })?;
    Ok((pattern.to_string(), g.compile_matcher()))
}

fn path_error(path: &Path, what: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!("option 'path': {} {what}", path.display()),
    )
    .with_context("option", names::PATH)
    .with_context("path", path.display())
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_paths_split_at_the_first_glob_component() {
        let (d, g) = split_glob(Path::new("/data/in/*/x*.json"));
        assert_eq!(d, PathBuf::from("/data/in"));
        assert_eq!(g.as_deref(), Some("*/x*.json"));
        let (d, g) = split_glob(Path::new("/data/in"));
        assert_eq!(d, PathBuf::from("/data/in"));
        assert!(g.is_none());
    }

    #[test]
    fn hidden_and_temporary_names() {
        assert!(is_hidden(".part.json.crc"));
        assert!(is_hidden("_SUCCESS"));
        assert!(!is_hidden("a.json"));
    }
}
