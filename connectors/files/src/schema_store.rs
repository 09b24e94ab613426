//! Where an inferred schema and its evolution are kept: the checkpoint's state directory
//! (`schema.json`, replaced at each evolution), or `cloudFiles.schemaLocation` as in Auto
//! Loader: one file per version, `<schemaLocation>/_schemas/0`, `1`, ..., never rewritten.
//!
//! In a schema location a version is published atomically and exactly once: its text is
//! written to a temporary file and synced, then hard-linked to the version's name, which fails
//! if that name exists. So streams sharing a location never overwrite each other: the first to
//! infer writes version 0 and the others adopt it; an evolution writes the next number, and if
//! another stream took that number first, the new columns are merged into its version and the
//! next number is tried. A reader takes the highest number. On an object store
//! (`s3://`, `gs://`, `abfss://`, with the source's credentials) a version is one PUT with
//! `If-None-Match: *` (object_store's `PutMode::Create`), which the store refuses when the
//! name exists: the same exactly-once publication. Version files hold this crate's JSON
//! (format, Arrow schema, partition column names), not Databricks' format.

use std::path::{Path, PathBuf};

use arrow_schema::Schema;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Result, SecretStore};

use crate::blocking::run_io;
use crate::config::{names, CloudOptions, Format, SourcePath};
use crate::store::StoreSpec;

/// The schema file inside the state directory.
pub const SCHEMA_FILE: &str = "schema.json";
/// The versions' directory inside a schema location.
pub const SCHEMAS_DIR: &str = "_schemas";

/// One stored schema.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StoredSchema {
    pub version: u32,
    pub format: String,
    /// Every column: the file's, then the partition columns.
    pub schema: Schema,
    /// The partition columns (`cloudFiles.partitionColumns` or discovered).
    #[serde(default)]
    pub partition_columns: Vec<String>,
}

/// Where the schema is kept.
#[derive(Debug, Clone)]
pub(crate) enum SchemaStore {
    /// `schema.json` in the checkpoint's state directory.
    Checkpoint(PathBuf),
    /// Versions under `cloudFiles.schemaLocation`.
    Location(PathBuf),
    /// Versions under an object-store `cloudFiles.schemaLocation`.
    Remote(Box<Remote>),
}

/// A schema location on an object store.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    spec: StoreSpec,
    /// `<key>/_schemas`.
    dir: ObjectPath,
    /// The location as written (for messages).
    url: String,
}

impl SchemaStore {
    /// The schema location when given (an object store's with the source's credentials),
    /// else the state directory (none: nothing is kept).
    pub fn new(
        location: Option<&SourcePath>,
        state_dir: Option<&Path>,
        cloud: &CloudOptions,
        secrets: &dyn SecretStore,
    ) -> Result<Option<SchemaStore>> {
        Ok(match (location, state_dir) {
            (Some(SourcePath::Local(l)), _) => Some(SchemaStore::Location(l.clone())),
            (Some(SourcePath::Cloud(c)), _) => {
                let key = c.key.trim_matches('/');
                let dir = if key.is_empty() {
                    SCHEMAS_DIR.to_string()
                } else {
                    format!("{key}/{SCHEMAS_DIR}")
                };
                Some(SchemaStore::Remote(Box::new(Remote {
                    spec: StoreSpec::cloud(c, cloud, secrets)?,
                    dir: ObjectPath::from(dir),
                    url: c.to_string(),
                })))
            }
            (None, Some(d)) => Some(SchemaStore::Checkpoint(d.to_path_buf())),
            (None, None) => None,
        })
    }

    /// A schema location that holds no version yet starts from the checkpoint's own stored
    /// schema, if it has one (a stream that had no `cloudFiles.schemaLocation` before): the
    /// restart keeps its schema instead of inferring a new one.
    pub fn adopt_checkpoint(&self, state_dir: Option<&Path>) -> Result<()> {
        let (Some(dir), SchemaStore::Location(_) | SchemaStore::Remote(_)) = (state_dir, self)
        else {
            return Ok(());
        };
        if self.load()?.is_some() {
            return Ok(());
        }
        if let Some(old) = read(&dir.join(SCHEMA_FILE))? {
            let format = Format::from_word(Some(&old.format.to_ascii_lowercase()));
            self.store_initial(format, &old.schema, &old.partition_columns)?;
        }
        Ok(())
    }

    /// Where the newest version is (for messages).
    pub fn describe(&self) -> String {
        match self {
            SchemaStore::Checkpoint(d) => d.join(SCHEMA_FILE).display().to_string(),
            SchemaStore::Location(l) => match newest(&l.join(SCHEMAS_DIR)) {
                Ok(Some(n)) => l
                    .join(SCHEMAS_DIR)
                    .join(n.to_string())
                    .display()
                    .to_string(),
                _ => l.join(SCHEMAS_DIR).display().to_string(),
            },
            SchemaStore::Remote(r) => match r.newest() {
                Ok(Some(n)) => format!("{}/{SCHEMAS_DIR}/{n}", r.url),
                _ => format!("{}/{SCHEMAS_DIR}", r.url),
            },
        }
    }

    /// The newest stored schema, if any.
    pub fn load(&self) -> Result<Option<StoredSchema>> {
        match self {
            SchemaStore::Checkpoint(d) => read(&d.join(SCHEMA_FILE)),
            SchemaStore::Location(l) => {
                let dir = l.join(SCHEMAS_DIR);
                match newest(&dir)? {
                    Some(n) => read(&dir.join(n.to_string())),
                    None => Ok(None),
                }
            }
            SchemaStore::Remote(r) => match r.newest()? {
                Some(n) => r.read(n),
                None => Ok(None),
            },
        }
    }

    /// Stores the first (inferred) schema and returns the schema to use: in a location where
    /// another stream stored one first, that one.
    pub fn store_initial(
        &self,
        format: Format,
        schema: &Schema,
        partitions: &[String],
    ) -> Result<StoredSchema> {
        let stored = stored(0, format, schema, partitions);
        match self {
            SchemaStore::Checkpoint(d) => {
                write_replacing(d, &stored)?;
                Ok(stored)
            }
            SchemaStore::Location(l) => {
                if publish(l, 0, &stored)? {
                    return Ok(stored);
                }
                self.load()?
                    .ok_or_else(|| location_error(l, "version 0 vanished", None))
            }
            SchemaStore::Remote(r) => {
                if r.publish(0, &stored)? {
                    return Ok(stored);
                }
                self.load()?
                    .ok_or_else(|| r.error("version 0 vanished", None::<std::io::Error>))
            }
        }
    }

    /// Stores an evolved schema as the next version; in a location, `schema` is merged into
    /// the newest version first (another stream may have evolved it). Returns where.
    pub fn store_evolved(
        &self,
        format: Format,
        schema: &Schema,
        partitions: &[String],
    ) -> Result<String> {
        match self {
            SchemaStore::Checkpoint(d) => {
                write_replacing(d, &stored(0, format, schema, partitions))?;
                Ok(self.describe())
            }
            SchemaStore::Location(_) | SchemaStore::Remote(_) => loop {
                // Built on the newest version, which another stream may have written since
                // this one started.
                let (next, merged) = match (self.newest()?, self.load()?) {
                    (Some(n), Some(theirs)) => (
                        n + 1,
                        Schema::try_merge([theirs.schema, schema.clone()]).map_err(|e| {
                            Error::new(
                                ErrorCode::Checkpoint,
                                format!(
                                    "schema location {} ({}): the newest stored schema does \
                                     not merge with this stream's",
                                    self.describe(),
                                    names::SCHEMA_LOCATION
                                ),
                            )
                            .with_context("option", names::SCHEMA_LOCATION)
                            .with_cause(e)
                        })?,
                    ),
                    _ => (0, schema.clone()),
                };
                let version = stored(next, format, &merged, partitions);
                let published = match self {
                    SchemaStore::Remote(r) => r.publish(next, &version)?,
                    SchemaStore::Location(l) => publish(l, next, &version)?,
                    SchemaStore::Checkpoint(_) => true,
                };
                if published {
                    return Ok(self.describe());
                }
            },
        }
    }

    /// The newest version number of a schema location.
    fn newest(&self) -> Result<Option<u32>> {
        match self {
            SchemaStore::Checkpoint(_) => Ok(None),
            SchemaStore::Location(l) => newest(&l.join(SCHEMAS_DIR)),
            SchemaStore::Remote(r) => r.newest(),
        }
    }
}

impl Remote {
    fn error(
        &self,
        what: &str,
        cause: Option<impl std::error::Error + Send + Sync + 'static>,
    ) -> Error {
        let e = Error::new(
            ErrorCode::Checkpoint,
            format!(
                "schema location {} ({}): {what}",
                self.url,
                names::SCHEMA_LOCATION
            ),
        )
        .with_context("path", &self.url)
        .with_context("option", names::SCHEMA_LOCATION);
        match cause {
            Some(c) => e.with_cause(c),
            None => e,
        }
    }

    /// A client made for one `run_io` (connections belong to the runtime that opened them).
    fn store(&self) -> Result<std::sync::Arc<dyn ObjectStore>> {
        self.spec.build()
    }

    fn newest(&self) -> Result<Option<u32>> {
        let store = self.store()?;
        let listed = run_io(async {
            store
                .list_with_delimiter(Some(&self.dir))
                .await
                .map_err(|e| self.error("cannot list the versions", Some(e)))
        })?;
        Ok(listed
            .objects
            .iter()
            .filter_map(|o| o.location.filename().and_then(|n| n.parse::<u32>().ok()))
            .max())
    }

    fn read(&self, n: u32) -> Result<Option<StoredSchema>> {
        let store = self.store()?;
        let path = self.dir.clone().join(n.to_string());
        let bytes = run_io(async {
            match store.get(&path).await {
                Ok(r) => r
                    .bytes()
                    .await
                    .map(Some)
                    .map_err(|e| self.error(&format!("cannot read version {n}"), Some(e))),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(self.error(&format!("cannot read version {n}"), Some(e))),
            }
        })?;
        bytes
            .map(|b| {
                serde_json::from_slice(&b).map_err(|e| {
                    self.error(&format!("version {n} is not a stored schema"), Some(e))
                })
            })
            .transpose()
    }

    /// Creates version `n`; false when it exists.
    fn publish(&self, n: u32, stored: &StoredSchema) -> Result<bool> {
        let store = self.store()?;
        let path = self.dir.clone().join(n.to_string());
        let payload = PutPayload::from(text(stored)?);
        run_io(async {
            let opts = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            match store.put_opts(&path, payload, opts).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
                Err(e) => Err(self.error(&format!("cannot write version {n}"), Some(e))),
            }
        })
    }
}

fn stored(version: u32, format: Format, schema: &Schema, partitions: &[String]) -> StoredSchema {
    StoredSchema {
        version,
        format: format.as_str().into(),
        schema: schema.clone(),
        partition_columns: partitions.to_vec(),
    }
}

fn location_error(l: &Path, what: &str, cause: Option<arrow_schema::ArrowError>) -> Error {
    let e = Error::new(
        ErrorCode::Checkpoint,
        format!(
            "schema location {} ({}): {what}",
            l.display(),
            names::SCHEMA_LOCATION
        ),
    )
    .with_context("path", l.display())
    .with_context("option", names::SCHEMA_LOCATION);
    match cause {
        Some(c) => e.with_cause(c),
        None => e,
    }
}

/// The highest version number in `dir` (`None`: no version, or no directory).
fn newest(dir: &Path) -> Result<Option<u32>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(dir, "read", e)),
    };
    let mut best = None;
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, "read", e))?;
        if let Some(n) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        {
            best = best.max(Some(n));
        }
    }
    Ok(best)
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::new(
        ErrorCode::Checkpoint,
        format!("cannot {what} {}", path.display()),
    )
    .with_context("path", path.display())
    .with_cause(e)
}

fn read(path: &Path) -> Result<Option<StoredSchema>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, "read", e)),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Error::new(
            ErrorCode::Checkpoint,
            format!("{} is not a stored schema", path.display()),
        )
        .with_context("path", path.display())
        .with_cause(e)
    })
}

fn text(stored: &StoredSchema) -> Result<String> {
    serde_json::to_string_pretty(stored)
        .map_err(|e| Error::new(ErrorCode::Internal, "cannot serialise the schema").with_cause(e))
}

/// Writes `file`'s text to a temporary file in `dir` and syncs it.
fn write_temp(dir: &Path, stem: &str, content: &str) -> Result<PathBuf> {
    use std::io::Write;
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, "create", e))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tmp = dir.join(format!(".{stem}.{}.{nanos}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(|e| io_error(&tmp, "write", e))?;
    f.write_all(content.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_error(&tmp, "write", e))?;
    Ok(tmp)
}

/// `schema.json` replaced atomically: temp file, fsync, rename.
fn write_replacing(dir: &Path, stored: &StoredSchema) -> Result<()> {
    let tmp = write_temp(dir, SCHEMA_FILE, &text(stored)?)?;
    let path = dir.join(SCHEMA_FILE);
    std::fs::rename(&tmp, &path).map_err(|e| io_error(&path, "write", e))
}

/// Publishes version `n` under `location`; false when that version exists already.
fn publish(location: &Path, n: u32, stored: &StoredSchema) -> Result<bool> {
    let dir = location.join(SCHEMAS_DIR);
    let tmp = write_temp(&dir, &n.to_string(), &text(stored)?)?;
    let target = dir.join(n.to_string());
    // A hard link to an existing name fails: the version is created once, whole.
    let linked = std::fs::hard_link(&tmp, &target);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            if let Ok(d) = std::fs::File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_error(&target, "write", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    #[test]
    fn versions_are_published_once_and_the_newest_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = SchemaStore::Location(dir.path().to_path_buf());
        let a = Schema::new(vec![Field::new("a", DataType::Utf8, true)]);
        let b = Schema::new(vec![Field::new("b", DataType::Utf8, true)]);
        assert!(store.load().unwrap().is_none());
        let first = store.store_initial(Format::Json, &a, &[]).unwrap();
        assert_eq!(first.schema, a);
        // A second stream inferring something else adopts version 0.
        let adopted = store.store_initial(Format::Json, &b, &[]).unwrap();
        assert_eq!(adopted.schema, a);
        let at = store
            .store_evolved(
                Format::Json,
                &Schema::try_merge([a.clone(), b.clone()]).unwrap(),
                &[],
            )
            .unwrap();
        assert!(at.ends_with("_schemas/1"), "{at}");
        let newest = store.load().unwrap().unwrap();
        assert_eq!(newest.version, 1);
        assert_eq!(newest.schema.fields().len(), 2);
        let names: Vec<_> = std::fs::read_dir(dir.path().join(SCHEMAS_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file is left: {names:?}");
    }
}
