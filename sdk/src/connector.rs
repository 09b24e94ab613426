//! Connector factories: the erased form the host and the plugin boundary use.
//!
//! A connector author writes the typed form ([`crate::typed::SourceConnector`] /
//! [`crate::typed::SinkConnector`]): a config type parsed once from the options, a description
//! of what the configured source reads, and a build step. A blanket impl derives the erased,
//! object-safe [`SourceFactory`] / [`SinkFactory`] from it, which is what the runtime's registry,
//! the conformance suite and the plugin export side hold (`Arc<dyn SourceFactory>`).
//!
//! The host drives a factory in three steps, each doing strictly more than the last:
//!
//! 1. [`SourceFactory::prepare`] validates and parses the options without any I/O (no network,
//!    no file opened) and returns a [`PreparedSource`] whose [`SourceDescription`] says what it
//!    reads: its checkpoint identity, the streams/topics, and which columns carry the payload
//!    and the key. `tributary check` stops here.
//! 2. The host binds the checkpoint to the description's identity (a checkpoint written for
//!    another source is refused before the connector opens anything).
//! 3. [`PreparedSource::build`] resolves secrets and builds the [`Source`].
//!
//! [`SourceFactoryExt`] adds the conveniences `validate` and `create` (prepare + build) to every
//! factory.

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

use crate::command::ConnectorCommand;
use crate::description::SourceDescription;
use crate::error::Result;
use crate::options::{OptionSpec, Options};
use crate::secret::{EnvSecretStore, SecretStore};
use crate::sink::Sink;
use crate::source::Source;
use crate::state::{StateReport, StateRequest};
use crate::stream_binding::StreamBinding;

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
    /// The checkpoint's stable id (a UUID written when the checkpoint is first bound), `None` for
    /// runs without a checkpoint. Sinks use it as their application id (Delta's `txn` action),
    /// sources to name what they register (an enhanced fan-out consumer).
    pub checkpoint_id: Option<String>,
}

impl Default for ConnectorContext {
    fn default() -> Self {
        ConnectorContext {
            state_dir: None,
            secrets: Arc::new(EnvSecretStore),
            pipeline: "tributary".to_string(),
            checkpoint_id: None,
        }
    }
}

/// Builds sources of one connector (the erased, object-safe form).
///
/// Connector authors implement [`crate::typed::SourceConnector`] instead; this trait is derived
/// from it. Wrappers (test doubles, the plugin host's foreign factory) implement it directly and
/// must forward every method.
pub trait SourceFactory: Send + Sync + Debug {
    /// The connector name used in pipeline files (`files`, `kafka`).
    fn name(&self) -> &str;

    /// Every option the connector accepts, each declared once.
    fn options(&self) -> Vec<OptionSpec>;

    /// Validates and parses the options without any I/O (unknown, missing, badly typed,
    /// conflicting or ignored options are refused) and says what the source will read.
    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSource>>;

    /// Describes the connector's own state in a checkpoint (`tributary state`). `Ok(None)`
    /// when the connector keeps no state of its own beyond its offsets.
    fn describe_state(&self, request: &StateRequest<'_>) -> Result<Option<StateReport>> {
        let _ = request;
        Ok(None)
    }

    /// Checks the connector's own state in a checkpoint against the checkpoint's logs before
    /// a pipeline resumes (and in `tributary checkpoint verify`): state that is missing or
    /// behind the logged batches is a `CHECKPOINT_DAMAGED` error naming it, never re-created
    /// silently (a re-created file state would read old files again, or skip new ones).
    /// `Ok(())` (the default) when the connector keeps no state of its own.
    fn verify_state(&self, request: &StateRequest<'_>) -> Result<()> {
        let _ = request;
        Ok(())
    }

    /// How this connector backs a named stream (see [`crate::stream_binding`]); `None` when it
    /// cannot.
    fn stream_binding(&self) -> Option<Arc<dyn StreamBinding>> {
        None
    }

    /// The connector's administrative subcommands (see [`crate::command`]).
    fn commands(&self) -> Vec<Arc<dyn ConnectorCommand>> {
        Vec::new()
    }
}

/// A source whose options were parsed and checked, not yet built.
pub trait PreparedSource: Send + Sync + Debug {
    /// What the configured source reads.
    fn description(&self) -> &SourceDescription;

    /// The schema the configured source produces, when its options fix it; `Ok(None)` (the
    /// default) when only the built source can tell. No I/O (see
    /// [`crate::typed::SourceConnector::schema`]).
    fn schema(&self) -> Result<Option<arrow_schema::SchemaRef>> {
        Ok(None)
    }

    /// Resolves secrets and builds the source. Opening connections may happen here or lazily
    /// in the source's first call.
    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Source>>;
}

/// Builds sinks of one connector (the erased, object-safe form); derived from
/// [`crate::typed::SinkConnector`].
pub trait SinkFactory: Send + Sync + Debug {
    /// The connector name used in pipeline files (`console`, `parquet`, `kafka`).
    fn name(&self) -> &str;

    /// Every option the connector accepts, each declared once.
    fn options(&self) -> Vec<OptionSpec>;

    /// Validates and parses the options without any I/O.
    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSink>>;

    /// The output modes the sink honours ([`crate::OutputMode`]); `append` unless it says more.
    fn output_modes(&self) -> &'static [crate::OutputMode] {
        &[crate::OutputMode::Append]
    }
}

/// A sink whose options were parsed and checked, not yet built.
pub trait PreparedSink: Send + Sync + Debug {
    /// Resolves secrets and builds the sink.
    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Sink>>;
}

/// Conveniences over every [`SourceFactory`].
pub trait SourceFactoryExt: SourceFactory {
    /// Checks options without any I/O.
    fn validate(&self, options: &Options) -> Result<()> {
        self.prepare(options).map(|_| ())
    }

    /// What the configured source reads, without building it.
    fn describe(&self, options: &Options) -> Result<SourceDescription> {
        Ok(self.prepare(options)?.description().clone())
    }

    /// Prepares and builds in one step.
    fn create(&self, options: &Options, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        self.prepare(options)?.build(context)
    }
}

impl<F: SourceFactory + ?Sized> SourceFactoryExt for F {}

/// Conveniences over every [`SinkFactory`].
pub trait SinkFactoryExt: SinkFactory {
    /// Checks options without any I/O.
    fn validate(&self, options: &Options) -> Result<()> {
        self.prepare(options).map(|_| ())
    }

    /// Prepares and builds in one step.
    fn create(&self, options: &Options, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        self.prepare(options)?.build(context)
    }
}

impl<F: SinkFactory + ?Sized> SinkFactoryExt for F {}
