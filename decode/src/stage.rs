//! [`DecodeStageFactory`]: decoding as a pipeline stage (`[source.decode]`), built from the
//! source's [`SourceDescription`].
//!
//! Everything the stage needs to know about the source comes from its description, never from
//! the source's option names: the payload column (`value`, `data`), the key column, and the
//! named streams a registry subject is named after (TopicNameStrategy, TopicRecordNameStrategy).
//!
//! 1. [`StageFactory::validate`]: the option specs, the locators, the column and one-stream
//!    rules; no secret resolved, no I/O.
//! 2. [`StageFactory::create`]: the same checks, then the registry secret is resolved.
//! 3. [`Stage::open`]: the schemas are resolved (the registry is asked once per run, so a
//!    restart picks up a newer version) and the decoder is compiled; returns the output schema.
//! 4. [`Stage::apply`]: decodes a batch; [`Stage::metrics`]: the malformed-record counters.
//!    With `schemaResolution=writer`, a record framed with a schema id other than the pinned one
//!    makes `apply` fetch that writer schema once (blocking; see `crate::resolution`).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use tributary_sdk::{
    Error, ErrorCode, OptionSpec, Options, Result, SchemaFormat, SecretStore, SourceDescription,
    SourceMetrics, Stage, StageFactory,
};

use crate::options::{decode_options, DecodeConfig, SchemaResolution, SideSource};
use crate::provider::schema_provider;
use crate::StreamDecoder;

/// Builds [`DecodeStage`]s: the `decode` table of a pipeline's `[source]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DecodeStageFactory;

/// What the stage takes from the source description, checked without I/O.
#[derive(Debug, Clone)]
struct Binding {
    /// The stream registry subjects are named after.
    stream: String,
    payload_column: String,
    key_column: Option<String>,
}

impl Binding {
    fn new(config: &DecodeConfig, source: &SourceDescription) -> Result<Binding> {
        let connector = &source.identity.connector;
        let payload_column = source.payload_column.clone().ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "[source.decode] needs a payload column, but source '{connector}' has none"
                ),
            )
            .with_context("connector", connector)
        })?;
        if config.key.is_some() && source.key_column.is_none() {
            let option = match &config.key {
                Some(SideSource::Direct { format, .. }) => match format {
                    SchemaFormat::JsonSchema => "key_json_schema",
                    SchemaFormat::Avro => "key_avro_schema",
                    SchemaFormat::Protobuf { .. } => "key_proto_schema",
                },
                _ => "key_schema_locator",
            };
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "[source.decode] has a key schema, but source '{connector}' has no key column; remove the key_ options"
                ),
            )
            .with_context("connector", connector)
            .with_context("option", option));
        }
        Ok(Binding {
            stream: stream_name(config, source)?,
            payload_column,
            key_column: source.key_column.clone(),
        })
    }
}

/// The stream name schemas are resolved for (the topic of TopicNameStrategy subjects): the
/// source's first named stream, else its identity target. A locator whose subject is named after
/// the topic needs a source of exactly one named stream: one decoded column has one schema, so
/// several streams (or a pattern) are refused rather than decoded with the first one's schema.
fn stream_name(config: &DecodeConfig, source: &SourceDescription) -> Result<String> {
    let Some(option) = config.subject_per_topic_option() else {
        return Ok(source
            .streams
            .first()
            .cloned()
            .unwrap_or_else(|| source.identity.target.clone()));
    };
    if source.stream_pattern.is_none() && source.streams.len() == 1 {
        return Ok(source.streams[0].clone());
    }
    Err(Error::new(
        ErrorCode::ConflictingOptions,
        format!(
            "option 'source.decode.{option}' names the registry subject after the topic, but this \
             source reads {}; a decoded column has one schema: give subject=<name> in the \
             locator, or run one pipeline per topic",
            source.streams_text()
        ),
    )
    .with_context("option", option)
    .with_context("connector", &source.identity.connector))
}

impl StageFactory for DecodeStageFactory {
    fn name(&self) -> &str {
        "decode"
    }

    fn options(&self) -> Vec<OptionSpec> {
        decode_options()
    }

    fn validate(&self, options: &Options, source: &SourceDescription) -> Result<()> {
        let (config, _secret_still_unresolved) = DecodeConfig::parse(options)?;
        Binding::new(&config, source).map(|_| ())
    }

    /// Schemas given as text open without I/O; a registry is asked when the run opens.
    fn opens_without_io(&self, options: &Options) -> bool {
        DecodeConfig::parse(options).is_ok_and(|(config, _)| {
            [&config.key, &config.payload]
                .iter()
                .all(|side| !matches!(side, Some(SideSource::Registry(_))))
        })
    }

    fn create(
        &self,
        options: &Options,
        source: &SourceDescription,
        secrets: &dyn SecretStore,
    ) -> Result<Box<dyn Stage>> {
        // The checks without I/O first, so a bad pipeline fails before a secret is read.
        self.validate(options, source)?;
        let config = DecodeConfig::from_options(options, secrets)?;
        let binding = Binding::new(&config, source)?;
        Ok(Box::new(DecodeStage {
            config,
            binding,
            connector: source.identity.connector.clone(),
            decoder: None,
        }))
    }
}

/// Decodes the key and payload columns of one source's batches.
#[derive(Debug)]
pub struct DecodeStage {
    config: DecodeConfig,
    binding: Binding,
    connector: String,
    /// Built by `open` once the schemas are resolved.
    decoder: Option<StreamDecoder>,
}

impl DecodeStage {
    /// `schemaResolution=writer`: records framed with another schema id are read with their
    /// writer schema, fetched by id from the registry when first met.
    #[cfg(feature = "registry")]
    fn with_resolution(
        &self,
        decoder: StreamDecoder,
        schemas: &tributary_sdk::StreamSchemas,
    ) -> Result<StreamDecoder> {
        if self.config.schema_resolution != SchemaResolution::Writer {
            return Ok(decoder);
        }
        let source = crate::registry::BlockingWriterSchemas::new(&self.config)?;
        decoder.resolving_writer_schemas(schemas, std::sync::Arc::new(source))
    }

    /// Without the registry there is no locator, so `schemaResolution` was refused.
    #[cfg(not(feature = "registry"))]
    fn with_resolution(
        &self,
        decoder: StreamDecoder,
        _: &tributary_sdk::StreamSchemas,
    ) -> Result<StreamDecoder> {
        let _ = SchemaResolution::Writer;
        Ok(decoder)
    }
}

#[async_trait]
impl Stage for DecodeStage {
    async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef> {
        let column = &self.binding.payload_column;
        if input.index_of(column).is_err() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "[source.decode]: source '{}' names '{column}' as its payload column, but its schema has no such column",
                    self.connector
                ),
            )
            .with_context("connector", &self.connector)
            .with_context("field", column));
        }
        let provider = schema_provider(&self.config)?;
        let schemas = provider.resolve(&self.binding.stream).await?;
        let decoder =
            StreamDecoder::with_protobuf(&schemas, self.config.mode, column, self.config.protobuf)?
                .with_key_column(self.binding.key_column.as_deref())?;
        let decoder = self.with_resolution(decoder, &schemas)?;
        let out = decoder.output_schema(&input);
        self.decoder = Some(decoder);
        Ok(out)
    }

    async fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        match self.decoder.as_mut() {
            Some(d) => d.decode(batch),
            None => Err(Error::new(
                ErrorCode::Internal,
                "the decode stage was applied before it was opened",
            )),
        }
    }

    fn metrics(&self) -> SourceMetrics {
        self.decoder
            .as_ref()
            .map(StreamDecoder::metrics)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tributary_sdk::EnvSecretStore;

    fn options(locator: &str) -> Options {
        Options::new()
            .with("schema_registry_url", "http://localhost:1")
            .with("payload_schema_locator", locator)
    }

    fn kafka(streams: &[&str]) -> SourceDescription {
        SourceDescription::new("kafka", format!("subscribe:{}", streams.join(",")))
            .with_streams(streams.iter().copied())
            .with_payload_column("value")
            .with_key_column("key")
    }

    fn stream(locator: &str, source: &SourceDescription) -> Result<String> {
        let config = DecodeConfig::from_options(&options(locator), &EnvSecretStore)?;
        Binding::new(&config, source).map(|b| b.stream)
    }

    #[test]
    fn topic_named_subjects_need_exactly_one_topic() {
        let topic_name = "strategy=TopicNameStrategy,format=AVRO";
        assert_eq!(stream(topic_name, &kafka(&["orders"])).unwrap(), "orders");

        let e = stream(topic_name, &kafka(&["orders", "refunds"])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert!(
            e.message().contains("payload_schema_locator")
                && e.message().contains("2 streams (orders, refunds)")
                && e.message().contains("subject=<name>"),
            "{}",
            e.message()
        );
        let pattern = SourceDescription::new("kafka", "subscribePattern:orders-.*")
            .with_stream_pattern("orders-.*")
            .with_payload_column("value");
        let e = stream(
            "strategy=TopicRecordNameStrategy,record=x.Order,format=AVRO",
            &pattern,
        )
        .unwrap_err();
        assert!(
            e.message().contains("pattern 'orders-.*'"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_fixed_subject_reads_any_number_of_topics() {
        let fixed = "subject=orders-value,format=AVRO";
        assert_eq!(
            stream(fixed, &kafka(&["orders", "refunds"])).unwrap(),
            "orders"
        );
        let pattern = SourceDescription::new("kafka", "subscribePattern:o.*")
            .with_stream_pattern("o.*")
            .with_payload_column("value");
        assert_eq!(
            stream(
                "strategy=RecordNameStrategy,record=x.Order,format=AVRO",
                &pattern
            )
            .unwrap(),
            "subscribePattern:o.*"
        );
    }

    #[test]
    fn check_refuses_what_run_refuses() {
        let factory = DecodeStageFactory;
        let topic_name = options("strategy=TopicNameStrategy,format=AVRO");
        let two = kafka(&["a", "b"]);
        let e = factory.validate(&topic_name, &two).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert_eq!(e.context_value("option"), Some("payload_schema_locator"));
        let e = factory
            .create(&topic_name, &two, &EnvSecretStore)
            .unwrap_err();
        assert_eq!(e.context_value("option"), Some("payload_schema_locator"));
        factory.validate(&topic_name, &kafka(&["a"])).unwrap();
        factory
            .create(&topic_name, &kafka(&["a"]), &EnvSecretStore)
            .unwrap();
    }

    #[test]
    fn validate_resolves_no_secret() {
        // A reference to a secret that does not exist: validate passes, create fails.
        let o = options("subject=s,format=AVRO")
            .with("schema_registry_key", "svc")
            .with("schema_registry_secret", "{{secrets/nowhere/none}}");
        let src = kafka(&["a"]);
        DecodeStageFactory.validate(&o, &src).unwrap();
        assert!(DecodeStageFactory
            .create(
                &o,
                &src,
                &tributary_sdk::FileSecretStore::new("/nonexistent")
            )
            .is_err());
    }

    #[test]
    fn a_source_without_payload_or_key_column_is_refused_by_name() {
        let json = Options::new().with("json_schema", r#"{"type":"object"}"#);
        let files = SourceDescription::new("files", "/data");
        let e = DecodeStageFactory.validate(&json, &files).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPipeline);
        assert_eq!(
            e.message(),
            "[source.decode] needs a payload column, but source 'files' has none"
        );
        let kinesis = SourceDescription::new("kinesis", "s").with_payload_column("data");
        let key = Options::new().with("key_json_schema", r#"{"type":"object"}"#);
        let e = DecodeStageFactory.validate(&key, &kinesis).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPipeline);
        assert_eq!(e.context_value("option"), Some("key_json_schema"));
    }
}
