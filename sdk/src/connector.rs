//! Connector factories: how a host finds and builds sources and sinks by name.
//!
//! A connector crate exposes one [`SourceFactory`] and/or [`SinkFactory`]. The factory declares its
//! options once ([`OptionSpec`]s), validates an option map without touching the network
//! ([`SourceFactory::validate`], used by `tributary check`), and builds the connector
//! ([`SourceFactory::create`]). The runtime keeps built-in factories and factories loaded from
//! plugins in one registry, so a pipeline names a connector the same way whether it is built in
//! or loaded.

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Result;
use crate::options::{OptionSpec, Options};
use crate::secret::{EnvSecretStore, SecretStore};
use crate::sink::Sink;
use crate::source::Source;

/// Whether a connector reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectorKind {
    /// Reads records.
    Source,
    /// Writes records.
    Sink,
}

/// What the host gives a connector when it builds it.
#[derive(Debug, Clone)]
pub struct ConnectorContext {
    /// A directory inside the checkpoint reserved for this connector's own state (the files
    /// source's file-state store lives here). `None` for runs without a checkpoint.
    pub state_dir: Option<PathBuf>,
    /// Resolves `{{secrets/scope/key}}` option values.
    pub secrets: Arc<dyn SecretStore>,
    /// The pipeline's name, for group ids and consumer names.
    pub pipeline: String,
}

impl Default for ConnectorContext {
    fn default() -> Self {
        ConnectorContext {
            state_dir: None,
            secrets: Arc::new(EnvSecretStore),
            pipeline: "tributary".to_string(),
        }
    }
}

/// Builds sources of one connector.
pub trait SourceFactory: Send + Sync + Debug {
    /// The connector name used in pipeline files (`files`, `kafka`).
    fn name(&self) -> &str;

    /// Every option the connector accepts.
    fn options(&self) -> Vec<OptionSpec>;

    /// Checks options without any I/O: unknown, missing, badly typed, conflicting.
    fn validate(&self, options: &Options) -> Result<()> {
        OptionSpec::validate_all(&self.options(), options, self.name()).map(|_| ())
    }

    /// Builds a source.
    fn create(&self, options: &Options, context: &ConnectorContext) -> Result<Box<dyn Source>>;
}

/// Builds sinks of one connector.
pub trait SinkFactory: Send + Sync + Debug {
    /// The connector name used in pipeline files (`console`, `parquet`, `kafka`).
    fn name(&self) -> &str;

    /// Every option the connector accepts.
    fn options(&self) -> Vec<OptionSpec>;

    /// Checks options without any I/O.
    fn validate(&self, options: &Options) -> Result<()> {
        OptionSpec::validate_all(&self.options(), options, self.name()).map(|_| ())
    }

    /// Builds a sink.
    fn create(&self, options: &Options, context: &ConnectorContext) -> Result<Box<dyn Sink>>;
}
