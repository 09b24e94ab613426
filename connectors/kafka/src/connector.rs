//! The typed connector: options declared once, parsed into [`SourceConfig`], described, built
//! into a [`KafkaSource`].

use std::sync::Arc;

use tributary_sdk::typed::SourceConnector;
use tributary_sdk::{
    ConnectorContext, OptionSpec, ParsedOptions, RealTimeSupport, Result, Source, SourceDescription,
};

use crate::config::{source_option_specs, SourceConfig, Subscription};
use crate::schema::{KEY_COLUMN, PAYLOAD_COLUMN};
use crate::source::KafkaSource;

/// Builds Kafka sources (connector name `kafka`).
#[derive(Debug, Default, Clone, Copy)]
pub struct KafkaSourceFactory;

impl SourceConnector for KafkaSourceFactory {
    type Config = SourceConfig;

    fn name(&self) -> &str {
        "kafka"
    }

    fn options(&self) -> Vec<OptionSpec> {
        source_option_specs()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<SourceConfig> {
        SourceConfig::parse(options)
    }

    /// The identity is the subscription (`subscribe=a,b`, `subscribePattern=x.*`,
    /// `assign={...}`); the streams are the named or assigned topics.
    fn describe(&self, config: &SourceConfig) -> SourceDescription {
        let d = SourceDescription::new("kafka", config.subscription.describe())
            .with_payload_column(PAYLOAD_COLUMN)
            .with_key_column(KEY_COLUMN)
            .with_real_time(RealTimeSupport::Supported);
        match &config.subscription {
            Subscription::Topics(t) => d.with_streams(t.iter().cloned()),
            Subscription::Assign(a) => d.with_streams(a.keys().cloned()),
            Subscription::Pattern(r) => d.with_stream_pattern(r.as_str()),
        }
    }

    /// Kafka's record schema (with `headers` when `includeHeaders=true`).
    fn schema(&self, config: &SourceConfig) -> Result<Option<arrow_schema::SchemaRef>> {
        Ok(Some(crate::schema::kafka_schema(config.include_headers)))
    }

    fn build(&self, config: SourceConfig, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        Ok(Box::new(KafkaSource::build(config, context)?))
    }

    fn stream_binding(&self) -> Option<Arc<dyn tributary_sdk::StreamBinding>> {
        Some(Arc::new(crate::stream_binding::KafkaStreamBinding))
    }
}
