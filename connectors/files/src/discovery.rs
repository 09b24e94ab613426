//! Discovery: listing the input through `object_store`.
//!
//! The `path` option names a directory (listed recursively), a single file, or a glob such as
//! `/data/*/part-*.json` (the part before the first glob character is the directory listed; the
//! rest is matched against each file's path relative to it, `*` not crossing `/`); the same for
//! an object-store URL's key (`s3://bucket/data/*/part-*.json`, the "directory" a key prefix).
//! `pathGlobFilter` is matched against the file name. As in Spark, hidden and temporary files
//! and directories (names starting with `.` or `_`) are skipped, and `cloudFiles.maxFileAge`
//! ignores files modified longer ago than the given age.
//!
//! A local directory is listed through a `LocalFileSystem` rooted at it and its files are named
//! by absolute path; a bucket through its client (see [`crate::store`]), its files named by URL
//! (`s3://bucket/key`). The file state, `_metadata` and offsets are the same either way. A
//! directory, bucket or prefix that does not exist is an error, never an empty listing.
//!
//! Symbolic links (local directories): the listing follows them, but a file is eligible only
//! while its resolved path (every link followed) is still under the resolved input directory.
//! A link to a directory or file elsewhere is skipped with a warning naming it (once per path
//! and source), as Auto Loader does not follow links out of the input path; a link that stays
//! inside (an alias of a subdirectory) is read like any other path. `cloudFiles.cleanSource`
//! checks the same again before it deletes or moves anything (`clean.rs`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::TryStreamExt;
use globset::GlobMatcher;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use tributary_sdk::{Error, ErrorCode, Result, SecretStore};

use crate::chunks::Listing;
use crate::config::location::split_key_glob;
use crate::config::{names, FilesConfig, SourcePath};
use crate::globs::{glob, split_glob};
use crate::state::ListedFile;
use crate::store::{access_error, Pages, StoreSpec};

/// Where and what to list.
#[derive(Debug, Clone)]
pub struct Discovery {
    spec: StoreSpec,
    store: Arc<dyn ObjectStore>,
    /// The directory listed, as text: an absolute path, or `scheme://bucket/prefix`.
    root_text: String,
    /// Cloud: `scheme://authority/` (every file path starts with it) and the listed key prefix.
    cloud: Option<(String, Option<ObjectPath>)>,
    /// Local: the canonical directory and its URL.
    local: Option<(PathBuf, url::Url)>,
    path_glob: Option<(String, GlobMatcher)>,
    name_glob: Option<(String, GlobMatcher)>,
    max_file_age: Option<Duration>,
    /// `cloudFiles.fetchParallelism` when given: listing requests (prefixes, or local walk
    /// threads) at once.
    list_parallelism: Option<usize>,
    /// The store's paginated listing (clouds), for the fanned-out listing.
    pages: Pages,
    /// Local: the paths already warned about as leaving the input directory.
    warned_outside: Arc<Mutex<HashSet<String>>>,
}

/// Per listing: whether each directory seen resolves under the input directory (one
/// `canonicalize` per directory, not per file).
pub(crate) type ResolvedDirs = HashMap<PathBuf, bool>;

/// True when `path`, every symbolic link followed, is under `root` (canonical). A path that
/// cannot be resolved (gone, a broken link) is not under it.
pub(crate) fn resolves_under(root: &Path, path: &Path) -> bool {
    path.canonicalize().is_ok_and(|p| p.starts_with(root))
}

impl Discovery {
    /// Resolves the configured path against its store: a local directory must exist; a bucket
    /// and prefix must exist (checked with one listing call, credentials included).
    ///
    /// `resuming`: the checkpoint already tracks files. A prefix with no object is then empty
    /// (cleanSource may have moved every file away), not a wrong path.
    pub fn new(
        config: &FilesConfig,
        secrets: &dyn SecretStore,
        resuming: bool,
    ) -> Result<Discovery> {
        let name_glob = config
            .path_glob_filter
            .as_deref()
            .map(|g| glob(g, false, names::PATH_GLOB_FILTER))
            .transpose()?;
        match &config.path {
            SourcePath::Local(path) => Self::local(
                path,
                name_glob,
                config.max_file_age,
                config.queue.fetch_parallelism,
            ),
            SourcePath::Cloud(c) => {
                let spec = StoreSpec::cloud(c, &config.cloud, secrets)?;
                let client = spec.connect()?;
                let (dir, pattern) = split_key_glob(&c.key);
                let path_glob = pattern.map(|p| glob(&p, true, names::PATH)).transpose()?;
                let root_url = format!("{}/", c.root_url());
                let mut d = Discovery {
                    store: client.store,
                    pages: client.pages,
                    list_parallelism: config.queue.fetch_parallelism,
                    spec,
                    root_text: c.to_string(),
                    cloud: Some((
                        root_url,
                        (!dir.is_empty()).then(|| ObjectPath::from(dir.as_str())),
                    )),
                    local: None,
                    path_glob,
                    name_glob,
                    max_file_age: config.max_file_age,
                    warned_outside: Arc::default(),
                };
                let probe = d.fresh()?;
                if let Some(single) =
                    crate::blocking::run_io(async move { probe.probe(resuming).await })?
                {
                    d.cloud = Some((format!("{}/", c.root_url()), single.0));
                    d.path_glob = Some(glob(&single.1, true, names::PATH)?);
                }
                Ok(d)
            }
        }
    }

    fn local(
        path: &Path,
        name_glob: Option<(String, GlobMatcher)>,
        max_file_age: Option<Duration>,
        list_parallelism: Option<usize>,
    ) -> Result<Discovery> {
        let path = path.to_path_buf();
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
        let spec = StoreSpec::Local(root.clone());
        let root_url = url::Url::from_directory_path(&root)
            .map_err(|_| path_error(&root, "cannot be expressed as a file URL"))?;
        Ok(Discovery {
            store: spec.build()?,
            pages: Pages::default(),
            list_parallelism,
            spec,
            root_text: root.display().to_string(),
            cloud: None,
            local: Some((root, root_url)),
            path_glob,
            name_glob,
            max_file_age,
            warned_outside: Arc::default(),
        })
    }

    /// A copy with a new client of the same store, for I/O on another runtime (the build
    /// step's own thread): HTTP connections belong to the runtime that opened them.
    pub fn fresh(&self) -> Result<Discovery> {
        let mut d = self.clone();
        let client = self.spec.connect()?;
        d.store = client.store;
        d.pages = client.pages;
        Ok(d)
    }

    /// Cloud: checks that the bucket and prefix exist. Returns `Some((parent prefix, escaped
    /// name))` when the key names a single object rather than a prefix.
    async fn probe(&self, resuming: bool) -> Result<Option<(Option<ObjectPath>, String)>> {
        let Some((_, prefix)) = &self.cloud else {
            return Ok(None);
        };
        let mut listing = self.store.list(prefix.as_ref());
        let first = listing
            .try_next()
            .await
            .map_err(|e| access_error(&self.spec, &self.root_text, e))?;
        if first.is_some() {
            return Ok(None);
        }
        let Some(prefix) = prefix else {
            return Ok(None); // an empty bucket that exists
        };
        if self.path_glob.is_none() {
            match self.store.head(prefix).await {
                Ok(_) => {
                    let key = prefix.as_ref();
                    let (parent, name) = key.rsplit_once('/').unwrap_or(("", key));
                    let parent = (!parent.is_empty()).then(|| ObjectPath::from(parent));
                    return Ok(Some((parent, globset::escape(name))));
                }
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(access_error(&self.spec, &self.root_text, e)),
            }
        }
        if resuming {
            return Ok(None);
        }
        Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option 'path': {} does not exist (no object under this prefix; the bucket exists)",
                self.root_text
            ),
        )
        .with_context("option", names::PATH)
        .with_context("path", &self.root_text))
    }

    /// The directory listed (absolute path or URL), for messages.
    pub fn root_text(&self) -> &str {
        &self.root_text
    }

    /// The canonical local directory listed (`None` for an object store).
    pub fn local_root(&self) -> Option<&Path> {
        self.local.as_ref().map(|(p, _)| p.as_path())
    }

    /// Cloud: `location`'s key relative to the listed prefix (its name when it is not under it).
    pub fn relative_key<'a>(&self, location: &'a ObjectPath) -> &'a str {
        let key = location.as_ref();
        match self.cloud.as_ref().and_then(|(_, p)| p.as_ref()) {
            Some(p) => key
                .strip_prefix(p.as_ref())
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or_else(|| key.rsplit('/').next().unwrap_or(key)),
            None => key,
        }
    }

    /// `cloudFiles.maxFileAge` in milliseconds.
    pub fn max_file_age_ms(&self) -> Option<i64> {
        self.max_file_age.map(|a| a.as_millis() as i64)
    }

    /// The store's configuration (credentials for the notification queue).
    pub(crate) fn spec(&self) -> &StoreSpec {
        &self.spec
    }

    /// The store the files are read from.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The directory listed and the path glob, for messages (the checkpoint identity is
    /// [`FilesConfig::target`], computed without touching the store).
    pub fn target(&self) -> String {
        let mut t = self.root_text.clone();
        if let Some((g, _)) = &self.path_glob {
            t.push('/');
            t.push_str(g);
        }
        t
    }

    /// The location in the store of a file path produced by [`Discovery::list`].
    pub fn location(&self, absolute: &str) -> Result<ObjectPath> {
        let outside = || {
            Error::new(
                ErrorCode::Checkpoint,
                format!(
                    "file {absolute} from the file state is not under {}",
                    self.root_text
                ),
            )
            .with_context("file", absolute)
        };
        if let Some((root_url, _)) = &self.cloud {
            let key = absolute
                .strip_prefix(root_url.as_str())
                .ok_or_else(outside)?;
            return ObjectPath::parse(key).map_err(|e| outside().with_cause(e));
        }
        let Some((_, root_url)) = &self.local else {
            return Err(outside());
        };
        let file_url = url::Url::from_file_path(absolute).map_err(|_| outside())?;
        let rel = file_url
            .path()
            .strip_prefix(root_url.path())
            .ok_or_else(outside)?;
        ObjectPath::from_url_path(rel).map_err(|e| outside().with_cause(e))
    }

    /// The path of `absolute` (a path from [`Discovery::list`]) below the listed directory,
    /// `/` separated; `None` when it is not under it.
    pub fn relative_path(&self, absolute: &str) -> Option<String> {
        let key = self.location(absolute).ok()?.to_string();
        match &self.cloud {
            Some((_, Some(dir))) => key
                .strip_prefix(dir.as_ref())
                .and_then(|k| k.strip_prefix('/'))
                .map(str::to_string),
            _ => Some(key),
        }
    }

    /// Lists every eligible file now.
    pub async fn list(&self) -> Result<Vec<ListedFile>> {
        self.listing(None, None).collect().await
    }

    /// Starts listing the eligible files, in chunks; with `after`, only keys lexically after
    /// it (object stores list in key order, so this is the `start_after` listing of
    /// incremental mode). A local directory is walked in path order on
    /// [`crate::walk::workers`] threads. With `newest_ms` (local only), files modified later
    /// are left out: an available-now run's snapshot ([`snapshot_time`]).
    pub fn listing(&self, after: Option<&ObjectPath>, newest_ms: Option<i64>) -> Listing {
        let oldest_ms = self
            .max_file_age
            .map(|age| now_ms() - age.as_millis() as i64);
        let (tx, rx) = crate::chunks::channel();
        if let Some((root, _)) = &self.local {
            crate::walk::spawn(
                self.clone(),
                root.clone(),
                after.map(|a| a.to_string()),
                (oldest_ms, newest_ms),
                self.list_parallelism.unwrap_or_else(crate::walk::workers),
                tx,
            );
            return Listing::threaded(rx);
        }
        let d = self.clone();
        let after = after.cloned();
        Listing::task(rx, async move {
            if let Err(e) = d.list_cloud(after.as_ref(), oldest_ms, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        })
    }

    /// An object store's listing, sent in chunks of [`crate::walk::CHUNK`] in key order.
    async fn list_cloud(
        &self,
        after: Option<&ObjectPath>,
        oldest_ms: Option<i64>,
        tx: &tokio::sync::mpsc::Sender<crate::chunks::Chunk>,
    ) -> Result<()> {
        let prefix = self.cloud.as_ref().and_then(|(_, p)| p.as_ref());
        let mut dirs = ResolvedDirs::new();
        let parallelism = self.list_parallelism.unwrap_or(1);
        // Full listings fan out (on a runtime, which runs the sub-prefixes' tasks).
        let fanned = self.pages.0.as_ref().filter(|_| {
            after.is_none() && parallelism > 1 && tokio::runtime::Handle::try_current().is_ok()
        });
        let mut stream = match (fanned, after) {
            (Some(pages), _) => crate::prefixes::list(
                Arc::clone(&self.store),
                Arc::clone(pages),
                prefix.cloned(),
                parallelism,
                is_hidden,
            ),
            (None, Some(after)) => self.store.list_with_offset(prefix, after),
            (None, None) => self.store.list(prefix),
        };
        let mut chunk = Vec::with_capacity(crate::walk::CHUNK);
        while let Some(meta) = stream
            .try_next()
            .await
            .map_err(|e| access_error(&self.spec, &self.root_text, e))?
        {
            if let Some(file) = self.eligible_in(&meta, oldest_ms, &mut dirs)? {
                chunk.push(file);
                if chunk.len() >= crate::walk::CHUNK {
                    let full =
                        std::mem::replace(&mut chunk, Vec::with_capacity(crate::walk::CHUNK));
                    if tx.send(Ok(full)).await.is_err() {
                        return Ok(()); // nobody listens any more
                    }
                }
            }
        }
        if !chunk.is_empty() {
            let _ = tx.send(Ok(chunk)).await;
        }
        Ok(())
    }

    /// The listed file for `meta`, or `None` when a filter excludes it (or, local, when it
    /// resolves outside the input directory).
    pub fn eligible(
        &self,
        meta: &ObjectMeta,
        oldest_ms: Option<i64>,
    ) -> Result<Option<ListedFile>> {
        self.eligible_in(meta, oldest_ms, &mut ResolvedDirs::new())
    }

    /// [`Discovery::eligible`] with the directories of this listing resolved once.
    fn eligible_in(
        &self,
        meta: &ObjectMeta,
        oldest_ms: Option<i64>,
        dirs: &mut ResolvedDirs,
    ) -> Result<Option<ListedFile>> {
        let rel_path = match self.relative(meta)? {
            Some(rel) => rel,
            None => return Ok(None),
        };
        let rel_path = rel_path.as_ref();
        if rel_path.split('/').any(is_hidden) {
            return Ok(None);
        }
        let mtime = meta.last_modified.timestamp_millis();
        let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
        if !self.accepts(rel_path, name, mtime, oldest_ms) {
            return Ok(None);
        }
        let path = match &self.cloud {
            Some((root_url, _)) => format!("{root_url}{}", meta.location),
            None => format!("{}/{rel_path}", self.root_text),
        };
        if !self.inside_root(Path::new(&path), dirs) {
            return Ok(None);
        }
        Ok(Some(ListedFile {
            path,
            size: meta.size,
            modification_time_ms: mtime,
        }))
    }

    /// True when the globs (`path`'s pattern on `rel_path`, `pathGlobFilter` on `name`) and
    /// `cloudFiles.maxFileAge` (files modified before `oldest_ms`) let a file through.
    pub(crate) fn accepts(
        &self,
        rel_path: &str,
        name: &str,
        mtime_ms: i64,
        oldest_ms: Option<i64>,
    ) -> bool {
        if self
            .path_glob
            .as_ref()
            .is_some_and(|(_, g)| !g.is_match(rel_path))
        {
            return false;
        }
        if self
            .name_glob
            .as_ref()
            .is_some_and(|(_, g)| !g.is_match(name))
        {
            return false;
        }
        oldest_ms.is_none_or(|oldest| mtime_ms >= oldest)
    }

    /// Local: `path` resolves under the input directory (its directory resolved once per
    /// listing; the file itself only when it is a link). Warns once per path when it does not.
    /// Object stores have no links: always true.
    fn inside_root(&self, path: &Path, dirs: &mut ResolvedDirs) -> bool {
        let Some((root, _)) = &self.local else {
            return true;
        };
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let inside = if is_link {
            resolves_under(root, path)
        } else {
            match path.parent() {
                Some(dir) => *dirs
                    .entry(dir.to_path_buf())
                    .or_insert_with(|| resolves_under(root, dir)),
                None => false,
            }
        };
        if !inside {
            self.warn_outside(root, path);
        }
        inside
    }

    /// Warns, once per path and source, that `path` is skipped because its link leads out of
    /// the input directory `root`.
    pub(crate) fn warn_outside(&self, root: &Path, path: &Path) {
        if self.first_warning(path) {
            let resolved = path.canonicalize().map(|p| p.display().to_string());
            tracing::warn!(
                path = %path.display(),
                resolved = %resolved.unwrap_or_else(|e| format!("unresolvable: {e}")),
                root = %root.display(),
                "skipping a file whose symbolic link leads out of the input directory"
            );
        }
    }

    /// Warns `what`, once per path and source.
    pub(crate) fn warn_once(&self, path: &Path, what: &str) {
        if self.first_warning(path) {
            tracing::warn!(path = %path.display(), "{what}");
        }
    }

    fn first_warning(&self, path: &Path) -> bool {
        self.warned_outside
            .lock()
            .map(|mut w| w.insert(path.display().to_string()))
            .unwrap_or(true)
    }

    /// `meta`'s path relative to the listed directory.
    fn relative<'a>(&self, meta: &'a ObjectMeta) -> Result<Option<std::borrow::Cow<'a, str>>> {
        let location = meta.location.as_ref();
        if let Some((_, prefix)) = &self.cloud {
            let rel = match prefix {
                Some(p) => match location
                    .strip_prefix(p.as_ref())
                    .and_then(|r| r.strip_prefix('/'))
                {
                    Some(rel) => rel,
                    None => return Ok(None),
                },
                None => location,
            };
            return Ok(Some(rel.into()));
        }
        // Local: the few names object_store had to percent-encode are decoded through the file
        // system mapping.
        if !location.contains('%') {
            return Ok(Some(location.into()));
        }
        let Some((root, _)) = &self.local else {
            return Ok(None);
        };
        let local = object_store::local::LocalFileSystem::new_with_prefix(root).map_err(|e| {
            Error::new(
                ErrorCode::SourceRead,
                format!("cannot open {}", root.display()),
            )
            .with_cause(e)
        })?;
        let absolute = local.path_to_filesystem(&meta.location).map_err(|e| {
            Error::new(
                ErrorCode::SourceRead,
                format!("cannot map {} to a file", meta.location),
            )
            .with_cause(e)
        })?;
        Ok(absolute
            .strip_prefix(root)
            .ok()
            .map(|rel| rel.to_string_lossy().into_owned().into()))
    }
}

/// Hidden or temporary names, skipped as Spark does.
pub(crate) fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
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
/// The time of an available-now run's snapshot, in milliseconds: a local file modified at or
/// before it existed when the run started, one modified after it did not. Returns once the
/// kernel's coarse clock, which stamps file modification times, has passed it, so a file
/// written after this returns is always newer (file times lag the precise clock by up to a
/// tick).
pub fn snapshot_time() -> i64 {
    let t0 = now_ms();
    for _ in 0..1000 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec for the call to fill.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        if rc != 0 {
            std::thread::sleep(Duration::from_millis(20));
            break;
        }
        let coarse_ms = ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000;
        if coarse_ms > t0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    t0
}

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
