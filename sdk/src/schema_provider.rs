//! The `SchemaProvider` contract: the key and payload schemas of a stream.
//!
//! A stream's binary payload (`value` for Kafka, `data` for Kinesis) and optionally its key are
//! decoded into typed Arrow columns with a schema the user gives directly (JSON Schema, Avro,
//! Protobuf text with a message name) or that a Confluent Schema Registry holds. The provider is
//! asked once when a pipeline starts; the answer is kept for the run (a restart asks again and so
//! picks up a newer version).

use std::fmt::Debug;

use async_trait::async_trait;

use crate::error::Result;

/// The format of a schema text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "format", rename_all = "camelCase")]
pub enum SchemaFormat {
    /// JSON Schema.
    JsonSchema,
    /// Avro schema JSON.
    Avro,
    /// Protobuf `.proto` text; `message` is the fully qualified message name.
    Protobuf {
        /// Fully qualified message name (`com.example.Event`).
        message: String,
    },
}

/// How encoded records are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WireFormat {
    /// The bytes are the encoded record itself.
    Plain,
    /// Confluent framing: magic byte 0, 4-byte schema id, (protobuf: message indexes), payload.
    Confluent,
}

/// One resolved schema.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedSchema {
    /// Format of `text`.
    pub format: SchemaFormat,
    /// The schema text.
    pub text: String,
    /// Framing of the encoded records.
    pub wire: WireFormat,
    /// The registry id, when the schema came from a registry. Records framed with another id are
    /// not decoded (null, counted).
    pub registry_id: Option<u32>,
}

/// The schemas of one stream; a side without a schema decodes to utf8.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamSchemas {
    /// Schema of the key, if any.
    pub key: Option<ResolvedSchema>,
    /// Schema of the payload, if any.
    pub payload: Option<ResolvedSchema>,
}

/// Resolves the schemas of a stream (a topic, a Kinesis stream).
#[async_trait]
pub trait SchemaProvider: Send + Sync + Debug {
    /// The schemas for `stream`. A registry that cannot be reached is an error (retryable),
    /// never an empty answer.
    async fn resolve(&self, stream: &str) -> Result<StreamSchemas>;
}
