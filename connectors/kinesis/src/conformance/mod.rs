//! The fixture of the Kinesis source for the conformance suite, against kinesis-mock (HTTPS with
//! the test CA, as `scripts/services/kinesis.sh` starts it).
//!
//! A target is a stream with one shard named `<hint>-<process>-<nanos>-<n>`; producing writes
//! records with PutRecord (payload `<stream>-<i>`, partition key `k-<i>`) through plain
//! `aws-sdk-kinesis` calls, never through the connector. Data loss is caused the way
//! kinesis-mock allows (it does not trim by retention): the stream is deleted and recreated under
//! the same name, which the source must detect from the stream's creation time
//! ([`DataLossKind::ShardExpired`], `KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET`). Trimmed
//! records are tested against kinesalite in `tests/data_loss.rs`.
//!
//! [`KinesisFixture::kinesalite`] is the same fixture on kinesalite under libfaketime, which
//! does trim by retention: moving its clock 25 h ahead ages out every record written so far, so
//! it can also age out a committed position while no source runs
//! ([`Capability::ResumeDataLoss`], reported as `DATA_LOSS.START_OFFSET_RESET`). It does not
//! declare `DataLoss`: trimming records already planned loses nothing the source still holds.

use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use async_trait::async_trait;
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::StreamStatus;
use aws_sdk_kinesis::Client;
use std::collections::BTreeMap;
use tributary_conformance::fixture::{
    unsupported, EfoSetup, Fixture, ReadSetup, Starting, Subscription,
};
use tributary_conformance::fixtures::column_text;
use tributary_conformance::{unique_name, Capability};
use tributary_sdk::{DataLossKind, EnvSecretStore, Error, ErrorCode, Options, Result, Secret};

use crate::config::{BaseCredentials, ConnectionSettings};
use crate::error::ApiError;

mod efo; // efo (kinesis-efo helper)
mod sink;
pub use sink::KinesisSinkFixture;

/// The environment variables [`KinesisFixture::from_env`] reads.
pub const ENDPOINT_ENV: &str = "TRIBUTARY_KINESIS_ENDPOINT";
/// The test CA of the HTTPS endpoint.
pub const CA_ENV: &str = "TRIBUTARY_KINESIS_CA";

const ACCESS_KEY: &str = "AKIDCONFORMANCE";
const SECRET_KEY: &str = "conformance-secret-key";
const APPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// kinesalite's endpoint (plain HTTP) for [`KinesisFixture::kinesalite_from_env`].
pub const KINESALITE_ENDPOINT_ENV: &str = "TRIBUTARY_KINESALITE_ENDPOINT";
/// The libfaketime time file kinesalite runs under.
pub const KINESALITE_FAKETIME_ENV: &str = "TRIBUTARY_KINESALITE_FAKETIME_FILE";

/// Fixture for the `kinesis` source against kinesis-mock, or against kinesalite under
/// libfaketime ([`KinesisFixture::kinesalite`]).
pub struct KinesisFixture {
    endpoint: String,
    ca: Option<String>,
    client: Option<Client>,
    produced: BTreeMap<String, u64>,
    /// kinesalite: its fake clock, moved forward by 25 h to age records out.
    clock: Option<FakeClock>,
}

/// kinesalite's libfaketime time file and the hours it is ahead of real time.
#[derive(Debug)]
struct FakeClock {
    file: std::path::PathBuf,
    hours: u32,
}

impl FakeClock {
    /// Moves the clock past the 24 h retention of every record written so far.
    fn pass_retention(&mut self) -> Result<()> {
        self.hours += 25;
        self.write()
    }

    fn write(&self) -> Result<()> {
        std::fs::write(&self.file, format!("+{}h\n", self.hours)).map_err(|e| {
            Error::new(
                ErrorCode::Io,
                format!(
                    "kinesis fixture: cannot write kinesalite's time file '{}'",
                    self.file.display()
                ),
            )
            .with_cause(e)
        })
    }
}

impl std::fmt::Debug for KinesisFixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KinesisFixture")
            .field("endpoint", &self.endpoint)
            .field("streams", &self.produced.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn fixture_error(what: &str, stream: &str, e: ApiError) -> Error {
    Error::new(
        ErrorCode::Connection,
        format!("kinesis fixture: {what} '{stream}' failed: {e}"),
    )
    .with_context("stream", stream)
}

/// A short name for the consumer of a real-time read of `subscription` (its first stream).
fn stream_hint(subscription: &Subscription) -> String {
    let name = match subscription {
        Subscription::Targets(t) => t.first().cloned().unwrap_or_default(),
        Subscription::Pattern(p) => p.clone(),
        Subscription::Assign(a) => a.first().map(|(t, _)| t.clone()).unwrap_or_default(),
    };
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect()
}

impl KinesisFixture {
    /// A fixture on the endpoint (with the CA that verifies it, for https).
    pub fn new(endpoint: &str, ca: Option<&str>) -> Self {
        KinesisFixture {
            endpoint: endpoint.to_string(),
            ca: ca.map(str::to_string),
            client: None,
            produced: BTreeMap::new(),
            clock: None,
        }
    }

    /// A fixture on kinesalite (plain HTTP) running under libfaketime with `faketime_file`:
    /// records age out by moving its clock (retention trimming, which kinesis-mock lacks), so
    /// it declares [`Capability::ResumeDataLoss`]; no EFO, real time or stream ARNs (kinesalite
    /// has none). The clock is shared by the whole server: run its cases one at a time, with
    /// nothing else on that kinesalite.
    pub fn kinesalite(endpoint: &str, faketime_file: &std::path::Path) -> Self {
        let mut f = KinesisFixture::new(endpoint, None);
        f.clock = Some(FakeClock {
            file: faketime_file.to_path_buf(),
            hours: 0,
        });
        f
    }

    /// [`KinesisFixture::kinesalite`] on `TRIBUTARY_KINESALITE_ENDPOINT` and
    /// `TRIBUTARY_KINESALITE_FAKETIME_FILE`.
    pub fn kinesalite_from_env() -> Result<Self> {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| {
                    Error::new(
                        ErrorCode::MissingOption,
                        format!(
                            "the kinesalite fixture needs {name} (scripts/services/kinesis.sh)"
                        ),
                    )
                    .with_context("option", name)
                })
        };
        let endpoint = var(KINESALITE_ENDPOINT_ENV)?;
        let file = var(KINESALITE_FAKETIME_ENV)?;
        let f = KinesisFixture::kinesalite(endpoint.trim(), std::path::Path::new(file.trim()));
        if let Some(c) = &f.clock {
            c.write()?;
        }
        Ok(f)
    }

    /// A fixture on `TRIBUTARY_KINESIS_ENDPOINT` with `TRIBUTARY_KINESIS_CA`.
    pub fn from_env() -> Result<Self> {
        match std::env::var(ENDPOINT_ENV) {
            Ok(e) if !e.trim().is_empty() => Ok(KinesisFixture::new(e.trim(), std::env::var(CA_ENV).ok().as_deref())),
            _ => Err(Error::new(
                ErrorCode::MissingOption,
                format!("the kinesis fixture needs the endpoint in {ENDPOINT_ENV} (scripts/services/kinesis.sh)"),
            )
            .with_context("option", ENDPOINT_ENV)),
        }
    }

    /// The connection options every source of this fixture gets.
    pub fn connection_options(&self) -> Options {
        let mut o = Options::new()
            .with("endpoint", self.endpoint.clone())
            .with("region", "us-east-1")
            .with("awsAccessKey", ACCESS_KEY)
            .with("awsSecretKey", SECRET_KEY);
        if let Some(ca) = &self.ca {
            o.set("tls.truststore.location", ca.clone());
        }
        o
    }

    /// The fixture's own client.
    pub async fn client(&mut self) -> Result<Client> {
        if let Some(c) = &self.client {
            return Ok(c.clone());
        }
        let settings = ConnectionSettings {
            region: Some("us-east-1".into()),
            endpoint: Some(self.endpoint.clone()),
            credentials: BaseCredentials::Static {
                access_key: Secret::new(ACCESS_KEY),
                secret_key: Secret::new(SECRET_KEY),
            },
            assume_role: None,
            ca_file: self.ca.clone().map(Into::into),
        };
        let c = crate::client::build_client(&settings, &EnvSecretStore).await?;
        self.client = Some(c.clone());
        Ok(c)
    }

    async fn create_stream(&mut self, name: &str) -> Result<()> {
        let client = self.client().await?;
        client
            .create_stream()
            .stream_name(name)
            .shard_count(1)
            .send()
            .await
            .map_err(|e| fixture_error("creating stream", name, ApiError::from_sdk(e)))?;
        self.wait_status(name, true).await
    }

    async fn delete_stream(&mut self, name: &str) -> Result<()> {
        let client = self.client().await?;
        client
            .delete_stream()
            .stream_name(name)
            .enforce_consumer_deletion(true)
            .send()
            .await
            .map_err(|e| fixture_error("deleting stream", name, ApiError::from_sdk(e)))?;
        self.wait_status(name, false).await
    }

    /// Waits until the stream is ACTIVE (`active`) or gone.
    async fn wait_status(&mut self, name: &str, active: bool) -> Result<()> {
        let client = self.client().await?;
        let deadline = Instant::now() + APPLY_TIMEOUT;
        loop {
            let r = client
                .describe_stream_summary()
                .stream_name(name)
                .send()
                .await;
            let done = match &r {
                Ok(d) => {
                    active
                        && d.stream_description_summary()
                            .is_some_and(|s| s.stream_status() == &StreamStatus::Active)
                }
                Err(_) => !active,
            };
            if done {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::new(
                    ErrorCode::Timeout,
                    format!(
                        "kinesis fixture: stream '{name}' did not become {}",
                        if active { "ACTIVE" } else { "deleted" }
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[async_trait]
impl Fixture for KinesisFixture {
    fn url_options(&self) -> Vec<(String, String)> {
        vec![(
            "endpoint".into(),
            "https://kinesis.example.invalid:4567".into(),
        )]
    }

    fn name(&self) -> &str {
        "kinesis"
    }

    fn capabilities(&self) -> Vec<Capability> {
        if self.clock.is_some() {
            return vec![
                Capability::SubscribeList,
                Capability::StartingLatest,
                Capability::AppendWhileRunning,
                Capability::ResumeDataLoss(DataLossKind::OffsetOutOfRange),
                Capability::Metadata,
            ];
        }
        vec![
            Capability::SubscribeList,
            Capability::StartingLatest,
            Capability::AppendWhileRunning,
            Capability::DataLoss(DataLossKind::ShardExpired),
            Capability::EfoConsumers,
            Capability::RealTime,
            Capability::Metadata,
        ]
    }

    async fn create_target(&mut self, hint: &str) -> Result<String> {
        let name = unique_name(hint);
        self.create_stream(&name).await?;
        self.produced.insert(name.clone(), 0);
        Ok(name)
    }

    async fn produce(&mut self, target: &str, count: usize) -> Result<Vec<String>> {
        let client = self.client().await?;
        let next = self.produced.entry(target.to_string()).or_default();
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let i = *next;
            *next += 1;
            let payload = format!("{target}-{i}");
            client
                .put_record()
                .stream_name(target)
                .partition_key(format!("k-{i}"))
                .data(Blob::new(payload.as_bytes()))
                .send()
                .await
                .map_err(|e| fixture_error("writing to stream", target, ApiError::from_sdk(e)))?;
            out.push(payload);
        }
        Ok(out)
    }

    /// The partition key is the metadata: `k-<i>`, as [`Fixture::produce`] writes it.
    async fn produce_with_metadata(
        &mut self,
        target: &str,
        count: usize,
    ) -> Result<Vec<(String, String)>> {
        let from = self.produced.get(target).copied().unwrap_or_default();
        let payloads = self.produce(target, count).await?;
        Ok(payloads
            .into_iter()
            .zip(from..)
            .map(|(p, i)| (p, format!("k-{i}")))
            .collect())
    }

    fn metadata(&self, batches: &[RecordBatch]) -> Result<Vec<Option<String>>> {
        column_text(batches, crate::schema::KEY_COLUMN)
    }

    fn source_options(&self, setup: &ReadSetup) -> Result<Options> {
        if setup.decode_mode.is_some() {
            return Err(unsupported(
                "kinesis",
                "set a decoding mode (the source returns raw bytes)",
            ));
        }
        if setup.max_per_trigger.is_some() {
            return Err(unsupported(
                "kinesis",
                "limit records per trigger (no such Kinesis option)",
            ));
        }
        let mut o = self.connection_options();
        match &setup.subscription {
            Subscription::Targets(t) => o.set("streamName", t.join(",")),
            other => return Err(unsupported("kinesis", &format!("subscribe with {other:?}"))),
        };
        o.set(
            "initialPosition",
            match setup.starting {
                Starting::Earliest => "trim_horizon",
                Starting::Latest => "latest",
            },
        );
        o.set("minFetchPeriod", "200ms");
        o.set("maxFetchDuration", "5s");
        if let Some(f) = setup.fail_on_data_loss {
            o.set("failOnDataLoss", f.to_string());
        }
        // Real-time mode streams through an enhanced fan-out consumer (polling has no
        // streaming read): one per stream, removed when the source stops.
        let streaming = EfoSetup {
            consumer_name: format!("{}-stream", stream_hint(&setup.subscription)),
            deregister_on_stop: true,
            prefix: None,
        };
        let efo = setup.efo.as_ref().or(setup.real_time.then_some(&streaming));
        if let Some(e) = efo {
            efo::efo_options(e, &mut o); // efo
        }
        Ok(o)
    }

    fn payloads(&self, batches: &[RecordBatch]) -> Result<Vec<Option<String>>> {
        column_text(batches, crate::schema::PAYLOAD_COLUMN)
    }

    async fn cause_data_loss(&mut self, target: &str, kind: DataLossKind) -> Result<()> {
        if kind != DataLossKind::ShardExpired {
            return Err(unsupported("kinesis", &format!("cause {}", kind.code())));
        }
        if self.clock.is_some() {
            // Trimming planned records loses nothing the source still holds (the planned batch
            // is in memory); a recreated stream is what `fail_on_data_loss_*` need, and
            // kinesalite's second-granular creation time cannot show one made within a second.
            return Err(unsupported(
                "kinesis",
                "cause data loss on kinesalite (the kinesis-mock fixture recreates the stream)",
            ));
        }
        // kinesis-mock has no retention trimming: delete and recreate the stream, so every
        // planned sequence number is gone.
        self.delete_stream(target).await?;
        self.create_stream(target).await?;
        self.produced.insert(target.to_string(), 1000);
        Ok(())
    }

    async fn age_out(&mut self, target: &str) -> Result<()> {
        match self.clock.as_mut() {
            Some(clock) => clock.pass_retention(),
            None => Err(unsupported(
                "kinesis",
                &format!("age out the records of '{target}' (kinesis-mock does not trim by retention; use the kinesalite fixture)"),
            )),
        }
    }

    async fn delete_target(&mut self, target: &str) -> Result<()> {
        self.delete_stream(target).await?;
        self.produced.remove(target);
        Ok(())
    }

    async fn list_efo_consumers(&self, target: &str) -> Result<Vec<String>> {
        let Some(client) = &self.client else {
            return Ok(Vec::new());
        };
        let arn = client
            .describe_stream_summary()
            .stream_name(target)
            .send()
            .await
            .map_err(|e| fixture_error("describing stream", target, ApiError::from_sdk(e)))?
            .stream_description_summary()
            .map(|s| s.stream_arn().to_string())
            .unwrap_or_default();
        let out = client
            .list_stream_consumers()
            .stream_arn(arn)
            .send()
            .await
            .map_err(|e| fixture_error("listing consumers of", target, ApiError::from_sdk(e)))?;
        Ok(out
            .consumers()
            .iter()
            .map(|c| c.consumer_name().to_string())
            .collect())
    }

    async fn describe_efo_consumer(
        &self,
        target: &str,
        name: &str,
    ) -> Result<Option<tributary_conformance::fixture::EfoConsumer>> {
        match &self.client {
            Some(c) => efo::describe(c, target, name).await, // efo
            None => Ok(None),
        }
    }

    fn efo_leak_report(&self, metrics: &tributary_sdk::SourceMetrics) -> Result<Vec<String>> {
        efo::leak_report(metrics) // efo
    }

    async fn teardown(&mut self) -> Result<()> {
        let names: Vec<String> = self.produced.keys().cloned().collect();
        for n in names {
            let _ = self.delete_stream(&n).await;
        }
        self.produced.clear();
        if let Some(clock) = self.clock.as_mut() {
            clock.hours = 0;
            clock.write()?;
        }
        Ok(())
    }
}
