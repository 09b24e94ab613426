//! Helpers of the data-loss and offset-gap tests: librdkafka's in-process mock cluster (with
//! round-trip delays and request tracking through rdkafka's raw bindings), producing with plain
//! rdkafka, and a driver that builds the source through the public factory API
//! (`SourceFactoryExt::create`) and runs it the way the runtime does (latest_offset, then read).
//!
//! The mock cluster keeps at most 5 MB (or 100 000 batches) per partition and drops the oldest
//! batches beyond that, moving the partition's earliest offset: a deterministic, size-based
//! retention that the tests use to lose records on purpose.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod raw_produce;

use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use rdkafka::bindings as rdsys;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{
    BaseProducer, DefaultProducerContext, FutureProducer, FutureRecord, Producer,
};
use rdkafka::ClientConfig;
use tributary_kafka::KafkaSourceFactory;
use tributary_sdk::{ConnectorContext, Offset, Options, ReadLimit, Source, SourceFactoryExt};

/// The Fetch API key, for [`Mock::requests`].
pub const FETCH: i16 = 1;

/// Bytes of a "big" record: five fit in the mock's 5 MB per partition, six do not.
pub const BIG: usize = 900_000;

/// A one-broker mock cluster (broker id 1), owned by an idle client.
pub struct Mock {
    owner: BaseProducer,
    pub bootstrap: String,
}

impl Mock {
    pub fn new() -> Mock {
        let owner: BaseProducer = ClientConfig::new()
            .set("test.mock.num.brokers", "1")
            .create()
            .unwrap();
        let bootstrap = owner.client().mock_cluster().unwrap().bootstrap_servers();
        Mock { owner, bootstrap }
    }

    fn cluster(&self) -> MockCluster<'_, DefaultProducerContext> {
        self.owner.client().mock_cluster().unwrap()
    }

    pub fn create_topic(&self, topic: &str, partitions: i32) {
        self.cluster().create_topic(topic, partitions, 1).unwrap();
    }

    /// Stops answering requests of `api_key` with errors.
    pub fn clear_request_errors(&self, api_key: rdkafka::types::RDKafkaApiKey) {
        self.cluster().clear_request_errors(api_key);
    }

    /// Answers the next `n` requests of `api_key` with `error`.
    pub fn refuse(
        &self,
        api_key: rdkafka::types::RDKafkaApiKey,
        error: rdkafka::types::RDKafkaRespErr,
        n: usize,
    ) {
        self.cluster().request_errors(api_key, &vec![error; n]);
    }

    /// Delays every response of the broker by `ms` (requests are still handled on arrival).
    pub fn set_rtt(&self, ms: u64) {
        self.cluster()
            .broker_round_trip_time(1, Duration::from_millis(ms))
            .unwrap();
    }

    fn raw(&self) -> *mut rdsys::rd_kafka_mock_cluster_t {
        // SAFETY: the owner client lives as long as `self`; the handle is borrowed, not freed.
        unsafe { rdsys::rd_kafka_handle_mock_cluster(self.owner.client().native_ptr()) }
    }

    /// Starts (or restarts from zero) recording the requests the broker receives.
    pub fn track_requests(&self) {
        // SAFETY: a valid mock cluster handle.
        unsafe { rdsys::rd_kafka_mock_start_request_tracking(self.raw()) }
    }

    /// Requests of API `api_key` received since [`Mock::track_requests`].
    pub fn requests(&self, api_key: i16) -> usize {
        let mut n = 0usize;
        // SAFETY: the array and its `n` copies are owned by us and freed once.
        unsafe {
            let reqs = rdsys::rd_kafka_mock_get_requests(self.raw(), &mut n);
            if reqs.is_null() {
                return 0;
            }
            let count = (0..n)
                .filter(|i| rdsys::rd_kafka_mock_request_api_key(*reqs.add(*i)) == api_key)
                .count();
            rdsys::rd_kafka_mock_request_destroy_array(reqs, n);
            count
        }
    }

    /// A producer that sends every record as soon as it is given (one batch per record when
    /// records are awaited one by one).
    pub fn producer(&self) -> FutureProducer {
        ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("linger.ms", "0")
            .set("message.max.bytes", "2000000")
            .create()
            .unwrap()
    }

    /// (earliest, latest) of a partition.
    pub fn watermarks(&self, topic: &str, partition: i32) -> (i64, i64) {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .create()
            .unwrap();
        c.fetch_watermarks(topic, partition, Duration::from_secs(10))
            .unwrap()
    }
}

/// Sends one record and waits for its acknowledgement; returns its offset.
pub async fn send(p: &FutureProducer, topic: &str, partition: i32, value: &[u8]) -> i64 {
    p.send(
        FutureRecord::<(), [u8]>::to(topic)
            .partition(partition)
            .payload(value),
        Duration::from_secs(30),
    )
    .await
    .map_err(|(e, _)| e)
    .unwrap()
    .offset
}

/// Sends records one at a time (each its own batch in the log); returns their offsets.
pub async fn send_each(
    p: &FutureProducer,
    topic: &str,
    partition: i32,
    values: &[Vec<u8>],
) -> Vec<i64> {
    let mut out = Vec::new();
    for v in values {
        out.push(send(p, topic, partition, v).await);
    }
    out
}

/// `n` records of [`BIG`] bytes, distinguishable by their first bytes.
pub fn big(tag: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut v = format!("{tag}{i}:").into_bytes();
            v.resize(BIG, b'x');
            v
        })
        .collect()
}

/// `n` small records `<tag><i>`.
pub fn small(tag: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{tag}{i}").into_bytes()).collect()
}

/// Polls `cond` every 5 ms until it holds; panics after `limit`.
pub async fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Source options for the broker at `bootstrap`, with test-friendly timeouts.
pub fn opts(bootstrap: &str, pairs: &[(&str, &str)]) -> Options {
    let mut o: Options = pairs.iter().copied().collect();
    o.set("kafka.bootstrap.servers", bootstrap);
    if !o.contains("fetchOffset.timeoutMs") {
        o.set("fetchOffset.timeoutMs", "10000");
    }
    if !o.contains("kafkaConsumer.pollTimeoutMs") {
        o.set("kafkaConsumer.pollTimeoutMs", "30000");
    }
    o
}

/// Builds the source through the connector's public factory API.
pub fn source(options: &Options) -> Box<dyn Source> {
    KafkaSourceFactory
        .create(options, &ConnectorContext::default())
        .unwrap()
}

/// One micro-batch as the runtime runs it: returns the new end and the rows.
pub async fn batch(src: &mut dyn Source, start: &Offset, limit: &ReadLimit) -> (Offset, Vec<Row>) {
    let end = src.latest_offset(start, limit).await.unwrap();
    if &end == start {
        return (end, Vec::new());
    }
    let batches = src.read(start, &end).await.unwrap();
    (end, rows(&batches))
}

/// An offset from its checkpoint JSON.
pub fn offset(json: &str) -> Offset {
    Offset::parse(json).unwrap()
}

/// How many data-loss events of `code` the source let pass (failOnDataLoss=false).
pub fn losses(src: &dyn Source, code: &str) -> u64 {
    src.metrics()
        .get(&format!("dataLoss.{code}"))
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// A row of the source's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub value: Option<Vec<u8>>,
}

impl Row {
    /// The value's text up to the first `:` (the tag of [`big`] and [`small`] values).
    pub fn tag(&self) -> String {
        let v = String::from_utf8_lossy(self.value.as_deref().unwrap_or_default()).to_string();
        v.split(':').next().unwrap_or_default().to_string()
    }
}

pub fn rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
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
        for i in 0..b.num_rows() {
            out.push(Row {
                topic: topic.value(i).to_string(),
                partition: partition.value(i),
                offset: offset.value(i),
                value: value.is_valid(i).then(|| value.value(i).to_vec()),
            });
        }
    }
    out
}

/// The offsets of the rows of one topic, in order.
pub fn offsets_of(rows: &[Row], topic: &str) -> Vec<i64> {
    rows.iter()
        .filter(|r| r.topic == topic)
        .map(|r| r.offset)
        .collect()
}
