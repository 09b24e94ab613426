//! Crash test, Kafka → Delta: SIGKILL the `tributary` binary at random points 20 times while
//! a `processingTime` pipeline ingests a topic of the real broker (`scripts/services/kafka.sh`)
//! into a Delta table, restart it each time, and check with an independent reader (Python
//! `deltalake`, `scripts/services/registry-python.sh`) that every record is in the table exactly
//! once: the rows' (partition, offset) pairs are exactly the topic's offsets, each once, and the
//! produced ids are all there.
//!
//! Records keep arriving while the pipeline is killed and restarted. The Delta sink's `txn`
//! action (app id = checkpoint id, version = batch id) is what makes a batch whose commit landed
//! just before the kill a skipped replay instead of a duplicate. Set `TRIBUTARY_CRASH_SEED` to
//! repeat a run's kill points.

#![cfg(all(feature = "kafka", feature = "delta"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use serde_json::Value;

/// Records produced in all.
const RECORDS: i64 = 3000;
/// Kills before the final run.
const KILLS: usize = 20;
const PARTITIONS: i32 = 2;

const READ_TABLE: &str = r#"
import json, os, sys
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1])
t = dt.to_pyarrow_table(columns=["value", "partition", "offset"])
print(json.dumps({
    "version": dt.version(),
    "files": len(dt.file_uris()),
    "rows": [[r["value"].decode(), r["partition"], r["offset"]] for r in t.to_pylist()],
}))
# deltalake's runtime threads can abort the interpreter's shutdown ("terminate called without
# an active exception") after the answer is printed: leave without finalising.
sys.stdout.flush()
os._exit(0)
"#;

fn tributary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tributary"))
}

fn pipeline(dir: &Path, bootstrap: &str, topic: &str, trigger: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "delta-crash"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{topic}", startingOffsets = "earliest", maxOffsetsPerTrigger = 150 }}
[[sink]]
connector = "delta"
options = {{ path = "{table}", checkpointInterval = 10 }}
[trigger]
{trigger}
"#,
        ck = dir.join("ck").display(),
        table = dir.join("table").display(),
    );
    let p = dir.join(format!("pipeline-{}.toml", trigger.len()));
    std::fs::write(&p, text).unwrap();
    p
}

fn read_table(python: &str, path: &Path) -> Value {
    let out = Command::new(python)
        .arg("-c")
        .arg(READ_TABLE)
        .arg(path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python deltalake: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_to_delta_survives_sigkill_at_random_points() {
    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let Some(python) = tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    ) else {
        return;
    };
    let seed: u64 = std::env::var("TRIBUTARY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("delta crash test seed {seed} (set TRIBUTARY_CRASH_SEED to repeat)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

    let topic = format!(
        "delta-crash-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    );
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap);
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    admin
        .create_topics(
            &[NewTopic::new(
                &topic,
                PARTITIONS,
                TopicReplication::Fixed(1),
            )],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    let producer: FutureProducer = cfg.clone().set("linger.ms", "5").create().unwrap();
    let produce = |from: i64, to: i64| {
        let producer = producer.clone();
        let topic = topic.clone();
        async move {
            for i in from..to {
                producer
                    .send(
                        FutureRecord::to(&topic)
                            .key(&format!("k{i}"))
                            .payload(&i.to_string())
                            .partition((i % i64::from(PARTITIONS)) as i32),
                        Duration::from_secs(30),
                    )
                    .await
                    .unwrap();
            }
        }
    };
    // A backlog first, the rest while the pipeline is killed and restarted.
    produce(0, RECORDS / 3).await;
    let background = tokio::spawn(produce(RECORDS / 3, RECORDS));

    let dir = tempfile::tempdir().unwrap();
    let continuous = pipeline(
        dir.path(),
        &bootstrap,
        &topic,
        "kind = \"processingTime\"\ninterval = \"200ms\"",
    );
    let mut kills = 0;
    let mut runs = 0;
    let started = Instant::now();
    while kills < KILLS {
        runs += 1;
        let mut child = tributary()
            .args(["run", "-q"])
            .arg(&continuous)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Startup (connect, load the table) takes a few hundred ms: kill anywhere from before
        // the first batch to several batches in.
        let delay = Duration::from_millis(rng.random_range(100..2500));
        tokio::time::sleep(delay).await;
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "run {runs} exited by itself ({status}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
    }
    background.await.unwrap();
    eprintln!(
        "{kills} kills in {runs} runs, {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The killed runs made progress: the table exists and holds some of the records.
    let table_dir = dir.path().join("table");
    assert!(
        table_dir.join("_delta_log").exists(),
        "seed {seed}: no commit in {runs} runs"
    );
    let before = read_table(&python, &table_dir);
    eprintln!(
        "before the final run: version {}, {} rows",
        before["version"],
        before["rows"].as_array().unwrap().len()
    );

    // The final run drains what is left and stops.
    let drain = pipeline(dir.path(), &bootstrap, &topic, "kind = \"availableNow\"");
    let out = tributary()
        .args(["run", "-q"])
        .arg(&drain)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "final run: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // What the topic holds: every offset below each partition's high watermark.
    let consumer: BaseConsumer = cfg.create().unwrap();
    let mut expected_offsets = BTreeSet::new();
    for p in 0..PARTITIONS {
        let (low, high) = consumer
            .fetch_watermarks(&topic, p, Duration::from_secs(10))
            .unwrap();
        assert_eq!(low, 0);
        expected_offsets.extend((0..high).map(|o| (p as i64, o)));
    }

    let table = read_table(&python, &table_dir);
    let rows = table["rows"].as_array().unwrap();
    let mut offsets = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for r in rows {
        let id: i64 = r[0].as_str().unwrap().parse().unwrap();
        let key = (r[1].as_i64().unwrap(), r[2].as_i64().unwrap());
        assert!(
            offsets.insert(key),
            "seed {seed}: record at partition {} offset {} is in the table twice",
            key.0,
            key.1
        );
        ids.insert(id);
    }
    assert_eq!(
        rows.len(),
        expected_offsets.len(),
        "seed {seed}: {} rows for {} records in the topic",
        rows.len(),
        expected_offsets.len()
    );
    assert_eq!(offsets, expected_offsets, "seed {seed}: offsets differ");
    assert_eq!(
        ids,
        (0..RECORDS).collect::<BTreeSet<_>>(),
        "seed {seed}: ids missing"
    );
    if expected_offsets.len() as i64 != RECORDS {
        // A producer retry can leave a record twice in the topic (different offsets); each
        // copy is a record, and each is in the table once.
        eprintln!(
            "note: the broker holds {} records for {RECORDS} produced ids (producer retries)",
            expected_offsets.len()
        );
    }
    // Files staged by killed attempts are never in the log (VACUUM removes them).
    let on_disk = std::fs::read_dir(&table_dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "parquet")
        })
        .count();
    eprintln!(
        "{} records exactly once in Delta version {}; {} data files referenced, {} unreferenced \
         (killed attempts, left to VACUUM)",
        rows.len(),
        table["version"],
        table["files"],
        on_disk as i64 - table["files"].as_i64().unwrap()
    );
}
