//! # tributary-decode
//!
//! Tributary's payload decoders: typed Arrow columns from the binary key and payload of a
//! stream's records, the way Spark's `from_json` / `from_avro` / `from_protobuf` read them.
//!
//! A source describes which column carries the payload (`value` for Kafka, `data` for Kinesis)
//! and which the key ([`tributary_sdk::SourceDescription`]); the host applies a
//! [`DecodeStageFactory`] stage (the pipeline's `[source.decode]` table) around the source, and
//! the sinks receive the typed columns: a struct column for a side with a schema, utf8 for a side
//! without one. Every other column passes through unchanged.
//!
//! ## Schemas
//!
//! - Inline: `json_schema` (JSON Schema), `avro_schema`, `proto_schema` + `message_name`, and
//!   their `key_` forms; records plain or Confluent-framed (`wire_format`).
//! - From a Confluent Schema Registry (feature `registry`): `payload_schema_locator` /
//!   `key_schema_locator` with `subject=` or a subject name strategy. A subject named after the
//!   topic (TopicNameStrategy, TopicRecordNameStrategy) needs a source of exactly one stream.
//! - `schemaResolution=writer` (registry only): a record framed with another schema id than the
//!   one resolved at start is read with its writer schema (fetched once per id) into the
//!   pinned columns, instead of being nulled as `wrongSchemaId` (the default, `pinned`).
//!
//! See [`options`] for every option; [`decode_options`] declares them once.
//!
//! ## Modes
//!
//! - `PERMISSIVE` (default): a malformed record becomes a null struct and is counted per reason
//!   ([`Malformed`]) in the stage's metrics (`malformed.<reason>`, `malformedRecords`); a JSON
//!   field of another type than declared is nulled alone (`typeMismatchFields`).
//! - `FAILFAST`: the first malformed record fails the batch with `MALFORMED_RECORD`, naming its
//!   partition and offset (or shard and sequence number).
//!
//! Decoding never loses or duplicates rows: each output batch has the rows of its input batch,
//! so the source's delivery guarantee (exactly-once with a deterministic source and an
//! idempotent sink) holds after decoding.
//!
//! ## Parts
//!
//! - [`DecodeStageFactory`]: the stage (`validate` without I/O, `create` resolves secrets,
//!   `open` resolves the schemas once per run).
//! - [`DecodeConfig::from_options`]: the parsed `[source.decode]` table.
//! - [`DirectSchemaProvider`] serves inline schemas; `RegistrySchemaProvider` (feature
//!   `registry`) reads a Confluent Schema Registry; [`schema_provider`] picks one.
//! - [`StreamDecoder`]: decodes batches with resolved [`tributary_sdk::StreamSchemas`].
//!
//! Features: `json`, `avro`, `protobuf` (each decoder), `registry` (the registry provider; turns
//! on `avro` and `protobuf`); all on by default. The decoders write straight into Arrow buffers;
//! see each module for its type mapping.
//!
//! ## Example
//!
//! A stage for a Kafka-like source whose payload is JSON:
//!
//! ```
//! # #[cfg(feature = "json")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use arrow_array::{Array, BinaryArray, RecordBatch, StructArray};
//! use arrow_schema::{DataType, Field, Schema};
//! use tributary_decode::DecodeStageFactory;
//! use tributary_sdk::{EnvSecretStore, Options, SourceDescription, StageFactory};
//!
//! let source = SourceDescription::new("kafka", "subscribe:orders")
//!     .with_streams(["orders"])
//!     .with_payload_column("value");
//! let options = Options::new()
//!     .with("json_schema", r#"{"type":"object","properties":{"id":{"type":"integer"}}}"#);
//! let factory = DecodeStageFactory;
//! factory.validate(&options, &source).unwrap();
//! let mut stage = factory.create(&options, &source, &EnvSecretStore).unwrap();
//!
//! let schema = Arc::new(Schema::new(vec![Field::new("value", DataType::Binary, true)]));
//! let out_schema = stage.open(schema.clone()).await.unwrap();
//! assert!(matches!(out_schema.field(0).data_type(), DataType::Struct(_)));
//!
//! let values = BinaryArray::from(vec![&b"{\"id\": 7}"[..], &b"{oops"[..]]);
//! let batch = RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap();
//! let out = stage.apply(&batch).await.unwrap();
//! let value = out.column(0).as_any().downcast_ref::<StructArray>().unwrap();
//! assert!(value.is_valid(0) && value.is_null(1));
//! assert_eq!(stage.metrics()["malformed.badJson"], 1);
//! # }
//! # #[cfg(not(feature = "json"))]
//! # fn main() {}
//! ```

#[cfg(feature = "avro")]
pub(crate) mod avro;
// Parts of the builders are used by only some of the format features.
#[allow(dead_code)]
pub(crate) mod columns;
mod decoder;
pub mod framing;
#[cfg(feature = "json")]
pub(crate) mod json;
pub mod metrics;
pub mod options;
#[cfg(feature = "protobuf")]
pub(crate) mod protobuf;
pub mod provider;
#[cfg(feature = "registry")]
pub mod registry;
#[cfg(feature = "registry")]
mod resolution;
mod stage;

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Fields};
use tributary_sdk::error::Result;

use metrics::Bad;

pub use decoder::StreamDecoder;
pub use framing::confluent_frame;
pub use metrics::Malformed;
pub use options::{
    decode_options, topic_name_subject, DecodeConfig, DecodeMode, ProtobufOptions, RegistryConfig,
    SchemaLocator, SchemaResolution, SideSource, SubjectStrategy,
};
#[cfg(feature = "protobuf")]
pub use protobuf::DESCRIPTOR_SET_PREFIX;
pub use provider::{schema_provider, DirectSchemaProvider};
#[cfg(feature = "registry")]
pub use registry::RegistrySchemaProvider;
pub use stage::{DecodeStage, DecodeStageFactory};

/// The name of the key column that is decoded when present.
pub const KEY_COLUMN: &str = "key";

/// One format's decoder: appends one decoded value (or null) per call into its own builder.
pub(crate) trait RowDecoder: Send + std::fmt::Debug {
    /// The Arrow type of the decoded column.
    fn data_type(&self) -> DataType;
    /// Decodes one record; on error nothing was appended.
    fn decode(&mut self, bytes: &[u8]) -> std::result::Result<(), Bad>;
    /// Appends a null.
    fn push_null(&mut self);
    /// Decodes one Avro record with a schema-resolution plan (a writer's datum into this
    /// decoder's columns, see `avro::resolve`); on error nothing was appended. Only the Avro
    /// decoder has plans.
    #[cfg(feature = "registry")]
    fn decode_avro_plan(
        &mut self,
        plan: &avro::ANode,
        bytes: &[u8],
    ) -> std::result::Result<(), Bad> {
        let _ = (plan, bytes);
        Err(Bad::new(
            metrics::Malformed::BadAvro,
            "internal: an Avro resolution plan for a non-Avro decoder",
            0,
        ))
    }
    /// Makes room for `n` more records (a hint; the default does nothing).
    fn reserve(&mut self, n: usize) {
        let _ = n;
    }
    /// The column built so far; the builder starts again empty.
    fn finish(&mut self) -> Result<ArrayRef>;
    /// Field-level type mismatches since the last call (JSON only).
    fn take_mismatches(&mut self) -> u64 {
        0
    }
}

/// `map<utf8, value>` with Arrow's conventional entry names.
#[allow(dead_code)]
pub(crate) fn map_type(value: DataType) -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", value, true),
            ])),
            false,
        )),
        false,
    )
}
