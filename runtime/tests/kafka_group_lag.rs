//! Consumer-group lag of a running pipeline as existing tools see it, against the broker of
//! `scripts/services/kafka.sh` (tansu): the `tributary` binary runs Kafka → Parquet, logs the
//! group it publishes to, and after each run an independent rdkafka client (OffsetFetch and
//! ListOffsets, what `kafka-consumer-groups --describe` asks) finds the group at the end of the
//! last committed batch of the checkpoint. A real-time run's JSON log lines carry its batch
//! span too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{progress_events, stderr, tributary, Layout};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, TopicPartitionList};

fn bootstrap() -> Option<String> {
    tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
}

async fn produce(bootstrap: &str, topic: &str, per_partition: std::ops::Range<u32>) {
    let p: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for i in per_partition {
        for partition in 0..2 {
            p.send(
                FutureRecord::<(), _>::to(topic)
                    .partition(partition)
                    .payload(&format!("{partition}-{i}")),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        }
    }
}

/// Per partition: (committed offset of `group`, high watermark).
fn group_view(bootstrap: &str, group: &str, topic: &str) -> Vec<(Option<i64>, i64)> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, 0);
    tpl.add_partition(topic, 1);
    let committed = c.committed_offsets(tpl, Duration::from_secs(10)).unwrap();
    (0..2)
        .map(|p| {
            let o = match committed.find_partition(topic, p).unwrap().offset() {
                rdkafka::Offset::Offset(o) => Some(o),
                _ => None,
            };
            let (_, high) = c
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .unwrap();
            (o, high)
        })
        .collect()
}

/// Runs the pipeline to the end (availableNow); returns the group it logged and the end offset
/// of its last batch, as `[partition 0, partition 1]`.
fn run(l: &Layout, pipeline: &std::path::Path, progress: &std::path::Path) -> (String, [i64; 2]) {
    let o = tributary()
        .env("TRIBUTARY_LOG", "info")
        .env_remove("RUST_LOG")
        .args(["--log-format", "json", "run"])
        .arg(pipeline)
        .arg("--progress-json")
        .arg(progress)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let group = err
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find_map(|v| v["fields"]["group"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no group logged: {err}"));
    let events = progress_events(progress);
    let last = events.last().unwrap();
    let end = &last["sources"][0]["endOffset"];
    let topic = end.as_object().unwrap().keys().next().unwrap().clone();
    let at = |p: &str| end[&topic][p].as_i64().unwrap();
    assert!(l.checkpoint().join("commits").exists());
    (group, [at("0"), at("1")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_a_pipeline_logs_is_at_its_last_committed_batch() {
    let Some(b) = bootstrap() else { return };
    let topic = format!("rtlag-{}-{}", std::process::id(), rand::random::<u32>());
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &b)
        .create()
        .unwrap();
    for r in admin
        .create_topics(
            &[NewTopic::new(&topic, 2, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap()
    {
        r.unwrap();
    }
    produce(&b, &topic, 0..10).await;

    let l = Layout::new();
    let pipeline = l.root.path().join("lag.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
name = "lagpipe"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{b}", subscribe = "{topic}", startingOffsets = "earliest", maxOffsetsPerTrigger = 8 }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
            ck = l.checkpoint().display(),
            out = l.output().display()
        ),
    )
    .unwrap();
    let progress = l.root.path().join("progress.jsonl");
    let (group, end) = run(&l, &pipeline, &progress);
    assert!(group.starts_with("spark-kafka-source-lagpipe-"), "{group}");
    assert_eq!(progress_events(&progress).len(), 3, "8 + 8 + 4 records");
    assert_eq!(end, [10, 10]);
    let view = group_view(&b, &group, &topic);
    assert_eq!(view, [(Some(10), 10), (Some(10), 10)], "lag 0");

    // New records: the lag tools see them as lag until a batch commits them.
    produce(&b, &topic, 10..13).await;
    let view = group_view(&b, &group, &topic);
    assert_eq!(view, [(Some(10), 13), (Some(10), 13)], "lag 6");
    let (again, end) = run(&l, &pipeline, &progress);
    assert_eq!(again, group, "the same group across restarts");
    assert_eq!(end, [13, 13]);
    assert_eq!(
        group_view(&b, &group, &topic),
        [(Some(13), 13), (Some(13), 13)]
    );
}

/// The real-time driver's long batches are in the same `batch` span: a `realTime` run stopped
/// with SIGINT logs its commit and progress lines with the pipeline name and batch id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_json_lines_carry_the_batch_span() {
    let Some(b) = bootstrap() else { return };
    let topic = format!("rtspan-{}-{}", std::process::id(), rand::random::<u32>());
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &b)
        .create()
        .unwrap();
    for r in admin
        .create_topics(
            &[NewTopic::new(&topic, 2, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap()
    {
        r.unwrap();
    }
    produce(&b, &topic, 0..3).await;
    let l = Layout::new();
    let pipeline = l.root.path().join("rt.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
name = "rtpipe"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{b}", subscribe = "{topic}", startingOffsets = "earliest" }}
[[sink]]
connector = "console"
[trigger]
kind = "realTime"
interval = "1s"
"#,
            ck = l.checkpoint().display(),
        ),
    )
    .unwrap();
    let child = tributary()
        .env("TRIBUTARY_LOG", "info")
        .env_remove("RUST_LOG")
        .args(["--log-format", "json", "run"])
        .arg(&pipeline)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !l.checkpoint().join("commits").join("0").exists() {
        assert!(std::time::Instant::now() < deadline, "no batch committed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let lines: Vec<serde_json::Value> = err
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let committed = lines
        .iter()
        .find(|v| {
            v["fields"]["message"]
                .as_str()
                .is_some_and(|m| m == "batch 0 committed")
        })
        .unwrap_or_else(|| panic!("no commit line: {err}"));
    assert_eq!(committed["span"]["name"], "batch", "{committed}");
    assert_eq!(committed["span"]["pipeline"], "rtpipe", "{committed}");
    assert_eq!(committed["span"]["batch_id"], 0, "{committed}");
    assert_eq!(committed["spans"][0]["name"], "pipeline", "{committed}");
}
