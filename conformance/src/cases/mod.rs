//! The conformance cases: public async functions, one per behaviour.
//!
//! Every case takes the connector under test (as a [`SourceFactory`], so a built-in connector and
//! a plugin run the same code) and a [`Fixture`], and returns an [`Outcome`] or a [`Failure`].
//! One table (`__source_cases!`) lists them with the capabilities each needs; [`all_cases`] and
//! [`crate::conformance_tests!`] (one test per case) are generated from it, so a new case is
//! written once and reaches every connector.

mod data_loss;
mod decoding;
mod efo;
mod lifecycle;
mod limits;
mod metadata;
pub mod option_checks;
mod partitions;
mod reading;
mod resume;
mod scaling;
mod streaming;
mod subscription;

use std::time::Duration;

use arrow::array::RecordBatch;
use futures::future::BoxFuture;
use tributary_sdk::{
    ConnectorContext, EnvSecretStore, Offset, Options, ReadLimit, Source, SourceFactory,
    SourceFactoryExt,
};

use crate::capability::Capability;
use crate::fixture::{Fixture, ReadSetup};

pub use data_loss::{fail_on_data_loss_false, fail_on_data_loss_true};
pub use decoding::{failfast_decoding_stops, permissive_decoding};
pub use efo::{
    efo_consumer_deregistered_on_stop, efo_consumer_leak_listed, efo_consumer_registered_active,
    efo_consumer_reused_by_name,
};
pub use lifecycle::{secrets_hidden, shutdown_releases_resources, unknown_option_refused};
pub use limits::{available_now_bounded, idle_source_returns_empty, rate_limit_honoured};
pub use metadata::metadata_round_trips;
pub use partitions::input_partitions_cover_range;
pub use reading::{
    read_range_determinism, replay_after_restart, starting_earliest, starting_latest,
};
pub use resume::{resume_position_lost_false, resume_position_lost_true};
pub use scaling::{more_readers_than_partitions, rescale_reads_same_rows};
pub use streaming::streaming_replay_matches;
pub use subscription::{assign_partitions, subscribe_list, subscribe_pattern_includes_new_target};

/// How a case ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The behaviour holds.
    Passed,
    /// The case does not apply; the reason says why.
    Skipped(String),
}

/// Why a case failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl From<tributary_sdk::Error> for Failure {
    fn from(e: tributary_sdk::Error) -> Self {
        Failure(format!("unexpected error: {e}"))
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a case returns.
pub type CaseResult = std::result::Result<Outcome, Failure>;

/// The signature of every case.
pub type CaseFn =
    for<'a> fn(&'a dyn SourceFactory, &'a mut dyn Fixture) -> BoxFuture<'a, CaseResult>;

/// A case with its name and the capabilities it needs.
#[derive(Clone, Copy)]
pub struct Case {
    /// The case name (also the generated test's name).
    pub name: &'static str,
    /// What the case checks.
    pub description: &'static str,
    /// Capabilities the fixture must declare; otherwise the case is skipped.
    pub requires: &'static [Capability],
    /// The case itself.
    pub run: CaseFn,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("requires", &self.requires)
            .finish()
    }
}

/// The source suite's case table — the one place a case is listed: its name (the public async
/// function in this module and the generated test), the capabilities it needs and what it
/// checks. Expands to `$crate::$callback! { ($($args)*) name: [Capability, ..] "what", .. }`;
/// [`all_cases`] and [`crate::conformance_tests!`] are both generated from it.
#[doc(hidden)]
#[macro_export]
macro_rules! __source_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            subscribe_list: [SubscribeList]
                "a list of targets is read completely",
            subscribe_pattern_includes_new_target: [SubscribePattern]
                "a pattern subscription picks up a target created after the start",
            assign_partitions: [Assign]
                "of a multi-partition target, exactly the assigned partitions are read",
            starting_earliest: []
                "a new query from earliest reads every record",
            starting_latest: [StartingLatest]
                "a new query from latest reads only records produced after it started",
            read_range_determinism: []
                "the same offset range read twice (and by a new instance) yields the same records",
            input_partitions_cover_range: []
                "the input partitions of a range, read by an executor's instance, hold what read returns",
            replay_after_restart: []
                "an uncommitted batch replays exactly after a restart: no loss, no duplicate",
            streaming_replay_matches: [RealTime]
                "a real-time read's records are the logged range end_offset gives, read again",
            rescale_reads_same_rows: []
                "the input partitions planned for parallelism 2 and for 4 hold the same rows",
            more_readers_than_partitions: []
                "more readers than the source has pieces all finish; idle real-time readers end when stopped",
            metadata_round_trips: [Metadata]
                "records written with metadata (headers, file metadata, partition keys) come back with it",
            rate_limit_honoured: [RateLimit]
                "the rate-limit option and a host read limit bound every batch",
            available_now_bounded: [AppendWhileRunning]
                "an availableNow run reads what existed when it was prepared, nothing later",
            fail_on_data_loss_true: []
                "with failOnDataLoss=true each declared data-loss kind fails with its code",
            fail_on_data_loss_false: []
                "with failOnDataLoss=false each declared data-loss kind is counted and skipped",
            resume_position_lost_true: []
                "with failOnDataLoss=true a committed position aged out while stopped fails with the declared code",
            resume_position_lost_false: []
                "with failOnDataLoss=false a committed position aged out while stopped is counted; reading goes on from the oldest record held",
            permissive_decoding: [PermissiveDecoding]
                "a malformed record becomes a null payload and a counter; the stream goes on",
            failfast_decoding_stops: [PermissiveDecoding]
                "FAILFAST stops at a malformed record with MALFORMED_RECORD",
            idle_source_returns_empty: []
                "with no new data the source plans empty batches promptly, without blocking",
            shutdown_releases_resources: []
                "stop succeeds and a new instance on the same state works afterwards",
            secrets_hidden: []
                "sensitive option values never appear in Debug output or errors",
            unknown_option_refused: []
                "an unknown option is refused with UNKNOWN_OPTION and a near miss is suggested",
            efo_consumer_registered_active: [EfoConsumers]
                "starting an EFO source registers its consumer and waits until it is active",
            efo_consumer_reused_by_name: [EfoConsumers]
                "a second source with the same consumer name reuses the consumer",
            efo_consumer_deregistered_on_stop: [EfoConsumers]
                "with deregistration requested, stop removes the consumer",
            efo_consumer_leak_listed: [EfoConsumers]
                "without deregistration the consumer stays and is listed",
        }
    };
}

/// `__source_cases!` callback: the table as a `Vec<Case>`.
#[doc(hidden)]
#[macro_export]
macro_rules! __source_case_list {
    (() $($name:ident: [$($cap:ident),*] $description:literal,)*) => {
        vec![$(
            $crate::cases::Case {
                name: stringify!($name),
                description: $description,
                requires: &[$($crate::Capability::$cap),*],
                run: |c, f| ::std::boxed::Box::pin($crate::cases::$name(c, f)),
            },
        )*]
    };
}

/// Every case of the suite, in report order.
pub fn all_cases() -> Vec<Case> {
    crate::__source_cases!(__source_case_list!())
}

/// A connector context with a fresh state directory, kept alive with the returned guard.
pub struct CaseEnv {
    _dir: tempfile::TempDir,
    /// The context to build sources with (restarts reuse it).
    pub context: ConnectorContext,
}

impl CaseEnv {
    /// A new environment.
    pub fn new() -> Result<CaseEnv, Failure> {
        let dir = tempfile::tempdir().map_err(|e| Failure(format!("temp dir: {e}")))?;
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).map_err(|e| Failure(format!("state dir: {e}")))?;
        Ok(CaseEnv {
            context: ConnectorContext {
                state_dir: Some(state),
                secrets: std::sync::Arc::new(EnvSecretStore),
                pipeline: "conformance".into(),
                checkpoint_id: Some(format!("conformance-{}", std::process::id())),
            },
            _dir: dir,
        })
    }
}

/// A source built for a case's read setup, with its first offset and the end of the first
/// batch once data shows.
pub struct Reading {
    /// The source.
    pub source: Box<dyn Source>,
    /// The options it was built with (a restart builds a new instance from them).
    pub options: Options,
    /// Its initial offset.
    pub start: Offset,
    /// The end planned under [`ReadLimit::All`] once data showed (`start` when none did
    /// within 20 s).
    pub end: Offset,
}

/// The opening most cases share: options for `setup`, a source, its initial offset, and a wait
/// (up to 20 s, for systems that publish asynchronously) until data is planned.
pub async fn start_reading(
    connector: &dyn SourceFactory,
    fixture: &dyn Fixture,
    env: &CaseEnv,
    setup: &ReadSetup,
) -> Result<Reading, Failure> {
    let options = fixture.source_options(setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    let end = wait_for_data(
        source.as_mut(),
        &start,
        &ReadLimit::All,
        Duration::from_secs(20),
    )
    .await?;
    Ok(Reading {
        source,
        options,
        start,
        end,
    })
}

impl Reading {
    /// Reads everything from the start, committing each batch; returns the batches and the
    /// final offset.
    pub async fn drain_all(&mut self) -> Result<(Vec<ReadBatch>, Offset), Failure> {
        Ok(drain(
            self.source.as_mut(),
            self.start.clone(),
            &ReadLimit::All,
            100,
        )
        .await?)
    }

    /// Every payload from the start, committing each batch.
    pub async fn read_all(
        &mut self,
        fixture: &dyn Fixture,
    ) -> Result<Vec<Option<String>>, Failure> {
        let (read, _) = self.drain_all().await?;
        all_payloads(fixture, &read)
    }
}

/// One planned and read batch.
pub struct ReadBatch {
    /// Start offset.
    pub start: Offset,
    /// End offset.
    pub end: Offset,
    /// The records.
    pub batches: Vec<RecordBatch>,
}

/// Plans and reads batches until the source reports no new data (or `max_batches`), committing
/// each. Returns the batches and the final offset.
pub async fn drain(
    source: &mut dyn Source,
    start: Offset,
    limit: &ReadLimit,
    max_batches: usize,
) -> Result<(Vec<ReadBatch>, Offset), tributary_sdk::Error> {
    let mut out = Vec::new();
    let mut at = start;
    for _ in 0..max_batches {
        let end = source.latest_offset(&at, limit).await?;
        if end == at {
            break;
        }
        let batches = source.read(&at, &end).await?;
        source.commit(&end).await?;
        out.push(ReadBatch {
            start: at,
            end: end.clone(),
            batches,
        });
        at = end;
    }
    Ok((out, at))
}

/// Every payload of a drained read, in order.
pub fn all_payloads(
    fixture: &dyn Fixture,
    read: &[ReadBatch],
) -> Result<Vec<Option<String>>, Failure> {
    let mut out = Vec::new();
    for r in read {
        out.extend(fixture.payloads(&r.batches)?);
    }
    Ok(out)
}

/// Payloads as sorted text (for order-independent comparisons).
pub fn sorted(values: impl IntoIterator<Item = Option<String>>) -> Vec<Option<String>> {
    let mut v: Vec<Option<String>> = values.into_iter().collect();
    v.sort();
    v
}

/// Some(..) of each payload, sorted.
pub fn sorted_some(values: &[String]) -> Vec<Option<String>> {
    sorted(values.iter().cloned().map(Some))
}

/// Polls `latest_offset` until data appears or `timeout` passes (for systems that publish
/// records asynchronously).
pub async fn wait_for_data(
    source: &mut dyn Source,
    start: &Offset,
    limit: &ReadLimit,
    timeout: Duration,
) -> Result<Offset, tributary_sdk::Error> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let end = source.latest_offset(start, limit).await?;
        if &end != start || std::time::Instant::now() >= deadline {
            return Ok(end);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Fails a case with a formatted message unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::cases::Failure(format!($($fmt)+)));
        }
    };
}
pub(crate) use ensure;
