//! The pipeline's `[transform]` section: SQL between the source (after decoding) and the sinks
//! — stateless, or an aggregation keeping state with the checkpoint in Spark's `update` or
//! `complete` output mode — run by the `tributary-transform` stage (DataFusion; cargo feature
//! `sql`).
//!
//! The section is typed once, when the pipeline file is parsed ([`parse`]): with the `sql`
//! feature it is [`tributary_transform::TransformSpec`] itself, an ordinary entry of the
//! pipeline's one ordered stage list (`crate::pipeline::StageSpec::Sql`), sent to executors as
//! part of the spec. `tributary check` parses the query without I/O (syntax errors with their
//! line:column); unknown columns and stateful operators are found when the run opens the stage
//! with the source's schema. Either way the error names the pipeline file.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_sdk::{Error, ErrorCode, Result, Stage};

/// The typed `[transform]` section.
#[cfg(feature = "sql")]
pub type TransformSection = tributary_transform::TransformSpec;

/// The `[transform]` section as written (this build has no SQL: it is refused at check).
#[cfg(not(feature = "sql"))]
pub type TransformSection = toml::Value;

/// Types the section as read from the pipeline file (no I/O).
pub fn parse(section: toml::Value, origin: &str) -> Result<TransformSection> {
    imp::parse(section).map_err(|e| e.prefixed(origin))
}

/// Checks the section without I/O.
pub fn validate(section: &TransformSection, origin: &str) -> Result<()> {
    imp::validate(section).map_err(|e| e.prefixed(origin))
}

/// The section's `outputMode`, when given.
pub fn output_mode(section: &TransformSection) -> Option<tributary_sdk::OutputMode> {
    imp::output_mode(section)
}

/// Builds the stage with the registry's user-defined functions; errors of its `open`
/// (planning against the source's schema) name `origin`.
pub fn stage(
    section: &TransformSection,
    origin: &str,
    functions: Vec<std::sync::Arc<dyn tributary_sdk::ScalarFunction>>,
) -> Result<Box<dyn Stage>> {
    let inner = imp::stage(section, functions).map_err(|e| e.prefixed(origin))?;
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

    async fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        self.inner.apply(batch).await
    }

    fn metrics(&self) -> tributary_sdk::SourceMetrics {
        self.inner.metrics()
    }

    fn state(&mut self) -> Option<&mut dyn tributary_sdk::StageState> {
        self.inner.state()
    }
}

#[cfg(feature = "sql")]
mod imp {
    use super::*;
    use tributary_transform::{SqlTransform, TransformSpec};

    pub(super) fn parse(section: toml::Value) -> Result<TransformSpec> {
        section.try_into().map_err(|e: toml::de::Error| {
            Error::new(
                ErrorCode::InvalidPipeline,
                format!("[transform]: {}", e.message().trim()),
            )
            .with_context("option", "transform")
        })
    }

    pub(super) fn validate(section: &TransformSpec) -> Result<()> {
        section.validate()
    }

    pub(super) fn stage(
        section: &TransformSpec,
        functions: Vec<std::sync::Arc<dyn tributary_sdk::ScalarFunction>>,
    ) -> Result<Box<dyn Stage>> {
        Ok(Box::new(
            SqlTransform::new(section.clone())?.with_functions(functions),
        ))
    }

    pub(super) fn output_mode(section: &TransformSpec) -> Option<tributary_sdk::OutputMode> {
        section.output_mode
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

    pub(super) fn parse(section: toml::Value) -> Result<toml::Value> {
        Ok(section)
    }

    pub(super) fn validate(_section: &toml::Value) -> Result<()> {
        Err(unavailable())
    }

    pub(super) fn stage(
        _section: &toml::Value,
        _functions: Vec<std::sync::Arc<dyn tributary_sdk::ScalarFunction>>,
    ) -> Result<Box<dyn Stage>> {
        Err(unavailable())
    }

    pub(super) fn output_mode(_section: &toml::Value) -> Option<tributary_sdk::OutputMode> {
        None
    }
}
