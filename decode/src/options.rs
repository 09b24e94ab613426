//! The options of a pipeline's decode section, declared once and parsed into a [`DecodeConfig`].
//!
//! | option | meaning |
//! |---|---|
//! | `json_schema`, `avro_schema`, `proto_schema` + `message_name` | payload schema given inline |
//! | `key_json_schema`, `key_avro_schema`, `key_proto_schema` + `key_message_name` | key schema given inline |
//! | `wire_format`, `key_wire_format` | `plain` (default) or `confluent` framing of inline-schema records |
//! | `schema_registry_url`, `schema_registry_key`, `schema_registry_secret` | Confluent Schema Registry and basic auth (the secret is a `{{secrets/scope/key}}` reference) |
//! | `payload_schema_locator`, `key_schema_locator` | which registry schema: `subject=orders-value,format=AVRO` or a strategy |
//! | `schema_registry_max_retries` | attempts after the first when the registry cannot be reached |
//! | `mode` | `PERMISSIVE` (default: malformed -> null, counted) or `FAILFAST` |
//! | `schemaResolution` | registry records framed with another schema id: `pinned` (default: null, counted as `wrongSchemaId`) or `writer` (read with the writer's schema, resolved into the pinned columns) |
//! | `emit.default.values`, `enums.as.ints` | protobuf: defaults instead of nulls for absent proto3 scalars; enum numbers instead of names (Spark's `from_protobuf` options) |
//!
//! A locator is comma-separated `key=value` pairs: `format` (`AVRO` or `PROTOBUF`) and either
//! `subject=<name>` or `strategy=` one of `TopicNameStrategy` (subject `<topic>-value` /
//! `<topic>-key`), `RecordNameStrategy` (subject `<record>`) or `TopicRecordNameStrategy`
//! (subject `<topic>-<record>`), the last two with `record=<fully qualified name>`. Optional:
//! `version=<n>` (default latest) and, for protobuf, `message=<fully qualified name>` (default:
//! the record name, else the first message of the schema).
//!
//! Options that would be ignored are refused (`CONFLICTING_OPTIONS`, naming both): a
//! `wire_format` with a locator (registry records are always Confluent-framed) or for a side
//! without an inline schema; `schema_registry_url`, `_key`, `_secret`, `_max_retries` when no
//! side has a locator; a `message_name` the locator does not use (format=AVRO, or the locator
//! already names the message with `message=` or `record=`); `schemaResolution` when no side has
//! a locator.

use tributary_sdk::error::{Error, ErrorCode, Result};
use tributary_sdk::options::{conflicting, OptionSpec, Options};
use tributary_sdk::schema_provider::{SchemaFormat, WireFormat};
use tributary_sdk::secret::{resolve_value, Secret, SecretRef, SecretStore};

/// Name used for the decode section in error messages.
pub const DECODE_SECTION: &str = "decode";

/// What to do with a record that does not match its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DecodeMode {
    /// The record decodes to null and a counter per reason is incremented (default).
    #[default]
    Permissive,
    /// The batch fails with `MALFORMED_RECORD` naming the record's position.
    FailFast,
}

/// What to do with a registry record framed with another schema id than the pinned one (the
/// schema resolved at start): `schemaResolution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaResolution {
    /// `pinned` (default): the record is null and counted as `malformed.wrongSchemaId`.
    #[default]
    Pinned,
    /// `writer`: the writer's schema is fetched by id (once per id) and the record is read with
    /// it into the pinned schema's columns (Avro schema resolution; protobuf by field number).
    Writer,
}

/// Protobuf decoding choices (Spark `from_protobuf`'s options of the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProtobufOptions {
    /// `emit.default.values`: a proto3 scalar absent from the wire (implicit presence) is its
    /// default (0, false, "", the enum's zero value) instead of null.
    pub emit_default_values: bool,
    /// `enums.as.ints`: enum columns hold the number (int32) instead of the name (utf8).
    pub enums_as_ints: bool,
}

/// The option declarations of the decode section.
pub fn decode_options() -> Vec<OptionSpec> {
    let mut specs = Vec::new();
    for (prefix, side) in [("", "payload"), ("key_", "key")] {
        specs.push(OptionSpec::string(
            &format!("{prefix}json_schema"),
            &format!("JSON Schema text of the {side}."),
        ));
        specs.push(OptionSpec::string(
            &format!("{prefix}avro_schema"),
            &format!("Avro schema JSON of the {side}."),
        ));
        specs.push(OptionSpec::string(
            &format!("{prefix}proto_schema"),
            &format!("Protobuf .proto text (proto2 or proto3) of the {side}; needs {prefix}message_name."),
        ));
        specs.push(OptionSpec::string(
            &format!("{prefix}message_name"),
            &format!("Fully qualified protobuf message of the {side} (com.example.Event)."),
        ));
        specs.push(
            OptionSpec::one_of(
                &format!("{prefix}wire_format"),
                &["plain", "confluent"],
                &format!(
                    "Framing of {side} records decoded with an inline schema: plain bytes or Confluent framing (magic byte, schema id)."
                ),
            )
            .default_value("plain"),
        );
    }
    specs.push(OptionSpec::string(
        "schema_registry_url",
        "Base URL of a Confluent Schema Registry (https:// is verified with rustls).",
    ));
    specs.push(OptionSpec::string(
        "schema_registry_key",
        "API key (basic auth user) for the schema registry.",
    ));
    specs.push(
        OptionSpec::string(
            "schema_registry_secret",
            "API secret for the schema registry, as a {{secrets/scope/key}} reference.",
        )
        .sensitive(),
    );
    specs.push(OptionSpec::string(
        "payload_schema_locator",
        "Registry schema of the payload: subject=<s>,format=AVRO|PROTOBUF or strategy=TopicNameStrategy|RecordNameStrategy|TopicRecordNameStrategy,...",
    ));
    specs.push(OptionSpec::string(
        "key_schema_locator",
        "Registry schema of the key, same form as payload_schema_locator.",
    ));
    specs.push(
        OptionSpec::int(
            "schema_registry_max_retries",
            0,
            20,
            "Retries (with exponential backoff from 200 ms) when the registry cannot be reached.",
        )
        .default_value(5),
    );
    specs.push(
        OptionSpec::bool(
            "emit.default.values",
            "Protobuf: a proto3 scalar absent from the record decodes to its default (0, false, \"\", the enum's zero value) instead of null.",
        )
        .default_value(false),
    );
    specs.push(
        OptionSpec::bool(
            "enums.as.ints",
            "Protobuf: enum fields decode to their number (int32) instead of their name.",
        )
        .default_value(false),
    );
    specs.push(
        OptionSpec::one_of(
            "mode",
            &["PERMISSIVE", "FAILFAST"],
            "PERMISSIVE: a malformed record becomes null and is counted; FAILFAST: it stops the stream.",
        )
        .default_value("PERMISSIVE"),
    );
    specs.push(
        OptionSpec::one_of(
            "schemaResolution",
            &["pinned", "writer"],
            "Registry records framed with another schema id than the one resolved at start: pinned (null, counted as wrongSchemaId) or writer (fetch the writer's schema by id and resolve it into the pinned columns).",
        )
        .default_value("pinned"),
    );
    specs
}

/// How a registry subject is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubjectStrategy {
    /// An explicit subject.
    Subject(String),
    /// `<topic>-value` or `<topic>-key`.
    TopicName,
    /// `<record>`.
    RecordName(String),
    /// `<topic>-<record>`.
    TopicRecordName(String),
}

/// Where a side's schema lives in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaLocator {
    /// How the subject is named.
    pub strategy: SubjectStrategy,
    /// `AVRO` or `PROTOBUF` (as [`SchemaFormat`]; the protobuf message may be empty = default).
    pub format: SchemaFormat,
    /// A fixed version (None: latest).
    pub version: Option<u32>,
}

impl SchemaLocator {
    /// Parses `subject=...,format=...` / `strategy=...,record=...,format=...`.
    pub fn parse(text: &str, option: &str) -> Result<SchemaLocator> {
        let bad = |msg: String| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("option '{option}': {msg}"),
            )
            .with_context("option", option)
        };
        let mut subject = None;
        let mut strategy = None;
        let mut record = None;
        let mut format = None;
        let mut version = None;
        let mut message = None;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("'{part}' is not key=value")))?;
            let v = v.trim().to_string();
            match k.trim().to_ascii_lowercase().as_str() {
                "subject" => subject = Some(v),
                "strategy" => strategy = Some(v),
                "record" => record = Some(v),
                "format" => format = Some(v),
                "message" => message = Some(v),
                "version" if v.eq_ignore_ascii_case("latest") => version = None,
                "version" => {
                    version = Some(v.parse::<u32>().map_err(|_| {
                        bad(format!("version '{v}' is not a number or 'latest'"))
                    })?)
                }
                other => {
                    return Err(bad(format!(
                        "unknown locator key '{other}'; known: subject, strategy, record, format, version, message"
                    )))
                }
            }
        }
        let format = match format.as_deref().map(str::to_ascii_uppercase).as_deref() {
            Some("AVRO") => SchemaFormat::Avro,
            Some("PROTOBUF") => SchemaFormat::Protobuf {
                message: message.or_else(|| record.clone()).unwrap_or_default(),
            },
            Some("JSON") => {
                return Err(bad(
                    "JSON schemas are not read from the schema registry; declare the schema inline with json_schema (or key_json_schema)".into(),
                ))
            }
            Some(other) => return Err(bad(format!("format '{other}' is not one of AVRO, PROTOBUF"))),
            None => return Err(bad("format=AVRO or format=PROTOBUF is required".into())),
        };
        let strategy = match (subject, strategy.as_deref()) {
            (Some(s), None) => SubjectStrategy::Subject(s),
            (Some(_), Some(_)) => return Err(bad("give either subject or strategy, not both".into())),
            (None, Some(s)) => match s.to_ascii_lowercase().as_str() {
                "topicnamestrategy" => SubjectStrategy::TopicName,
                "recordnamestrategy" => SubjectStrategy::RecordName(
                    record.ok_or_else(|| bad("RecordNameStrategy needs record=<name>".into()))?,
                ),
                "topicrecordnamestrategy" => SubjectStrategy::TopicRecordName(
                    record.ok_or_else(|| bad("TopicRecordNameStrategy needs record=<name>".into()))?,
                ),
                other => {
                    return Err(bad(format!(
                        "strategy '{other}' is not one of TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy"
                    )))
                }
            },
            (None, None) => return Err(bad("subject=<name> or strategy=<name> is required".into())),
        };
        Ok(SchemaLocator {
            strategy,
            format,
            version,
        })
    }

    /// Whether the subject is named after the topic (TopicNameStrategy,
    /// TopicRecordNameStrategy), so that it is only defined for a stream of one topic.
    pub fn subject_per_topic(&self) -> bool {
        matches!(
            self.strategy,
            SubjectStrategy::TopicName | SubjectStrategy::TopicRecordName(_)
        )
    }

    /// The subject for a stream (topic) and side.
    pub fn subject(&self, topic: &str, is_key: bool) -> String {
        match &self.strategy {
            SubjectStrategy::Subject(s) => s.clone(),
            SubjectStrategy::TopicName => topic_name_subject(topic, is_key),
            SubjectStrategy::RecordName(r) => r.clone(),
            SubjectStrategy::TopicRecordName(r) => format!("{topic}-{r}"),
        }
    }
}

/// TopicNameStrategy: `<topic>-key` or `<topic>-value`.
pub fn topic_name_subject(topic: &str, is_key: bool) -> String {
    format!("{topic}-{}", if is_key { "key" } else { "value" })
}

/// Where one side's schema comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideSource {
    /// Given inline.
    Direct {
        /// Format (with the protobuf message name).
        format: SchemaFormat,
        /// The schema text.
        text: String,
        /// Framing of the records.
        wire: WireFormat,
    },
    /// From the registry.
    Registry(SchemaLocator),
}

/// Registry connection settings.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// Base URL.
    pub url: String,
    /// Basic auth user and secret.
    pub auth: Option<(String, Secret)>,
    /// Retries after the first attempt when the registry cannot be reached.
    pub max_retries: u32,
}

/// A validated decode section.
#[derive(Debug, Clone)]
pub struct DecodeConfig {
    /// PERMISSIVE or FAILFAST.
    pub mode: DecodeMode,
    /// The key's schema source (None: utf8).
    pub key: Option<SideSource>,
    /// The payload's schema source (None: utf8).
    pub payload: Option<SideSource>,
    /// Registry settings, when a side uses the registry.
    pub registry: Option<RegistryConfig>,
    /// Protobuf decoding choices.
    pub protobuf: ProtobufOptions,
    /// Records framed with another schema id than the pinned one (`schemaResolution`).
    pub schema_resolution: SchemaResolution,
}

impl DecodeConfig {
    /// The locator option (`key_schema_locator` / `payload_schema_locator`) whose subject is
    /// named after the topic, if any: such a section can only decode a stream of one topic.
    pub fn subject_per_topic_option(&self) -> Option<&'static str> {
        [
            (&self.payload, "payload_schema_locator"),
            (&self.key, "key_schema_locator"),
        ]
        .into_iter()
        .find_map(|(side, name)| match side {
            Some(SideSource::Registry(l)) if l.subject_per_topic() => Some(name),
            _ => None,
        })
    }

    /// Validates the decode options (unknown names refused with a suggestion, options that
    /// would be ignored refused naming what they conflict with) and resolves the registry
    /// secret through `secrets`.
    pub fn from_options(options: &Options, secrets: &dyn SecretStore) -> Result<DecodeConfig> {
        let (mut config, pending) = DecodeConfig::parse(options)?;
        if let (Some(registry), Some((user, reference))) = (config.registry.as_mut(), pending) {
            registry.auth = Some((user, resolve_value(secrets, &reference)?));
        }
        Ok(config)
    }

    /// Every check of [`DecodeConfig::from_options`] without resolving the registry secret
    /// (no I/O): what `tributary check` runs.
    pub fn validate(options: &Options) -> Result<()> {
        DecodeConfig::parse(options).map(|_| ())
    }

    /// The config with `registry.auth` left empty, and the registry user with the secret
    /// reference still to resolve.
    pub(crate) fn parse(options: &Options) -> Result<(DecodeConfig, Option<(String, String)>)> {
        let specs = decode_options();
        let p = OptionSpec::validate_all(&specs, options, DECODE_SECTION)?;
        let mode = match p.word("mode")?.as_deref() {
            Some("failfast") => DecodeMode::FailFast,
            _ => DecodeMode::Permissive,
        };
        let mut sides = Vec::new();
        for (prefix, locator_opt) in [
            ("", "payload_schema_locator"),
            ("key_", "key_schema_locator"),
        ] {
            let mut given: Vec<(String, SchemaFormat, String)> = Vec::new();
            let message = p.string(&format!("{prefix}message_name"))?;
            for (name, fmt) in [
                (format!("{prefix}json_schema"), SchemaFormat::JsonSchema),
                (format!("{prefix}avro_schema"), SchemaFormat::Avro),
            ] {
                if let Some(t) = p.string(&name)? {
                    given.push((name, fmt, t));
                }
            }
            let proto_opt = format!("{prefix}proto_schema");
            if let Some(t) = p.string(&proto_opt)? {
                let message = message.clone().ok_or_else(|| {
                    Error::new(
                        ErrorCode::MissingOption,
                        format!("option '{prefix}message_name' is required with '{proto_opt}' (a fully qualified name such as com.example.Event)"),
                    )
                    .with_context("option", format!("{prefix}message_name"))
                })?;
                given.push((proto_opt.clone(), SchemaFormat::Protobuf { message }, t));
            } else if message.is_some() && p.string(locator_opt)?.is_none() {
                return Err(Error::new(
                    ErrorCode::MissingOption,
                    format!("option '{prefix}message_name' is given without '{proto_opt}'"),
                )
                .with_context("option", proto_opt));
            }
            let locator = p.string(locator_opt)?;
            let mut names: Vec<String> = given.iter().map(|g| g.0.clone()).collect();
            if locator.is_some() {
                names.push(locator_opt.to_string());
            }
            if names.len() > 1 {
                return Err(Error::new(
                    ErrorCode::ConflictingOptions,
                    format!(
                        "options {} exclude each other: give one schema per side",
                        names.join(", ")
                    ),
                )
                .with_context("option", &names[1]));
            }
            let wire_opt = format!("{prefix}wire_format");
            // Registry records are always Confluent-framed; a side without a schema has no
            // framing to choose.
            if locator.is_some() {
                p.refuse_ignored(
                    &wire_opt,
                    false,
                    locator_opt,
                    "only sets the framing of records decoded with an inline schema (schema registry records are always Confluent-framed)",
                )?;
            }
            p.refuse_ignored(
                &wire_opt,
                !given.is_empty(),
                &format!("{prefix}json_schema"),
                &format!("only applies to a {} decoded with an inline schema ({prefix}json_schema, {prefix}avro_schema or {prefix}proto_schema)", if prefix.is_empty() { "payload" } else { "key" }),
            )?;
            let wire = match p.word(&wire_opt)?.as_deref() {
                Some("confluent") => WireFormat::Confluent,
                _ => WireFormat::Plain,
            };
            let side = if let Some((_, format, text)) = given.pop() {
                Some(SideSource::Direct { format, text, wire })
            } else if let Some(l) = locator {
                let mut loc = SchemaLocator::parse(&l, locator_opt)?;
                let message_opt = format!("{prefix}message_name");
                match (&mut loc.format, &message) {
                    (SchemaFormat::Protobuf { message: m }, Some(given)) => {
                        p.refuse_ignored(
                            &message_opt,
                            m.is_empty(),
                            locator_opt,
                            "names the protobuf message, but the locator already does (message= or record=)",
                        )?;
                        *m = given.clone();
                    }
                    (SchemaFormat::Protobuf { .. }, None) => {}
                    (_, _) => p.refuse_ignored(
                        &message_opt,
                        false,
                        locator_opt,
                        "names a protobuf message, but the locator reads format=AVRO",
                    )?,
                }
                Some(SideSource::Registry(loc))
            } else {
                None
            };
            sides.push(side);
        }
        let key = sides.pop().flatten();
        let payload = sides.pop().flatten();
        if key.is_none() && payload.is_none() {
            return Err(Error::new(
                ErrorCode::MissingOption,
                "the decode section needs a key or payload schema: json_schema, avro_schema, proto_schema (+ message_name), payload_schema_locator, or their key_ forms",
            )
            .with_context("option", "json_schema"));
        }
        let uses_registry = [&key, &payload]
            .iter()
            .any(|s| matches!(s, Some(SideSource::Registry(_))));
        let is_protobuf = |s: &Option<SideSource>| match s {
            Some(SideSource::Direct { format, .. }) => {
                matches!(format, SchemaFormat::Protobuf { .. })
            }
            Some(SideSource::Registry(l)) => matches!(l.format, SchemaFormat::Protobuf { .. }),
            None => false,
        };
        let any_protobuf = is_protobuf(&key) || is_protobuf(&payload);
        for option in ["emit.default.values", "enums.as.ints"] {
            p.refuse_ignored(
                option,
                any_protobuf,
                "proto_schema",
                "only applies to protobuf, and no side is protobuf (proto_schema or a locator with format=PROTOBUF)",
            )?;
        }
        let protobuf = ProtobufOptions {
            emit_default_values: p.bool("emit.default.values")?.unwrap_or(false),
            enums_as_ints: p.bool("enums.as.ints")?.unwrap_or(false),
        };
        for option in [
            "schema_registry_key",
            "schema_registry_secret",
            "schema_registry_max_retries",
        ] {
            p.refuse_ignored(
                option,
                uses_registry,
                "payload_schema_locator",
                "is only used to read schemas from the registry, and no side has a schema locator",
            )?;
        }
        p.refuse_ignored(
            "schemaResolution",
            uses_registry,
            "payload_schema_locator",
            "only applies to records read with a schema registry locator (their Confluent frame carries the writer's schema id), and no side has one",
        )?;
        let schema_resolution = match p.word("schemaResolution")?.as_deref() {
            Some("writer") => SchemaResolution::Writer,
            _ => SchemaResolution::Pinned,
        };
        let url = p.string("schema_registry_url")?;
        let mut pending = None;
        let registry = match (uses_registry, url) {
            (true, None) => {
                return Err(Error::new(
                    ErrorCode::MissingOption,
                    "option 'schema_registry_url' is required with a schema locator",
                )
                .with_context("option", "schema_registry_url"))
            }
            (false, Some(_)) => {
                return Err(conflicting(
                    "schema_registry_url",
                    "payload_schema_locator",
                    "is given but no side reads from the registry (add payload_schema_locator or key_schema_locator)",
                ))
            }
            (false, None) => None,
            (true, Some(url)) => {
                let user = p.string("schema_registry_key")?;
                let secret = p.string("schema_registry_secret")?;
                let auth = match (user, secret) {
                    (Some(u), Some(s)) => {
                        if SecretRef::parse(&s).is_none() {
                            return Err(Error::new(
                                ErrorCode::InvalidOption,
                                "option 'schema_registry_secret' must be a {{secrets/<scope>/<key>}} reference, not the secret itself",
                            )
                            .with_context("option", "schema_registry_secret"));
                        }
                        pending = Some((u, s));
                        None
                    }
                    (None, None) => None,
                    (Some(_), None) => {
                        return Err(Error::new(
                            ErrorCode::MissingOption,
                            "option 'schema_registry_secret' is required with 'schema_registry_key'",
                        )
                        .with_context("option", "schema_registry_secret"))
                    }
                    (None, Some(_)) => {
                        return Err(Error::new(
                            ErrorCode::MissingOption,
                            "option 'schema_registry_key' is required with 'schema_registry_secret'",
                        )
                        .with_context("option", "schema_registry_key"))
                    }
                };
                let max_retries = p.i64("schema_registry_max_retries")?.unwrap_or(5) as u32;
                Some(RegistryConfig {
                    url,
                    auth,
                    max_retries,
                })
            }
        };
        Ok((
            DecodeConfig {
                mode,
                key,
                payload,
                registry,
                protobuf,
                schema_resolution,
            },
            pending,
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const AVRO: &str = r#"{"type":"record","name":"R","fields":[]}"#;
    const REGISTRY: &str = "http://localhost:1";

    fn refused(pairs: &[(&str, &str)]) -> Error {
        let options: Options = pairs.iter().copied().collect();
        DecodeConfig::validate(&options).unwrap_err()
    }

    fn assert_conflict(e: &Error, option: &str, with: &str) {
        assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{e}");
        assert_eq!(e.context_value("option"), Some(option), "{e}");
        assert_eq!(e.context_value("conflicts_with"), Some(with), "{e}");
    }

    #[test]
    fn wire_format_with_a_locator_is_refused() {
        let e = refused(&[
            ("schema_registry_url", REGISTRY),
            ("payload_schema_locator", "subject=s,format=AVRO"),
            ("wire_format", "confluent"),
        ]);
        assert_conflict(&e, "wire_format", "payload_schema_locator");
        assert!(e.message().contains("always Confluent-framed"), "{e}");
        let e = refused(&[
            ("schema_registry_url", REGISTRY),
            ("key_schema_locator", "subject=k,format=AVRO"),
            ("key_wire_format", "plain"),
        ]);
        assert_conflict(&e, "key_wire_format", "key_schema_locator");
    }

    #[test]
    fn wire_format_of_a_side_without_schema_is_refused() {
        let e = refused(&[("avro_schema", AVRO), ("key_wire_format", "confluent")]);
        assert_conflict(&e, "key_wire_format", "key_json_schema");
        // Given with its inline schema it applies.
        let o: Options = [("avro_schema", AVRO), ("wire_format", "confluent")]
            .into_iter()
            .collect();
        DecodeConfig::validate(&o).unwrap();
    }

    #[test]
    fn registry_settings_without_a_locator_are_refused() {
        for option in [
            "schema_registry_key",
            "schema_registry_secret",
            "schema_registry_max_retries",
        ] {
            let e = refused(&[("avro_schema", AVRO), (option, "3")]);
            assert_conflict(&e, option, "payload_schema_locator");
        }
        let e = refused(&[("avro_schema", AVRO), ("schema_registry_url", REGISTRY)]);
        assert_conflict(&e, "schema_registry_url", "payload_schema_locator");
    }

    #[test]
    fn schema_resolution_needs_a_locator() {
        for value in ["writer", "pinned"] {
            let e = refused(&[("avro_schema", AVRO), ("schemaResolution", value)]);
            assert_conflict(&e, "schemaResolution", "payload_schema_locator");
        }
        let e = refused(&[
            ("schema_registry_url", REGISTRY),
            ("payload_schema_locator", "subject=s,format=AVRO"),
            ("schemaResolution", "latest"),
        ]);
        assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
        for (value, want) in [
            ("WRITER", SchemaResolution::Writer),
            ("pinned", SchemaResolution::Pinned),
        ] {
            let o: Options = [
                ("schema_registry_url", REGISTRY),
                ("payload_schema_locator", "subject=s,format=AVRO"),
                ("schemaResolution", value),
            ]
            .into_iter()
            .collect();
            assert_eq!(DecodeConfig::parse(&o).unwrap().0.schema_resolution, want);
        }
    }

    #[test]
    fn message_name_the_locator_does_not_use_is_refused() {
        let e = refused(&[
            ("schema_registry_url", REGISTRY),
            ("payload_schema_locator", "subject=s,format=AVRO"),
            ("message_name", "x.M"),
        ]);
        assert_conflict(&e, "message_name", "payload_schema_locator");
        let e = refused(&[
            ("schema_registry_url", REGISTRY),
            (
                "payload_schema_locator",
                "subject=s,format=PROTOBUF,message=x.A",
            ),
            ("message_name", "x.B"),
        ]);
        assert_conflict(&e, "message_name", "payload_schema_locator");
        // A locator without a message takes it from message_name.
        let o: Options = [
            ("schema_registry_url", REGISTRY),
            ("payload_schema_locator", "subject=s,format=PROTOBUF"),
            ("message_name", "x.B"),
        ]
        .into_iter()
        .collect();
        let (c, _) = DecodeConfig::parse(&o).unwrap();
        let Some(SideSource::Registry(l)) = c.payload else {
            panic!("registry side expected")
        };
        assert_eq!(
            l.format,
            SchemaFormat::Protobuf {
                message: "x.B".into()
            }
        );
    }
}
