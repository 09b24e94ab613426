//! The stream spec (`tributary streams create <spec.toml>`): what a stream reads, how it
//! connects, how its records decode, and where they land.
//!
//! ```toml
//! name = "main.sales.orders"
//!
//! [source]
//! kind = "kafka"                      # a source connector that can back a stream
//! topics = ["orders"]                 # under the field the connector names, or (Kafka)
//!                                     # subscribe_pattern = "orders-.*" / assign = { orders = [0, 1] }
//! options = { maxOffsetsPerTrigger = 10000 }
//!
//! [connection]                        # auth and endpoints, kept apart from the stream options
//! options = { "kafka.bootstrap.servers" = "broker:9092", "kafka.sasl.jaas.config" = "{{secrets/kafka/jaas}}" }
//! schema_registry_url = "https://registry:8081"
//! schema_registry_api_key = "{{secrets/registry/key}}"
//! schema_registry_api_secret = "{{secrets/registry/secret}}"
//!
//! [schema.payload]                    # and/or [schema.key]; neither: plain strings
//! format = "avro"                     # avro | json_schema | protobuf
//! subject = "orders-value"            # from the registry, or `text = "..."` inline
//!
//! [ingestion]
//! table = "main.sales.orders_raw"     # the ingestion (Delta) table, under the warehouse root
//! backfill_source = "main.sales.orders_history"   # optional: a table name or a Delta path/URL
//! deduplication_columns = ["value.order_id"]
//! ```
//!
//! Unknown keys are refused. [`StreamSpec::check`] validates everything that needs neither I/O
//! nor the connector; [`super::binding::check`] adds what needs the connector's stream binding
//! (which `[source]` field lists the names, the options a stream sets itself, the metadata
//! columns); the connector's own option checks run when the catalog builds the stream's
//! pipeline at create.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tributary_sdk::options::conflicting;
use tributary_sdk::secret::SecretRef;
use tributary_sdk::{Error, ErrorCode, Options, Result};

use super::name::ThreePartName;

/// A stream: source, connection, schemas and ingestion.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    /// `catalog.schema.stream`.
    pub name: String,
    /// Free text shown by `streams get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the stream reads.
    pub source: SourceConfig,
    /// Authentication and endpoints.
    #[serde(default)]
    pub connection: ConnectionConfig,
    /// Key and payload schemas.
    #[serde(default)]
    pub schema: SchemaConfig,
    /// Where the records land.
    pub ingestion: IngestionConfig,
}

impl std::fmt::Debug for StreamSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSpec")
            .field("name", &self.name)
            .field("source", &self.source.kind)
            .field("ingestion", &self.ingestion.table)
            .finish_non_exhaustive()
    }
}

/// A connector option value as written in TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OptionValue {
    /// Text.
    Text(String),
    /// A whole number.
    Int(i64),
    /// A number.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

impl OptionValue {
    fn to_text(&self) -> String {
        match self {
            OptionValue::Text(s) => s.clone(),
            OptionValue::Int(i) => i.to_string(),
            OptionValue::Float(f) => f.to_string(),
            OptionValue::Bool(b) => b.to_string(),
        }
    }
}

/// `[source]`.
///
/// Its other fields are the names the stream reads, under the field the connector's stream
/// binding names (`topics = ["orders"]`); any other field is refused when the spec is bound
/// ([`super::binding::names`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceConfig {
    /// The source connector (its name in the registry).
    pub kind: String,
    /// What the stream reads, by field (`topics`, `streams`): a list of names.
    #[serde(flatten)]
    pub names: BTreeMap<String, serde_json::Value>,
    /// Connector options (Spark / Databricks names), checked by the connector.
    #[serde(default)]
    pub options: BTreeMap<String, OptionValue>,
}

/// `[connection]`: authentication and endpoints.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionConfig {
    /// Connector options of the connection (`kafka.bootstrap.servers`, `kafka.sasl.*`,
    /// `region`, `endpoint`, `awsAccessKey`, ...).
    #[serde(default)]
    pub options: BTreeMap<String, OptionValue>,
    /// Confluent Schema Registry URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_registry_url: Option<String>,
    /// Registry API key: a `{{secrets/scope/key}}` reference. Also read as
    /// `schema_registry_key`, the spelling of catalogs written before the stream API's.
    #[serde(
        default,
        alias = "schema_registry_key",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema_registry_api_key: Option<String>,
    /// Registry API secret: a `{{secrets/scope/key}}` reference. Also read as
    /// `schema_registry_secret`.
    #[serde(
        default,
        alias = "schema_registry_secret",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema_registry_api_secret: Option<String>,
}

/// `[schema]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaConfig {
    /// The key schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<SchemaSide>,
    /// The payload schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<SchemaSide>,
}

/// The format of a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaFormatName {
    /// JSON Schema (inline only).
    JsonSchema,
    /// Avro.
    Avro,
    /// Protobuf.
    Protobuf,
}

/// One side's schema: inline `text` or a registry `subject`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaSide {
    /// `avro`, `json_schema` or `protobuf`.
    pub format: SchemaFormatName,
    /// The schema text (Avro JSON, JSON Schema, `.proto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Registry subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Registry version (default latest); with `subject` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Protobuf message (fully qualified); required with protobuf `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_name: Option<String>,
    /// `plain` (default) or `confluent` framing of records decoded with an inline schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_format: Option<String>,
}

/// `[ingestion]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestionConfig {
    /// The ingestion table, `catalog.schema.table`, under the warehouse root.
    pub table: String,
    /// Optional backfill source: a table name (under the warehouse root) or a Delta path/URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill_source: Option<String>,
    /// Backfill dedup key: dot paths (`value.transaction_id`); default key + value +
    /// stream_record_timestamp.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deduplication_columns: Vec<String>,
}

fn invalid(option: &str, message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidPipeline, message.into()).with_context("option", option)
}

impl StreamSpec {
    /// Parses spec TOML; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<StreamSpec> {
        toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| crate::pipeline::toml_position(text, s.start))
                .map(|(l, c)| format!(", line {l}, column {c}"))
                .unwrap_or_default();
            Error::new(
                ErrorCode::InvalidPipeline,
                format!("{origin}{at}: {}", e.message().trim()),
            )
            .with_context("file", origin)
        })
    }

    /// Reads and parses a spec file.
    pub fn load(path: &Path) -> Result<StreamSpec> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(
                ErrorCode::InvalidPipeline,
                format!("cannot read stream spec {}", path.display()),
            )
            .with_cause(e)
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The stream's name, validated.
    pub fn stream_name(&self) -> Result<ThreePartName> {
        ThreePartName::parse(&self.name, "stream name")
    }

    /// The ingestion table's name, validated.
    pub fn table_name(&self) -> Result<ThreePartName> {
        ThreePartName::parse(&self.ingestion.table, "option 'ingestion.table'")
    }

    /// Every check that needs neither I/O nor the connector (see [`super::binding::check`] for
    /// the rest).
    pub fn check(&self) -> Result<()> {
        self.stream_name()?;
        self.check_source()?;
        self.check_schemas()?;
        self.check_connection()?;
        self.table_name()?;
        if let Some(b) = &self.ingestion.backfill_source {
            if b.trim().is_empty() {
                return Err(invalid(
                    "ingestion.backfill_source",
                    "option 'ingestion.backfill_source' is empty: give a table name (catalog.schema.table) or a Delta table path/URL, or remove it",
                ));
            }
            if !looks_like_location(b) {
                ThreePartName::parse(b, "option 'ingestion.backfill_source'")?;
            }
        }
        Ok(())
    }

    fn check_source(&self) -> Result<()> {
        let s = &self.source;
        if s.kind.trim().is_empty() {
            return Err(Error::new(
                ErrorCode::MissingOption,
                "option 'source.kind' is required: the source connector the stream reads",
            )
            .with_context("option", "source.kind"));
        }
        for key in s.options.keys() {
            if self
                .connection
                .options
                .keys()
                .any(|k| k.eq_ignore_ascii_case(key))
            {
                return Err(conflicting(
                    &format!("source.options.{key}"),
                    &format!("connection.options.{key}"),
                    "the option is given twice",
                ));
            }
        }
        Ok(())
    }

    fn check_connection(&self) -> Result<()> {
        let c = &self.connection;
        if let Some(secret) = &c.schema_registry_api_secret {
            if SecretRef::parse(secret).is_none() {
                return Err(invalid(
                    "connection.schema_registry_api_secret",
                    "option 'connection.schema_registry_api_secret' must be a {{secrets/<scope>/<key>}} reference, not the secret itself",
                ));
            }
        }
        if let Some(url) = &c.schema_registry_url {
            if tributary_sdk::options::redact_embedded(url) != url.as_str() {
                return Err(invalid(
                    "connection.schema_registry_url",
                    "option 'connection.schema_registry_url' holds a password: give the credentials as schema_registry_api_key and schema_registry_api_secret references, the catalog stores no secret",
                ));
            }
        }
        if let Some(key) = &c.schema_registry_api_key {
            if SecretRef::parse(key).is_none() {
                return Err(invalid(
                    "connection.schema_registry_api_key",
                    "option 'connection.schema_registry_api_key' must be a {{secrets/<scope>/<key>}} reference, not the API key itself",
                ));
            }
        }
        match (&c.schema_registry_api_key, &c.schema_registry_api_secret) {
            (Some(_), None) => {
                return Err(conflicting(
                    "connection.schema_registry_api_key",
                    "connection.schema_registry_api_secret",
                    "an API key needs its secret",
                ))
            }
            (None, Some(_)) => {
                return Err(conflicting(
                    "connection.schema_registry_api_secret",
                    "connection.schema_registry_api_key",
                    "an API secret needs its key",
                ))
            }
            _ => {}
        }
        if (c.schema_registry_api_key.is_some()) && c.schema_registry_url.is_none() {
            return Err(conflicting(
                "connection.schema_registry_api_key",
                "connection.schema_registry_url",
                "registry credentials without a registry URL would be ignored",
            ));
        }
        let uses_registry = [&self.schema.key, &self.schema.payload]
            .into_iter()
            .flatten()
            .any(|s| s.subject.is_some());
        match (&c.schema_registry_url, uses_registry) {
            (Some(_), false) => Err(conflicting(
                "connection.schema_registry_url",
                "schema.payload.subject",
                "is given but no schema is read from the registry (give a subject in [schema.payload] or [schema.key])",
            )),
            (None, true) => Err(Error::new(
                ErrorCode::MissingOption,
                "option 'connection.schema_registry_url' is required: a schema is read from the registry (subject)",
            )
            .with_context("option", "connection.schema_registry_url")),
            _ => Ok(()),
        }
    }

    fn check_schemas(&self) -> Result<()> {
        for (side, s) in [("key", &self.schema.key), ("payload", &self.schema.payload)] {
            let Some(s) = s else { continue };
            let at = |f: &str| format!("schema.{side}.{f}");
            match (&s.text, &s.subject) {
                (Some(_), Some(_)) => {
                    return Err(conflicting(&at("text"), &at("subject"), "a schema is given inline or read from the registry, not both"))
                }
                (None, None) => {
                    return Err(Error::new(
                        ErrorCode::MissingOption,
                        format!("[schema.{side}] needs 'text' (the schema inline) or 'subject' (from the registry)"),
                    )
                    .with_context("option", at("text")))
                }
                (Some(t), None) if t.trim().is_empty() => {
                    return Err(invalid(&at("text"), format!("option '{}' is empty", at("text"))))
                }
                _ => {}
            }
            if s.subject.is_some() {
                if s.format == SchemaFormatName::JsonSchema {
                    return Err(invalid(
                        &at("format"),
                        format!("option '{}': json_schema is not read from the registry; give the schema inline with 'text', or use avro or protobuf", at("format")),
                    ));
                }
                if let Some(w) = &s.wire_format {
                    return Err(conflicting(
                        &at("wire_format"),
                        &at("subject"),
                        &format!(
                            "registry records are always Confluent-framed ('{w}' would be ignored)"
                        ),
                    ));
                }
            } else if s.version.is_some() {
                return Err(conflicting(
                    &at("version"),
                    &at("text"),
                    "a version only applies to a registry subject",
                ));
            }
            if let Some(w) = &s.wire_format {
                if !["plain", "confluent"].contains(&w.to_ascii_lowercase().as_str()) {
                    return Err(invalid(
                        &at("wire_format"),
                        format!(
                            "option '{}' is '{w}', not one of plain, confluent",
                            at("wire_format")
                        ),
                    ));
                }
            }
            match (s.format, &s.message_name, &s.text) {
                (SchemaFormatName::Protobuf, None, Some(_)) => {
                    return Err(Error::new(
                        ErrorCode::MissingOption,
                        format!("option '{}' is required with an inline protobuf schema (the fully qualified message, com.example.Event)", at("message_name")),
                    )
                    .with_context("option", at("message_name")))
                }
                (SchemaFormatName::Avro | SchemaFormatName::JsonSchema, Some(_), _) => {
                    return Err(conflicting(&at("message_name"), &at("format"), "a message name only applies to protobuf"))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The stream's and the connection's source options, without those the stream sets itself
    /// (what it reads, from when: [`tributary_sdk::StreamBinding::bind`]).
    pub fn source_options(&self) -> Options {
        let mut o = Options::new();
        for (k, v) in self
            .source
            .options
            .iter()
            .chain(self.connection.options.iter())
        {
            o.set(k.clone(), v.to_text());
        }
        o
    }

    /// The options of the `decode` stage, or `None` when neither side has a schema (the key
    /// and value are then plain strings). `registry_key` is the resolved API key (the spec
    /// holds a reference).
    pub fn decode_options(&self, registry_key: Option<&str>) -> Option<Options> {
        if self.schema.key.is_none() && self.schema.payload.is_none() {
            return None;
        }
        let mut o = Options::new();
        for (prefix, side) in [("key_", &self.schema.key), ("", &self.schema.payload)] {
            let Some(s) = side else { continue };
            if let Some(text) = &s.text {
                let name = match s.format {
                    SchemaFormatName::JsonSchema => "json_schema",
                    SchemaFormatName::Avro => "avro_schema",
                    SchemaFormatName::Protobuf => "proto_schema",
                };
                o.set(format!("{prefix}{name}"), text.clone());
                if let Some(m) = &s.message_name {
                    o.set(format!("{prefix}message_name"), m.clone());
                }
                if let Some(w) = &s.wire_format {
                    o.set(format!("{prefix}wire_format"), w.to_ascii_lowercase());
                }
            } else if let Some(subject) = &s.subject {
                let format = match s.format {
                    SchemaFormatName::Protobuf => "PROTOBUF",
                    _ => "AVRO",
                };
                let mut locator = format!("subject={subject},format={format}");
                if let Some(v) = s.version {
                    locator.push_str(&format!(",version={v}"));
                }
                if let Some(m) = &s.message_name {
                    locator.push_str(&format!(",message={m}"));
                }
                let option = if prefix.is_empty() {
                    "payload_schema_locator"
                } else {
                    "key_schema_locator"
                };
                o.set(option, locator);
            }
        }
        if let Some(url) = &self.connection.schema_registry_url {
            o.set("schema_registry_url", url.clone());
        }
        if let (Some(key), Some(secret)) =
            (registry_key, &self.connection.schema_registry_api_secret)
        {
            o.set("schema_registry_key", key);
            o.set("schema_registry_secret", secret.clone());
        }
        Some(o)
    }
}

/// True when `text` is a path or URL rather than a three-part table name.
pub fn looks_like_location(text: &str) -> bool {
    text.contains('/') || text.contains('\\') || text.contains(':')
}
