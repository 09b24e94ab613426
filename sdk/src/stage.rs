//! Pipeline stages: transformations applied to a source's batches before the sinks see them.
//!
//! Decoding a binary payload with a schema (the `tributary-decode` crate) is a stage, not code
//! in the engine loop. The host builds a stage for a source from its [`SourceDescription`]
//! (which column carries the payload, which streams name the registry subject), opens it once
//! per run with the source's schema, and applies it to every batch:
//!
//! 1. [`StageFactory::validate`] checks the stage's options against the source without I/O
//!    (`tributary check`).
//! 2. [`StageFactory::create`] resolves secrets and builds the stage.
//! 3. [`Stage::open`] runs once per run (a restart resolves registry schemas again) and returns
//!    the schema the sinks receive.
//! 4. [`Stage::apply`] transforms each batch; malformed input in permissive mode becomes nulls
//!    and counters ([`Stage::metrics`]), never an error.

use std::fmt::Debug;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;

use crate::description::SourceDescription;
use crate::error::Result;
use crate::options::{OptionSpec, Options};
use crate::secret::SecretStore;
use crate::source::SourceMetrics;

/// A transformation of every batch of one source.
#[async_trait]
pub trait Stage: Send + Debug {
    /// Called once per run with the source's schema; returns the output schema.
    async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef>;

    /// Transforms one batch. Async, so a stage that plans a query (DataFusion) or awaits I/O
    /// runs on the host's runtime instead of blocking its thread.
    async fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch>;

    /// Counters reported with the source's metrics (malformed records by reason, ...).
    fn metrics(&self) -> SourceMetrics {
        SourceMetrics::new()
    }
}

/// Builds stages of one kind (the pipeline file names it: `[source].decode`).
pub trait StageFactory: Send + Sync + Debug {
    /// The key of the stage in the pipeline's `[source]` table (`decode`).
    fn name(&self) -> &str;

    /// Every option the stage accepts.
    fn options(&self) -> Vec<OptionSpec>;

    /// Checks the options against the source without I/O (no secret resolved).
    fn validate(&self, options: &Options, source: &SourceDescription) -> Result<()>;

    /// Builds the stage for this source.
    fn create(
        &self,
        options: &Options,
        source: &SourceDescription,
        secrets: &dyn SecretStore,
    ) -> Result<Box<dyn Stage>>;
}
