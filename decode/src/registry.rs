//! [`RegistrySchemaProvider`]: schemas from a Confluent Schema Registry.
//!
//! Talks to the registry with `schema_registry_converter` (reqwest + rustls): basic auth with the
//! API key and secret, the latest (or a fixed) version of the subject named by the locator's
//! strategy, and the referenced subjects too (protobuf imports; Avro named types, written into
//! the schema). The answer is compiled before it is
//! returned, so an unsupported schema is refused at start. A registry that cannot be reached
//! (connection refused, timeouts, 5xx) is retried with exponential backoff and then reported as
//! `CONNECTION_FAILED` (retryable) — never as malformed data; 401/403 are
//! `AUTHENTICATION_FAILED`, an unknown subject or version is `SCHEMA_ERROR`.
//!
//! With `schemaResolution=writer`, `BlockingWriterSchemas` also fetches writer schemas by id
//! (`/schemas/ids/<id>`) while batches are decoded; an id the registry does not know is not an
//! error there but an unresolvable id (its records are malformed).

use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use schema_registry_converter::async_impl::schema_registry::{
    get_referenced_schema, get_schema_by_id, get_schema_by_subject_and_version, SrSettings,
};
use schema_registry_converter::error::SRCError;
use schema_registry_converter::schema_registry_common::{RegisteredSchema, SchemaType};

use crate::options::{DecodeConfig, SchemaLocator, SideSource};
use crate::protobuf::{self, DESCRIPTOR_SET_PREFIX};
use crate::resolution::{Fetched, WriterSchemas};
use crate::{DecodeMode, StreamDecoder};
use tributary_sdk::error::{Error, ErrorCode, Result, Retry};
use tributary_sdk::schema_provider::{
    ResolvedSchema, SchemaFormat, SchemaProvider, StreamSchemas, WireFormat,
};

/// First backoff delay; doubled per attempt up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Resolves locators against a Confluent Schema Registry (inline sides are served as given).
pub struct RegistrySchemaProvider {
    settings: SrSettings,
    url: String,
    key: Option<SideSource>,
    payload: Option<SideSource>,
    max_retries: u32,
}

impl std::fmt::Debug for RegistrySchemaProvider {
    /// Never prints the credentials (`SrSettings` would).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistrySchemaProvider")
            .field("url", &self.url)
            .field("key", &self.key)
            .field("payload", &self.payload)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl RegistrySchemaProvider {
    /// A provider for a decode section with a registry.
    pub fn new(config: &DecodeConfig) -> Result<RegistrySchemaProvider> {
        let registry = config.registry.as_ref().ok_or_else(|| {
            Error::new(
                ErrorCode::MissingOption,
                "option 'schema_registry_url' is required",
            )
            .with_context("option", "schema_registry_url")
        })?;
        let url = registry.url.trim_end_matches('/').to_string();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "option 'schema_registry_url' must start with http:// or https://, got '{url}'"
                ),
            )
            .with_context("option", "schema_registry_url"));
        }
        let mut builder = SrSettings::new_builder(url.clone());
        builder.set_timeout(Duration::from_secs(30));
        if let Some((user, secret)) = &registry.auth {
            builder.set_basic_authorization(user, Some(secret.expose()));
        }
        let settings = builder.build().map_err(|e| {
            Error::new(
                ErrorCode::Connection,
                format!("cannot create the schema registry client: {}", e.error),
            )
        })?;
        Ok(RegistrySchemaProvider {
            settings,
            url,
            key: config.key.clone(),
            payload: config.payload.clone(),
            max_retries: registry.max_retries,
        })
    }

    /// One registry call with retries and backoff for failures that may pass.
    async fn fetch(&self, subject: &str, version: Option<u32>) -> Result<RegisteredSchema> {
        let mut delay = FIRST_BACKOFF;
        let mut attempt = 0;
        loop {
            match get_schema_by_subject_and_version(&self.settings, subject, version).await {
                Ok(s) => return Ok(s),
                Err(e) => {
                    let err = self.classify(&e, subject, version);
                    if !err.is_retryable() || attempt >= self.max_retries {
                        return Err(err);
                    }
                    tracing::warn!(subject, attempt, error = %err, "schema registry call failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(MAX_BACKOFF);
                    attempt += 1;
                }
            }
        }
    }

    /// The schema registered under `id`, read as the key's or payload's locator says (its
    /// format, its protobuf message; references inlined). Retries like [`Self::fetch`]; an id
    /// the registry does not know, or a schema of another format, is [`Fetched::Unknown`].
    pub(crate) async fn schema_by_id(&self, id: u32, is_key: bool) -> Result<Fetched> {
        let (side, option) = if is_key {
            (&self.key, "key_schema_locator")
        } else {
            (&self.payload, "payload_schema_locator")
        };
        let Some(SideSource::Registry(loc)) = side else {
            return Ok(Fetched::Unknown(format!(
                "schema id {id}: the side has no {option}"
            )));
        };
        let what = format!("schema id {id}");
        let mut delay = FIRST_BACKOFF;
        let mut attempt = 0;
        let registered = loop {
            match get_schema_by_id(id, &self.settings).await {
                Ok(s) => break s,
                Err(e) if e.to_string().contains("status 404") => {
                    return Ok(Fetched::Unknown(format!(
                        "schema id {id} is not in the schema registry at {}",
                        self.url
                    )))
                }
                Err(e) => {
                    let err = self.classify(&e, &what, None);
                    if err.code() == ErrorCode::Schema {
                        return Ok(Fetched::Unknown(err.message().to_string()));
                    }
                    if !err.is_retryable() || attempt >= self.max_retries {
                        return Err(err.with_context("schema_id", id));
                    }
                    tracing::warn!(schema_id = id, attempt, error = %err, "schema registry call failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(MAX_BACKOFF);
                    attempt += 1;
                }
            }
        };
        match self.to_resolved(loc, &what, registered).await {
            Ok(schema) => Ok(Fetched::Schema(schema)),
            Err(e) if e.code() == ErrorCode::Schema => {
                Ok(Fetched::Unknown(e.message().to_string()))
            }
            Err(e) => Err(e.with_context("schema_id", id)),
        }
    }

    fn classify(&self, e: &SRCError, subject: &str, version: Option<u32>) -> Error {
        let text = e.to_string();
        let version_text = version.map_or("latest".to_string(), |v| v.to_string());
        let status = |code: &str| text.contains(&format!("status {code}"));
        if status("401") || status("403") {
            Error::new(
                ErrorCode::Authentication,
                format!("the schema registry at {} refused the credentials (check schema_registry_key / schema_registry_secret)", self.url),
            )
            .with_context("subject", subject)
        } else if status("404") {
            Error::new(
                ErrorCode::Schema,
                format!("subject '{subject}' version {version_text} is not in the schema registry at {}", self.url),
            )
            .with_context("subject", subject)
        } else if !e.retriable && text.contains("status 4") {
            Error::new(
                ErrorCode::Schema,
                format!(
                    "the schema registry refused the request for subject '{subject}': {}",
                    e.error
                ),
            )
            .with_context("subject", subject)
        } else {
            Error::new(
                ErrorCode::Connection,
                format!(
                    "the schema registry at {} cannot be reached: {}",
                    self.url,
                    describe(e)
                ),
            )
            .with_context("subject", subject)
            .with_retry(Retry::After(Duration::from_secs(5)))
        }
    }

    async fn side(
        &self,
        side: &Option<SideSource>,
        stream: &str,
        is_key: bool,
    ) -> Result<Option<ResolvedSchema>> {
        let loc = match side {
            None => return Ok(None),
            Some(SideSource::Direct { format, text, wire }) => {
                return Ok(Some(ResolvedSchema {
                    format: format.clone(),
                    text: text.clone(),
                    wire: *wire,
                    registry_id: None,
                }))
            }
            Some(SideSource::Registry(loc)) => loc,
        };
        let subject = loc.subject(stream, is_key);
        let registered = self.fetch(&subject, loc.version).await?;
        let resolved = self.to_resolved(loc, &subject, registered).await?;
        Ok(Some(resolved))
    }

    async fn to_resolved(
        &self,
        loc: &SchemaLocator,
        subject: &str,
        reg: RegisteredSchema,
    ) -> Result<ResolvedSchema> {
        let wrong = |found: &str| {
            Error::new(
                ErrorCode::Schema,
                format!(
                    "subject '{subject}' holds a {found} schema but the locator says format={}",
                    match loc.format {
                        SchemaFormat::Avro => "AVRO",
                        _ => "PROTOBUF",
                    }
                ),
            )
            .with_context("subject", subject)
        };
        match (&loc.format, &reg.schema_type) {
            (_, SchemaType::Json) => Err(Error::new(
                ErrorCode::Schema,
                format!("subject '{subject}' holds a JSON schema; JSON schemas are not read from the registry: declare it inline with json_schema"),
            )
            .with_context("subject", subject)),
            (SchemaFormat::Avro, SchemaType::Avro) => {
                // Types from other subjects are written into the schema (it becomes
                // self-contained, as the registry's own dereferenced form).
                let refs = self.references(&reg).await?;
                let text = if refs.is_empty() {
                    reg.schema
                } else {
                    crate::avro::inline_references(&reg.schema, &refs)
                        .map_err(|e| e.with_context("subject", subject))?
                };
                Ok(ResolvedSchema {
                    format: SchemaFormat::Avro,
                    text,
                    wire: WireFormat::Confluent,
                    registry_id: Some(reg.id),
                })
            }
            (SchemaFormat::Protobuf { message }, SchemaType::Protobuf) => {
                let imports = self.references(&reg).await?;
                let message = if message.is_empty() {
                    protobuf::first_message(&protobuf::load_pool(&reg.schema, &imports)?)?
                } else {
                    message.clone()
                };
                let text = if imports.iter().any(|(n, _)| !n.starts_with("google/protobuf/")) {
                    let pool = protobuf::load_pool(&reg.schema, &imports)?;
                    format!(
                        "{DESCRIPTOR_SET_PREFIX}{}",
                        base64::engine::general_purpose::STANDARD.encode(pool.encode_to_vec())
                    )
                } else {
                    reg.schema
                };
                Ok(ResolvedSchema {
                    format: SchemaFormat::Protobuf { message },
                    text,
                    wire: WireFormat::Confluent,
                    registry_id: Some(reg.id),
                })
            }
            (_, SchemaType::Avro) => Err(wrong("AVRO")),
            (_, SchemaType::Protobuf) => Err(wrong("PROTOBUF")),
            (_, other) => Err(wrong(&format!("{other:?}"))),
        }
    }

    /// The referenced schemas (transitively), by import name.
    async fn references(&self, reg: &RegisteredSchema) -> Result<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut todo: Vec<_> = reg.references.clone();
        while let Some(r) = todo.pop() {
            if out.iter().any(|(n, _)| *n == r.name) {
                continue;
            }
            let mut delay = FIRST_BACKOFF;
            let mut attempt = 0;
            let child = loop {
                match get_referenced_schema(&self.settings, &r).await {
                    Ok(c) => break c,
                    Err(e) => {
                        let err = self.classify(&e, &r.subject, Some(r.version));
                        if !err.is_retryable() || attempt >= self.max_retries {
                            return Err(err);
                        }
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(MAX_BACKOFF);
                        attempt += 1;
                    }
                }
            };
            todo.extend(child.references.iter().cloned());
            out.push((r.name.clone(), child.schema));
        }
        Ok(out)
    }
}

fn describe(e: &SRCError) -> String {
    match &e.cause {
        Some(c) => format!("{} ({c})", e.error),
        None => e.error.clone(),
    }
}

#[async_trait]
impl SchemaProvider for RegistrySchemaProvider {
    async fn resolve(&self, stream: &str) -> Result<StreamSchemas> {
        let schemas = StreamSchemas {
            key: self.side(&self.key, stream, true).await?,
            payload: self.side(&self.payload, stream, false).await?,
        };
        // Compile now: an unsupported schema is refused at start, naming the field.
        StreamDecoder::new(&schemas, DecodeMode::Permissive, "value")?;
        Ok(schemas)
    }
}

/// [`WriterSchemas`] from the registry, for `schemaResolution=writer`.
///
/// `Stage::apply` is synchronous, and the ids to fetch are only known once a record carries
/// one, so the fetch blocks. It runs on a scoped thread of its own with a current-thread Tokio
/// runtime (and a registry client of its own: a client's pooled connections belong to the
/// runtime that opened them). This works whatever calls `apply`: a multi-thread runtime (the
/// `tributary` binary; the call is then wrapped in `block_in_place`, so the worker's other
/// tasks move to another worker while it waits), a current-thread runtime (where
/// `Handle::block_on` would panic and a task on the same runtime would deadlock), or none.
/// It happens once per new writer id per run; records of the pinned id never get here.
#[derive(Debug)]
pub(crate) struct BlockingWriterSchemas {
    config: DecodeConfig,
}

impl BlockingWriterSchemas {
    /// Checks the registry settings now (no I/O), so a bad URL fails at open.
    pub(crate) fn new(config: &DecodeConfig) -> Result<BlockingWriterSchemas> {
        RegistrySchemaProvider::new(config)?;
        Ok(BlockingWriterSchemas {
            config: config.clone(),
        })
    }

    fn fetch_on_own_thread(&self, id: u32, is_key: bool) -> Result<Fetched> {
        std::thread::scope(|scope| {
            let fetch = scope.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        Error::new(
                            ErrorCode::Internal,
                            format!("cannot start a runtime to fetch schema id {id}: {e}"),
                        )
                    })?;
                let provider = RegistrySchemaProvider::new(&self.config)?;
                runtime.block_on(provider.schema_by_id(id, is_key))
            });
            fetch.join().unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorCode::Internal,
                    format!("the thread fetching schema id {id} panicked"),
                ))
            })
        })
    }
}

impl WriterSchemas for BlockingWriterSchemas {
    fn fetch(&self, id: u32, is_key: bool) -> Result<Fetched> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| self.fetch_on_own_thread(id, is_key))
            }
            _ => self.fetch_on_own_thread(id, is_key),
        }
    }
}
