//! The stream's schema: given (`schema` DDL), or inferred from the first files and kept in the
//! state directory (`schema.json`) so a restart never changes it.
//!
//! Output columns are the file's columns, then the rescued data column (JSON and CSV), then the
//! `_metadata` struct (`file_path`, `file_name`, `file_size`, `file_modification_time`).
//! As in Auto Loader, inferred JSON and CSV columns are strings unless
//! `cloudFiles.inferColumnTypes=true`; Parquet columns keep the file's types.
//!
//! The columns the source adds itself ([`METADATA_COLUMN`], [`RESCUED_DATA_COLUMN`]) are defined
//! here, once.

use std::path::Path;
use std::sync::Arc;

use arrow_schema::{Field, Schema, SchemaRef};
use bytes::Bytes;
use object_store::ObjectStoreExt;
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Result};

use crate::blocking::run_io;
pub use crate::columns::{
    file_metadata_field, file_metadata_fields, rescued_data_field, METADATA_COLUMN,
    RESCUED_DATA_COLUMN,
};
use crate::config::{names, FilesConfig, Format};
use crate::ddl::parse_ddl;
use crate::discovery::Discovery;
use crate::format;

/// The schema file inside the state directory.
pub const SCHEMA_FILE: &str = "schema.json";

#[derive(Serialize, Deserialize)]
struct StoredSchema {
    version: u32,
    format: String,
    schema: Schema,
}

/// The file columns of the stream: from the DDL option, the stored inferred schema, or a new
/// inference (which is then stored).
pub fn resolve_file_schema(
    config: &FilesConfig,
    discovery: &Discovery,
    state_dir: Option<&Path>,
) -> Result<SchemaRef> {
    let schema = match &config.schema_ddl {
        Some(ddl) => parse_ddl(ddl)?,
        None => match state_dir.map(load).transpose()?.flatten() {
            Some(stored) => {
                if stored.format != config.format.as_str() {
                    return Err(Error::new(
                        ErrorCode::CheckpointIncompatible,
                        format!(
                            "the checkpoint's inferred schema is for format '{}', the options say '{}'",
                            stored.format,
                            config.format.as_str()
                        ),
                    )
                    .with_context("option", names::FORMAT));
                }
                stored.schema
            }
            None => {
                let inferred = with_hints(infer(config, discovery)?, config.schema_hints.as_ref());
                if let Some(dir) = state_dir {
                    store_schema(dir, config.format, &inferred)?;
                }
                inferred
            }
        },
    };
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    // Parquet streams have no rescued data column, so only `_metadata` is reserved there.
    let rescued = config
        .format
        .has_rescued_column()
        .then_some(config.rescued_column.as_str());
    for reserved in rescued.into_iter().chain([METADATA_COLUMN]) {
        if fields
            .iter()
            .any(|f| f.name().eq_ignore_ascii_case(reserved))
        {
            let fix = if reserved == METADATA_COLUMN {
                "rename it"
            } else {
                "rename it or set rescuedDataColumn to another name"
            };
            return Err(Error::new(
                ErrorCode::Schema,
                format!(
                    "the file schema has a column named '{reserved}', which the files source \
                     adds itself; {fix}"
                ),
            )
            .with_context("field", reserved));
        }
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// The output schema: file columns, rescued data (JSON/CSV), `_metadata`.
pub fn output_schema(decoded: &Schema) -> SchemaRef {
    let mut fields: Vec<Field> = decoded
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(file_metadata_field());
    Arc::new(Schema::new(fields))
}

fn load(dir: &Path) -> Result<Option<StoredSchema>> {
    let path = dir.join(SCHEMA_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::new(
                ErrorCode::Checkpoint,
                format!("cannot read {}", path.display()),
            )
            .with_context("path", path.display())
            .with_cause(e))
        }
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

/// Stores an inferred (or evolved) schema: temp file, fsync, rename.
pub(crate) fn store_schema(dir: &Path, format: Format, schema: &Schema) -> Result<()> {
    let io = |e: std::io::Error| {
        Error::new(
            ErrorCode::Checkpoint,
            format!("cannot write {}", dir.join(SCHEMA_FILE).display()),
        )
        .with_cause(e)
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let stored = StoredSchema {
        version: 1,
        format: format.as_str().into(),
        schema: schema.clone(),
    };
    let text = serde_json::to_string_pretty(&stored).map_err(|e| {
        Error::new(ErrorCode::Internal, "cannot serialise the schema").with_cause(e)
    })?;
    // Temp file, fsync, rename: a crash leaves the old file or the new one, never half of one.
    let tmp = dir.join(format!("{SCHEMA_FILE}.tmp"));
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, dir.join(SCHEMA_FILE)).map_err(io)
}

/// `cloudFiles.schemaHints` over an inferred schema: a hinted column (matched by name, ignoring
/// case, as Spark does) takes the hint's type; a hinted column the sample lacks is appended.
fn with_hints(inferred: Schema, hints: Option<&Schema>) -> Schema {
    let Some(hints) = hints else {
        return inferred;
    };
    let mut fields: Vec<Field> = inferred
        .fields()
        .iter()
        .map(|f| {
            match hints
                .fields()
                .iter()
                .find(|h| h.name().eq_ignore_ascii_case(f.name()))
            {
                Some(h) => f.as_ref().clone().with_data_type(h.data_type().clone()),
                None => f.as_ref().clone(),
            }
        })
        .collect();
    for h in hints.fields() {
        if !fields
            .iter()
            .any(|f| f.name().eq_ignore_ascii_case(h.name()))
        {
            fields.push(h.as_ref().clone().with_nullable(true));
        }
    }
    Schema::new(fields)
}

/// Lists the input, takes the oldest `sample_files` files and infers from them.
fn infer(config: &FilesConfig, discovery: &Discovery) -> Result<Schema> {
    let io = discovery.fresh()?;
    let samples = run_io(async {
        let discovery = &io;
        let mut files = discovery.list().await?;
        files.sort_by(|a, b| {
            (a.modification_time_ms, &a.path).cmp(&(b.modification_time_ms, &b.path))
        });
        files.truncate(config.sample_files);
        let mut samples: Vec<(String, Bytes)> = Vec::with_capacity(files.len());
        for f in files {
            let location = discovery.location(&f.path)?;
            match discovery.store().get(&location).await {
                Ok(r) => {
                    let bytes = r
                        .bytes()
                        .await
                        .map_err(|e| crate::error::unreadable(&f.path, e))?;
                    samples.push((f.path, bytes));
                }
                // Gone since the listing: sample the others.
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(crate::error::unreadable(&f.path, e)),
            }
        }
        Ok(samples)
    })?;
    format::infer(
        config.format,
        &samples,
        config.sample_records,
        config.infer_column_types,
        config.csv,
        config.multi_line,
    )
    .map_err(|e| {
        if e.context_value("path").is_none() {
            e.with_context("path", discovery.target())
        } else {
            e
        }
    })
}
