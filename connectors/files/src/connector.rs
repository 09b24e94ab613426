//! [`FilesSourceFactory`]: the files connector in the SDK's typed contract.
//!
//! The options are validated against [`option_specs`] and parsed once into a [`FilesConfig`];
//! the description (the checkpoint identity: path, format, name glob) comes from the config
//! alone, before the build step resolves the path and opens the file-state store. The
//! connector also describes its own checkpoint state (`tributary state`), see
//! [`crate::state_report`].

use tributary_sdk::typed::SourceConnector;
use tributary_sdk::{
    ConnectorContext, OptionSpec, ParsedOptions, Result, Source, SourceDescription, StateReport,
    StateRequest,
};

use crate::config::{option_specs, FilesConfig};
use crate::source::FilesSource;
use crate::CONNECTOR;

/// The files connector (name `files`): builds incremental file sources.
#[derive(Debug, Clone, Copy, Default)]
pub struct FilesSourceFactory;

impl SourceConnector for FilesSourceFactory {
    type Config = FilesConfig;

    fn name(&self) -> &str {
        CONNECTOR
    }

    fn options(&self) -> Vec<OptionSpec> {
        option_specs()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<FilesConfig> {
        FilesConfig::parse(options)
    }

    /// Identity only: files has no named streams and no payload column (records are decoded
    /// by the connector itself).
    fn describe(&self, config: &FilesConfig) -> SourceDescription {
        SourceDescription::new(CONNECTOR, config.target())
    }

    /// Fixed by the `schema` option (with `_rescued_data`, `_metadata` and the partition
    /// columns as the built source adds them); an inferred schema is only known when built.
    fn schema(&self, config: &FilesConfig) -> Result<Option<arrow_schema::SchemaRef>> {
        crate::schema::given_output_schema(config)
    }

    fn build(&self, config: FilesConfig, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        Ok(Box::new(FilesSource::open(config, context)?))
    }

    /// Every file the source discovered, with the batch that read it (see
    /// [`crate::state_report`]).
    fn describe_state(&self, request: &StateRequest<'_>) -> Result<Option<StateReport>> {
        crate::state_report::describe(request).map(Some)
    }

    /// The file state must exist and reach the logged batches (see [`crate::state_check`]).
    fn verify_state(&self, request: &StateRequest<'_>) -> Result<()> {
        crate::state_check::verify(request)
    }

    /// `notifications`: list or tear down what notification mode set up on S3
    /// ([`crate::commands`]).
    fn commands(&self) -> Vec<std::sync::Arc<dyn tributary_sdk::ConnectorCommand>> {
        vec![std::sync::Arc::new(crate::commands::NotificationsCommand)]
    }
}
