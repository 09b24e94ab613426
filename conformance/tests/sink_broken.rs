//! The sink suite catches broken sinks: the built-in Parquet sink wrapped with one injected fault
//! at a time must fail the case that checks that behaviour, while the same sink without a fault
//! (bare, and inside the wrapper) passes every case. (The wrapper is fault injection around a
//! real sink, not a stand-in for one.)

#![cfg(feature = "sinks")]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashSet;
use std::path::PathBuf;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_conformance::fixtures::ParquetSinkFixture;
use tributary_conformance::{run_sinks, CaseReport, CaseStatus, Report, RunOptions};
use tributary_sdk::secret::resolve_value;
use tributary_sdk::{
    ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, Options, Result, Sink, SinkFactory,
};
use tributary_sinks::{ParquetSink, ParquetSinkFactory};

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
}

/// The sensitive option the wrapper adds (the Parquet sink itself has none), so the secrets case
/// runs instead of being skipped.
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
    /// The options the Parquet sink understands (the wrapper's token removed; with
    /// `AcceptsUnknownOptions`, everything it does not know removed too).
    fn inner_options(&self, options: &Options) -> Options {
        let known = ParquetSinkFactory.options();
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

impl SinkFactory for Broken {
    fn name(&self) -> &str {
        "parquet"
    }

    fn options(&self) -> Vec<OptionSpec> {
        let mut specs = ParquetSinkFactory.options();
        specs.push(OptionSpec::string(TOKEN, "An API token (unused).").sensitive());
        specs
    }

    fn validate(&self, options: &Options) -> Result<()> {
        ParquetSinkFactory.validate(&self.inner_options(options))
    }

    fn create(&self, options: &Options, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        let inner_options = self.inner_options(options);
        let inner = ParquetSinkFactory.create(&inner_options, context)?;
        let token = match options.get(TOKEN) {
            Some(v) => resolve_value(context.secrets.as_ref(), v)?
                .expose()
                .to_string(),
            None => String::new(),
        };
        let dir = inner_options
            .get("path")
            .map(PathBuf::from)
            .ok_or_else(|| Error::new(ErrorCode::MissingOption, "option 'path' is required"))?;
        Ok(Box::new(BrokenSink {
            inner,
            fault: self.fault,
            claims: self.claims,
            dir,
            token,
            written: HashSet::new(),
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
impl Sink for BrokenSink {
    fn delivery(&self) -> Delivery {
        // Every fault keeps claiming what the Parquet sink claims (exactly-once) unless told.
        self.claims.unwrap_or_else(|| self.inner.delivery())
    }

    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        self.inner.open(schema).await
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        let replay_here = self.written.contains(&batch_id);
        let on_disk = ParquetSink::new(&self.dir).batch_file(batch_id).exists();
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
}

async fn report(connector: &dyn SinkFactory) -> Report {
    let mut fixture = ParquetSinkFixture::new().expect("temp dir");
    run_sinks(connector, &mut fixture, &RunOptions::default()).await
}

fn case<'a>(r: &'a Report, case: &str) -> &'a CaseReport {
    r.cases
        .iter()
        .find(|c| c.name == case)
        .unwrap_or_else(|| panic!("no case {case} in {}", r.to_table()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthy_sink_passes_every_case() {
    let bare = report(&ParquetSinkFactory).await;
    println!("bare:\n{}", bare.to_table());
    assert!(bare.is_success(), "{}", bare.to_table());
    assert_eq!(
        case(&bare, "sink_secrets_hidden").status,
        CaseStatus::Skipped
    );

    // Inside the wrapper (which declares a sensitive token and hides it) every case runs.
    let wrapped = report(&Broken::with(None)).await;
    println!("wrapped:\n{}", wrapped.to_table());
    assert!(wrapped.is_success(), "{}", wrapped.to_table());
    assert_eq!(
        wrapped.passed(),
        tributary_conformance::all_sink_cases().len(),
        "{}",
        wrapped.to_table()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_injected_fault_fails_the_case_that_checks_it() {
    let expectations = [
        (
            Fault::DuplicatesOnReplay,
            "sink_replay_replaces_batch",
            "duplicated",
        ),
        (
            Fault::DedupsOnlyInMemory,
            "sink_replay_after_restart",
            "duplicated",
        ),
        (Fault::DropsLastRow, "sink_writes_every_row", "missing"),
        (Fault::RefusesEmptyWrite, "sink_empty_batch", "empty slice"),
        (
            Fault::AcceptsUnknownOptions,
            "sink_unknown_option_refused",
            "conformanceNoSuchOption",
        ),
        (
            Fault::LeaksSecretInDebug,
            "sink_secrets_hidden",
            "Debug of the sink",
        ),
    ];
    let mut missed = Vec::new();
    for (fault, name, reason) in expectations {
        let r = report(&Broken::with(Some(fault))).await;
        println!("{fault:?}:\n{}", r.to_table());
        let c = case(&r, name);
        let why = c.reason.clone().unwrap_or_default();
        if c.status != CaseStatus::Failed {
            missed.push(format!("{fault:?} did not fail {name} ({:?})", c.status));
        } else if !why.contains(reason) {
            missed.push(format!(
                "{fault:?} failed {name}, but the reason does not mention '{reason}': {why}"
            ));
        }
    }
    assert!(missed.is_empty(), "{missed:#?}");

    // Deduplicating only in memory survives a replay within one instance: the restart case is
    // the one that catches it.
    let r = report(&Broken::with(Some(Fault::DedupsOnlyInMemory))).await;
    assert_eq!(
        case(&r, "sink_replay_replaces_batch").status,
        CaseStatus::Passed,
        "{}",
        r.to_table()
    );
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
