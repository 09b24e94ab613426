//! # tributary-kafka
//!
//! The Kafka source and sink of Tributary, on `rdkafka` (librdkafka 2.12), with the option names
//! and guarantees of Spark Structured Streaming's Kafka connector, plus SASL PLAIN / SCRAM, TLS,
//! mutual TLS and AWS MSK IAM authenticators.
//!
//! ## Guarantees
//!
//! - **Source: replayable, exactly-once capable.** Offsets are per-partition positions
//!   (`{"topic":{"0":23}}`) stored in the runtime's checkpoint; `read(start, end)` assigns the
//!   partitions and reads exactly `[start, end)`, so a replayed batch has the same records.
//!   With an idempotent sink the pipeline is exactly-once end to end. Consumer-group offsets are
//!   committed only for monitoring (lag dashboards); the checkpoint is the truth.
//! - **Data loss is never silent.** Deleted partitions, recreated topics, offsets removed by
//!   retention, new partitions that do not start at 0 and gaps inside a range are typed
//!   data-loss events: an error with a stable code (`failOnDataLoss=true`, the default) or a
//!   warning plus a `dataLoss.*` metric and a read from the earliest available offset.
//! - **Sink: at-least-once.** Every record of a batch must be acknowledged before the batch
//!   counts as written; any delivery failure fails the batch. The idempotent producer is on by
//!   default, so the producer's own retries do not duplicate, but a batch replayed after a crash
//!   is written again ([`tributary_sdk::Delivery::AtLeastOnce`]). Kafka transactions are not used.
//!
//! ## Options
//!
//! Stream options are declared in [`config`]; the connection (bootstrap servers,
//! `kafka.*` pass-through, `auth.*`, `tls.*` and Spark's `kafka.security.protocol`,
//! `kafka.sasl.*`, `kafka.ssl.*`) in [`connection`]. Options are parsed once, into
//! [`config::SourceConfig`] / [`config::SinkConfig`]; options that would be ignored or that
//! contradict each other are refused with `CONFLICTING_OPTIONS` naming both. The record schema
//! is in [`schema`]. The Java client settings Spark jobs carry (`kafka.max.poll.records`,
//! `kafka.linger.ms`, ...) are translated or refused by [`java_settings`]
//! (`docs/kafka-java-settings.md`). Unknown options, librdkafka
//! properties it does not know, bad JSON, bad regular expressions and unreadable key material
//! are refused with a stable error code naming the option before anything connects.
//!
//! ## Example
//!
//! ```
//! use tributary_kafka::KafkaSourceFactory;
//! use tributary_sdk::{ConnectorContext, ErrorCode, Options, SourceFactory, SourceFactoryExt};
//!
//! let options: Options = [
//!     ("kafka.bootstrap.servers", "127.0.0.1:9092"),
//!     ("subscribe", "events"),
//!     ("startingOffsets", "earliest"),
//!     ("maxOffsetsPerTrigger", "10000"),
//! ]
//! .into_iter()
//! .collect();
//! // Options are parsed once; the description says what the source reads.
//! let prepared = KafkaSourceFactory.prepare(&options).unwrap();
//! assert_eq!(prepared.description().streams, vec!["events".to_string()]);
//! assert_eq!(prepared.description().payload_column.as_deref(), Some("value"));
//! // Building the source resolves secrets and checks key material but does not connect yet.
//! let source = KafkaSourceFactory.create(&options, &ConnectorContext::default()).unwrap();
//! assert_eq!(source.identity().target, "subscribe=events");
//!
//! let bad = options.clone().with("subscribePattern", "events-.*");
//! let err = KafkaSourceFactory.validate(&bad).unwrap_err();
//! assert_eq!(err.code(), ErrorCode::ConflictingOptions);
//!
//! // Spark's security options work as the Spark pages spell them.
//! let scram = options.clone()
//!     .with("kafka.security.protocol", "SASL_PLAINTEXT")
//!     .with("kafka.sasl.mechanism", "SCRAM-SHA-512")
//!     .with(
//!         "kafka.sasl.jaas.config",
//!         r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="{{secrets/kafka/pw}}";"#,
//!     );
//! KafkaSourceFactory.validate(&scram).unwrap();
//! ```

pub mod auth;
mod batch_builder;
mod client;
pub mod config;
pub mod connection;
mod connector;
mod context;
mod error;
pub mod java_settings;
mod metrics;
#[cfg(test)]
mod mock_tests;
pub mod offsets;
pub mod options;
mod partitions;
pub mod planner;
mod range_poll;
mod read_consumer;
mod reader;
pub mod schema;
pub mod sink;
pub mod source;
pub mod stream_binding;
mod stream_reader;
mod subscription;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use connection::{ConnectionProfile, ConnectionSettings};
pub use connector::KafkaSourceFactory;
pub use sink::{KafkaSink, KafkaSinkFactory};
pub use source::KafkaSource;
