//! The pipeline's `[transform]` section: stateless SQL between the source (after decoding) and
//! the sinks, run by the `tributary-transform` stage (DataFusion; cargo feature `sql`).
//!
//! `tributary check` parses the query without I/O (syntax errors with their line:column);
//! unknown columns and stateful operators are found when the run opens the stage with the
//! source's schema. Either way the error names the pipeline file.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_sdk::{Error, ErrorCode, Result, Stage};

/// Checks the section without I/O.
pub fn validate(section: &toml::Value, origin: &str) -> Result<()> {
    imp::validate(section).map_err(|e| e.prefixed(origin))
}

/// Builds the stage; errors of its `open` (planning against the source's schema) name `origin`.
pub fn stage(section: &toml::Value, origin: &str) -> Result<Box<dyn Stage>> {
    let inner = imp::stage(section).map_err(|e| e.prefixed(origin))?;
    Ok(Box::new(Named {
        inner,
        origin: origin.to_string(),
    }))
}

/// A stage whose opening errors carry the pipeline file's name.
#[derive(Debug)]
struct Named {
    inner: Box<dyn Stage>,
    origin: String,
}

#[async_trait]
impl Stage for Named {
    async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef> {
        self.inner
            .open(input)
            .await
            .map_err(|e| e.prefixed(&self.origin))
    }

    fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        self.inner.apply(batch)
    }

    fn metrics(&self) -> tributary_sdk::SourceMetrics {
        self.inner.metrics()
    }
}

#[cfg(feature = "sql")]
mod imp {
    use super::*;
    use tributary_transform::{SqlTransform, TransformSpec};

    fn spec(section: &toml::Value) -> Result<TransformSpec> {
        section.clone().try_into().map_err(|e: toml::de::Error| {
            Error::new(
                ErrorCode::InvalidPipeline,
                format!("[transform]: {}", e.message().trim()),
            )
            .with_context("option", "transform")
        })
    }

    pub(super) fn validate(section: &toml::Value) -> Result<()> {
        spec(section)?.validate()
    }

    pub(super) fn stage(section: &toml::Value) -> Result<Box<dyn Stage>> {
        Ok(Box::new(SqlTransform::new(spec(section)?)?))
    }
}

#[cfg(not(feature = "sql"))]
mod imp {
    use super::*;

    fn unavailable() -> Error {
        Error::new(
            ErrorCode::InvalidPipeline,
            "[transform] needs SQL support: rebuild with `cargo build -p tributary-runtime --features sql`",
        )
        .with_context("feature", "sql")
    }

    pub(super) fn validate(_section: &toml::Value) -> Result<()> {
        Err(unavailable())
    }

    pub(super) fn stage(_section: &toml::Value) -> Result<Box<dyn Stage>> {
        Err(unavailable())
    }
}
