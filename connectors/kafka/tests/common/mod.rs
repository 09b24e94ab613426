//! Shared helpers of the integration tests: endpoints from the environment (set by
//! `scripts/services/kafka.sh`), topic administration and producing with plain rdkafka, and a
//! small driver that runs a source the way the runtime does (latest_offset, then read).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::message::OwnedHeaders;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use tributary_kafka::KafkaSource;
use tributary_sdk::{ConnectorContext, Offset, Options, ReadLimit, Source};

/// A variable from `kafka.env` written by the service script, for runs that did not source it.
fn from_env_file(name: &str) -> Option<String> {
    let dir = std::env::var("TRIBUTARY_SERVICES_DIR").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/services").to_string()
    });
    let text = std::fs::read_to_string(format!("{dir}/kafka.env")).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.trim().strip_prefix("export ")?.split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// A setting of the service script: the environment, or its `kafka.env` file.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| from_env_file(name))
}

/// An endpoint set by the service script. Missing: a recorded skip (`None`), a failure under CI.
pub fn env(name: &str) -> Option<String> {
    var(name).or_else(|| tributary_skip_log::require_env(name, "scripts/services/kafka.sh"))
}

/// A name unique to this test run (the conformance suite's, shared by every fixture).
pub fn unique(prefix: &str) -> String {
    tributary_conformance::unique_name(prefix)
}

/// A plain client configuration for the broker at `bootstrap`, plus extra properties.
pub fn client_config(bootstrap: &str, extra: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c
}

pub async fn create_topic(
    cfg: &ClientConfig,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) {
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    let mut t = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        t = t.set(k, v);
    }
    let res = admin
        .create_topics(
            &[t],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .unwrap();
    for r in res {
        r.unwrap();
    }
}

pub async fn delete_topic(cfg: &ClientConfig, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    let res = admin
        .delete_topics(
            &[topic],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .unwrap();
    for r in res {
        r.unwrap();
    }
}

/// One record to produce.
#[derive(Debug, Clone, Default)]
pub struct Rec {
    pub partition: Option<i32>,
    pub key: Option<String>,
    pub value: Option<String>,
    pub timestamp: Option<i64>,
    pub headers: Vec<(String, Option<String>)>,
}

impl Rec {
    pub fn new(partition: i32, value: impl Into<String>) -> Rec {
        let value = value.into();
        Rec {
            partition: Some(partition),
            key: Some(format!("k-{value}")),
            value: Some(value),
            ..Default::default()
        }
    }
}

/// Produces records and waits for every acknowledgement.
pub async fn produce(cfg: &ClientConfig, topic: &str, recs: &[Rec]) {
    let producer: FutureProducer = cfg.clone().set("linger.ms", "5").create().unwrap();
    let mut futs = Vec::new();
    for r in recs {
        let mut fr: FutureRecord<'_, str, str> = FutureRecord::to(topic);
        if let Some(p) = r.partition {
            fr = fr.partition(p);
        }
        if let Some(k) = &r.key {
            fr = fr.key(k.as_str());
        }
        if let Some(v) = &r.value {
            fr = fr.payload(v.as_str());
        }
        if let Some(ts) = r.timestamp {
            fr = fr.timestamp(ts);
        }
        if !r.headers.is_empty() {
            let mut h = OwnedHeaders::new();
            for (k, v) in &r.headers {
                h = h.insert(rdkafka::message::Header {
                    key: k,
                    value: v.as_deref(),
                });
            }
            fr = fr.headers(h);
        }
        futs.push(producer.send_result(fr).map_err(|(e, _)| e).unwrap());
    }
    for f in futs {
        f.await.unwrap().map_err(|(e, _)| e).unwrap();
    }
}

/// Source options for the plain broker with test-friendly timeouts.
pub fn opts(bootstrap: &str, pairs: &[(&str, &str)]) -> Options {
    let mut o: Options = pairs.iter().copied().collect();
    o.set("kafka.bootstrap.servers", bootstrap);
    if !o.contains("fetchOffset.timeoutMs") {
        o.set("fetchOffset.timeoutMs", "5000");
    }
    if !o.contains("kafkaConsumer.pollTimeoutMs") {
        o.set("kafkaConsumer.pollTimeoutMs", "20000");
    }
    o
}

/// Resolves `{{secrets/env/NAME}}` from the environment or the service script's `kafka.env`.
#[derive(Debug)]
pub struct TestSecrets;

impl tributary_sdk::SecretStore for TestSecrets {
    fn resolve(
        &self,
        r: &tributary_sdk::SecretRef,
    ) -> tributary_sdk::Result<tributary_sdk::Secret> {
        match (r.scope.as_str(), var(&r.key)) {
            ("env", Some(v)) => Ok(tributary_sdk::Secret::new(v)),
            _ => tributary_sdk::EnvSecretStore.resolve(r),
        }
    }
}

pub fn context() -> ConnectorContext {
    ConnectorContext {
        secrets: std::sync::Arc::new(TestSecrets),
        ..Default::default()
    }
}

pub fn source(options: &Options) -> KafkaSource {
    KafkaSource::new(options, &context()).unwrap()
}

/// A source subscribed to `topic` from the earliest offsets (`fetchOffset.timeoutMs` 10 s),
/// with `extra` options on top.
pub fn earliest_source(bootstrap: &str, topic: &str, extra: &[(&str, &str)]) -> KafkaSource {
    let mut o: Options = [
        ("kafka.bootstrap.servers", bootstrap),
        ("subscribe", topic),
        ("startingOffsets", "earliest"),
        ("fetchOffset.timeoutMs", "10000"),
    ]
    .into_iter()
    .collect();
    for (k, v) in extra {
        o.set(*k, *v);
    }
    source(&o)
}

/// One micro-batch as the runtime runs it: returns the new end and the rows.
pub async fn batch(src: &mut KafkaSource, start: &Offset, limit: &ReadLimit) -> (Offset, Vec<Row>) {
    let end = src.latest_offset(start, limit).await.unwrap();
    if &end == start {
        return (end, Vec::new());
    }
    let batches = src.read(start, &end).await.unwrap();
    (end, rows(&batches))
}

/// Runs batches until no new data arrives.
pub async fn drain(
    src: &mut KafkaSource,
    mut start: Offset,
    limit: &ReadLimit,
) -> (Offset, Vec<Row>) {
    let mut all = Vec::new();
    for _ in 0..1000 {
        let (end, rows) = batch(src, &start, limit).await;
        if end == start {
            break;
        }
        all.extend(rows);
        start = end;
    }
    (start, all)
}

/// A decoded Kafka row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<String>,
    pub value: Option<String>,
    pub timestamp: Option<i64>,
    pub headers: Option<Vec<(String, Option<String>)>>,
}

/// Rows by topic and partition, each partition's rows in the order they were read: the order
/// the source contract fixes (how partitions interleave is free).
pub fn by_partition(rows: &[Row]) -> std::collections::BTreeMap<(String, i32), Vec<Row>> {
    let mut out: std::collections::BTreeMap<(String, i32), Vec<Row>> = Default::default();
    for r in rows {
        out.entry((r.topic.clone(), r.partition))
            .or_default()
            .push(r.clone());
    }
    out
}

pub fn rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let key = b.column_by_name("key").unwrap().as_binary::<i32>();
        let value = b.column_by_name("value").unwrap().as_binary::<i32>();
        let topic = b.column_by_name("topic").unwrap().as_string::<i32>();
        let partition = b
            .column_by_name("partition")
            .unwrap()
            .as_primitive::<Int32Type>();
        let offset = b
            .column_by_name("offset")
            .unwrap()
            .as_primitive::<Int64Type>();
        let ts = b
            .column_by_name("timestamp")
            .unwrap()
            .as_primitive::<arrow_array::types::TimestampMillisecondType>();
        let headers = b.column_by_name("headers").map(|h| h.as_list::<i32>());
        let s = |a: &arrow_array::BinaryArray, i: usize| {
            a.is_valid(i)
                .then(|| String::from_utf8_lossy(a.value(i)).to_string())
        };
        for i in 0..b.num_rows() {
            let hs = headers.and_then(|h| {
                h.is_valid(i).then(|| {
                    let v = h.value(i);
                    let st = v.as_struct();
                    let hk = st.column(0).as_string::<i32>();
                    let hv = st.column(1).as_binary::<i32>();
                    (0..st.len())
                        .map(|j| (hk.value(j).to_string(), s(hv, j)))
                        .collect()
                })
            });
            out.push(Row {
                topic: topic.value(i).to_string(),
                partition: partition.value(i),
                offset: offset.value(i),
                key: s(key, i),
                value: s(value, i),
                timestamp: ts.is_valid(i).then(|| ts.value(i)),
                headers: hs,
            });
        }
    }
    out
}

pub fn values(rows: &[Row]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().filter_map(|r| r.value.clone()).collect();
    v.sort();
    v
}
