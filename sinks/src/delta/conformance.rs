//! The conformance fixture of the `delta` sink (features `conformance` and `delta`).
//!
//! A target is a new directory under the fixture's temporary root (the sink creates the table
//! there on its first write). Reading back loads the table's latest committed version and scans
//! it with deltalake's DataFusion table provider, so files of an uncommitted write never show;
//! the crate's integration tests read the same tables with Python `deltalake` as well.

use std::path::Path;

use async_trait::async_trait;
use deltalake::datafusion::prelude::SessionContext;
use tributary_sdk::{Error, ErrorCode, Options, Result};

use tributary_conformance::fixtures::TempTargets;
use tributary_conformance::sink::fixture::{rows_as_json, SinkFixture};

use super::table::{load_table, table_url};

/// Fixture for the `delta` sink.
#[derive(Debug)]
pub struct DeltaSinkFixture {
    targets: TempTargets,
}

impl DeltaSinkFixture {
    /// A fixture with a fresh temporary root (removed when the fixture is dropped).
    pub fn new() -> Result<Self> {
        Ok(DeltaSinkFixture {
            targets: TempTargets::new("tributary-delta-sink-")?,
        })
    }

    /// The directory every target lives under.
    pub fn root(&self) -> &Path {
        self.targets.root()
    }
}

#[async_trait]
impl SinkFixture for DeltaSinkFixture {
    fn name(&self) -> &str {
        "delta"
    }

    async fn create_target(&mut self, hint: &str) -> Result<String> {
        self.targets.create(hint)
    }

    fn sink_options(&self, target: &str) -> Result<Options> {
        Ok(Options::new().with("path", target))
    }

    async fn read_back(&self, target: &str) -> Result<Vec<String>> {
        let url = table_url(target)?;
        let table = load_table(&url, &Default::default(), target).await?;
        if table.version().is_none() {
            return Ok(Vec::new());
        }
        let read_error = |e: deltalake::datafusion::error::DataFusionError| {
            Error::new(
                ErrorCode::SourceRead,
                format!("cannot scan the Delta table at {target}"),
            )
            .with_cause(e)
        };
        let provider = table.table_provider().await.map_err(read_error)?;
        let batches = SessionContext::new()
            .read_table(provider)
            .map_err(read_error)?
            .collect()
            .await
            .map_err(read_error)?;
        rows_as_json(&batches)
    }
}
