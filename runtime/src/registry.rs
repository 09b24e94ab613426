//! The connector registry: built-in connectors and connectors loaded from plugins, by name.
//!
//! Pipeline files name connectors the same way whether they are built in or loaded; an unknown
//! name is refused with the list of known ones and a "did you mean" for near misses. Built-in
//! connectors are cargo features of this crate (all on by default); a pipeline naming one this
//! binary was built without is told which feature to enable. This module is the only place in
//! the runtime that names connectors.

use std::collections::BTreeMap;
use std::sync::Arc;

use tributary_sdk::{
    Error, ErrorCode, Result, ScalarFunction, SinkFactory, SourceFactory, StageFactory,
};

/// Source, sink and stage factories, and the `[transform]` SQL's user-defined functions, by
/// name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    sources: BTreeMap<String, Arc<dyn SourceFactory>>,
    sinks: BTreeMap<String, Arc<dyn SinkFactory>>,
    stages: BTreeMap<String, Arc<dyn StageFactory>>,
    functions: BTreeMap<String, Arc<dyn ScalarFunction>>,
}

/// Every built-in connector or stage: (kind, name, the cargo feature of `tributary-runtime`
/// that builds it in).
pub const BUILTINS: &[(&str, &str, &str)] = &[
    ("source", "files", "files"),
    ("source", "kafka", "kafka"),
    ("sink", "kafka", "kafka"),
    ("source", "kinesis", "kinesis"),
    ("sink", "kinesis", "kinesis"),
    ("sink", "console", "sinks"),
    ("sink", "parquet", "sinks"),
    ("sink", "delta", "delta"),
    ("stage", "decode", "decode"),
];

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The connectors and stages compiled into this build (see [`BUILTINS`]).
    pub fn builtin() -> Self {
        #[allow(unused_mut)]
        let mut r = Registry::new();
        #[cfg(feature = "files")]
        r.add_source(Arc::new(tributary_files::FilesSourceFactory));
        #[cfg(feature = "kafka")]
        {
            r.add_source(Arc::new(tributary_kafka::KafkaSourceFactory));
            r.add_sink(Arc::new(tributary_kafka::KafkaSinkFactory));
        }
        #[cfg(feature = "kinesis")]
        {
            r.add_source(Arc::new(tributary_kinesis::KinesisSourceFactory));
            r.add_sink(Arc::new(tributary_kinesis::KinesisSinkFactory));
        }
        #[cfg(feature = "sinks")]
        {
            r.add_sink(Arc::new(tributary_sinks::ConsoleSinkFactory));
            r.add_sink(Arc::new(tributary_sinks::ParquetSinkFactory));
        }
        #[cfg(feature = "delta")]
        r.add_sink(Arc::new(tributary_sinks::DeltaSinkFactory));
        #[cfg(feature = "decode")]
        r.add_stage(Arc::new(tributary_decode::DecodeStageFactory));
        r
    }

    /// The built-in connectors plus those of every plugin found in `plugin_path` and
    /// `TRIBUTARY_PLUGIN_PATH`. A plugin that fails its checks fails the whole call, naming it.
    pub fn with_plugins(plugin_path: &[std::path::PathBuf]) -> Result<Self> {
        let mut r = Registry::builtin();
        for p in crate::plugin::discover(&crate::plugin::search_path(plugin_path))? {
            p.register_into(&mut r)?;
        }
        Ok(r)
    }

    /// Whether a source called `name` is registered (names are case-insensitive).
    pub fn has_source(&self, name: &str) -> bool {
        self.sources.contains_key(&name.to_ascii_lowercase())
    }

    /// Whether a sink called `name` is registered.
    pub fn has_sink(&self, name: &str) -> bool {
        self.sinks.contains_key(&name.to_ascii_lowercase())
    }

    /// Registers a source factory (a later one with the same name replaces the earlier: plugins
    /// go through [`crate::plugin::LoadedPlugin::register_into`], which refuses that).
    pub fn add_source(&mut self, f: Arc<dyn SourceFactory>) {
        self.sources.insert(f.name().to_ascii_lowercase(), f);
    }

    /// Registers a sink factory.
    pub fn add_sink(&mut self, f: Arc<dyn SinkFactory>) {
        self.sinks.insert(f.name().to_ascii_lowercase(), f);
    }

    /// Registers a scalar function for the `[transform]` SQL (`SELECT f(x) FROM source`); a
    /// function of the same name is replaced. Plugins' functions come through
    /// [`crate::plugin::LoadedPlugin::register_into`], which refuses a name already taken.
    pub fn add_function(&mut self, f: Arc<dyn ScalarFunction>) {
        self.functions.insert(f.name().to_ascii_lowercase(), f);
    }

    /// The function called `name`, if registered.
    pub fn function(&self, name: &str) -> Option<Arc<dyn ScalarFunction>> {
        self.functions.get(&name.to_ascii_lowercase()).cloned()
    }

    /// Every registered function, by name.
    pub fn functions(&self) -> Vec<Arc<dyn ScalarFunction>> {
        self.functions.values().cloned().collect()
    }

    /// Registers a stage factory.
    pub fn add_stage(&mut self, f: Arc<dyn StageFactory>) {
        self.stages.insert(f.name().to_ascii_lowercase(), f);
    }

    /// The stage factory called `name` (`decode`).
    pub fn stage(&self, name: &str) -> Result<Arc<dyn StageFactory>> {
        self.stages
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| {
                unknown(
                    "stage",
                    name,
                    self.stages.keys().map(String::as_str).collect(),
                )
            })
    }

    /// Source names.
    pub fn source_names(&self) -> Vec<&str> {
        self.sources.keys().map(String::as_str).collect()
    }

    /// Stage names.
    pub fn stage_names(&self) -> Vec<&str> {
        self.stages.keys().map(String::as_str).collect()
    }

    /// Sink names.
    pub fn sink_names(&self) -> Vec<&str> {
        self.sinks.keys().map(String::as_str).collect()
    }

    /// The source factory called `name`.
    pub fn source(&self, name: &str) -> Result<Arc<dyn SourceFactory>> {
        self.sources
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| unknown("source", name, self.source_names()))
    }

    /// The sink factory called `name`.
    pub fn sink(&self, name: &str) -> Result<Arc<dyn SinkFactory>> {
        self.sinks
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| unknown("sink", name, self.sink_names()))
    }
}

/// The conformance fixtures of the built-in connectors and of the suite's reference connectors,
/// by name (for `tributary conformance --fixture <name>`).
pub const SOURCE_FIXTURES: &[(&str, &str)] = &[
    ("files", "files"),
    ("kafka", "kafka"),
    ("kinesis", "kinesis"),
    ("generator", ""),
];

/// The sink fixtures, by name.
pub const SINK_FIXTURES: &[(&str, &str)] = &[
    ("parquet", "sinks"),
    ("jsonlines", ""),
    ("kafka", "kafka"),
    ("kinesis", "kinesis"),
];

fn unknown_fixture(kind: &str, name: &str, known: &[(&str, &str)]) -> Error {
    let hint = known
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, feature)| {
            format!(" (the fixture '{name}' needs this binary built with `--features {feature}`)")
        })
        .unwrap_or_default();
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "no {kind}conformance fixture named '{name}' in this build{hint}; known {kind}fixtures: {}",
            known.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ),
    )
    .with_context("option", "fixture")
}

/// A fresh source fixture by name.
pub fn source_fixture(name: &str) -> Result<Box<dyn tributary_conformance::Fixture>> {
    match name.to_ascii_lowercase().as_str() {
        #[cfg(feature = "files")]
        "files" => Ok(Box::new(tributary_files::conformance::FilesFixture::new()?)),
        #[cfg(feature = "kafka")]
        "kafka" => Ok(Box::new(
            tributary_kafka::conformance::KafkaFixture::from_env()?,
        )),
        #[cfg(feature = "kinesis")]
        "kinesis" => Ok(Box::new(
            tributary_kinesis::conformance::KinesisFixture::from_env()?,
        )),
        "generator" => Ok(Box::new(
            tributary_conformance::fixtures::GeneratorFixture::new(1000)?,
        )),
        _ => Err(unknown_fixture("", name, SOURCE_FIXTURES)),
    }
}

/// A fresh sink fixture by name.
pub fn sink_fixture(name: &str) -> Result<Box<dyn tributary_conformance::SinkFixture>> {
    match name.to_ascii_lowercase().as_str() {
        #[cfg(feature = "sinks")]
        "parquet" => Ok(Box::new(
            tributary_sinks::conformance::ParquetSinkFixture::new()?,
        )),
        #[cfg(feature = "kafka")]
        "kafka" => Ok(Box::new(
            tributary_kafka::conformance::KafkaSinkFixture::from_env()?,
        )),
        #[cfg(feature = "kinesis")]
        "kinesis" => Ok(Box::new(
            tributary_kinesis::conformance::KinesisSinkFixture::from_env()?,
        )),
        "jsonlines" => Ok(Box::new(
            tributary_conformance::fixtures::JsonLinesSinkFixture::new()?,
        )),
        _ => Err(unknown_fixture("sink ", name, SINK_FIXTURES)),
    }
}

fn unknown(kind: &str, name: &str, known: Vec<&str>) -> Error {
    if let Some((_, _, feature)) = BUILTINS
        .iter()
        .find(|(k, n, _)| *k == kind && n.eq_ignore_ascii_case(name))
    {
        let what = if kind == "stage" {
            format!("[source].{name}")
        } else {
            format!("the built-in {kind} connector '{name}'")
        };
        return Error::new(
            ErrorCode::UnknownConnector,
            format!(
                "{what} is not in this build of tributary: rebuild with `--features {feature}` \
                 (cargo install/build -p tributary-runtime --features {feature}); this build has \
                 {kind}s: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        )
        .with_context("connector", name)
        .with_context("feature", *feature);
    }
    let near = known
        .iter()
        .map(|k| (strsim::jaro_winkler(&name.to_ascii_lowercase(), k), *k))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" Did you mean '{k}'?"))
        .unwrap_or_default();
    Error::new(
        ErrorCode::UnknownConnector,
        format!(
            "no {kind} connector named '{name}'; known {kind}s: {}.{near} Plugins are loaded from \
             plugin_path or TRIBUTARY_PLUGIN_PATH.",
            known.join(", ")
        ),
    )
    .with_context("connector", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_found_case_insensitively() {
        let r = Registry::builtin();
        assert_eq!(r.source("FILES").unwrap().name(), "files");
        assert_eq!(r.sink("parquet").unwrap().name(), "parquet");
    }

    #[test]
    fn unknown_connector_suggests_a_near_name() {
        let e = Registry::builtin().sink("parquett").unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownConnector);
        assert!(
            e.message().contains("Did you mean 'parquet'"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_builtin_left_out_of_the_build_names_its_feature() {
        // An empty registry stands for a build without any feature.
        let e = Registry::new().source("kafka").unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownConnector);
        assert!(e.message().contains("--features kafka"), "{}", e.message());
        assert_eq!(e.context_value("feature"), Some("kafka"));
        let e = Registry::new().stage("decode").unwrap_err();
        assert!(e.message().contains("[source].decode"), "{}", e.message());
        let e = Registry::new().sink("nosuch").unwrap_err();
        assert!(
            e.message().contains("no sink connector named 'nosuch'"),
            "{}",
            e.message()
        );
    }
}
