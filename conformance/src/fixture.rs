//! The `Fixture` trait: how the suite acts on the external system behind a connector.
//!
//! A fixture creates targets (topics, streams, directories), produces records, causes data loss,
//! and turns the suite's abstract read setup ([`ReadSetup`]) into the connector's own options.
//! Records are compared by their payload text ([`Fixture::payloads`]), so one case serves every
//! connector whatever its schema. Methods behind a [`Capability`] have defaults that refuse;
//! the runner never calls them unless the fixture declares the capability.

use arrow::array::RecordBatch;
use async_trait::async_trait;
use tributary_sdk::{DataLossKind, Error, ErrorCode, Options, Result, SourceMetrics};

use crate::capability::{Capability, LimitUnit, RateLimit};

/// Which targets a source reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// These targets (a single directory, a topic list).
    Targets(Vec<String>),
    /// Every target whose name matches this regular expression.
    Pattern(String),
    /// Explicit `(target, partition)` pairs.
    Assign(Vec<(String, u32)>),
}

/// Where a new query starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Starting {
    /// At the oldest available record.
    #[default]
    Earliest,
    /// After the newest record.
    Latest,
}

/// Decoding mode for malformed records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeMode {
    /// Malformed -> null, counted.
    Permissive,
    /// Malformed -> error.
    FailFast,
}

/// EFO consumer settings for a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EfoSetup {
    /// The consumer name to register or reuse (ignored when `prefix` is set).
    pub consumer_name: String,
    /// Deregister the consumer when the source stops.
    pub deregister_on_stop: bool,
    /// Name the consumer with this prefix + the pipeline id instead (the connector's prefix
    /// option, e.g. `consumerNamePrefix`); the leak report covers consumers under it.
    pub prefix: Option<String>,
}

/// One EFO consumer as the server describes it ([`Fixture::describe_efo_consumer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EfoConsumer {
    /// The consumer name.
    pub name: String,
    /// The server's id of this registration (the ARN): a new registration has a new one.
    pub id: String,
    /// When it was registered (Unix ms).
    pub created_ms: i64,
    /// It can receive records (ACTIVE).
    pub active: bool,
}

/// What a case asks a source to do; the fixture turns it into connector options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSetup {
    /// What to read.
    pub subscription: Subscription,
    /// Where to start.
    pub starting: Starting,
    /// A per-trigger limit through the connector's rate-limit option.
    pub max_per_trigger: Option<u64>,
    /// `failOnDataLoss` (or the connector's equivalent); `None` keeps the default.
    pub fail_on_data_loss: Option<bool>,
    /// Decoding mode; `None` keeps the default.
    pub decode_mode: Option<DecodeMode>,
    /// EFO consumer settings.
    pub efo: Option<EfoSetup>,
    /// Ask for the records' metadata where it is optional (Kafka `includeHeaders`)
    /// ([`Capability::Metadata`]).
    pub include_metadata: bool,
    /// The source will be read in real-time mode ([`Capability::RealTime`]): the fixture sets
    /// what its connector needs to stream (Kinesis: an enhanced fan-out consumer).
    pub real_time: bool,
}

impl ReadSetup {
    /// Reads one target from the earliest record with default settings.
    pub fn target(target: &str) -> Self {
        ReadSetup {
            subscription: Subscription::Targets(vec![target.to_string()]),
            starting: Starting::Earliest,
            max_per_trigger: None,
            fail_on_data_loss: None,
            decode_mode: None,
            efo: None,
            include_metadata: false,
            real_time: false,
        }
    }
}

/// The external system behind a connector under test.
#[async_trait]
pub trait Fixture: Send + Sync {
    /// The fixture's name (`files`, `generator`, `kafka`).
    fn name(&self) -> &str;

    /// What the fixture and its connector can do.
    fn capabilities(&self) -> Vec<Capability>;

    /// Creates an empty target; returns its name, unique per call and starting with `hint`
    /// (pattern cases rely on the prefix).
    async fn create_target(&mut self, hint: &str) -> Result<String>;

    /// Makes `count` new records available in `target`; returns their payloads in order.
    async fn produce(&mut self, target: &str, count: usize) -> Result<Vec<String>>;

    /// Creates an empty target with `partitions` partitions ([`Capability::Assign`]); otherwise
    /// like [`Fixture::create_target`].
    async fn create_partitioned_target(&mut self, hint: &str, partitions: u32) -> Result<String> {
        let _ = (hint, partitions);
        Err(unsupported(self.name(), "create partitioned targets"))
    }

    /// Makes `count` new records available in `target`, spread over all its partitions; returns
    /// each record's partition and payload, in order ([`Capability::Assign`]).
    async fn produce_partitioned(
        &mut self,
        target: &str,
        count: usize,
    ) -> Result<Vec<(u32, String)>> {
        let _ = (target, count);
        Err(unsupported(self.name(), "produce into partitions"))
    }

    /// The connector options for a read.
    fn source_options(&self, setup: &ReadSetup) -> Result<Options>;

    /// The payload of every row, in order (`None` for a null payload).
    fn payloads(&self, batches: &[RecordBatch]) -> Result<Vec<Option<String>>>;

    /// Makes `count` new records with metadata available in `target`; returns each record's
    /// payload and its metadata as [`Fixture::metadata`] renders it, in order
    /// ([`Capability::Metadata`]).
    async fn produce_with_metadata(
        &mut self,
        target: &str,
        count: usize,
    ) -> Result<Vec<(String, String)>> {
        let _ = (target, count);
        Err(unsupported(self.name(), "produce records with metadata"))
    }

    /// The metadata of every row as text, in order (`None` when a row has none), in the form
    /// [`Fixture::produce_with_metadata`] returns ([`Capability::Metadata`]).
    fn metadata(&self, batches: &[RecordBatch]) -> Result<Vec<Option<String>>> {
        let _ = batches;
        Err(unsupported(self.name(), "read record metadata"))
    }

    /// The connector's rate-limit option ([`Capability::RateLimit`]).
    fn rate_limit(&self) -> Option<RateLimit> {
        None
    }

    /// How many rate-limit units (rows or files) the batches hold.
    fn count_units(&self, batches: &[RecordBatch], unit: LimitUnit) -> Result<usize> {
        match unit {
            LimitUnit::Rows => Ok(batches.iter().map(|b| b.num_rows()).sum()),
            LimitUnit::Files => Err(unsupported(self.name(), "count files")),
        }
    }

    /// Writes `good` valid records followed by `bad` malformed ones; returns the expected payloads
    /// (`None` for malformed) ([`Capability::PermissiveDecoding`]).
    async fn produce_malformed(
        &mut self,
        target: &str,
        good: usize,
        bad: usize,
    ) -> Result<Vec<Option<String>>> {
        let _ = (target, good, bad);
        Err(unsupported(self.name(), "produce malformed records"))
    }

    /// The sensitive option this fixture's [`Fixture::source_options`] really depend on, given
    /// there as `{{secrets/conformance/<option>}}` (the SCRAM password of a Kafka broker that
    /// requires it). When set, `secrets_hidden` requires a source built with the suite's secret
    /// store ([`crate::SECRET_MARKER`] for every `conformance` reference) to plan a batch, and
    /// one whose reference resolves to another value to fail: a connector that never resolves
    /// or uses the secret cannot pass. `None`: the case only checks that nothing leaks.
    fn secret_option(&self) -> Option<String> {
        None
    }

    /// Options that take a URL, each with a URL of the fixture's kind (`("path",
    /// "s3://bucket/in")`): `secrets_hidden` gives them user information and requires it never
    /// shows (the option may well be refused for it).
    fn url_options(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The metric that counts malformed records ([`Capability::PermissiveDecoding`]).
    fn malformed_metric(&self) -> Option<&str> {
        None
    }

    /// Makes the records already planned for `target` unavailable in the way `kind` describes
    /// (trim, delete a file, delete and recreate) ([`Capability::DataLoss`]).
    async fn cause_data_loss(&mut self, target: &str, kind: DataLossKind) -> Result<()> {
        let _ = (target, kind);
        Err(unsupported(self.name(), "cause data loss"))
    }

    /// Makes every record produced to `target` so far unavailable, the way retention does
    /// while no source runs (records put, pipeline stopped, retention passed); records produced
    /// afterwards stay ([`Capability::ResumeDataLoss`]).
    async fn age_out(&mut self, target: &str) -> Result<()> {
        let _ = target;
        Err(unsupported(self.name(), "age out records"))
    }

    /// Deletes a target.
    async fn delete_target(&mut self, target: &str) -> Result<()> {
        let _ = target;
        Err(unsupported(self.name(), "delete targets"))
    }

    /// Names of the EFO consumers registered on `target` ([`Capability::EfoConsumers`]).
    async fn list_efo_consumers(&self, target: &str) -> Result<Vec<String>> {
        let _ = target;
        Err(unsupported(self.name(), "list EFO consumers"))
    }

    /// The consumer `name` of `target` as the server describes it, `None` when there is none
    /// ([`Capability::EfoConsumers`]).
    async fn describe_efo_consumer(&self, target: &str, name: &str) -> Result<Option<EfoConsumer>> {
        let _ = (target, name);
        Err(unsupported(self.name(), "describe EFO consumers"))
    }

    /// The consumer names a started source reported as leaked (its leak report, read from the
    /// source's metrics) ([`Capability::EfoConsumers`]).
    fn efo_leak_report(&self, metrics: &SourceMetrics) -> Result<Vec<String>> {
        let _ = metrics;
        Err(unsupported(self.name(), "read the EFO leak report"))
    }

    /// Releases everything the fixture created.
    async fn teardown(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The error a fixture returns for something it cannot do.
pub fn unsupported(fixture: &str, what: &str) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("fixture '{fixture}' cannot {what}"),
    )
}
