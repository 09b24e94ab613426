//! Static tables (`[[transform.table]]`): registered in the session under their name and, at
//! start, read once into memory so that no batch waits on a file.
//!
//! Parquet and CSV are read by DataFusion's listing tables (a file, or a directory of files with
//! the `.parquet` / `.csv` extension; CSV with a header row, types inferred). Delta tables are
//! read at their current version through deltalake's table provider (crate feature `delta`).

use std::sync::Arc;

use datafusion::datasource::MemTable;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};
use tributary_sdk::{Error, ErrorCode, Result};

#[cfg(not(feature = "delta"))]
use crate::spec::delta_unavailable;
use crate::spec::{StaticTable, TableFormat};

/// Registers `table` in `ctx`; with `load`, reads it into memory (the table the query sees is
/// then a [`MemTable`]: its exact size lets DataFusion broadcast it, and a batch never waits on
/// I/O).
pub(crate) async fn register(ctx: &SessionContext, table: &StaticTable, load: bool) -> Result<()> {
    let name = table.name.as_str();
    let path = table.path.as_str();
    match table.format {
        TableFormat::Parquet => ctx
            .register_parquet(name, path, ParquetReadOptions::default())
            .await
            .map_err(|e| read_error(table, &e))?,
        TableFormat::Csv => ctx
            .register_csv(name, path, CsvReadOptions::new())
            .await
            .map_err(|e| read_error(table, &e))?,
        TableFormat::Delta => register_delta(ctx, table).await?,
    }
    if load {
        let frame = ctx.table(name).await.map_err(|e| read_error(table, &e))?;
        let schema = Arc::new(frame.schema().as_arrow().clone());
        let batches = frame.collect().await.map_err(|e| read_error(table, &e))?;
        let memory = MemTable::try_new(schema, vec![batches]).map_err(|e| read_error(table, &e))?;
        ctx.deregister_table(name)
            .map_err(|e| read_error(table, &e))?;
        ctx.register_table(name, Arc::new(memory))
            .map_err(|e| read_error(table, &e))?;
    }
    Ok(())
}

#[cfg(feature = "delta")]
async fn register_delta(ctx: &SessionContext, table: &StaticTable) -> Result<()> {
    let url = table_url(&table.path).map_err(|why| {
        Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "[[transform.table]] '{}': path '{}' is not a directory or URL: {why}",
                table.name, table.path
            ),
        )
        .with_context("option", "transform.table.path")
    })?;
    let delta = deltalake::open_table(url)
        .await
        .map_err(|e| read_error(table, &e))?;
    delta
        .update_datafusion_session(&ctx.state())
        .map_err(|e| read_error(table, &e))?;
    let provider = delta
        .table_provider()
        .await
        .map_err(|e| read_error(table, &e))?;
    ctx.register_table(table.name.as_str(), provider)
        .map_err(|e| read_error(table, &e))?;
    Ok(())
}

#[cfg(feature = "delta")]
fn table_url(path: &str) -> std::result::Result<url::Url, String> {
    if path.contains("://") {
        return url::Url::parse(path).map_err(|e| e.to_string());
    }
    let absolute = std::path::absolute(path).map_err(|e| e.to_string())?;
    url::Url::from_directory_path(&absolute).map_err(|()| "not an absolute path".to_string())
}

#[cfg(not(feature = "delta"))]
async fn register_delta(_ctx: &SessionContext, table: &StaticTable) -> Result<()> {
    Err(delta_unavailable(table))
}

fn read_error(table: &StaticTable, e: &dyn std::fmt::Display) -> Error {
    let text = match e.to_string() {
        t if t.is_empty() => "unknown error".to_string(),
        t => t,
    };
    Error::new(
        ErrorCode::Io,
        format!(
            "[[transform.table]] '{}' ({} at '{}') cannot be read: {}",
            table.name,
            table.format.as_str(),
            table.path,
            strip(&text)
        ),
    )
    .with_context("option", "transform.table.path")
    .with_context("table", &table.name)
    .with_context("file", &table.path)
}

fn strip(text: &str) -> &str {
    text.trim()
        .strip_prefix("Error during planning: ")
        .unwrap_or(text.trim())
}
