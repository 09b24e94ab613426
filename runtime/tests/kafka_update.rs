//! `update` output into Kafka against the real broker of `scripts/services/kafka.sh` (tansu):
//! files → `GROUP BY` in update mode → the Kafka sink writes one record per changed group,
//! keyed by the `key` column the query selects, as Spark's Kafka sink does. Read back with an
//! independent consumer, the last record of every key carries the ground truth of every row
//! read; a crash before `commits/<n>` replays batch `n` from its state version and sends the
//! same records again (the Kafka sink is at-least-once), so the last values stay exact.
//!
//! Real-time mode (Spark's documented example, `groupBy("key").count()` from Kafka into Kafka):
//! each chunk's changed groups reach the output topic long before the checkpoint interval ends;
//! the state is saved with the long batch, and the next run continues from it.

#![cfg(all(feature = "kafka", feature = "files", feature = "sql"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use rand::Rng;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;

const PARTITIONS: i32 = 3;

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        rand::rng().random::<u32>()
    )
}

async fn create_topic(bootstrap: &str, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for r in admin
        .create_topics(
            &[NewTopic::new(topic, PARTITIONS, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap()
    {
        r.unwrap();
    }
}

/// Every record of `topic` as (partition, key, value), read until `want` records or 30 s.
fn read_records(bootstrap: &str, topic: &str, want: usize) -> Vec<(i32, String, String)> {
    read_records_idle(bootstrap, topic, want, Duration::from_secs(30))
}

/// As [`read_records`], also ending once nothing arrived for `idle`.
fn read_records_idle(
    bootstrap: &str,
    topic: &str,
    want: usize,
    idle: Duration,
) -> Vec<(i32, String, String)> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set(
            "group.id",
            format!("update-check-{}", rand::rng().random::<u32>()),
        )
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let (t0, mut last) = (Instant::now(), Instant::now());
    while out.len() < want && t0.elapsed() < Duration::from_secs(30) && last.elapsed() < idle {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            last = Instant::now();
            let text = |b: Option<&[u8]>| String::from_utf8(b.unwrap().to_vec()).unwrap();
            out.push((m.partition(), text(m.key()), text(m.payload())));
        }
    }
    out
}

/// bucket → "n,2·total" over ids `0..end` (amount = id % 97 + 0.5, as `write_json_files`).
fn truth(end: u64) -> BTreeMap<String, String> {
    let mut m: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for id in 0..end {
        let e = m.entry((id % 5) as i64).or_default();
        e.0 += 1;
        e.1 += (id % 97) as i64 * 2 + 1;
    }
    m.into_iter()
        .map(|(b, (n, t))| (format!("b{b}"), format!("{n},{t}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_groups_reach_kafka_keyed_by_group_and_stay_exact_across_a_replay() {
    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let topic = unique("update");
    create_topic(&bootstrap, &topic).await;
    let l = Layout::new();
    let end = write_json_files(&l.input(), "a", 3, 40, 0);
    let text = format!(
        r#"
name = "update-kafka"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING, amount DOUBLE", "cloudFiles.maxFilesPerTrigger" = "1" }}
[transform]
sql = "SELECT concat('b', CAST(id % 5 AS STRING)) AS key, concat(CAST(count(*) AS STRING), ',', CAST(CAST(sum(amount * 2) AS BIGINT) AS STRING)) AS value FROM source GROUP BY id % 5"
outputMode = "update"
[[sink]]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", topic = "{topic}" }}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        input = l.input().display(),
    );
    let p = l.root.path().join("update.toml");
    std::fs::write(&p, text).unwrap();
    let progress = l.root.path().join("progress.jsonl");
    run_with_progress(&p, &progress);

    // three batches, each touching all five groups: fifteen records, one per changed group
    let records = read_records(&bootstrap, &topic, 15);
    assert_eq!(records.len(), 15, "{records:?}");
    let mut partition_of = BTreeMap::new();
    let mut last = BTreeMap::new();
    for (partition, key, value) in &records {
        // keyed by the group: every record of a group in one partition
        assert_eq!(
            *partition_of.entry(key.clone()).or_insert(*partition),
            *partition,
            "{key}"
        );
        last.insert(key.clone(), value.clone());
    }
    assert_eq!(last, truth(end));

    // a crash before commits/2: the replay sends batch 2's records again, the same values
    // (per key in order: every record of a key is in its one partition)
    std::fs::remove_file(l.checkpoint().join("commits/2")).unwrap();
    run_with_progress(&p, &progress);
    let records = read_records(&bootstrap, &topic, 20);
    assert_eq!(records.len(), 20, "five records replayed");
    let mut per_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, k, v) in records {
        per_key.entry(k).or_default().push(v);
    }
    for (key, values) in &per_key {
        assert_eq!(values.len(), 4, "{key}: {values:?}");
        assert_eq!(
            values[2], values[3],
            "{key}: the replay emits what batch 2 emitted"
        );
        assert_eq!(values[3], truth(end)[key], "{key}");
    }
}

/// The last value of every key in `topic`, read until `done` holds for them (or 20 s).
fn last_values_until(
    bootstrap: &str,
    topic: &str,
    done: impl Fn(&BTreeMap<String, String>) -> bool,
) -> BTreeMap<String, String> {
    let t0 = Instant::now();
    loop {
        let mut last = BTreeMap::new();
        for (_, k, v) in read_records_idle(bootstrap, topic, usize::MAX, Duration::from_secs(1)) {
            last.insert(k, v);
        }
        if done(&last) || t0.elapsed() > Duration::from_secs(20) {
            return last;
        }
    }
}

async fn produce(bootstrap: &str, topic: &str, ids: std::ops::Range<u64>) {
    let p: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "0")
        .create()
        .unwrap();
    for i in ids {
        let (key, payload) = (format!("k{}", i % 7), i.to_string());
        p.send(
            FutureRecord::to(topic).key(&key).payload(&payload),
            Duration::from_secs(15),
        )
        .await
        .unwrap();
    }
}

fn real_time_pipeline(
    l: &Layout,
    bootstrap: &str,
    input: &str,
    output: &str,
    mode: &str,
) -> Pipeline {
    let text = format!(
        r#"
name = "rt-count"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{input}", startingOffsets = "earliest" }}
[transform]
sql = "SELECT key, CAST(count(*) AS STRING) AS value FROM source GROUP BY key"
outputMode = "{mode}"
[[sink]]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", topic = "{output}" }}
[trigger]
kind = "realTime"
interval = "1 minute"
progressInterval = "300ms"
"#,
        ck = l.checkpoint().display(),
    );
    let spec = PipelineSpec::parse(&text, "rt.toml").unwrap();
    Pipeline::build(
        &spec,
        &Registry::builtin(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap()
}

/// Runs the pipeline until every key's last output value is `want`, then stops it cleanly;
/// returns the values and the number of batches committed when they had all arrived.
async fn run_until(
    mut p: Pipeline,
    l: &Layout,
    bootstrap: &str,
    (input, output): (&str, &str),
    ids: std::ops::Range<u64>,
    want: &str,
) -> (BTreeMap<String, String>, usize) {
    let stop = p.shutdown_handle();
    let run = tokio::spawn(async move { p.run().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    produce(bootstrap, input, ids).await;
    let (b, o, w) = (bootstrap.to_string(), output.to_string(), want.to_string());
    let values = tokio::task::spawn_blocking(move || {
        last_values_until(&b, &o, |m| m.len() == 7 && m.values().all(|v| *v == w))
    })
    .await
    .unwrap();
    let commits = std::fs::read_dir(l.checkpoint().join("commits"))
        .map(|d| d.count())
        .unwrap_or(0);
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    (values, commits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_real_time_count_by_key_emits_per_chunk_and_continues_from_its_saved_state() {
    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let (input, output) = (unique("rt-count-in"), unique("rt-count-out"));
    create_topic(&bootstrap, &input).await;
    create_topic(&bootstrap, &output).await;
    let l = Layout::new();
    let twenty: BTreeMap<String, String> = (0..7)
        .map(|k| (format!("k{k}"), "20".to_string()))
        .collect();

    // 140 records, 20 per key: every key's count reaches 20 before the 1-minute checkpoint
    let p = real_time_pipeline(&l, &bootstrap, &input, &output, "update");
    let (values, committed) = run_until(p, &l, &bootstrap, (&input, &output), 0..140, "20").await;
    assert_eq!(values, twenty);
    assert_eq!(
        committed, 0,
        "the counts arrived before the long batch was committed"
    );
    assert!(l.checkpoint().join("commits/0").exists());
    assert!(
        tributary_transform::stored_versions(&l.checkpoint().join("state/0"))
            .unwrap()
            .iter()
            .any(|v| v.version == 0),
        "state version 0 saved with the long batch"
    );

    // the next run starts from state version 0: ten more per key count on to 30
    let p = real_time_pipeline(&l, &bootstrap, &input, &output, "update");
    let (values, _) = run_until(p, &l, &bootstrap, (&input, &output), 140..210, "30").await;
    assert!(values.values().all(|v| v == "30"), "{values:?}");
    assert!(l.checkpoint().join("commits/1").exists());

    // complete mode would re-emit every group with every chunk: refused at start, named
    let l2 = Layout::new();
    let mut p = real_time_pipeline(&l2, &bootstrap, &input, &output, "complete");
    let e = p.run().await.unwrap_err().to_string();
    assert!(
        e.contains("realTime") && e.contains("outputMode 'complete'"),
        "{e}"
    );
}
