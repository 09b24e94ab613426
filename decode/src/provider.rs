//! [`DirectSchemaProvider`]: schemas given inline in the pipeline (JSON Schema, Avro, Protobuf).
//!
//! The schemas are compiled once when the provider is built, so a schema that cannot be decoded
//! (a refused type, a recursive record, a missing message) is refused at start with a message
//! naming the field, not at the first record.

use async_trait::async_trait;

use crate::options::{DecodeConfig, SideSource};
use crate::{DecodeMode, StreamDecoder};
use tributary_sdk::error::{Error, ErrorCode, Result};
use tributary_sdk::schema_provider::{ResolvedSchema, SchemaProvider, StreamSchemas};

/// Serves inline schemas; every stream gets the same ones.
#[derive(Debug, Clone)]
pub struct DirectSchemaProvider {
    schemas: StreamSchemas,
}

impl DirectSchemaProvider {
    /// A provider for these schemas, checked by compiling them.
    pub fn new(schemas: StreamSchemas) -> Result<DirectSchemaProvider> {
        if schemas.key.is_none() && schemas.payload.is_none() {
            return Err(Error::new(
                ErrorCode::MissingOption,
                "at least one of the key and payload schemas is required",
            ));
        }
        StreamDecoder::new(&schemas, DecodeMode::Permissive, "value")?;
        Ok(DirectSchemaProvider { schemas })
    }

    /// A provider for a decode section whose schemas are all inline.
    pub fn from_config(config: &DecodeConfig) -> Result<DirectSchemaProvider> {
        let side = |s: &Option<SideSource>| -> Result<Option<ResolvedSchema>> {
            match s {
                None => Ok(None),
                Some(SideSource::Direct { format, text, wire }) => Ok(Some(ResolvedSchema {
                    format: format.clone(),
                    text: text.clone(),
                    wire: *wire,
                    registry_id: None,
                })),
                Some(SideSource::Registry(_)) => Err(Error::new(
                    ErrorCode::InvalidOption,
                    "a schema locator needs the registry provider",
                )),
            }
        };
        DirectSchemaProvider::new(StreamSchemas {
            key: side(&config.key)?,
            payload: side(&config.payload)?,
        })
    }
}

#[async_trait]
impl SchemaProvider for DirectSchemaProvider {
    async fn resolve(&self, _stream: &str) -> Result<StreamSchemas> {
        Ok(self.schemas.clone())
    }
}

/// The provider for a decode section: the registry provider when a side uses a locator
/// (feature `registry`), the direct one otherwise.
pub fn schema_provider(config: &DecodeConfig) -> Result<Box<dyn SchemaProvider>> {
    let uses_registry = [&config.key, &config.payload]
        .iter()
        .any(|s| matches!(s, Some(SideSource::Registry(_))));
    if !uses_registry {
        return Ok(Box::new(DirectSchemaProvider::from_config(config)?));
    }
    #[cfg(feature = "registry")]
    {
        Ok(Box::new(crate::registry::RegistrySchemaProvider::new(
            config,
        )?))
    }
    #[cfg(not(feature = "registry"))]
    {
        Err(Error::new(
            ErrorCode::InvalidOption,
            "schema locators need tributary-sdk built with the 'registry' feature",
        )
        .with_context("option", "payload_schema_locator"))
    }
}
