//! Assembling a pipeline from its spec — on the driver and on an executor alike.
//!
//! 1. [`prepare`] checks every connector's and stage's options without I/O (`tributary check`)
//!    and returns what to build.
//!    [`plan`] goes on to open the stages against the source's schema when that needs no I/O.
//! 2. [`Prepared::build`] builds the source, the ordered stages and the sinks with the given
//!    contexts: the driver's source gets the checkpoint's state directory, an executor's gets
//!    none (it reads partitions, never plans or commits).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use tributary_sdk::{
    ConnectorContext, Error, ErrorCode, PreparedSink, PreparedSource, RealTimeSupport, Result,
    SecretStore, Sink, Source, SourceDescription, Stage, StageFactory,
};

use super::stages::StageChain;
use crate::pipeline::{PipelineSpec, StageSpec};
use crate::registry::Registry;
use crate::trigger::Trigger;

/// A stage whose options were checked, not built yet.
enum PreparedStage {
    Registered(Arc<dyn StageFactory>, tributary_sdk::Options),
    Sql(
        crate::transform::TransformSection,
        Vec<Arc<dyn tributary_sdk::ScalarFunction>>,
    ),
}

impl PreparedStage {
    /// The stage, named for progress and errors (`run`'s build and `check`'s plan alike).
    fn create(
        &self,
        description: &SourceDescription,
        secrets: &dyn SecretStore,
        origin: &str,
    ) -> Result<(String, Box<dyn Stage>)> {
        Ok(match self {
            PreparedStage::Registered(factory, options) => (
                factory.name().to_string(),
                factory.create(options, description, secrets)?,
            ),
            PreparedStage::Sql(section, functions) => (
                "sql".to_string(),
                crate::transform::stage(section, origin, functions.clone())?,
            ),
        })
    }
}

/// A pipeline whose options were all checked, nothing built or opened yet.
pub(crate) struct Prepared {
    source: Box<dyn PreparedSource>,
    stages: Vec<PreparedStage>,
    sinks: Vec<(String, Box<dyn PreparedSink>)>,
    origin: String,
}

/// What [`Prepared::build`] returns.
pub(crate) struct Built {
    pub source: Box<dyn Source>,
    pub stages: StageChain,
    pub sinks: Vec<(String, Box<dyn Sink>)>,
}

/// Validates every connector's and stage's options (no I/O) and returns what to build.
pub(crate) fn prepare(spec: &PipelineSpec, registry: &Registry) -> Result<Prepared> {
    // What executors cannot be given (a literal secret, a sink without a staged write) first.
    #[cfg(feature = "ballista")]
    if spec.engine != crate::distributed::EngineSpec::Embedded {
        crate::distributed::payload::TaskPayload::check(spec, registry)?;
    }
    let source = registry
        .source(&spec.source)?
        .prepare(&spec.source_options)?;
    if let (Trigger::RealTime { .. }, RealTimeSupport::Unsupported { reason }) =
        (spec.trigger, &source.description().real_time)
    {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "source '{}' cannot run with trigger kind realTime: {reason}; use processingTime or availableNow",
                spec.source
            ),
        )
        .with_context("option", "trigger.kind"));
    }
    if spec.engine != crate::distributed::EngineSpec::Embedded
        && matches!(spec.trigger, Trigger::RealTime { .. })
    {
        return Err(Error::new(
            ErrorCode::ConflictingOptions,
            "trigger kind realTime runs in the pipeline's own process; with engine kind \"ballista\" use processingTime or availableNow",
        )
        .with_context("option", "engine.kind"));
    }
    let mut stages = Vec::new();
    for stage in &spec.stages {
        stages.push(match stage {
            StageSpec::Registered { name, options } => {
                let factory = registry.stage(name)?;
                factory.validate(options, source.description())?;
                PreparedStage::Registered(factory, options.clone())
            }
            StageSpec::Sql(section) => {
                crate::transform::validate(section, &spec.origin)?;
                PreparedStage::Sql(section.clone(), registry.functions())
            }
        });
    }
    let mut sinks = Vec::new();
    for (name, options) in &spec.sinks {
        sinks.push((name.clone(), registry.sink(name)?.prepare(options)?));
    }
    sinks_take_output_mode(spec, registry)?;
    one_sink_per_path(spec)?;
    Ok(Prepared {
        source,
        stages,
        sinks,
        origin: spec.origin.clone(),
    })
}

impl Prepared {
    /// What the source reads (known before anything is built).
    pub(crate) fn description(&self) -> &SourceDescription {
        self.source.description()
    }

    /// Builds the connectors and stages. `source_ctx` and `sink_ctx` carry the secrets, the
    /// pipeline's name, the checkpoint id and (the driver's source only) the state directory.
    pub(crate) fn build(
        self,
        connector: &str,
        secrets: &Arc<dyn SecretStore>,
        source_ctx: &ConnectorContext,
        sink_ctx: &ConnectorContext,
    ) -> Result<Built> {
        let description = self.source.description().clone();
        let source = self.source.build(source_ctx)?;
        if source.identity() != description.identity {
            return Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "source '{connector}' was described as reading '{}' but its built source reports '{}'",
                    description.identity.target,
                    source.identity().target
                ),
            ));
        }
        let mut stages: Vec<(String, Box<dyn Stage>)> = Vec::new();
        for stage in &self.stages {
            stages.push(stage.create(&description, secrets.as_ref(), &self.origin)?);
        }
        let mut sinks = Vec::new();
        for (name, sink) in self.sinks {
            sinks.push((name, sink.build(sink_ctx)?));
        }
        Ok(Built {
            source,
            stages: StageChain::new(stages),
            sinks,
        })
    }
}

/// Two sinks given the same `path` would overwrite each other's batches (both name their
/// files by batch id): refused by name.
fn one_sink_per_path(spec: &PipelineSpec) -> Result<()> {
    let mut seen: Vec<(&str, String)> = Vec::new();
    for (name, options) in &spec.sinks {
        let Some(path) = options.get("path") else {
            continue;
        };
        let path = path.trim_end_matches('/').to_string();
        if let Some((other, _)) = seen.iter().find(|(_, p)| *p == path) {
            return Err(Error::new(
                ErrorCode::ConflictingOptions,
                format!(
                    "sinks '{other}' and '{name}' both write to path '{path}'; give each sink its own path"
                ),
            )
            .with_context("option", "path"));
        }
        seen.push((name, path));
    }
    Ok(())
}

/// Checks a pipeline without any I/O: connectors exist, their options and the stages' options
/// are valid for this source. Returns what the source reads.
pub fn validate(spec: &PipelineSpec, registry: &Registry) -> Result<SourceDescription> {
    Ok(prepare(spec, registry)?.description().clone())
}

/// How far `tributary check` planned a pipeline's stages without I/O.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Every stage opened against the source's schema, as `run` opens them (unknown columns,
    /// type errors and stateful operators the trigger or engine cannot run are refused); the
    /// schema the sinks would receive.
    Planned(SchemaRef),
    /// Planning stopped here: what only the run can tell (an inferred schema, a registry).
    Stopped(String),
}

/// Opens the pipeline's stages against the source's schema without I/O, with `run`'s checks
/// (see [`Plan`]): the source must fix its schema from its options and every registered stage
/// before the last SQL must open without I/O; otherwise planning stops, saying why.
pub async fn plan(spec: &PipelineSpec, registry: &Registry) -> Result<Plan> {
    let prepared = prepare(spec, registry)?;
    let Some(schema) = prepared.source.schema()? else {
        return Ok(Plan::Stopped(format!(
            "source '{}' infers its schema from the data when it runs",
            spec.source
        )));
    };
    let description = prepared.description().clone();
    let no_secrets = tributary_sdk::EnvSecretStore;
    let mut stages: Vec<(String, Box<dyn Stage>)> = Vec::new();
    for stage in &prepared.stages {
        if let PreparedStage::Registered(factory, options) = stage {
            if !factory.opens_without_io(options) {
                return Ok(Plan::Stopped(format!(
                    "stage '{}' resolves its schema (a registry) when it runs",
                    factory.name()
                )));
            }
        }
        stages.push(stage.create(&description, &no_secrets, &prepared.origin)?);
    }
    let mut chain = StageChain::new(stages);
    let out = chain.open(schema).await?;
    let distributed = spec.engine != crate::distributed::EngineSpec::Embedded;
    super::refuse_state(&mut chain, spec.trigger, distributed)?;
    Ok(Plan::Planned(out))
}

/// Every sink honours the query's output mode (`[transform] outputMode`), as Spark checks
/// `outputMode` against the sink before the query starts.
fn sinks_take_output_mode(spec: &PipelineSpec, registry: &Registry) -> Result<()> {
    let Some(mode) = spec.stages.iter().find_map(|s| match s {
        StageSpec::Sql(section) => crate::transform::output_mode(section),
        StageSpec::Registered { .. } => None,
    }) else {
        return Ok(());
    };
    for (name, _) in &spec.sinks {
        let modes = registry.sink(name)?.output_modes();
        if !modes.contains(&mode) {
            let accepted: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "sink '{name}' does not support outputMode '{mode}' (it supports: {}); choose another sink or output mode",
                    accepted.join(", ")
                ),
            )
            .with_context("option", "transform.outputMode")
            .with_context("sink", name));
        }
    }
    Ok(())
}
