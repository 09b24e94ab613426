//! The sink fixture of the Kinesis sink, against a real Kinesis-compatible server (kinesis-mock).
//!
//! A target is a new one-shard stream. The sink writes a `data` column with a partition key per
//! row, so each test row is given to it as its JSON text ([`rows_as_json`]) with a partition key
//! derived from the row number; reading back runs GetRecords over every shard from
//! `TRIM_HORIZON` until the shard is caught up: the rows the sink wrote are the data found.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use aws_sdk_kinesis::types::{ShardIteratorType, StreamStatus};
use aws_sdk_kinesis::Client;
use tributary_conformance::sink::{rows_as_json, SinkFixture};
use tributary_sdk::{EnvSecretStore, Error, ErrorCode, Options, Result, Secret};

use crate::config::{BaseCredentials, ConnectionSettings};

/// How long creating a stream or reading one back may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Fixture for the `kinesis` sink.
#[derive(Debug)]
pub struct KinesisSinkFixture {
    endpoint: String,
    ca: Option<String>,
    region: String,
    client: Option<Client>,
    created: Vec<String>,
}

fn fixture_error<E, R>(what: &str, stream: &str, e: aws_sdk_kinesis::error::SdkError<E, R>) -> Error
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    let text = aws_sdk_kinesis::error::DisplayErrorContext(&e).to_string();
    Error::new(
        ErrorCode::Connection,
        format!("kinesis sink fixture: {what} '{stream}': {text}"),
    )
    .with_context("stream", stream)
}

fn timeout_error(what: &str, stream: &str) -> Error {
    Error::new(
        ErrorCode::Timeout,
        format!("kinesis sink fixture: {what} '{stream}'"),
    )
    .with_context("stream", stream)
}

impl KinesisSinkFixture {
    /// A fixture on `endpoint` (an `https://` one verified with the PEM CA at `ca`).
    pub fn new(endpoint: &str, ca: Option<&str>, region: &str) -> Self {
        KinesisSinkFixture {
            endpoint: endpoint.to_string(),
            ca: ca.map(str::to_string),
            region: region.to_string(),
            client: None,
            created: Vec::new(),
        }
    }

    /// A fixture on `TRIBUTARY_KINESIS_ENDPOINT` / `TRIBUTARY_KINESIS_CA` /
    /// `TRIBUTARY_KINESIS_REGION` (written by `scripts/services/kinesis.sh`).
    pub fn from_env() -> Result<Self> {
        let endpoint = std::env::var("TRIBUTARY_KINESIS_ENDPOINT").map_err(|_| {
            Error::new(
                ErrorCode::MissingOption,
                "TRIBUTARY_KINESIS_ENDPOINT is not set (run scripts/services/kinesis.sh start)",
            )
        })?;
        let ca = std::env::var("TRIBUTARY_KINESIS_CA").ok();
        let region =
            std::env::var("TRIBUTARY_KINESIS_REGION").unwrap_or_else(|_| "us-east-1".into());
        Ok(Self::new(&endpoint, ca.as_deref(), &region))
    }

    fn settings(&self) -> ConnectionSettings {
        ConnectionSettings {
            region: Some(self.region.clone()),
            endpoint: Some(self.endpoint.clone()),
            credentials: BaseCredentials::Static {
                access_key: Secret::new("AKIDCONFORMANCE"),
                secret_key: Secret::new("conformance-secret"),
            },
            assume_role: None,
            ca_file: self
                .ca
                .clone()
                .filter(|_| self.endpoint.starts_with("https://"))
                .map(Into::into),
        }
    }

    async fn client(&mut self) -> Result<Client> {
        if let Some(c) = &self.client {
            return Ok(c.clone());
        }
        let c = crate::client::build_client(&self.settings(), &EnvSecretStore).await?;
        self.client = Some(c.clone());
        Ok(c)
    }
}

/// Every record's data of every shard of `stream` as text, from the oldest.
async fn read_stream(client: &Client, stream: &str) -> Result<Vec<String>> {
    let shards = client
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .map_err(|e| fixture_error("cannot list the shards of", stream, e))?;
    let deadline = Instant::now() + TIMEOUT;
    let mut out = Vec::new();
    for s in shards.shards() {
        let mut it = client
            .get_shard_iterator()
            .stream_name(stream)
            .shard_id(s.shard_id())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .map_err(|e| fixture_error("cannot get an iterator of", stream, e))?
            .shard_iterator()
            .map(str::to_string);
        while let Some(i) = it {
            if Instant::now() > deadline {
                return Err(timeout_error("timed out after 30 s reading", stream));
            }
            let page = client
                .get_records()
                .shard_iterator(&i)
                .send()
                .await
                .map_err(|e| fixture_error("cannot read", stream, e))?;
            for r in page.records() {
                out.push(String::from_utf8_lossy(r.data().as_ref()).into_owned());
            }
            if page.records().is_empty() && page.millis_behind_latest().unwrap_or(0) == 0 {
                break;
            }
            it = page.next_shard_iterator().map(str::to_string);
        }
    }
    Ok(out)
}

#[async_trait]
impl SinkFixture for KinesisSinkFixture {
    fn name(&self) -> &str {
        "kinesis"
    }

    async fn create_target(&mut self, hint: &str) -> Result<String> {
        let client = self.client().await?;
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() % 1_000_000_000)
            .unwrap_or_default();
        let hint: String = hint
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let name = format!(
            "sink-{hint}-{}-{ms}-{}",
            std::process::id(),
            self.created.len()
        );
        client
            .create_stream()
            .stream_name(&name)
            .shard_count(1)
            .send()
            .await
            .map_err(|e| fixture_error("cannot create the stream", &name, e))?;
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let d = client
                .describe_stream_summary()
                .stream_name(&name)
                .send()
                .await;
            if let Ok(d) = d {
                if d.stream_description_summary().map(|s| s.stream_status())
                    == Some(&StreamStatus::Active)
                {
                    break;
                }
            }
            if Instant::now() > deadline {
                return Err(timeout_error("stream not ACTIVE after 30 s:", &name));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.created.push(name.clone());
        Ok(name)
    }

    fn sink_options(&self, target: &str) -> Result<Options> {
        let mut o = Options::new()
            .with("streamName", target)
            .with("endpoint", &self.endpoint)
            .with("region", &self.region)
            .with("awsAccessKey", "AKIDCONFORMANCE")
            .with("awsSecretKey", "conformance-secret");
        if let Some(ca) = self.settings().ca_file {
            o.set("tls.truststore.location", ca.display().to_string());
        }
        Ok(o)
    }

    fn input_schema(&self, _rows_schema: SchemaRef) -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("partitionKey", DataType::Utf8, false),
            Field::new("data", DataType::Utf8, false),
        ]))
    }

    fn input(&self, rows: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
        let schema = self.input_schema(Arc::new(Schema::empty()));
        rows.iter()
            .map(|b| {
                let json = rows_as_json(std::slice::from_ref(b))?;
                let keys: ArrayRef = Arc::new(StringArray::from(
                    (0..json.len())
                        .map(|i| format!("k{}", i % 16))
                        .collect::<Vec<_>>(),
                ));
                let data: ArrayRef = Arc::new(StringArray::from(json));
                Ok(RecordBatch::try_new(schema.clone(), vec![keys, data])?)
            })
            .collect()
    }

    async fn read_back(&self, target: &str) -> Result<Vec<String>> {
        let client = match &self.client {
            Some(c) => c.clone(),
            None => crate::client::build_client(&self.settings(), &EnvSecretStore).await?,
        };
        read_stream(&client, target).await
    }

    async fn teardown(&mut self) -> Result<()> {
        if let Some(client) = self.client.clone() {
            for name in std::mem::take(&mut self.created) {
                let _ = client.delete_stream().stream_name(&name).send().await;
            }
        }
        Ok(())
    }
}
