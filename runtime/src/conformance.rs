//! `tributary conformance`: runs the shared conformance suite against a built-in connector or a
//! connector loaded from a plugin, with a named fixture, and writes the reports. With `--sink`
//! the connector is a sink and the sink suite runs (fixtures `parquet`, `jsonlines`, `kafka`).
//!
//! Extra `--options k=v` are laid over the options each case gives the connector (for
//! connection settings such as `kafka.security.protocol`), through a wrapping factory.

use std::path::PathBuf;
use std::sync::Arc;

use tributary_conformance::runner::RunOptions;
use tributary_conformance::Report;
use tributary_sdk::{
    Error, ErrorCode, OptionSpec, Options, PreparedSink, PreparedSource, Result, SinkFactory,
    SourceFactory, StateReport, StateRequest,
};

use crate::plugin;
use crate::registry::Registry;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct ConformanceRequest {
    /// Connector name (a source, or a sink with `sink`).
    pub connector: String,
    /// The connector is a sink: run the sink suite.
    pub sink: bool,
    /// Load the connector from this plugin file instead of the built-in registry.
    pub plugin: Option<PathBuf>,
    /// Fixture name (`files`, `generator`, `kafka`, ...).
    pub fixture: String,
    /// Options laid over each case's options.
    pub options: Options,
    /// Only these cases (all when empty).
    pub only: Vec<String>,
}

/// A factory that adds fixed options to every `create`/`validate` call.
#[derive(Debug)]
struct WithOptions<F: ?Sized> {
    inner: Arc<F>,
    extra: Options,
}

impl<F: ?Sized> WithOptions<F> {
    fn merged(&self, options: &Options) -> Options {
        let mut o = options.clone();
        for (k, v) in self.extra.iter() {
            o.set(k, v);
        }
        o
    }
}

impl SourceFactory for WithOptions<dyn SourceFactory> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn options(&self) -> Vec<OptionSpec> {
        self.inner.options()
    }
    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSource>> {
        self.inner.prepare(&self.merged(options))
    }
    fn describe_state(&self, request: &StateRequest<'_>) -> Result<Option<StateReport>> {
        self.inner.describe_state(request)
    }
    fn verify_state(&self, request: &StateRequest<'_>) -> Result<()> {
        self.inner.verify_state(request)
    }
    fn stream_binding(&self) -> Option<Arc<dyn tributary_sdk::StreamBinding>> {
        self.inner.stream_binding()
    }
    fn commands(&self) -> Vec<Arc<dyn tributary_sdk::ConnectorCommand>> {
        self.inner.commands()
    }
}

impl SinkFactory for WithOptions<dyn SinkFactory> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn options(&self) -> Vec<OptionSpec> {
        self.inner.options()
    }
    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSink>> {
        self.inner.prepare(&self.merged(options))
    }
    fn output_modes(&self) -> &'static [tributary_sdk::OutputMode] {
        self.inner.output_modes()
    }
}

/// Parses `k=v` command-line pairs.
pub fn parse_pairs(pairs: &[String]) -> Result<Options> {
    let mut o = Options::new();
    for p in pairs {
        let (k, v) = p.split_once('=').ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("--options takes key=value pairs, got '{p}'"),
            )
        })?;
        o.set(k.trim(), v.trim());
    }
    Ok(o)
}

/// Finds the connector, builds the fixture, runs the suite.
pub async fn run(req: &ConformanceRequest) -> Result<Report> {
    let options = RunOptions {
        only: req.only.clone(),
        ..RunOptions::default()
    };
    if req.sink {
        let factory = WithOptions {
            inner: sink_factory(req)?,
            extra: req.options.clone(),
        };
        let mut fixture = crate::registry::sink_fixture(&req.fixture)?;
        return Ok(tributary_conformance::run_sinks(&factory, fixture.as_mut(), &options).await);
    }
    let factory = WithOptions {
        inner: source_factory(req)?,
        extra: req.options.clone(),
    };
    let mut fixture = crate::registry::source_fixture(&req.fixture)?;
    Ok(tributary_conformance::runner::run(&factory, fixture.as_mut(), &options).await)
}

fn not_in_plugin(file: &std::path::Path, kind: &str, name: &str) -> Error {
    Error::new(
        ErrorCode::UnknownConnector,
        format!("plugin {} has no {kind} connector '{name}'", file.display()),
    )
}

fn source_factory(req: &ConformanceRequest) -> Result<Arc<dyn SourceFactory>> {
    match &req.plugin {
        Some(file) => plugin::load(file)?
            .source_factories()
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(&req.connector))
            .ok_or_else(|| not_in_plugin(file, "source", &req.connector)),
        None => Registry::with_plugins(&[])?.source(&req.connector),
    }
}

fn sink_factory(req: &ConformanceRequest) -> Result<Arc<dyn SinkFactory>> {
    match &req.plugin {
        Some(file) => plugin::load(file)?
            .sink_factories()
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(&req.connector))
            .ok_or_else(|| not_in_plugin(file, "sink", &req.connector)),
        None => Registry::with_plugins(&[])?.sink(&req.connector),
    }
}
