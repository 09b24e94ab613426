//! Named streams running continuously, end to end on the broker of `scripts/services/kafka.sh`,
//! watched through their monitoring endpoint:
//!
//! - `tributary streams run --http`: a Kafka stream (JSON Schema payload) into its Delta
//!   ingestion table. Its counters reach the records produced after its creation, under the
//!   stream's name; `/api/status` lists it running, `/readyz` and `/healthz` answer,
//!   `/api/progress?pipeline=` filters by it, and Ctrl-C (SIGINT) ends the run.
//! - `tributary streams serve`: a stream created while serve runs is started; one whose table
//!   cannot be written fails and is restarted with back-off until the operator clears the
//!   obstacle, then ingests every record once; a pattern subscription picks up a topic created
//!   later; a deleted stream is stopped; SIGTERM stops everything.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::http::{get, labelled, scrape, spawn_monitored, spawn_monitored_with_log, Samples};
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

    stop_cleanly(&mut child, "INT", "streams run");
}

/// Sends `signal` (`INT`, `TERM`) to `child` and asserts it exits successfully within 30 s.
fn stop_cleanly(child: &mut std::process::Child, signal: &str, what: &str) {
    let pid = child.id().to_string();
    let _ = Command::new("kill")
        .args([format!("-{signal}"), pid])
        .status();
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("{what} did not stop on SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

async fn create_topic(admin: &AdminClient<DefaultClientContext>, topic: &str, partitions: i32) {
    admin
        .create_topics(
            &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
}

async fn produce(producer: &FutureProducer, topic: &str, ids: std::ops::Range<i32>) {
    for i in ids {
        producer
            .send(
                FutureRecord::to(topic)
                    .key(&format!("k{i}"))
                    .payload(&format!(r#"{{"id": {i}, "name": "n{i}"}}"#)),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
    }
}

/// Waits until `pred(metrics)` holds; panics naming `what` after 90 s.
fn wait_metrics(addr: std::net::SocketAddr, what: &str, pred: impl Fn(&Samples) -> bool) {
    let t0 = Instant::now();
    loop {
        let s = scrape(addr);
        if pred(&s) {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "never: {what}\n{s:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn wait_line(log: &std::sync::Mutex<Vec<String>>, what: &str) {
    let t0 = Instant::now();
    while !log.lock().unwrap().iter().any(|l| l.contains(what)) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "serve never printed '{what}'"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stream_spec(name: &str, subscription: &str, bootstrap: &str, table: &str) -> StreamSpec {
    StreamSpec::parse(
        &format!(
            r#"
name = "{name}"
[source]
kind = "kafka"
{subscription}
[connection]
options = {{ "kafka.bootstrap.servers" = "{bootstrap}" }}
[schema.payload]
format = "json_schema"
text = '{JSON_SCHEMA}'
[ingestion]
table = "{table}"
"#
        ),
        "serve.toml",
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_serve_starts_restarts_and_stops_the_catalog_s_streams() {
    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let prefix = format!("serve-{}-{}", std::process::id(), rand::random::<u32>());
    let (orders, events1, events2) = (
        format!("{prefix}-orders"),
        format!("{prefix}-ev-1"),
        format!("{prefix}-ev-2"),
    );
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap);
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    create_topic(&admin, &orders, 2).await;
    create_topic(&admin, &events1, 1).await;
    let producer: FutureProducer = cfg.clone().set("linger.ms", "0").create().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let orders_stream = catalog
        .create(stream_spec(
            "main.shop.orders",
            &format!("topics = [\"{orders}\"]"),
            &bootstrap,
            "main.shop.orders_raw",
        ))
        .unwrap()
        .name;
    tokio::time::sleep(Duration::from_millis(50)).await;

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tributary"));
    cmd.args([
        "streams",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--poll-interval-secs",
        "1",
        "--max-backoff-secs",
        "2",
        "--catalog-root",
    ])
    .arg(dir.path());
    let (mut child, addr, log) = spawn_monitored_with_log(cmd);
    wait_line(&log, "main.shop.orders: started");
    produce(&producer, &orders, 0..12).await;
    let sink_rows = |stream: &str| {
        let stream = stream.to_string();
        move |s: &Samples| labelled(s, "tributary_sink_rows_total", Some(("pipeline", &stream)))
    };
    let orders_rows = sink_rows(&orders_stream);
    wait_metrics(addr, "orders' 12 rows written", |s| orders_rows(s) >= 12.0);

    // A stream created while serve runs, by pattern, whose table's place is taken by a file:
    // every run fails until the file goes, then the stream ingests every record once.
    let table_dir = dir.path().join("warehouse/main/shop/events_raw");
    std::fs::create_dir_all(table_dir.parent().unwrap()).unwrap();
    std::fs::write(&table_dir, b"not a table").unwrap();
    let events_stream = catalog
        .create(stream_spec(
            "main.shop.events",
            &format!("subscribe_pattern = \"{prefix}-ev-.*\""),
            &bootstrap,
            "main.shop.events_raw",
        ))
        .unwrap()
        .name;
    tokio::time::sleep(Duration::from_millis(50)).await;
    produce(&producer, &events1, 0..5).await;
    wait_line(&log, "main.shop.events: started");
    wait_line(&log, "main.shop.events: failed (restart 2 in 2 s)");
    wait_line(&log, "events_raw: it is a file, not a table directory");
    std::fs::remove_file(&table_dir).unwrap();
    wait_line(&log, "main.shop.events: restarted");
    let events_rows = sink_rows(&events_stream);
    wait_metrics(addr, "events' 5 rows written", |s| events_rows(s) >= 5.0);
    // A topic created later that matches the pattern is read from its start.
    create_topic(&admin, &events2, 1).await;
    produce(&producer, &events2, 100..103).await;
    wait_metrics(addr, "events' 8 rows written", |s| events_rows(s) >= 8.0);

    // Deleting a stream stops it; the other keeps running.
    let plan = catalog.delete(&orders_stream, true).unwrap();
    assert!(plan.deleted);
    wait_line(&log, "main.shop.orders: stopped (deleted from the catalog");
    produce(&producer, &events1, 5..7).await;
    wait_metrics(addr, "events' 10 rows written", |s| events_rows(s) >= 10.0);
    let s = scrape(addr);
    assert_eq!(orders_rows(&s), 12.0, "orders wrote each record once");
    assert_eq!(events_rows(&s), 10.0, "events wrote each record once");

    stop_cleanly(&mut child, "TERM", "streams serve");
    wait_line(&log, "main.shop.events: stopped (serve is stopping");
    let lines = log.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.contains("served 2 stream(s)")),
        "{lines:#?}"
    );
    // New tables are created without the Delta kernel logging an ERROR for their empty log.
    assert!(!lines.iter().any(|l| l.contains("ERROR")), "{lines:#?}");
}
