//! A stream's ingestion pipeline as an ordinary [`PipelineSpec`]:
//!
//! source (the `[source] kind` connector, reading the stream's names from the stream's creation
//! time on, as its stream binding spells it) → `decode` (when a key or payload schema is given) →
//! `stream_ingestion` (the ingestion table's columns) → `delta` sink (the ingestion table,
//! `mergeSchema` on so a new registry version adds columns).

use tributary_sdk::{Error, ErrorCode, Options, Result};

use super::binding;
use super::catalog::{Catalog, StreamEntry};
use super::ingest::STAGE_NAME;
use super::spec::StreamSpec;
use crate::pipeline::{PipelineSpec, StageSpec};
use crate::registry::Registry;
use crate::trigger::Trigger;

/// The sink connector of ingestion tables.
pub const SINK: &str = "delta";

/// The pipeline of a stream, its connector from [`super::stream_registry`]. `registry_key` is
/// the resolved schema registry API key (`None`: the reference as written, enough for
/// validation).
pub fn pipeline_spec(
    catalog: &Catalog,
    entry: &StreamEntry,
    trigger: Trigger,
    registry_key: Option<&str>,
) -> Result<PipelineSpec> {
    pipeline_spec_with(
        catalog,
        entry,
        trigger,
        registry_key,
        &super::stream_registry(),
    )
}

/// [`pipeline_spec`] with the connector's stream binding from `registry`.
pub fn pipeline_spec_with(
    catalog: &Catalog,
    entry: &StreamEntry,
    trigger: Trigger,
    registry_key: Option<&str>,
    registry: &Registry,
) -> Result<PipelineSpec> {
    let spec = &entry.spec;
    let name = spec.stream_name()?;
    let created_ms = entry.created()?.timestamp_millis();
    let bound = binding::resolve(registry, &spec.source.kind)?;
    let subscription = binding::subscription(spec, bound.as_ref())?;
    let mut source_options = spec.source_options();
    for (k, v) in bound.bind_subscription(&subscription, created_ms)?.iter() {
        source_options.set(k, v);
    }
    let key = registry_key.or(spec.connection.schema_registry_api_key.as_deref());
    let mut stages = Vec::new();
    if let Some(decode) = spec.decode_options(key) {
        stages.push(StageSpec::registered("decode", decode));
    }
    stages.push(StageSpec::registered(STAGE_NAME, Options::new()));
    let table = catalog.table_path(&spec.table_name()?);
    let sink = Options::new()
        .with("path", table.display().to_string())
        .with("mergeSchema", "true");
    Ok(PipelineSpec {
        name: name.to_string(),
        checkpoint: catalog.checkpoint_path(&name),
        plugin_path: Vec::new(),
        source: spec.source.kind.clone(),
        source_options,
        stages,
        sinks: vec![(SINK.to_string(), sink)],
        trigger,
        polling_delay: crate::trigger::POLLING_DELAY,
        origin: format!("stream {name}"),
        engine: crate::distributed::EngineSpec::Embedded,
        monitoring: crate::monitor::MonitoringSpec::default(),
    })
}

/// Checks a stream's pipeline without I/O: the source connector's options, the decode options,
/// and the Delta sink's when this build has it (a build without it can create streams but not
/// run them).
pub fn validate(catalog: &Catalog, entry: &StreamEntry, registry: &Registry) -> Result<()> {
    let mut spec = pipeline_spec_with(catalog, entry, Trigger::AvailableNow, None, registry)?;
    if registry.sink(SINK).is_err() {
        spec.sinks.clear();
    }
    crate::engine::validate(&spec, registry)?;
    compile_inline_schemas(&entry.spec)
}

/// Compiles the inline schemas (no I/O), so a schema that cannot decode is refused at create
/// with the decoder's message, not at the first run. Registry schemas are resolved at run.
#[cfg(feature = "decode")]
fn compile_inline_schemas(spec: &StreamSpec) -> Result<()> {
    use super::spec::SchemaFormatName;
    use tributary_sdk::{ResolvedSchema, SchemaFormat, StreamSchemas, WireFormat};
    for (side, s) in [("key", &spec.schema.key), ("payload", &spec.schema.payload)] {
        let Some(s) = s else { continue };
        let Some(text) = &s.text else { continue };
        let format = match s.format {
            SchemaFormatName::JsonSchema => SchemaFormat::JsonSchema,
            SchemaFormatName::Avro => SchemaFormat::Avro,
            SchemaFormatName::Protobuf => SchemaFormat::Protobuf {
                message: s.message_name.clone().unwrap_or_default(),
            },
        };
        let resolved = ResolvedSchema {
            format,
            text: text.clone(),
            wire: WireFormat::Plain,
            registry_id: None,
        };
        let schemas = if side == "key" {
            StreamSchemas {
                key: Some(resolved),
                payload: None,
            }
        } else {
            StreamSchemas {
                key: None,
                payload: Some(resolved),
            }
        };
        tributary_decode::DirectSchemaProvider::new(schemas).map_err(|e| {
            Error::new(e.code(), format!("[schema.{side}] text: {}", e.message()))
                .with_context("option", format!("schema.{side}.text"))
        })?;
    }
    Ok(())
}

#[cfg(not(feature = "decode"))]
fn compile_inline_schemas(_: &StreamSpec) -> Result<()> {
    Ok(())
}

/// Refuses secrets written in the clear: an option the source connector declares sensitive (or
/// whose name says it is a password, key or token) must be a `{{secrets/scope/key}}` reference,
/// since the catalog is a plain file.
pub fn check_secrets(spec: &StreamSpec, registry: &Registry) -> Result<()> {
    let declared = registry
        .source(&spec.source.kind)
        .map(|f| f.options())
        .unwrap_or_default();
    let mut options = spec.source_options();
    options.mark_sensitive(&declared);
    for (k, v) in options.iter() {
        if options.is_sensitive(k) && tributary_sdk::SecretRef::parse(v).is_none() {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "option '{k}' holds a secret: give it as a {{{{secrets/<scope>/<key>}}}} reference, the catalog stores no secret"
                ),
            )
            .with_context("option", k));
        }
    }
    Ok(())
}

/// The options as they may be printed (sensitive values `***`).
pub fn printable_options(
    spec: &StreamSpec,
    registry: &Registry,
    section: &std::collections::BTreeMap<String, super::spec::OptionValue>,
) -> serde_json::Value {
    let declared = registry
        .source(&spec.source.kind)
        .map(|f| f.options())
        .unwrap_or_default();
    let mut o = Options::new();
    for (k, v) in section {
        o.set(
            k.clone(),
            match serde_json::to_value(v) {
                Ok(serde_json::Value::String(s)) => s,
                Ok(other) => other.to_string(),
                Err(_) => String::new(),
            },
        );
    }
    o.mark_sensitive(&declared);
    serde_json::Value::Object(
        o.iter()
            .map(|(k, _)| {
                let shown = o.printable(k).map(|c| c.into_owned()).unwrap_or_default();
                (k.to_string(), serde_json::Value::String(shown))
            })
            .collect(),
    )
}
