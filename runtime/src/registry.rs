//! The connector registry: built-in connectors and connectors loaded from plugins, by name.
//!
//! Pipeline files name connectors the same way whether they are built in or loaded; an unknown
//! name is refused with the list of known ones and a "did you mean" for near misses.

use std::collections::BTreeMap;
use std::sync::Arc;

use tributary_sdk::{Error, ErrorCode, Result, SinkFactory, SourceFactory};

/// Source and sink factories by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    sources: BTreeMap<String, Arc<dyn SourceFactory>>,
    sinks: BTreeMap<String, Arc<dyn SinkFactory>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The connectors compiled into this build: `files` and `kafka` sources, `console`,
    /// `parquet` and `kafka` sinks.
    pub fn builtin() -> Self {
        let mut r = Registry::new();
        r.add_source(Arc::new(tributary_files::FilesSourceFactory));
        r.add_source(Arc::new(tributary_kafka::KafkaSourceFactory));
        r.add_sink(Arc::new(tributary_kafka::KafkaSinkFactory));
        r.add_sink(Arc::new(tributary_sinks::ConsoleSinkFactory));
        r.add_sink(Arc::new(tributary_sinks::ParquetSinkFactory));
        r
    }

    /// The built-in connectors plus those of every plugin found in `plugin_path` and
    /// `TRIBUTARY_PLUGIN_PATH`. A plugin that fails its checks fails the whole call, naming it.
    pub fn with_plugins(plugin_path: &[std::path::PathBuf]) -> Result<Self> {
        let mut r = Registry::builtin();
        for p in crate::plugin::discover(&crate::plugin::search_path(plugin_path))? {
            p.register_into(&mut r);
        }
        Ok(r)
    }

    /// Registers a source factory (a later one with the same name replaces the earlier).
    pub fn add_source(&mut self, f: Arc<dyn SourceFactory>) {
        self.sources.insert(f.name().to_ascii_lowercase(), f);
    }

    /// Registers a sink factory.
    pub fn add_sink(&mut self, f: Arc<dyn SinkFactory>) {
        self.sinks.insert(f.name().to_ascii_lowercase(), f);
    }

    /// Source names.
    pub fn source_names(&self) -> Vec<&str> {
        self.sources.keys().map(String::as_str).collect()
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

fn unknown(kind: &str, name: &str, known: Vec<&str>) -> Error {
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
}
