//! The suite catches broken connectors: the example generator wrapped with one injected fault
//! at a time must fail the case that checks that behaviour, while the same generator without a
//! fault passes every case that applies to it. (The wrapper is fault injection around a real
//! connector, not a stand-in for one.)

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_conformance::fixtures::GeneratorFixture;
use tributary_conformance::{CaseStatus, Report, RunOptions};
use tributary_plugin_generator::GeneratorSourceFactory;
use tributary_sdk::{
    ConnectorContext, Offset, OptionSpec, Options, ReadLimit, Result, Source, SourceFactory,
    SourceIdentity, SourceMetrics,
};

/// One way of being wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// `read` loses the last row of a range.
    DropsLastRow,
    /// `latest_offset` ignores the read limit.
    IgnoresReadLimit,
    /// A second read of the same range returns other rows.
    UnstableReads,
    /// `startingOffsets = latest` is ignored.
    StartsAtEarliestAlways,
    /// Unknown options are accepted.
    AcceptsUnknownOptions,
    /// A sensitive option is printed by the source's `Debug`.
    LeaksSecretInDebug,
}

/// The sensitive option the wrapper adds (the generator itself has none).
const TOKEN: &str = "apiToken";

#[derive(Debug)]
struct Broken {
    inner: GeneratorSourceFactory,
    fault: Fault,
}

impl Broken {
    /// The options the generator understands (the wrapper's own token removed).
    fn inner_options(&self, options: &Options) -> Options {
        let mut o = options.clone();
        o.remove(TOKEN);
        if self.fault == Fault::AcceptsUnknownOptions {
            o = Options::from_iter_pairs(
                o.iter()
                    .filter(|(k, _)| self.inner.options().iter().any(|s| s.name == *k)),
            );
        }
        if self.fault == Fault::StartsAtEarliestAlways {
            o.remove("startingOffsets");
        }
        o
    }
}

trait FromPairs {
    fn from_iter_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Options;
}

impl FromPairs for Options {
    fn from_iter_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Options {
        let mut o = Options::new();
        for (k, v) in pairs {
            o.set(k, v);
        }
        o
    }
}

impl SourceFactory for Broken {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn options(&self) -> Vec<OptionSpec> {
        let mut specs = self.inner.options();
        if self.fault == Fault::LeaksSecretInDebug {
            specs.push(OptionSpec::string(TOKEN, "An API token.").sensitive());
        }
        specs
    }

    fn validate(&self, options: &Options) -> Result<()> {
        self.inner.validate(&self.inner_options(options))
    }

    fn create(&self, options: &Options, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        let inner = self.inner.create(&self.inner_options(options), context)?;
        let printed = if self.fault == Fault::LeaksSecretInDebug {
            options.get(TOKEN).unwrap_or_default().to_string()
        } else {
            String::new()
        };
        Ok(Box::new(BrokenSource {
            inner,
            fault: self.fault,
            printed,
            reads: HashMap::new(),
        }))
    }
}

struct BrokenSource {
    inner: Box<dyn Source>,
    fault: Fault,
    /// What `Debug` shows (the token, for the leaking fault).
    printed: String,
    /// Reads per range, for the unstable fault.
    reads: HashMap<String, usize>,
}

impl std::fmt::Debug for BrokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BrokenSource({:?}, token={})", self.fault, self.printed)
    }
}

/// `batches` without their last row.
fn drop_last_row(mut batches: Vec<RecordBatch>) -> Vec<RecordBatch> {
    if let Some(i) = batches.iter().rposition(|b| b.num_rows() > 0) {
        let b = &batches[i];
        batches[i] = b.slice(0, b.num_rows() - 1);
    }
    batches
}

#[async_trait]
impl Source for BrokenSource {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
    fn identity(&self) -> SourceIdentity {
        self.inner.identity()
    }
    fn default_read_limit(&self) -> ReadLimit {
        self.inner.default_read_limit()
    }
    async fn initial_offset(&mut self) -> Result<Offset> {
        self.inner.initial_offset().await
    }
    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        let limit = if self.fault == Fault::IgnoresReadLimit {
            &ReadLimit::All
        } else {
            limit
        };
        self.inner.latest_offset(start, limit).await
    }
    async fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>> {
        let batches = self.inner.read(start, end).await?;
        let n = self.reads.entry(format!("{start:?}..{end:?}")).or_default();
        *n += 1;
        Ok(match self.fault {
            Fault::DropsLastRow => drop_last_row(batches),
            Fault::UnstableReads if *n > 1 => drop_last_row(batches),
            _ => batches,
        })
    }
    async fn commit(&mut self, end: &Offset) -> Result<()> {
        self.inner.commit(end).await
    }
    fn metrics(&self) -> SourceMetrics {
        self.inner.metrics()
    }
    async fn stop(&mut self) -> Result<()> {
        self.inner.stop().await
    }
}

async fn report(connector: &dyn SourceFactory) -> Report {
    let mut fixture = GeneratorFixture::new(2);
    tributary_conformance::run(connector, &mut fixture, &RunOptions::default()).await
}

fn status(r: &Report, case: &str) -> CaseStatus {
    r.cases
        .iter()
        .find(|c| c.name == case)
        .unwrap_or_else(|| panic!("no case {case} in {}", r.to_table()))
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_injected_fault_fails_the_case_that_checks_it() {
    let healthy = report(&GeneratorSourceFactory).await;
    assert!(healthy.is_success(), "{}", healthy.to_table());

    let expectations = [
        (Fault::DropsLastRow, "starting_earliest"),
        (Fault::IgnoresReadLimit, "rate_limit_honoured"),
        (Fault::UnstableReads, "read_range_determinism"),
        (Fault::StartsAtEarliestAlways, "starting_latest"),
        (Fault::AcceptsUnknownOptions, "unknown_option_refused"),
        (Fault::LeaksSecretInDebug, "secrets_hidden"),
    ];
    let mut missed = Vec::new();
    for (fault, case) in expectations {
        let broken = Broken {
            inner: GeneratorSourceFactory,
            fault,
        };
        let r = report(&broken).await;
        println!("{fault:?}:\n{}", r.to_table());
        if status(&r, case) != CaseStatus::Failed {
            missed.push(format!("{fault:?} did not fail {case}"));
        }
    }
    assert!(missed.is_empty(), "{missed:?}");
}
