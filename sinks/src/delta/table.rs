//! Opening a Delta table by location: a local path (created if missing) or an object-store URL,
//! with `storage.*` options whose secret references are resolved here.

use std::collections::{BTreeMap, HashMap};

use deltalake::{ensure_table_uri, DeltaTable, DeltaTableBuilder, DeltaTableError};
use tributary_sdk::secret::{resolve_value, SecretStore};
use tributary_sdk::Result;
use url::Url;

use super::error::to_error;

/// Resolves `{{secrets/scope/key}}` references in `storage.*` values.
pub fn resolve_storage(
    storage: &BTreeMap<String, String>,
    secrets: &dyn SecretStore,
) -> Result<HashMap<String, String>> {
    storage
        .iter()
        .map(|(k, v)| Ok((k.clone(), resolve_value(secrets, v)?.expose().to_string())))
        .collect()
}

/// The table URL of a location (a local directory is created and made absolute).
pub fn table_url(location: &str) -> Result<Url> {
    ensure_table_uri(location).map_err(|e| to_error("locate", location, e))
}

/// Loads the table at `url`; a location without a table yet gives a [`DeltaTable`] without
/// state (the first write creates it). A location whose `_delta_log` holds no commit is not
/// loaded at all: the Delta kernel would log an ERROR for every new table.
pub async fn load_table(
    url: &Url,
    storage: &HashMap<String, String>,
    location: &str,
) -> Result<DeltaTable> {
    if let Ok(path) = url.to_file_path() {
        // The table URL ends in '/', which a path to a file does not resolve through.
        let path = std::path::PathBuf::from(path.to_string_lossy().trim_end_matches('/'));
        if std::fs::metadata(&path).is_ok_and(|m| !m.is_dir()) {
            return Err(tributary_sdk::Error::new(
                tributary_sdk::ErrorCode::SinkWrite,
                format!("delta sink cannot use {location}: it is a file, not a table directory"),
            )
            .with_context("path", location));
        }
    }
    let mut table = DeltaTableBuilder::from_url(url.clone())
        .and_then(|b| b.with_storage_options(storage.clone()).build())
        .map_err(|e| to_error("open", location, e))?;
    let has_log = table
        .log_store()
        .is_delta_table_location()
        .await
        .map_err(|e| to_error("open", location, e))?;
    if !has_log {
        return Ok(table);
    }
    match table.load().await {
        Ok(()) | Err(DeltaTableError::NotATable(_)) => Ok(table),
        Err(e) => Err(to_error("load", location, e)),
    }
}

/// Loads an existing table; a location without one is an error naming it.
pub async fn load_existing(
    location: &str,
    storage: &HashMap<String, String>,
) -> Result<DeltaTable> {
    let url = table_url(location)?;
    let mut table = DeltaTableBuilder::from_url(url)
        .and_then(|b| b.with_storage_options(storage.clone()).build())
        .map_err(|e| to_error("open", location, e))?;
    table
        .load()
        .await
        .map_err(|e| to_error("load", location, e))?;
    Ok(table)
}
