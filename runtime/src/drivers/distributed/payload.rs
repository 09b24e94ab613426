//! What executors need to run a pipeline's tasks: its connectors, options and stages.
//!
//! The payload travels inside every batch's plan, so it must hold no secret. Every option that
//! is a secret (declared sensitive by its connector, or whose name looks like one) must be a
//! reference (`{{secrets/scope/key}}`), which each executor resolves with its own secret store;
//! a literal secret is refused when the pipeline is built, naming the option.

use tributary_sdk::{Error, ErrorCode, OptionSpec, Options, Result, SecretRef};

use crate::pipeline::PipelineSpec;
use crate::registry::Registry;

/// A pipeline as executors rebuild it: its spec (without checkpoint, trigger and engine, which
/// only the driver uses) and the checkpoint's id (sinks use it as their application id).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TaskPayload {
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The pipeline.
    pub spec: PipelineSpec,
}

/// Refuses literal secrets among `options` (see the module docs).
fn refuse_literal_secrets(section: &str, options: &Options, specs: &[OptionSpec]) -> Result<()> {
    let mut marked = options.clone();
    marked.mark_sensitive(specs);
    for (k, v) in options.iter() {
        let embedded = tributary_sdk::options::redact_embedded(v) != v;
        if (marked.is_sensitive(k) || embedded) && SecretRef::parse(v).is_none() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "option '{k}' of {section} holds a secret; with engine kind \"ballista\" it must be a secret reference ({{{{secrets/<scope>/<key>}}}}) that each executor resolves, so that no secret travels inside a plan"
                ),
            )
            .with_context("option", k));
        }
    }
    Ok(())
}

impl TaskPayload {
    /// Refuses literal secrets in `spec`'s options (checked before anything is built).
    pub fn check(spec: &PipelineSpec, registry: &Registry) -> Result<()> {
        let source = registry.source(&spec.source)?;
        refuse_literal_secrets(
            &format!("[source] {}", spec.source),
            &spec.source_options,
            &source.options(),
        )?;
        for stage in &spec.stages {
            if let Some(options) = stage.options() {
                let name = stage.name();
                refuse_literal_secrets(
                    &format!("[source].{name}"),
                    options,
                    &registry.stage(name)?.options(),
                )?;
            }
        }
        for (name, options) in &spec.sinks {
            refuse_literal_secrets(
                &format!("[[sink]] {name}"),
                options,
                &registry.sink(name)?.options(),
            )?;
        }
        Ok(())
    }

    /// The payload of `spec`, refusing literal secrets.
    pub fn new(spec: &PipelineSpec, registry: &Registry, checkpoint_id: &str) -> Result<Self> {
        Self::check(spec, registry)?;
        Ok(TaskPayload {
            checkpoint_id: checkpoint_id.to_string(),
            spec: spec.clone(),
        })
    }
}
