//! `tributary conformance`: runs the shared conformance suite against a built-in connector or a
//! connector loaded from a plugin, with a named fixture, and writes the reports.
//!
//! Extra `--options k=v` are laid over the options each case gives the connector (for
//! connection settings such as `kafka.security.protocol`), through a wrapping factory.

use std::path::PathBuf;
use std::sync::Arc;

use tributary_conformance::runner::RunOptions;
use tributary_conformance::Report;
use tributary_sdk::{
    ConnectorContext, Error, ErrorCode, OptionSpec, Options, Result, Source, SourceFactory,
};

use crate::plugin;
use crate::registry::Registry;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct ConformanceRequest {
    /// Source connector name.
    pub connector: String,
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
struct WithOptions {
    inner: Arc<dyn SourceFactory>,
    extra: Options,
}

impl WithOptions {
    fn merged(&self, options: &Options) -> Options {
        let mut o = options.clone();
        for (k, v) in self.extra.iter() {
            o.set(k, v);
        }
        o
    }
}

impl SourceFactory for WithOptions {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn options(&self) -> Vec<OptionSpec> {
        self.inner.options()
    }
    fn validate(&self, options: &Options) -> Result<()> {
        self.inner.validate(&self.merged(options))
    }
    fn create(&self, options: &Options, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        self.inner.create(&self.merged(options), context)
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
    let factory: Arc<dyn SourceFactory> = match &req.plugin {
        Some(file) => {
            let loaded = plugin::load(file)?;
            let found = loaded
                .source_factories()
                .into_iter()
                .find(|f| f.name().eq_ignore_ascii_case(&req.connector));
            found.ok_or_else(|| {
                Error::new(
                    ErrorCode::UnknownConnector,
                    format!(
                        "plugin {} has no source connector '{}'",
                        file.display(),
                        req.connector
                    ),
                )
            })?
        }
        None => Registry::with_plugins(&[])?.source(&req.connector)?,
    };
    let factory = WithOptions {
        inner: factory,
        extra: req.options.clone(),
    };
    let mut fixture = tributary_conformance::fixtures::by_name(&req.fixture)?;
    let options = RunOptions {
        only: req.only.clone(),
        ..RunOptions::default()
    };
    Ok(tributary_conformance::runner::run(&factory, fixture.as_mut(), &options).await)
}
