//! # tributary-sdk
//!
//! The contract every Tributary connector implements, and the types they share.
//!
//! - [`Source`] and [`Sink`]: micro-batch reading with deterministic replay, idempotent writes
//!   keyed by batch id. Both are object-safe and used as `Box<dyn Source>` / `Box<dyn Sink>`.
//! - [`Offset`]: source-defined positions that round-trip exactly through JSON.
//! - [`ReadLimit`]: how much one batch may take.
//! - [`Error`] with a stable [`ErrorCode`], and typed [`DataLossEvent`]s with the
//!   `failOnDataLoss` policy ([`DataLossTracker`]).
//! - [`Options`] and [`OptionSpec`]: Spark-style, case-insensitive option maps validated against
//!   one declaration per option.
//! - [`Secret`], [`SecretRef`], [`SecretStore`]: secrets that never print.
//! - [`Authenticator`] and [`SchemaProvider`]: credentials and schemas for connectors.
//! - [`typed::SourceConnector`] / [`typed::SinkConnector`]: what a connector author writes (a
//!   config parsed once, a [`SourceDescription`], a build step); the erased [`SourceFactory`] /
//!   [`SinkFactory`] the host holds are derived from them.
//! - [`Stage`]: a transformation applied to a source's batches (decoding lives in the
//!   `tributary-decode` crate as a stage); [`StateReport`]: a connector's own checkpoint state.
//! - [`InputPartition`] and [`PartitionStager`]: a batch split into partitions read and staged
//!   on other machines (a distributed engine), committed once by the driver.
//! - [`StreamingSource`] / [`StreamingSink`]: the opt-in streaming read and acknowledged write of
//!   real-time mode (long batches, records delivered as they arrive).
//! - [`SinkWriter`]: the one protocol hosts write every sink with (begin, write parts, finish,
//!   commit), adapting whichever of the four write shapes a sink implements.
//! - [`ScalarFunction`]: a user-defined function for the `[transform]` SQL, registered by an
//!   embedding crate or exported by a plugin.
//!
//! Each connector owns its record schema; the SDK holds none.
//!
//! ## Delivery guarantees
//!
//! The runtime writes a batch's offset range to its checkpoint before reading it and marks it
//! committed after the sink wrote it. A replayed batch has exactly the same range, so a
//! deterministic source and a sink whose writes are idempotent per batch id
//! ([`Delivery::ExactlyOnce`]) give exactly-once end to end; other sinks are at-least-once.
//!
//! ## Example
//!
//! ```
//! use tributary_sdk::{OptionSpec, Options, ErrorCode};
//!
//! let specs = vec![
//!     OptionSpec::string("path", "Directory to read.").required(),
//!     OptionSpec::int("maxFilesPerTrigger", 1, i64::MAX, "Files per batch.").default_value(1000),
//! ];
//! let options: Options = [("PATH", "/data"), ("maxFilesPerTriger", "10")].into_iter().collect();
//! let err = OptionSpec::validate_all(&specs, &options, "files").unwrap_err();
//! assert_eq!(err.code(), ErrorCode::UnknownOption);
//! assert!(err.to_string().contains("did you mean 'maxFilesPerTrigger'"));
//! ```

pub mod ack_frontier;
pub mod auth;
pub mod command;
pub mod connector;
pub mod data_loss;
pub mod description;
pub mod error;
pub mod function;
pub mod input_partition;
pub mod offset;
pub mod one_line;
pub mod options;
pub mod output_mode;
pub mod part_writer;
#[cfg(feature = "plugin")]
pub mod plugin;
pub mod read_limit;
pub mod redact;
pub mod schema_provider;
pub mod secret;
pub mod sink;
pub mod sink_writer;
pub mod source;
pub mod stage;
pub mod stager;
pub mod state;
pub mod stream_binding;
pub mod streaming;
pub mod typed;

pub use ack_frontier::{AckFrontier, Ticket};
pub use auth::{Authenticator, Credentials, SaslMechanism, TlsMaterial};
pub use command::ConnectorCommand;
pub use connector::{
    ConnectorContext, ConnectorKind, PreparedSink, PreparedSource, SinkFactory, SinkFactoryExt,
    SourceFactory, SourceFactoryExt,
};
pub use data_loss::{DataLossEvent, DataLossKind, DataLossTracker};
pub use description::SourceDescription;
pub use error::{Domain, Error, ErrorCode, Result, Retry};
pub use function::ScalarFunction;
pub use input_partition::InputPartition;
pub use offset::Offset;
pub use options::{OptionKind, OptionSpec, Options, ParsedOptions};
pub use output_mode::{OutputMode, OutputShape};
pub use part_writer::PartWriter;
pub use read_limit::ReadLimit;
pub use schema_provider::{
    ResolvedSchema, SchemaFormat, SchemaProvider, StreamSchemas, WireFormat,
};
pub use secret::{
    ChainSecretStore, EnvSecretStore, FileSecretStore, Secret, SecretRef, SecretStore,
};
pub use sink::{Delivery, Sink, SinkLedger};
pub use sink_writer::{PartAck, SinkWriter, WriteMode, WriteShape};
pub use source::{
    batch_stream, fail_before_first_part, BatchStream, Source, SourceIdentity, SourceMetrics,
};
pub use stage::{EventTimeProgress, Stage, StageFactory, StageState, StateOperatorProgress};
pub use stager::{PartitionStager, StagedOutput};
pub use state::{LoggedBatch, StateReport, StateRequest};
pub use stream_binding::{IngestionColumn, StreamBinding, Subscription, SubscriptionKind};
pub use streaming::{
    chunk_queue, Ack, ChunkReceiver, ChunkSender, RealTimeSupport, StreamChunk, StreamingSink,
    StreamingSource,
};
pub use typed::{SinkConnector, SourceConnector};

/// The SDK version, compared by hosts when loading plugins.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");
