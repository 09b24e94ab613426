//! Schema evolution for JSON and Parquet (`cloudFiles.schemaEvolutionMode`), as in Auto Loader.
//!
//! When a file holds top-level fields that are not columns of the stream:
//! - `addNewColumns` (the default with an inferred schema): the fields' types (JSON: inferred
//!   from their values, strings unless `cloudFiles.inferColumnTypes=true`; Parquet: the file's
//!   own), appended to the stored
//!   schema (`schema.json` in the state directory), and the read fails with
//!   `UNKNOWN_FIELD_EXCEPTION`. The batch's offsets are already in the checkpoint, so a restart
//!   reads the same batch again with the new columns: nothing is lost or read twice.
//! - `failOnNewColumns`: the read fails the same way and the schema stays.
//! - `rescue` (JSON) and `none` never get here (the values are rescued or dropped while
//!   decoding).

use arrow_schema::{Field, Schema};
use bytes::Bytes;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::config::{names, FilesConfig, SchemaEvolution};
use crate::format;
use crate::schema_store::SchemaStore;

/// The types of new JSON fields, inferred from their sample like the first schema was (strings
/// unless `cloudFiles.inferColumnTypes=true`). A field new inside struct column `a` comes back
/// as a partial `a` struct holding only it, which [`on_new_columns`] merges into the column.
pub(crate) fn json_fields(
    config: &FilesConfig,
    path: &str,
    new_columns: serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<Field>> {
    let sample = Bytes::from(serde_json::Value::Object(new_columns).to_string());
    let inferred = format::json::infer(
        &[(path.to_string(), sample)],
        1,
        config.infers_types(),
        false,
    )?;
    Ok(inferred
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect())
}

/// The error that stops the stream on new columns, after (with `addNewColumns`) storing the
/// evolved schema. `file_fields` are the stream's current file columns, `added` the new ones.
/// `names` are the new fields' dotted paths (for the message).
pub(crate) fn on_new_columns(
    config: &FilesConfig,
    file_fields: &[Field],
    store: Option<&SchemaStore>,
    path: &str,
    added: Vec<Field>,
    names_list: Vec<String>,
    partitions: &[Field],
) -> Result<Error> {
    let listed = names_list.join(", ");
    let base = |msg: String| {
        Error::new(ErrorCode::UnknownField, msg)
            .with_context("file", path)
            .with_context("columns", &listed)
            .with_context("option", names::SCHEMA_EVOLUTION_MODE)
    };
    if config.schema_evolution == SchemaEvolution::FailOnNewColumns {
        return Ok(base(format!(
            "file {path} has columns that are not in the stream's schema: {listed}; \
             {}=failOnNewColumns keeps the schema (add them with the 'schema' option, or use \
             addNewColumns or rescue)",
            names::SCHEMA_EVOLUTION_MODE
        )));
    }
    let Some(store) = store else {
        return Ok(base(format!(
            "file {path} has columns that are not in the stream's schema: {listed}; the schema \
             cannot evolve without a state directory (run the source in a pipeline with a \
             checkpoint, or use {}=rescue)",
            names::SCHEMA_EVOLUTION_MODE
        )));
    };
    // Merged by name: new columns are appended, fields new inside a struct column join it.
    let merged = Schema::try_merge([Schema::new(file_fields.to_vec()), Schema::new(added)])
        .map_err(|e| {
            Error::new(
                ErrorCode::Schema,
                format!("the new fields of {path} do not fit the stream's schema: {listed}"),
            )
            .with_context("file", path)
            .with_cause(e)
        })?;
    // Stored with the partition columns after the file columns, as at inference.
    let mut all: Vec<Field> = merged.fields().iter().map(|f| f.as_ref().clone()).collect();
    all.extend(partitions.iter().cloned());
    let names: Vec<String> = partitions.iter().map(|f| f.name().clone()).collect();
    let at = store.store_evolved(config.format, &Schema::new(all), &names)?;
    Ok(base(format!(
        "file {path} has new columns: {listed}. They were added to the stream's schema \
         ({at}); restart the stream to read them: the interrupted batch is read again, with them"
    )))
}
