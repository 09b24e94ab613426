//! The embedded stream catalog: a directory holding one JSON entry per stream, the ingestion
//! tables (the warehouse) and the streams' pipeline checkpoints.
//!
//! ```text
//! <root>/streams/<catalog>/<schema>/<stream>.json    the entry: spec, id, creation time, backfill state
//! <root>/warehouse/<catalog>/<schema>/<table>/       ingestion (Delta) tables by name
//! <root>/checkpoints/<catalog>/<schema>/<stream>/    the ingestion pipeline's checkpoint
//! ```
//!
//! The root is `--catalog-root`, else `TRIBUTARY_CATALOG`, else `$XDG_DATA_HOME/tributary`
//! (`~/.local/share/tributary`). An entry is created atomically and only once (written to a
//! temporary file, then hard-linked to its name, which fails if the stream exists); updates are
//! written to a temporary file and renamed. The catalog stores secret references, never secrets.

use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Result};

use super::backfill::BackfillStatus;
use super::name::ThreePartName;
use super::spec::{looks_like_location, StreamSpec};
use crate::checkpoint::write_atomic;

/// The entry format version.
pub const ENTRY_FORMAT: u32 = 1;

/// A stream as the catalog stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamEntry {
    /// Entry format version.
    pub format: u32,
    /// Unique id (checkpoint and MERGE transaction ids derive from it).
    pub id: String,
    /// `catalog.schema.stream`, lower case.
    pub name: String,
    /// Creation time (RFC 3339, UTC); the forward pipeline starts at this time.
    pub created_at: String,
    /// The spec as created (secret references only).
    pub spec: StreamSpec,
    /// The backfill state.
    pub backfill: BackfillStatus,
}

impl StreamEntry {
    /// The creation time.
    pub fn created(&self) -> Result<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.created_at)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("stream '{}' has a bad creation time", self.name),
                )
                .with_cause(e)
            })
    }
}

/// `list`: filters and paging.
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    /// Only streams of this catalog.
    pub catalog: Option<String>,
    /// Only streams of this schema.
    pub schema: Option<String>,
    /// At most this many streams (by name order).
    pub max_results: Option<usize>,
    /// Include the key and payload schemas (omitted by default, as the reference does).
    pub include_schemas: bool,
}

/// What `delete` removes (or would remove without `confirm`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeletePlan {
    /// The stream.
    pub stream: String,
    /// The catalog entry file.
    pub entry: PathBuf,
    /// The ingestion pipeline's checkpoint directory.
    pub checkpoint: PathBuf,
    /// The ingestion table directory.
    pub table: PathBuf,
    /// True when it was deleted.
    pub deleted: bool,
}

/// The embedded catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    root: PathBuf,
}

fn io(what: String, path: &Path, e: std::io::Error) -> Error {
    Error::new(ErrorCode::Io, format!("cannot {what} {}", path.display()))
        .with_context("path", path.display())
        .with_cause(e)
}

fn not_found(name: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "no stream named '{name}' in the catalog (tributary streams list shows the streams)"
        ),
    )
    .with_context("stream", name)
}

impl Catalog {
    /// The default root: `TRIBUTARY_CATALOG`, else `$XDG_DATA_HOME/tributary`, else
    /// `~/.local/share/tributary`.
    pub fn default_root() -> PathBuf {
        if let Some(p) = std::env::var_os("TRIBUTARY_CATALOG").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        if let Some(p) = std::env::var_os("XDG_DATA_HOME").filter(|p| !p.is_empty()) {
            return PathBuf::from(p).join("tributary");
        }
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        home.join(".local").join("share").join("tributary")
    }

    /// Opens (creating if needed) the catalog at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Catalog> {
        let root = root.into();
        for dir in ["streams", "warehouse", "checkpoints"] {
            let d = root.join(dir);
            std::fs::create_dir_all(&d)
                .map_err(|e| io("create the catalog directory".into(), &d, e))?;
        }
        Ok(Catalog { root })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where tables live.
    pub fn warehouse(&self) -> PathBuf {
        self.root.join("warehouse")
    }

    /// The directory of a table name.
    pub fn table_path(&self, table: &ThreePartName) -> PathBuf {
        table.path_under(&self.warehouse())
    }

    /// The location of a backfill source: a table name under the warehouse, or a path/URL as is.
    pub fn backfill_location(&self, source: &str) -> Result<String> {
        if looks_like_location(source) {
            return Ok(source.to_string());
        }
        let name = ThreePartName::parse(source, "option 'ingestion.backfill_source'")?;
        Ok(self.table_path(&name).display().to_string())
    }

    /// The checkpoint directory of a stream's ingestion pipeline.
    pub fn checkpoint_path(&self, stream: &ThreePartName) -> PathBuf {
        stream.path_under(&self.root.join("checkpoints"))
    }

    fn entry_path(&self, stream: &ThreePartName) -> PathBuf {
        let mut p = stream.path_under(&self.root.join("streams"));
        p.set_extension("json");
        p
    }

    /// A new entry for `spec`, created at `created_at` (nothing checked or stored yet; see
    /// `Catalog::create` in `create.rs`).
    pub(super) fn new_entry(
        &self,
        spec: StreamSpec,
        created_at: DateTime<Utc>,
    ) -> Result<StreamEntry> {
        let name = spec.stream_name()?;
        Ok(StreamEntry {
            format: ENTRY_FORMAT,
            id: new_id(),
            name: name.to_string(),
            created_at: created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            backfill: BackfillStatus::initial(spec.ingestion.backfill_source.is_some()),
            spec,
        })
    }

    /// Stores a checked entry: refused when the stream exists or another stream has its table.
    pub(super) fn insert(&self, entry: StreamEntry) -> Result<StreamEntry> {
        let name = entry.spec.stream_name()?;
        let table = entry.spec.table_name()?;
        let path = self.entry_path(&name);
        if path.exists() {
            return Err(exists(&name));
        }
        if let Some(other) = self
            .list(&ListRequest::default())?
            .into_iter()
            .find(|e| e.spec.table_name().map(|t| t == table).unwrap_or(false))
        {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!("option 'ingestion.table': table '{table}' is already the ingestion table of stream '{}'", other.name),
            )
            .with_context("option", "ingestion.table"));
        }
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| io("create".into(), &dir, e))?;
        let tmp = dir.join(format!(".{}.{}.tmp", name.name, entry.id));
        let bytes = serde_json::to_vec_pretty(&entry).map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot serialise the stream entry").with_cause(e)
        })?;
        write_atomic(&tmp, &bytes)?;
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(entry),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(exists(&name)),
            Err(e) => Err(io("create".into(), &path, e)),
        }
    }

    /// The stream called `name`.
    pub fn get(&self, name: &str) -> Result<StreamEntry> {
        let n = ThreePartName::parse(name, "stream name")?;
        let path = self.entry_path(&n);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_found(&n.to_string()))
            }
            Err(e) => return Err(io("read".into(), &path, e)),
        };
        let entry: StreamEntry = serde_json::from_slice(&bytes).map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("the catalog entry {} is damaged", path.display()),
            )
            .with_cause(e)
        })?;
        if entry.format != ENTRY_FORMAT {
            return Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "the catalog entry {} has format {}, this build reads {ENTRY_FORMAT}",
                    path.display(),
                    entry.format
                ),
            ));
        }
        // The entry must be the one for the name asked for: an entry copied or edited under
        // another stream's file name would otherwise let `delete` remove that other stream.
        let recorded = ThreePartName::parse(&entry.name, "stream name").map_err(|_| {
            damaged(
                &path,
                &format!("records an invalid stream name '{}'", entry.name),
            )
        })?;
        if recorded.to_string() != n.to_string() {
            return Err(damaged(
                &path,
                &format!("records stream '{recorded}', not '{n}'"),
            ));
        }
        Ok(entry)
    }

    /// Replaces a stream's entry (the backfill state); the id must match.
    pub fn update(&self, entry: &StreamEntry) -> Result<()> {
        let current = self.get(&entry.name)?;
        if current.id != entry.id {
            return Err(not_found(&entry.name));
        }
        let n = ThreePartName::parse(&entry.name, "stream name")?;
        let bytes = serde_json::to_vec_pretty(entry).map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot serialise the stream entry").with_cause(e)
        })?;
        write_atomic(&self.entry_path(&n), &bytes)
    }

    /// Streams by name, filtered; schemas left out unless `include_schemas`.
    pub fn list(&self, req: &ListRequest) -> Result<Vec<StreamEntry>> {
        for (part, role) in [(&req.catalog, "catalog"), (&req.schema, "schema")] {
            if let Some(p) = part {
                super::name::validate_part(p, role).map_err(|rule| {
                    Error::new(ErrorCode::InvalidOption, format!("--{role} '{p}': {rule}"))
                        .with_context("option", role)
                })?;
            }
        }
        if req.max_results == Some(0) {
            return Err(
                Error::new(ErrorCode::InvalidOption, "--max-results must be at least 1")
                    .with_context("option", "max_results"),
            );
        }
        let mut out = Vec::new();
        let base = self.root.join("streams");
        for catalog in sorted_dirs(&base)? {
            if req
                .catalog
                .as_ref()
                .is_some_and(|c| !c.eq_ignore_ascii_case(&catalog))
            {
                continue;
            }
            for schema in sorted_dirs(&base.join(&catalog))? {
                if req
                    .schema
                    .as_ref()
                    .is_some_and(|s| !s.eq_ignore_ascii_case(&schema))
                {
                    continue;
                }
                let dir = base.join(&catalog).join(&schema);
                let mut files: Vec<String> = read_dir(&dir)?
                    .into_iter()
                    .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
                    .filter(|n| !n.starts_with('.'))
                    .collect();
                files.sort();
                for stream in files {
                    let mut e = self.get(&format!("{catalog}.{schema}.{stream}"))?;
                    if !req.include_schemas {
                        e.spec.schema = Default::default();
                    }
                    out.push(e);
                    if req.max_results.is_some_and(|m| out.len() >= m) {
                        return Ok(out);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Deletes a stream with its checkpoint and ingestion table; without `confirm` only says
    /// what it would delete.
    pub fn delete(&self, name: &str, confirm: bool) -> Result<DeletePlan> {
        let entry = self.get(name)?;
        let n = ThreePartName::parse(&entry.name, "stream name")?;
        let mut plan = DeletePlan {
            stream: entry.name.clone(),
            entry: self.entry_path(&n),
            checkpoint: self.checkpoint_path(&n),
            table: self.table_path(&entry.spec.table_name()?),
            deleted: false,
        };
        // Only what belongs to this stream alone: a table another stream also writes stays.
        for other in self.list(&ListRequest::default())? {
            if other.name == entry.name {
                continue;
            }
            if other
                .spec
                .table_name()
                .is_ok_and(|t| self.table_path(&t) == plan.table)
            {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!(
                        "stream '{}' cannot be deleted: its table {} is also the ingestion table of stream '{}' (the catalog was edited); nothing was deleted",
                        entry.name,
                        plan.table.display(),
                        other.name
                    ),
                )
                .with_context("stream", &entry.name));
            }
        }
        if !confirm {
            return Ok(plan);
        }
        // The entry goes last, so an interrupted delete can be run again.
        for dir in [&plan.checkpoint, &plan.table] {
            match std::fs::remove_dir_all(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("delete".into(), dir, e)),
            }
        }
        std::fs::remove_file(&plan.entry).map_err(|e| io("delete".into(), &plan.entry, e))?;
        plan.deleted = true;
        Ok(plan)
    }
}

/// A catalog entry that does not describe what its file name says.
fn damaged(path: &Path, why: &str) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!(
            "the catalog entry {} {why}: it was damaged or edited; nothing is done with it (restore it, or delete the file by hand)",
            path.display()
        ),
    )
    .with_context("path", path.display())
}

fn exists(name: &ThreePartName) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!("stream '{name}' already exists (delete it first, or choose another name)"),
    )
    .with_context("stream", name)
}

fn read_dir(dir: &Path) -> Result<Vec<String>> {
    match std::fs::read_dir(dir) {
        Ok(rd) => Ok(rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io("list".into(), dir, e)),
    }
}

fn sorted_dirs(dir: &Path) -> Result<Vec<String>> {
    let mut v: Vec<String> = read_dir(dir)?
        .into_iter()
        .filter(|n| !n.starts_with('.') && dir.join(n).is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// A random 128-bit id in hex.
fn new_id() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
