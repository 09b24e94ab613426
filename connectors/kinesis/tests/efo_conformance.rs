//! The EFO conformance cases catch broken EFO connectors: the Kinesis source wrapped with one
//! injected fault at a time fails exactly the EFO case that checks that behaviour, while the
//! same source without a fault (bare and wrapped) passes all four. (The wrapper is fault
//! injection around the real connector against kinesis-mock; it forwards every method, which
//! `clippy::missing_trait_methods` enforces.) Needs the `conformance` feature.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use tributary_conformance::{CaseStatus, Report, RunOptions};
use tributary_kinesis::conformance::KinesisFixture;
use tributary_kinesis::efo::consumers;
use tributary_kinesis::KinesisSourceFactory;
use tributary_sdk::{
    ConnectorContext, Offset, OptionSpec, Options, PreparedSource, ReadLimit, Result, Source,
    SourceDescription, SourceFactory, SourceIdentity, SourceMetrics, StateReport, StateRequest,
};

/// One way of getting EFO wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// `requireConsumerDeregistration` is ignored: stop leaves the consumer.
    DoesNotDeregister,
    /// Every start registers a new consumer (the old registration of the name is replaced).
    NewConsumerEveryStart,
    /// The leak report is never produced.
    LeakNotReported,
}

const EFO_CASES: [&str; 4] = [
    "efo_consumer_registered_active",
    "efo_consumer_reused_by_name",
    "efo_consumer_deregistered_on_stop",
    "efo_consumer_leak_listed",
];

/// The full set of cases each fault must fail — no more, no fewer.
const EXPECTED: &[(Fault, &[&str])] = &[
    (
        Fault::DoesNotDeregister,
        &["efo_consumer_deregistered_on_stop"],
    ),
    (
        Fault::NewConsumerEveryStart,
        &["efo_consumer_reused_by_name"],
    ),
    (Fault::LeakNotReported, &["efo_consumer_leak_listed"]),
];

#[derive(Debug)]
struct Broken {
    fault: Option<Fault>,
}

#[warn(clippy::missing_trait_methods)]
impl SourceFactory for Broken {
    fn name(&self) -> &str {
        KinesisSourceFactory.name()
    }

    fn options(&self) -> Vec<OptionSpec> {
        KinesisSourceFactory.options()
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSource>> {
        let mut o = options.clone();
        if self.fault == Some(Fault::DoesNotDeregister) {
            o.remove("requireConsumerDeregistration");
        }
        Ok(Box::new(BrokenPrepared {
            inner: KinesisSourceFactory.prepare(&o)?,
            fault: self.fault,
            stream: o.get("streamName").map(str::to_string),
            consumer: o.get("consumerName").map(str::to_string),
        }))
    }

    fn describe_state(&self, request: &StateRequest<'_>) -> Result<Option<StateReport>> {
        KinesisSourceFactory.describe_state(request)
    }

    fn verify_state(&self, request: &StateRequest<'_>) -> Result<()> {
        KinesisSourceFactory.verify_state(request)
    }

    fn stream_binding(&self) -> Option<std::sync::Arc<dyn tributary_sdk::StreamBinding>> {
        SourceFactory::stream_binding(&KinesisSourceFactory)
    }

    fn commands(&self) -> Vec<std::sync::Arc<dyn tributary_sdk::ConnectorCommand>> {
        SourceFactory::commands(&KinesisSourceFactory)
    }
}

#[derive(Debug)]
struct BrokenPrepared {
    inner: Box<dyn PreparedSource>,
    fault: Option<Fault>,
    stream: Option<String>,
    consumer: Option<String>,
}

#[warn(clippy::missing_trait_methods)]
impl PreparedSource for BrokenPrepared {
    fn description(&self) -> &SourceDescription {
        self.inner.description()
    }

    fn schema(&self) -> Result<Option<SchemaRef>> {
        self.inner.schema()
    }

    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        Ok(Box::new(BrokenSource {
            inner: self.inner.build(context)?,
            fault: self.fault,
            stream: self.stream,
            consumer: self.consumer,
        }))
    }
}

#[derive(Debug)]
struct BrokenSource {
    inner: Box<dyn Source>,
    fault: Option<Fault>,
    stream: Option<String>,
    consumer: Option<String>,
}

#[async_trait]
#[warn(clippy::missing_trait_methods)]
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
        if let (Some(Fault::NewConsumerEveryStart), Some(stream), Some(name)) =
            (self.fault, &self.stream, &self.consumer)
        {
            // The bug: the existing registration of the name is replaced by a new one.
            let mut f = KinesisFixture::from_env()?;
            let client = f.client().await?;
            let arn = consumers::stream_arn(&client, &consumers::stream_ref(stream)).await?;
            consumers::deregister(&client, &arn, name, Duration::from_secs(30)).await?;
        }
        self.inner.initial_offset().await
    }

    async fn prepare_available_now(&mut self) -> Result<()> {
        self.inner.prepare_available_now().await
    }

    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        self.inner.latest_offset(start, limit).await
    }

    async fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>> {
        self.inner.read(start, end).await
    }

    async fn read_stream<'a>(
        &'a mut self,
        start: &Offset,
        end: &Offset,
    ) -> Result<tributary_sdk::BatchStream<'a>> {
        self.inner.read_stream(start, end).await
    }

    async fn plan_partitions(
        &mut self,
        start: &Offset,
        end: &Offset,
        parallelism: usize,
    ) -> Result<Option<Vec<tributary_sdk::InputPartition>>> {
        self.inner.plan_partitions(start, end, parallelism).await
    }

    async fn read_partition<'a>(
        &'a mut self,
        partition: &tributary_sdk::InputPartition,
    ) -> Result<tributary_sdk::BatchStream<'a>> {
        self.inner.read_partition(partition).await
    }

    async fn commit(&mut self, end: &Offset) -> Result<()> {
        self.inner.commit(end).await
    }

    fn metrics(&self) -> SourceMetrics {
        let mut m = self.inner.metrics();
        if self.fault == Some(Fault::LeakNotReported) {
            m.remove("efo.leakedConsumers");
        }
        m
    }

    async fn stop(&mut self) -> Result<()> {
        self.inner.stop().await
    }

    fn as_streaming(&mut self) -> Option<&mut dyn tributary_sdk::StreamingSource> {
        self.inner.as_streaming()
    }
}

async fn report(connector: &dyn SourceFactory) -> Option<Report> {
    tributary_skip_log::require_env("TRIBUTARY_KINESIS_ENDPOINT", "scripts/services/kinesis.sh")?;
    let mut fixture = KinesisFixture::from_env().unwrap();
    let options = RunOptions {
        only: EFO_CASES.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let r = tributary_conformance::run(connector, &mut fixture, &options).await;
    tributary_conformance::Fixture::teardown(&mut fixture)
        .await
        .unwrap();
    Some(r)
}

fn with_status(r: &Report, status: CaseStatus) -> BTreeSet<String> {
    r.cases
        .iter()
        .filter(|c| c.status == status)
        .map(|c| c.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_efo_source_passes_bare_and_wrapped() {
    for r in [
        report(&KinesisSourceFactory).await,
        report(&Broken { fault: None }).await,
    ] {
        let Some(r) = r else { return };
        println!("{}", r.to_table());
        assert_eq!(
            with_status(&r, CaseStatus::Passed).len(),
            4,
            "{}",
            r.to_table()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_efo_fault_fails_exactly_the_case_that_checks_it() {
    for (fault, expected) in EXPECTED {
        let Some(r) = report(&Broken {
            fault: Some(*fault),
        })
        .await
        else {
            return;
        };
        println!("{fault:?}\n{}", r.to_table());
        let failed = with_status(&r, CaseStatus::Failed);
        let want: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(failed, want, "{fault:?}: {}", r.to_table());
    }
}
