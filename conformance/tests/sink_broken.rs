//! The sink suite catches broken sinks: the example plugin's JSON-lines sink wrapped with one
//! injected fault at a time fails exactly the cases that check that behaviour — the table below
//! states the full set per fault, compared with the run's report — while the same sink without
//! a fault (bare, and inside the wrapper) passes every case. (The wrapper is fault injection
//! around a real sink, not a stand-in for one; it forwards every method, which
//! `clippy::missing_trait_methods` enforces.)

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_conformance::fixtures::JsonLinesSinkFixture;
use tributary_conformance::{run_sinks, CaseReport, CaseStatus, Report, RunOptions};
use tributary_plugin_generator::{JsonLinesSink, JsonLinesSinkFactory};
use tributary_sdk::secret::resolve_value;
use tributary_sdk::{
    ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, Options, PreparedSink, Result, Sink,
    SinkFactory,
};

/// One way of being wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// A batch id written again by the same instance is appended (under a spare id) instead of
    /// replacing the first attempt, while the sink still claims exactly-once.
    DuplicatesOnReplay,
    /// Replays are only recognised within one instance: after a restart, a batch whose file
    /// already exists is appended again.
    DedupsOnlyInMemory,
    /// Every write loses the last row of its last non-empty record batch.
    DropsLastRow,
    /// A write without rows fails.
    RefusesEmptyWrite,
    /// Unknown options are silently dropped instead of refused.
    AcceptsUnknownOptions,
    /// The sensitive token is printed by the sink's `Debug`.
    LeaksSecretInDebug,
    /// The part writer loses every part after the first of a batch.
    PartsLoseAPart,
    /// The streaming write acknowledges records at once and writes them only when the batch
    /// ends: an acknowledged record is not yet durable, so a crash loses it.
    AcksBeforeDurable,
}

/// The full set of cases each fault must fail — no more, no fewer.
const EXPECTED: &[(Fault, &[&str])] = &[
    (
        Fault::DuplicatesOnReplay,
        &[
            "sink_replay_replaces_batch",
            "sink_parts_then_commit_equals_write",
        ],
    ),
    (Fault::DedupsOnlyInMemory, &["sink_replay_after_restart"]),
    (
        Fault::DropsLastRow,
        &[
            "sink_writes_every_row",
            "sink_replay_replaces_batch",
            "sink_replay_after_restart",
            "sink_empty_batch",
            "sink_parts_then_commit_equals_write",
        ],
    ),
    (Fault::RefusesEmptyWrite, &["sink_empty_batch"]),
    (
        Fault::AcceptsUnknownOptions,
        &["sink_unknown_option_refused"],
    ),
    (Fault::LeaksSecretInDebug, &["sink_secrets_hidden"]),
    (
        Fault::PartsLoseAPart,
        &["sink_parts_then_commit_equals_write"],
    ),
    (
        Fault::AcksBeforeDurable,
        &["sink_streaming_acks_out_of_order"],
    ),
];

/// The sensitive option the wrapper adds (the JSON-lines sink itself has none), so the secrets
/// case runs instead of being skipped.
const TOKEN: &str = "apiToken";

/// Where spare batch ids (for the duplicating faults) start.
const SPARE: u64 = 1_000_000;

#[derive(Debug)]
struct Broken {
    fault: Option<Fault>,
    /// The delivery the sink claims (the Parquet sink's own when `None`).
    claims: Option<Delivery>,
}

impl Broken {
    fn with(fault: Option<Fault>) -> Self {
        Broken {
            fault,
            claims: None,
        }
    }
}

impl Broken {
    /// The options the JSON-lines sink gets: the wrapper's token removed (with
    /// `AcceptsUnknownOptions`, everything it does not know removed too).
    fn inner_options(&self, options: &Options) -> Options {
        let known = JsonLinesSinkFactory.options();
        options
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case(TOKEN))
            .filter(|(k, _)| {
                self.fault != Some(Fault::AcceptsUnknownOptions)
                    || known.iter().any(|s| s.name.eq_ignore_ascii_case(k))
            })
            .collect()
    }
}

#[warn(clippy::missing_trait_methods)]
impl SinkFactory for Broken {
    fn name(&self) -> &str {
        JsonLinesSinkFactory.name()
    }

    fn output_modes(&self) -> &'static [tributary_sdk::OutputMode] {
        JsonLinesSinkFactory.output_modes()
    }

    fn options(&self) -> Vec<OptionSpec> {
        let mut specs = JsonLinesSinkFactory.options();
        specs.push(OptionSpec::string(TOKEN, "An API token (unused).").sensitive());
        specs
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSink>> {
        // The wrapper checks its own declarations (the token included) like any connector,
        // unless it is the fault that accepts anything.
        if self.fault != Some(Fault::AcceptsUnknownOptions) {
            OptionSpec::validate_all(&self.options(), options, self.name())?;
        }
        let inner_options = self.inner_options(options);
        let dir = inner_options
            .get("path")
            .map(PathBuf::from)
            .ok_or_else(|| Error::new(ErrorCode::MissingOption, "option 'path' is required"))?;
        Ok(Box::new(BrokenPreparedSink {
            inner: JsonLinesSinkFactory.prepare(&inner_options)?,
            fault: self.fault,
            claims: self.claims,
            dir,
            token: options.get(TOKEN).map(str::to_string),
        }))
    }
}

#[derive(Debug)]
struct BrokenPreparedSink {
    inner: Box<dyn PreparedSink>,
    fault: Option<Fault>,
    claims: Option<Delivery>,
    dir: PathBuf,
    /// The token as given (a secret reference or the value).
    token: Option<String>,
}

#[warn(clippy::missing_trait_methods)]
impl PreparedSink for BrokenPreparedSink {
    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        let token = match &self.token {
            Some(v) => resolve_value(context.secrets.as_ref(), v)?
                .expose()
                .to_string(),
            None => String::new(),
        };
        Ok(Box::new(BrokenSink {
            inner: self.inner.build(context)?,
            fault: self.fault,
            claims: self.claims,
            dir: self.dir,
            token,
            written: HashSet::new(),
            parts: None,
            unacknowledged: Vec::new(),
        }))
    }
}

struct BrokenSink {
    inner: Box<dyn Sink>,
    fault: Option<Fault>,
    claims: Option<Delivery>,
    dir: PathBuf,
    token: String,
    /// Batch ids this instance wrote.
    written: HashSet<u64>,
    /// The part writer's batch and parts (written whole through `write` at commit).
    parts: Option<(u64, Vec<RecordBatch>)>,
    /// With `AcksBeforeDurable`: streamed chunks acknowledged and not written yet.
    unacknowledged: Vec<RecordBatch>,
}

impl std::fmt::Debug for BrokenSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let token = if self.fault == Some(Fault::LeaksSecretInDebug) {
            self.token.as_str()
        } else {
            "***"
        };
        write!(
            f,
            "BrokenSink({:?}, {:?}, token={token})",
            self.fault, self.inner
        )
    }
}

/// `batches` without the last row of the last non-empty record batch.
fn drop_last_row(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    let mut out = batches.to_vec();
    if let Some(i) = out.iter().rposition(|b| b.num_rows() > 0) {
        let b = &out[i];
        out[i] = b.slice(0, b.num_rows() - 1);
    }
    out
}

#[async_trait]
#[warn(clippy::missing_trait_methods)]
impl Sink for BrokenSink {
    fn delivery(&self) -> Delivery {
        // Every fault keeps claiming what the JSON-lines sink claims (exactly-once) unless told.
        self.claims.unwrap_or_else(|| self.inner.delivery())
    }

    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        self.inner.open(schema).await
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        let replay_here = self.written.contains(&batch_id);
        let on_disk = JsonLinesSink::batch_file_in(&self.dir, batch_id).exists();
        self.written.insert(batch_id);
        match self.fault {
            Some(Fault::DuplicatesOnReplay) if replay_here => {
                self.inner.write(SPARE + batch_id, batches).await
            }
            Some(Fault::DedupsOnlyInMemory) if on_disk && !replay_here => {
                self.inner.write(SPARE + batch_id, batches).await
            }
            Some(Fault::DropsLastRow) => self.inner.write(batch_id, &drop_last_row(batches)).await,
            Some(Fault::RefusesEmptyWrite) if batches.iter().all(|b| b.num_rows() == 0) => {
                Err(Error::new(
                    ErrorCode::SinkWrite,
                    "refusing to write a batch without rows",
                ))
            }
            _ => self.inner.write(batch_id, batches).await,
        }
    }

    async fn stop(&mut self) -> Result<()> {
        self.inner.stop().await
    }

    async fn ledger(&mut self) -> Result<Option<tributary_sdk::SinkLedger>> {
        self.inner.ledger().await
    }

    /// A part writer that keeps the parts and commits them through `write` above (so the
    /// whole-batch faults reach it too), losing parts with `PartsLoseAPart`.
    fn as_part_writer(&mut self) -> Option<&mut dyn tributary_sdk::PartWriter> {
        Some(self)
    }

    fn as_stager(&mut self) -> Option<&mut dyn tributary_sdk::PartitionStager> {
        None
    }

    /// The JSON-lines sink's streaming write, acknowledging before the records are written
    /// with `AcksBeforeDurable`.
    fn as_streaming(&mut self) -> Option<&mut dyn tributary_sdk::StreamingSink> {
        self.inner.as_streaming()?;
        Some(self)
    }
}

impl BrokenSink {
    fn inner_streaming(&mut self) -> Result<&mut dyn tributary_sdk::StreamingSink> {
        self.inner.as_streaming().ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "the JSON-lines sink lost its streaming write",
            )
        })
    }
}

#[async_trait]
impl tributary_sdk::StreamingSink for BrokenSink {
    async fn write_records(
        &mut self,
        batch_id: u64,
        batch: &RecordBatch,
    ) -> Result<tributary_sdk::Ack> {
        if self.fault == Some(Fault::AcksBeforeDurable) {
            self.unacknowledged.push(batch.clone());
            return Ok(Box::pin(async { Ok(()) }));
        }
        self.inner_streaming()?.write_records(batch_id, batch).await
    }

    async fn end_batch(&mut self, batch_id: u64) -> Result<()> {
        for batch in std::mem::take(&mut self.unacknowledged) {
            self.inner_streaming()?
                .write_records(batch_id, &batch)
                .await?
                .await?;
        }
        self.inner_streaming()?.end_batch(batch_id).await
    }
}

#[async_trait]
impl tributary_sdk::PartWriter for BrokenSink {
    async fn begin_batch(&mut self, batch_id: u64, _schema: SchemaRef) -> Result<()> {
        self.parts = Some((batch_id, Vec::new()));
        Ok(())
    }

    async fn write_part(&mut self, part: &RecordBatch) -> Result<()> {
        let lose = self.fault == Some(Fault::PartsLoseAPart);
        match &mut self.parts {
            Some((_, parts)) if lose && !parts.is_empty() => Ok(()),
            Some((_, parts)) => {
                parts.push(part.clone());
                Ok(())
            }
            None => Err(Error::new(
                ErrorCode::Internal,
                "write_part before begin_batch",
            )),
        }
    }

    async fn commit_batch(&mut self) -> Result<()> {
        let (batch_id, parts) = self
            .parts
            .take()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "commit_batch before begin_batch"))?;
        Sink::write(self, batch_id, &parts).await
    }
}

async fn report(connector: &dyn SinkFactory) -> Report {
    let mut fixture = JsonLinesSinkFixture::new().expect("temp dir");
    run_sinks(connector, &mut fixture, &RunOptions::default()).await
}

fn case<'a>(r: &'a Report, case: &str) -> &'a CaseReport {
    r.cases
        .iter()
        .find(|c| c.name == case)
        .unwrap_or_else(|| panic!("no case {case} in {}", r.to_table()))
}

fn failed(r: &Report) -> BTreeSet<String> {
    r.cases
        .iter()
        .filter(|c| c.status == CaseStatus::Failed)
        .map(|c| c.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthy_sink_passes_every_case() {
    let bare = report(&JsonLinesSinkFactory).await;
    println!("bare:\n{}", bare.to_table());
    assert!(bare.is_success(), "{}", bare.to_table());
    assert_eq!(
        case(&bare, "sink_secrets_hidden").status,
        CaseStatus::Skipped
    );

    // Inside the wrapper (which declares a sensitive token and hides it) every case runs but
    // the staged write's: the JSON-lines sink has none (the Parquet and Delta fixtures run it).
    let wrapped = report(&Broken::with(None)).await;
    println!("wrapped:\n{}", wrapped.to_table());
    assert!(wrapped.is_success(), "{}", wrapped.to_table());
    assert_eq!(
        case(&wrapped, "sink_staged_commit_exactly_once").status,
        CaseStatus::Skipped
    );
    assert_eq!(
        wrapped.passed(),
        tributary_conformance::all_sink_cases().len() - 1,
        "{}",
        wrapped.to_table()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_injected_fault_fails_exactly_the_cases_that_check_it() {
    let names: BTreeSet<&str> = tributary_conformance::all_sink_cases()
        .iter()
        .map(|c| c.name)
        .collect();
    let mut wrong = Vec::new();
    for (fault, cases) in EXPECTED {
        assert!(
            cases.iter().all(|c| names.contains(c)),
            "{fault:?} names a case that does not exist: {cases:?}"
        );
        let expected: BTreeSet<String> = cases.iter().map(|c| c.to_string()).collect();
        let r = report(&Broken::with(Some(*fault))).await;
        println!("{fault:?}:\n{}", r.to_table());
        let got = failed(&r);
        if got != expected {
            wrong.push(format!(
                "{fault:?}: expected to fail {expected:?}, failed {got:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_least_once_sink_is_skipped_on_replays_but_not_allowed_to_lose_rows() {
    // Duplicating on replay is allowed to a sink that says so: the replay cases are skipped
    // with the reason, and nothing fails.
    let duplicating = report(&Broken {
        fault: Some(Fault::DuplicatesOnReplay),
        claims: Some(Delivery::AtLeastOnce),
    })
    .await;
    println!("{}", duplicating.to_table());
    assert!(duplicating.is_success(), "{}", duplicating.to_table());
    for name in ["sink_replay_replaces_batch", "sink_replay_after_restart"] {
        let c = case(&duplicating, name);
        assert_eq!(c.status, CaseStatus::Skipped, "{}", duplicating.to_table());
        assert!(
            c.reason
                .as_deref()
                .unwrap_or_default()
                .contains("at-least-once"),
            "{}",
            duplicating.to_table()
        );
    }

    // Losing rows is not: the replay cases still check that every row is there.
    let lossy = report(&Broken {
        fault: Some(Fault::DropsLastRow),
        claims: Some(Delivery::AtLeastOnce),
    })
    .await;
    println!("{}", lossy.to_table());
    for name in ["sink_replay_replaces_batch", "sink_replay_after_restart"] {
        assert_eq!(
            case(&lossy, name).status,
            CaseStatus::Failed,
            "{}",
            lossy.to_table()
        );
    }
}
