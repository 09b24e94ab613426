//! The stream's schema: given (`schema` DDL), or inferred from the first files and kept (in the
//! state directory's `schema.json`, or as versions under `cloudFiles.schemaLocation`, see
//! [`crate::schema_store`]) so a restart never changes it; plus its Hive-style partition
//! columns ([`crate::hive`]).
//!
//! Output columns are the file's columns, then the rescued data column (JSON and CSV), then the
//! `_metadata` struct (`file_path`, `file_name`, `file_size`, `file_modification_time`).
//! As in Auto Loader, inferred JSON and CSV columns are strings unless
//! `cloudFiles.inferColumnTypes=true`; Parquet columns keep the file's types.
//!
//! The columns the source adds itself ([`METADATA_COLUMN`], [`RESCUED_DATA_COLUMN`]) are defined
//! here, once.

use std::sync::Arc;

use arrow_schema::{Field, Schema, SchemaRef};
use bytes::Bytes;
use object_store::ObjectStoreExt;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::blocking::run_io;
pub use crate::columns::{
    file_metadata_field, file_metadata_fields, rescued_data_field, METADATA_COLUMN,
    RESCUED_DATA_COLUMN,
};
use crate::config::{names, FilesConfig};
use crate::ddl::parse_ddl;
use crate::discovery::Discovery;
use crate::format;

use crate::config::PartitionColumns;
use crate::schema_store::SchemaStore;

/// The stream's columns: those decoded from the files, and the partition columns read from
/// their paths.
#[derive(Debug, Clone)]
pub struct StreamSchema {
    /// The file columns (without rescued data, partition columns and metadata).
    pub file: SchemaRef,
    /// The partition columns, in order.
    pub partitions: Vec<Field>,
}

/// The stream's columns: from the DDL option, the stored inferred schema, or a new inference
/// (which is then stored).
pub(crate) fn resolve_schema(
    config: &FilesConfig,
    discovery: &Discovery,
    store: Option<&SchemaStore>,
) -> Result<StreamSchema> {
    let (schema, partition_names) = match &config.schema_ddl {
        Some(ddl) => given(config, ddl)?,
        None => {
            match store.map(SchemaStore::load).transpose()?.flatten() {
                Some(stored) => {
                    if stored.format != config.format.as_str() {
                        return Err(Error::new(
                        ErrorCode::CheckpointIncompatible,
                        format!(
                            "the stored inferred schema ({}) is for format '{}', the options say '{}'",
                            store.map(SchemaStore::describe).unwrap_or_default(),
                            stored.format,
                            config.format.as_str()
                        ),
                    )
                    .with_context("option", names::FORMAT));
                    }
                    if let PartitionColumns::Named(names) = &config.partition_columns {
                        let same = names.len() == stored.partition_columns.len()
                            && names
                                .iter()
                                .zip(&stored.partition_columns)
                                .all(|(a, b)| a.eq_ignore_ascii_case(b));
                        if !same {
                            return Err(Error::new(
                                ErrorCode::CheckpointIncompatible,
                                format!(
                                "the stored inferred schema ({}) has the partition columns [{}], \
                                 option '{}' says [{}]; use a new checkpoint (or schema location) \
                                 to change them",
                                store.map(SchemaStore::describe).unwrap_or_default(),
                                stored.partition_columns.join(", "),
                                names::PARTITION_COLUMNS,
                                names.join(", ")
                            ),
                            )
                            .with_context("option", names::PARTITION_COLUMNS));
                        }
                    }
                    (stored.schema, stored.partition_columns)
                }
                None => {
                    let (data, relatives) = infer(config, discovery)?;
                    let names = match &config.partition_columns {
                        PartitionColumns::Discover => crate::hive::discovered_keys(&relatives),
                        PartitionColumns::Named(names) => names.clone(),
                    };
                    let is_partition =
                        |f: &Field| names.iter().any(|n| n.eq_ignore_ascii_case(f.name()));
                    // The path wins over a data column of the same name.
                    let mut fields: Vec<Field> = data
                        .fields()
                        .iter()
                        .filter(|f| !is_partition(f))
                        .map(|f| f.as_ref().clone())
                        .collect();
                    fields.extend(
                        names.iter().map(|n| {
                            crate::hive::infer_field(n, &relatives, config.infers_types())
                        }),
                    );
                    let inferred = with_hints(Schema::new(fields), config.schema_hints.as_ref());
                    match &store {
                        Some(store) => {
                            let kept = store.store_initial(config.format, &inferred, &names)?;
                            (kept.schema, kept.partition_columns)
                        }
                        None => (inferred, names),
                    }
                }
            }
        }
    };
    split(config, schema, &partition_names)
}

/// The file columns and the partition columns of a resolved schema.
fn split(config: &FilesConfig, schema: Schema, partition_names: &[String]) -> Result<StreamSchema> {
    let is_partition = |f: &Field| {
        partition_names
            .iter()
            .any(|n| n.eq_ignore_ascii_case(f.name()))
    };
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    check_reserved(config, &fields)?;
    let partitions: Vec<Field> = partition_names
        .iter()
        .filter_map(|n| {
            fields
                .iter()
                .find(|f| f.name().eq_ignore_ascii_case(n))
                .cloned()
        })
        .collect();
    let file: Vec<Field> = fields.into_iter().filter(|f| !is_partition(f)).collect();
    Ok(StreamSchema {
        file: Arc::new(Schema::new(file)),
        partitions,
    })
}

/// The `schema` option's columns and the partition columns among them (no I/O).
fn given(config: &FilesConfig, ddl: &str) -> Result<(Schema, Vec<String>)> {
    let schema = parse_ddl(ddl)?;
    let names = match &config.partition_columns {
        PartitionColumns::Discover => Vec::new(),
        PartitionColumns::Named(names) => names.clone(),
    };
    for name in &names {
        if !schema
            .fields()
            .iter()
            .any(|f| f.name().eq_ignore_ascii_case(name))
        {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "option '{}' names column '{name}', which the 'schema' option \
                     lacks; with a given schema, partition columns must be in it (their \
                     type is taken from it)",
                    names::PARTITION_COLUMNS
                ),
            )
            .with_context("option", names::PARTITION_COLUMNS));
        }
    }
    Ok((schema, names))
}

/// The source's output schema when the `schema` option fixes it (no I/O: nothing inferred,
/// nothing stored); `None` when the schema is inferred from the files.
pub(crate) fn given_output_schema(config: &FilesConfig) -> Result<Option<SchemaRef>> {
    let Some(ddl) = &config.schema_ddl else {
        return Ok(None);
    };
    let (schema, names) = given(config, ddl)?;
    let resolved = split(config, schema, &names)?;
    let decode = crate::source::decode_context(config, resolved.file);
    Ok(Some(output_schema(
        &decode.decoded_schema,
        &resolved.partitions,
    )))
}

/// Refuses columns named like the ones the source adds itself.
fn check_reserved(config: &FilesConfig, fields: &[Field]) -> Result<()> {
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
    Ok(())
}

/// The output schema: file columns, rescued data (JSON/CSV), partition columns, `_metadata`.
pub fn output_schema(decoded: &Schema, partitions: &[Field]) -> SchemaRef {
    let mut fields: Vec<Field> = decoded
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.extend(partitions.iter().cloned());
    fields.push(file_metadata_field());
    Arc::new(Schema::new(fields))
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

/// Lists the input, takes the oldest `sample_files` files and infers from them; also returns
/// the sampled files' paths below the listed directory (for partition columns).
fn infer(config: &FilesConfig, discovery: &Discovery) -> Result<(Schema, Vec<String>)> {
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
    let relatives: Vec<String> = samples
        .iter()
        .filter_map(|(p, _)| discovery.relative_path(p))
        .collect();
    let samples = if config.allow_comments {
        samples
            .into_iter()
            .map(|(path, bytes)| {
                let mut s = crate::format::comments::CommentStripper::new();
                let mut out = Vec::with_capacity(bytes.len());
                s.strip(&bytes, &mut out);
                s.finish(&mut out);
                (path, Bytes::from(out))
            })
            .collect()
    } else {
        samples
    };
    format::infer(
        config.format,
        &samples,
        config.sample_records,
        config.infers_types(),
        config.csv,
        config.multi_line,
    )
    .and_then(|schema| {
        if config.format == crate::config::Format::Csv && config.infers_types() {
            format::value_formats::retype_csv(
                schema,
                &samples,
                config.sample_records,
                config.csv,
                &config.formats,
            )
        } else {
            Ok(schema)
        }
    })
    .map_err(|e| {
        if e.context_value("path").is_none() {
            e.with_context("path", discovery.target())
        } else {
            e
        }
    })
    .map(|schema| (schema, relatives))
}
