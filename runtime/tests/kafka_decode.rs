//! Kafka -> JSON Schema decoding -> Parquet through a pipeline file, against the real broker
//! started by `scripts/services/kafka.sh` (TRIBUTARY_KAFKA_BOOTSTRAP). Malformed payloads become
//! null structs, are counted in the progress metrics, and the stream goes on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::array::{Array, AsArray, Int64Array};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::progress::{ProgressEvent, ProgressListener};
use tributary_runtime::registry::Registry;

fn bootstrap() -> Option<String> {
    tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
}

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<ProgressEvent>>>);

impl ProgressListener for Collect {
    fn on_progress(&mut self, e: &ProgressEvent) {
        self.0.lock().unwrap().push(e.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_json_records_decode_permissively_into_parquet() {
    let Some(bootstrap) = bootstrap() else { return };
    let topic = format!("decode-{}-{}", std::process::id(), rand::random::<u32>());
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap);
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    admin
        .create_topics(
            &[NewTopic::new(&topic, 1, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    let producer: FutureProducer = cfg.create().unwrap();
    for i in 0..20i64 {
        let payload = if i % 10 == 3 {
            format!("{{\"id\": {i}, \"name\": ")
        } else {
            format!("{{\"id\": {i}, \"name\": \"n{i}\", \"extra\": true}}")
        };
        producer
            .send(
                FutureRecord::<(), _>::to(&topic).payload(&payload),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
    }

    let l = common::Layout::new();
    let text = format!(
        r#"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{topic}", startingOffsets = "earliest" }}
decode = {{ json_schema = '{{"type":"object","properties":{{"id":{{"type":"integer"}},"name":{{"type":"string"}}}}}}' }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        out = l.output().display()
    );
    let spec = PipelineSpec::parse(&text, "kafka.toml").unwrap();
    let mut p = Pipeline::build(
        &spec,
        &Registry::builtin(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    let events = Collect::default();
    p.add_listener(Box::new(events.clone()));
    let summary = tokio::time::timeout(Duration::from_secs(60), p.run())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.rows, 20);

    let batches = tributary_sinks::parquet::read_dir_batches(&l.output()).unwrap();
    let mut good = Vec::new();
    let mut nulls = 0;
    for b in &batches {
        let value = b.column_by_name("value").unwrap().as_struct();
        let ids: &Int64Array = value.column_by_name("id").unwrap().as_primitive();
        for i in 0..b.num_rows() {
            if value.is_null(i) {
                nulls += 1;
            } else {
                good.push(ids.value(i));
            }
        }
    }
    good.sort_unstable();
    let expected: Vec<i64> = (0..20).filter(|i| i % 10 != 3).collect();
    assert_eq!(good, expected);
    assert_eq!(nulls, 2);
    let events = events.0.lock().unwrap();
    let malformed: u64 = events
        .iter()
        .map(|e| {
            e.sources[0]
                .metrics
                .get("malformedRecords")
                .and_then(|v| v.as_u64())
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0);
    assert_eq!(
        malformed,
        2,
        "{:?}",
        events.last().map(|e| &e.sources[0].metrics)
    );
}
