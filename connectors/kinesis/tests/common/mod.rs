//! Helpers shared by the integration tests: the kinesis-mock / kinesalite endpoints from
//! `scripts/services/kinesis.sh`, a raw `aws-sdk-kinesis` client for setting up streams, and a
//! driver that plans and reads batches like the runtime does.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::{Array, BinaryArray, RecordBatch, StringArray};
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::StreamStatus;
use aws_sdk_kinesis::Client;
use tributary_kinesis::config::{BaseCredentials, ConnectionSettings};
use tributary_sdk::{
    ConnectorContext, EnvSecretStore, Offset, Options, ReadLimit, Secret, Source, SourceFactoryExt,
};

/// Which server.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Server {
    /// kinesis-mock over HTTPS with the test CA.
    Mock,
    /// kinesalite under libfaketime (plain HTTP).
    Lite,
}

fn var(server: Server) -> &'static str {
    match server {
        Server::Mock => "TRIBUTARY_KINESIS_ENDPOINT",
        Server::Lite => "TRIBUTARY_KINESALITE_ENDPOINT",
    }
}

/// False (and the skip recorded) when `scripts/services/kinesis.sh` has not run.
pub fn available(server: Server) -> bool {
    tributary_skip_log::require_env(var(server), "scripts/services/kinesis.sh").is_some()
}

pub fn endpoint(server: Server) -> String {
    std::env::var(var(server)).expect("checked by available()")
}

pub fn ca() -> String {
    std::env::var("TRIBUTARY_KINESIS_CA").expect("written by kinesis.sh")
}

/// Connection options for the source/sink.
pub fn connection_options(server: Server) -> Options {
    let mut o = Options::new()
        .with("endpoint", endpoint(server))
        .with("region", "us-east-1")
        .with("awsAccessKey", "AKIDTEST")
        .with("awsSecretKey", "test-secret");
    if server == Server::Mock {
        o.set("tls.truststore.location", ca());
    }
    o
}

/// A raw SDK client for setup.
pub async fn raw_client(server: Server) -> Client {
    let settings = ConnectionSettings {
        region: Some("us-east-1".into()),
        endpoint: Some(endpoint(server)),
        credentials: BaseCredentials::Static {
            access_key: Secret::new("AKIDTEST"),
            secret_key: Secret::new("test-secret"),
        },
        assume_role: None,
        ca_file: (server == Server::Mock).then(|| ca().into()),
    };
    tributary_kinesis::build_client(&settings, &EnvSecretStore)
        .await
        .unwrap()
}

/// A name unique to this test run (the conformance suite's, shared by every fixture).
pub fn unique(hint: &str) -> String {
    tributary_conformance::unique_name(hint)
}

/// Splits the stream's first shard at the middle of the hash key range and waits until the
/// stream is active again (the parent closed, two children open); returns the parent's id.
pub async fn split_first_shard(client: &Client, stream: &str) -> String {
    let shards = client
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .unwrap();
    let parent = shards.shards()[0].shard_id().to_string();
    client
        .split_shard()
        .stream_name(stream)
        .shard_to_split(&parent)
        .new_starting_hash_key("170141183460469231731687303715884105728")
        .send()
        .await
        .unwrap();
    wait_active(client, stream).await;
    parent
}

pub async fn wait_active(client: &Client, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let d = client
            .describe_stream_summary()
            .stream_name(name)
            .send()
            .await;
        if let Ok(d) = d {
            let s = d.stream_description_summary().unwrap();
            if s.stream_status() == &StreamStatus::Active {
                return;
            }
        }
        assert!(Instant::now() < deadline, "stream {name} not ACTIVE");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn create_stream(client: &Client, hint: &str, shards: i32) -> String {
    let name = unique(hint);
    client
        .create_stream()
        .stream_name(&name)
        .shard_count(shards)
        .send()
        .await
        .unwrap();
    wait_active(client, &name).await;
    name
}

/// Puts `values` one by one (order kept per key); partition key = `key`.
pub async fn put(client: &Client, stream: &str, key: &str, values: &[String]) {
    for v in values {
        client
            .put_record()
            .stream_name(stream)
            .partition_key(key)
            .data(Blob::new(v.as_bytes()))
            .send()
            .await
            .unwrap();
    }
}

pub fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

pub fn source_options(server: Server, stream: &str, extra: &[(&str, &str)]) -> Options {
    let mut o = connection_options(server)
        .with("streamName", stream)
        .with("initialPosition", "trim_horizon");
    for (k, v) in extra {
        o.set(*k, *v);
    }
    o
}

pub fn source(options: &Options) -> Box<dyn Source> {
    tributary_kinesis::KinesisSourceFactory
        .create(options, &ConnectorContext::default())
        .unwrap()
}

/// (data, partitionKey, shardId) of every row.
pub fn rows(batches: &[RecordBatch]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for b in batches {
        let data = b
            .column_by_name("data")
            .unwrap()
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        let key = b
            .column_by_name("partitionKey")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let shard = b
            .column_by_name("shardId")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        for i in 0..b.num_rows() {
            out.push((
                String::from_utf8_lossy(data.value(i)).into_owned(),
                key.value(i).to_string(),
                shard.value(i).to_string(),
            ));
        }
        assert_eq!(data.null_count(), 0);
    }
    out
}

pub fn data(batches: &[RecordBatch]) -> Vec<String> {
    rows(batches).into_iter().map(|r| r.0).collect()
}

/// Plans and reads batches until `want` rows arrived or `timeout`; returns the rows and the end.
pub async fn drain(
    source: &mut dyn Source,
    mut at: Offset,
    want: usize,
    timeout: Duration,
) -> (Vec<RecordBatch>, Offset) {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    let mut n = 0;
    while n < want {
        let end = source.latest_offset(&at, &ReadLimit::All).await.unwrap();
        if end != at {
            let b = source.read(&at, &end).await.unwrap();
            n += b.iter().map(|b| b.num_rows()).sum::<usize>();
            out.extend(b);
            source.commit(&end).await.unwrap();
            at = end;
        } else {
            assert!(
                Instant::now() < deadline,
                "only {n} of {want} rows within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    (out, at)
}

/// Log output captured in memory: tracing's fmt subscriber writes here.
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures this thread's logs at `level` and above (no colours) until the guard drops.
pub fn capture_logs(level: tracing::Level) -> (Captured, tracing::subscriber::DefaultGuard) {
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(level)
        .finish();
    (log, tracing::subscriber::set_default(subscriber))
}
