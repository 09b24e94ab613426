//! What executors need to run a pipeline's tasks: its connectors, options and stages.
//!
//! The payload travels inside every batch's plan, so it must hold no secret. Every option that
//! is a secret (declared sensitive by its connector, or whose name looks like one) must be a
//! reference (`{{secrets/scope/key}}`), which each executor resolves with its own secret store;
//! a literal secret is refused when the pipeline is built, naming the option.

use std::collections::BTreeMap;

use tributary_sdk::{Error, ErrorCode, OptionSpec, Options, Result, SecretRef};

use crate::pipeline::PipelineSpec;
use crate::registry::Registry;

/// A pipeline as executors rebuild it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskPayload {
    /// The pipeline's name.
    pub pipeline: String,
    /// The checkpoint's id (sinks use it as their application id).
    pub checkpoint_id: String,
    /// The source connector.
    pub source: String,
    /// Its options.
    pub source_options: BTreeMap<String, String>,
    /// Stages by name with their options.
    pub stages: Vec<(String, BTreeMap<String, String>)>,
    /// The `[transform]` section.
    pub transform: Option<serde_json::Value>,
    /// Sinks by connector name with their options.
    pub sinks: Vec<(String, BTreeMap<String, String>)>,
    /// The pipeline file, for messages.
    pub origin: String,
}

fn to_map(options: &Options) -> BTreeMap<String, String> {
    options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Options rebuilt from a payload map.
pub(crate) fn to_options(map: &BTreeMap<String, String>) -> Options {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
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
        for (name, options) in &spec.stages {
            refuse_literal_secrets(
                &format!("[source].{name}"),
                options,
                &registry.stage(name)?.options(),
            )?;
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
        let transform = match &spec.transform {
            None => None,
            Some(t) => Some(serde_json::to_value(t).map_err(|e| {
                Error::new(
                    ErrorCode::InvalidPipeline,
                    format!("[transform] cannot be sent to executors: {e}"),
                )
            })?),
        };
        Ok(TaskPayload {
            pipeline: spec.name.clone(),
            checkpoint_id: checkpoint_id.to_string(),
            source: spec.source.clone(),
            source_options: to_map(&spec.source_options),
            stages: spec
                .stages
                .iter()
                .map(|(n, o)| (n.clone(), to_map(o)))
                .collect(),
            transform,
            sinks: spec
                .sinks
                .iter()
                .map(|(n, o)| (n.clone(), to_map(o)))
                .collect(),
            origin: spec.origin.clone(),
        })
    }
}
