//! `tributary streams run --http` end to end: a named Kafka stream (JSON Schema payload) runs
//! continuously into its Delta ingestion table on the broker of `scripts/services/kafka.sh`
//! while its monitoring endpoint is scraped. The stream's counters must reach the records
//! produced after its creation, under the stream's name; `/api/status` lists it running,
//! `/readyz` and `/healthz` answer, `/api/progress?pipeline=` filters by it, and Ctrl-C
//! (SIGINT) ends the run with the same count in its summary.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::http::{get, labelled, scrape, spawn_monitored};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use tributary_runtime::streams::catalog::Catalog;
use tributary_runtime::streams::spec::StreamSpec;

const JSON_SCHEMA: &str =
    r#"{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_run_serves_the_stream_s_metrics_status_and_progress() {
    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let topic = format!(
        "streams-http-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    );
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap);
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    admin
        .create_topics(
            &[NewTopic::new(&topic, 2, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let spec = format!(
        r#"
name = "main.shop.watched"
[source]
kind = "kafka"
topics = ["{topic}"]
[connection]
options = {{ "kafka.bootstrap.servers" = "{bootstrap}" }}
[schema.payload]
format = "json_schema"
text = '{JSON_SCHEMA}'
[ingestion]
table = "main.shop.watched_raw"
"#
    );
    let entry = catalog
        .create(StreamSpec::parse(&spec, "watched.toml").unwrap())
        .unwrap();
    let name = entry.name.to_string();
    tokio::time::sleep(Duration::from_millis(50)).await;

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tributary"));
    cmd.args([
        "streams",
        "run",
        &name,
        "--http",
        "127.0.0.1:0",
        "--catalog-root",
    ])
    .arg(dir.path());
    let (mut child, addr) = spawn_monitored(cmd);
    assert_eq!(get(addr, "/healthz"), (200, "ok\n".to_string()));

    let producer: FutureProducer = cfg.clone().set("linger.ms", "0").create().unwrap();
    for i in 0..12 {
        producer
            .send(
                FutureRecord::to(&topic)
                    .key(&format!("k{i}"))
                    .payload(&format!(r#"{{"id": {i}, "name": "n{i}"}}"#))
                    .partition(i % 2),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
    }
    let stream = Some(("pipeline", name.as_str()));
    let t0 = Instant::now();
    loop {
        let s = scrape(addr);
        if labelled(&s, "tributary_source_rows_total", stream) >= 12.0 {
            assert_eq!(labelled(&s, "tributary_source_rows_total", stream), 12.0);
            assert_eq!(labelled(&s, "tributary_sink_rows_total", stream), 12.0);
            assert!(labelled(&s, "tributary_source_bytes_total", stream) > 0.0);
            assert!(labelled(&s, "tributary_batches_total", stream) >= 1.0);
            assert!(
                labelled(&s, "tributary_stage_duration_seconds_count", stream) >= 1.0,
                "the ingestion stages are timed"
            );
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "the stream's rows never reached /metrics"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, body) = get(addr, "/api/status");
    assert_eq!(status, 200);
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    let listed = s["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name.as_str())
        .unwrap_or_else(|| panic!("the stream is listed: {body}"));
    assert_eq!(listed["state"], "running", "{body}");
    assert_eq!(get(addr, "/readyz").0, 200);
    let (status, progress) = get(addr, &format!("/api/progress?pipeline={name}"));
    assert_eq!(status, 200);
    let events: Vec<serde_json::Value> = serde_json::from_str(&progress).unwrap();
    let rows: u64 = events
        .iter()
        .map(|e| e["numInputRows"].as_u64().unwrap())
        .sum();
    assert_eq!(rows, 12, "{progress}");
    assert!(events.iter().all(|e| e["name"] == name.as_str()));
    let (status, none) = get(addr, "/api/progress?pipeline=no.such.stream");
    assert_eq!(status, 200);
    assert_eq!(none.trim(), "[]");

    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("streams run did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}
