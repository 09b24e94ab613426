//! Real-time mode against the real broker of `scripts/services/kafka.sh` (tansu):
//!
//! - a Kafka → Kafka pipeline delivers records produced while it runs to the output topic before
//!   its checkpoint interval ends, reports interim progress with all twelve latency percentiles,
//!   and commits what it delivered when stopped;
//! - `kill -9` of the `tributary` binary at random points, five times, while a producer writes:
//!   every id is in the output topic at least once (at-least-once to the Kafka sink);
//! - sources without a streaming read (files) are refused at start, naming the trigger.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{tributary, Layout};
use rand::Rng;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::progress::{ProgressEvent, ProgressListener};
use tributary_runtime::registry::Registry;

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<ProgressEvent>>>);

impl ProgressListener for Collect {
    fn on_progress(&mut self, e: &ProgressEvent) {
        self.0.lock().unwrap().push(e.clone());
    }
}

fn bootstrap() -> Option<String> {
    tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        rand::rng().random::<u32>()
    )
}

async fn create_topics(bootstrap: &str, topics: &[&str], partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|t| NewTopic::new(t, partitions, TopicReplication::Fixed(1)))
        .collect();
    for r in admin
        .create_topics(&new, &AdminOptions::new())
        .await
        .unwrap()
    {
        r.unwrap();
    }
}

fn producer(bootstrap: &str) -> FutureProducer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "0")
        .create()
        .unwrap()
}

async fn produce(p: &FutureProducer, topic: &str, ids: std::ops::Range<u64>) {
    for i in ids {
        let payload = format!("{i}");
        let key = format!("k{}", i % 7);
        p.send(
            FutureRecord::to(topic).payload(&payload).key(&key),
            Duration::from_secs(15),
        )
        .await
        .unwrap();
    }
}

/// The ids in `topic` (all partitions, duplicates included), read until `want` distinct ids
/// were seen or `wait` passed.
fn read_ids(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    want: usize,
    wait: Duration,
) -> Vec<u64> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", unique("rt-check"))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut ids = Vec::new();
    let mut distinct = BTreeSet::new();
    let t0 = Instant::now();
    while distinct.len() < want && t0.elapsed() < wait {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            let text = std::str::from_utf8(m.payload().unwrap()).unwrap();
            let id: u64 = text.parse().unwrap();
            distinct.insert(id);
            ids.push(id);
        }
    }
    ids
}

fn pipeline_text(l: &Layout, bootstrap: &str, input: &str, output: &str, interval: &str) -> String {
    format!(
        r#"
name = "rt"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{input}", startingOffsets = "earliest" }}
[[sink]]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", topic = "{output}" }}
[trigger]
kind = "realTime"
interval = "{interval}"
progressInterval = "300ms"
"#,
        ck = l.checkpoint().display(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_reach_the_sink_before_the_checkpoint_with_latency_percentiles() {
    let Some(bootstrap) = bootstrap() else { return };
    let (input, output) = (unique("rt-in"), unique("rt-out"));
    create_topics(&bootstrap, &[&input, &output], 2).await;
    let l = Layout::new();
    let text = pipeline_text(&l, &bootstrap, &input, &output, "1 minute");
    let spec = PipelineSpec::parse(&text, "rt.toml").unwrap();
    let mut p = Pipeline::build(
        &spec,
        &Registry::builtin(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    assert_eq!(p.delivery(), tributary_sdk::Delivery::AtLeastOnce);
    let events = Collect::default();
    p.add_listener(Box::new(events.clone()));
    let stop = p.shutdown_handle();
    let run = tokio::spawn(async move { p.run().await });

    // Records produced while the pipeline runs reach the output topic long before the one
    // minute checkpoint interval ends: nothing is committed yet when they are all there.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let prod = producer(&bootstrap);
    let t0 = Instant::now();
    produce(&prod, &input, 0..200).await;
    let (b, o) = (bootstrap.clone(), output.clone());
    let ids =
        tokio::task::spawn_blocking(move || read_ids(&b, &o, 2, 200, Duration::from_secs(20)))
            .await
            .unwrap();
    let arrived = t0.elapsed();
    assert_eq!(
        ids.iter().copied().collect::<BTreeSet<_>>(),
        (0..200).collect::<BTreeSet<_>>(),
        "every record produced while running reached the output topic"
    );
    assert!(arrived < Duration::from_secs(20), "took {arrived:?}");
    assert!(
        !l.checkpoint().join("commits").join("0").exists(),
        "records arrived before the first checkpoint"
    );

    // Interim progress events carry all twelve percentiles.
    let t0 = Instant::now();
    let interim = loop {
        let found = events
            .0
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|e| e.interim && e.num_input_rows == 200)
            .cloned();
        if let Some(e) = found {
            break e;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no interim event with 200 rows"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let json = serde_json::to_value(&interim).unwrap();
    for name in [
        "processingLatencyMs",
        "sourceQueuingLatencyMs",
        "e2eLatencyMs",
    ] {
        for q in ["P50", "P90", "P95", "P99"] {
            let v = json["latencies"][name][q].as_f64();
            assert!(
                v.is_some_and(|v| v > 0.0),
                "latencies.{name}.{q} missing or zero in {json}"
            );
        }
    }
    assert_eq!(json["interim"], true);

    // A clean stop ends the long batch early and commits what was delivered.
    stop.trigger();
    let summary = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(summary.batches, 1);
    assert!(l.checkpoint().join("commits").join("0").exists());
    let last = events.0.lock().unwrap().last().cloned().unwrap();
    assert!(!last.interim);
    assert_eq!(last.num_input_rows, 200);
    let end = serde_json::to_value(&last.sources[0].end_offset).unwrap();
    let total: i64 = end[&input]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_i64().unwrap())
        .sum();
    assert_eq!(total, 200, "end offsets {end}");
}

/// A topic created while the pipeline runs, matching its `subscribePattern`, gets a reader
/// (discovery lists partitions every 5 s) and its records reach the sink in the same long batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_topic_created_while_running_is_picked_up() {
    let Some(bootstrap) = bootstrap() else { return };
    let prefix = unique("rtpat");
    let (first, output) = (format!("{prefix}-a"), unique("rt-pat-out"));
    // The sink keeps each record's `partition`: the output has as many as the widest input.
    create_topics(&bootstrap, &[&first, &output], 2).await;
    let l = Layout::new();
    let text = pipeline_text(&l, &bootstrap, &first, &output, "1 minute").replace(
        &format!("subscribe = \"{first}\""),
        &format!("subscribePattern = \"{prefix}-.*\""),
    );
    assert!(text.contains("subscribePattern"), "{text}");
    let spec = PipelineSpec::parse(&text, "rt.toml").unwrap();
    let mut p = Pipeline::build(
        &spec,
        &Registry::builtin(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    let stop = p.shutdown_handle();
    let run = tokio::spawn(async move { p.run().await });
    let prod = producer(&bootstrap);
    produce(&prod, &first, 0..10).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = format!("{prefix}-b");
    create_topics(&bootstrap, &[&second], 2).await;
    produce(&prod, &second, 10..30).await;
    let (b, o) = (bootstrap.clone(), output.clone());
    let ids = tokio::task::spawn_blocking(move || read_ids(&b, &o, 2, 30, Duration::from_secs(25)))
        .await
        .unwrap();
    if run.is_finished() {
        panic!("the pipeline stopped: {:?}", run.await.unwrap());
    }
    assert_eq!(
        ids.iter().copied().collect::<BTreeSet<_>>(),
        (0..30).collect::<BTreeSet<_>>(),
        "records of the new topic reached the sink"
    );
    assert!(!l.checkpoint().join("commits").join("0").exists());
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[test]
fn sources_without_a_streaming_read_are_refused_at_start() {
    let l = Layout::new();
    std::fs::create_dir_all(l.input()).unwrap();
    let text = format!(
        r#"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json" }}
[[sink]]
connector = "console"
[trigger]
kind = "realTime"
"#,
        ck = l.checkpoint().display(),
        input = l.input().display(),
    );
    let path = l.root.path().join("files-rt.toml");
    std::fs::write(&path, text).unwrap();
    let out = tributary().arg("check").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("source 'files' cannot run with trigger kind realTime")
            && stderr.contains("processingTime or availableNow"),
        "{stderr}"
    );
}

#[test]
fn kill_minus_9_in_a_loop_loses_no_record() {
    let Some(bootstrap) = bootstrap() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (input, output) = (unique("rt-kill-in"), unique("rt-kill-out"));
    rt.block_on(create_topics(&bootstrap, &[&input, &output], 3));
    let l = Layout::new();
    let path = l.root.path().join("rt.toml");
    std::fs::write(
        &path,
        pipeline_text(&l, &bootstrap, &input, &output, "700ms"),
    )
    .unwrap();

    // A producer writes 3000 ids over the whole run.
    const N: u64 = 3000;
    let (b, i) = (bootstrap.clone(), input.clone());
    let writer = std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let p = producer(&b);
            for chunk in 0..30 {
                produce(&p, &i, chunk * 100..(chunk + 1) * 100).await;
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        })
    });
    let mut rng = rand::rng();
    for _ in 0..5 {
        let mut child = tributary()
            .arg("run")
            .arg(&path)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.random_range(600..2500)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }
    writer.join().unwrap();
    // A last run catches up; then every id must be in the output at least once.
    let mut child = tributary()
        .arg("run")
        .arg(&path)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ids = read_ids(&bootstrap, &output, 3, N as usize, Duration::from_secs(30));
    child.kill().unwrap();
    child.wait().unwrap();
    let seen: BTreeSet<u64> = ids.iter().copied().collect();
    let missing: Vec<u64> = (0..N).filter(|i| !seen.contains(i)).collect();
    assert!(
        missing.is_empty(),
        "{} ids missing after kill -9 x5 (first: {:?}); {} records read",
        missing.len(),
        &missing[..missing.len().min(10)],
        ids.len()
    );
    assert!(ids.len() as u64 >= N);
}

/// `SIGTERM` during the long batch (an hour's checkpoint interval) ends it: the run commits what
/// it delivered and exits 0, so the next run starts after it and the output holds every record
/// exactly once, although the Kafka sink alone is only at-least-once.
#[test]
fn sigterm_ends_the_long_batch_and_commits_it() {
    let Some(bootstrap) = bootstrap() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (input, output) = (unique("rt-term-in"), unique("rt-term-out"));
    rt.block_on(create_topics(&bootstrap, &[&input, &output], 3));
    let l = Layout::new();
    let path = l.root.path().join("rt.toml");
    std::fs::write(
        &path,
        pipeline_text(&l, &bootstrap, &input, &output, "1 hour"),
    )
    .unwrap();
    let p = producer(&bootstrap);
    let commits = l.checkpoint().join("commits");
    for round in 0..2u64 {
        rt.block_on(produce(&p, &input, round * 300..(round + 1) * 300));
        let mut child = tributary()
            .arg("run")
            .arg(&path)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let want = ((round + 1) * 300) as usize;
        let seen = read_ids(&bootstrap, &output, 3, want, Duration::from_secs(60));
        let distinct: BTreeSet<u64> = seen.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            want,
            "round {round}: delivered before the stop"
        );
        let pid = child.id().to_string();
        assert!(std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                panic!("round {round}: the run did not end within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
        assert!(status.success(), "round {round}: {status}: {err}");
        assert!(err.contains("SIGTERM: stopping"), "round {round}: {err}");
        let committed = std::fs::read_dir(&commits).map(|d| d.count()).unwrap_or(0);
        assert_eq!(
            committed as u64,
            round + 1,
            "round {round}: long batches committed"
        );
    }
    // Everything, read to the end: no record twice (the second run began after the first's
    // committed positions).
    let all = read_ids(&bootstrap, &output, 3, 601, Duration::from_secs(3));
    let distinct: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), 600);
    assert_eq!(all.len(), 600, "records delivered twice after a clean stop");
}
