//! The typed connector: options declared once, parsed into [`SourceConfig`], described, built.

use std::sync::Arc;

use tributary_sdk::typed::SourceConnector;
use tributary_sdk::{
    ConnectorContext, OptionSpec, ParsedOptions, Result, Source, SourceDescription,
};

use crate::client::FALLBACK_REGION;
use crate::config::{source_option_specs, SourceConfig};
use crate::schema::{KEY_COLUMN, PAYLOAD_COLUMN};
use crate::source::KinesisSource;

/// The Kinesis source connector (`kinesis`).
#[derive(Debug, Clone, Copy, Default)]
pub struct KinesisSourceFactory;

impl SourceConnector for KinesisSourceFactory {
    type Config = SourceConfig;

    fn name(&self) -> &str {
        "kinesis"
    }

    fn options(&self) -> Vec<OptionSpec> {
        source_option_specs()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<SourceConfig> {
        SourceConfig::parse(options)
    }

    /// The identity does not list the streams: streams may be added or removed on restart
    /// (the source checks that itself, with the Databricks error codes).
    fn describe(&self, config: &SourceConfig) -> SourceDescription {
        let region = config
            .connection
            .region
            .as_deref()
            .unwrap_or(FALLBACK_REGION);
        SourceDescription::new("kinesis", format!("region={region}"))
            .with_streams(config.streams.ids.iter().cloned())
            .with_payload_column(PAYLOAD_COLUMN)
            .with_key_column(KEY_COLUMN)
            .with_real_time(crate::efo::real_time_support(&config.consumer_mode))
    }

    /// `consumers`: the enhanced fan-out consumer manager ([`crate::commands`]).
    fn commands(&self) -> Vec<Arc<dyn tributary_sdk::ConnectorCommand>> {
        vec![Arc::new(crate::commands::ConsumersCommandLine)]
    }

    /// Kinesis's record schema.
    fn schema(&self, _: &SourceConfig) -> Result<Option<arrow_schema::SchemaRef>> {
        Ok(Some(crate::schema::kinesis_schema()))
    }

    fn build(&self, config: SourceConfig, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        let identity = SourceConnector::describe(self, &config).identity;
        Ok(Box::new(KinesisSource::new(
            config,
            identity,
            Arc::clone(&context.secrets),
            context,
        )))
    }

    fn stream_binding(&self) -> Option<Arc<dyn tributary_sdk::StreamBinding>> {
        Some(Arc::new(crate::stream_binding::KinesisStreamBinding))
    }
}
