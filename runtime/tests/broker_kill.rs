//! The Kafka broker killed with `kill -9` and restarted during a run, against a private tansu
//! broker the test starts on its own port and data directory (the binary of
//! `scripts/services/kafka.sh`, `TRIBUTARY_TANSU_BIN`), so the shared brokers are not touched:
//!
//! - Kafka → Parquet (exactly-once): runs end on their own, or fail with one clear error while
//!   the broker is away; re-run until done, every (partition, offset) is in the output once;
//! - files → Kafka (at-least-once): every id reaches the topic, a failed run names the broker.
//!
//! Each run is bounded in time: a run that neither finishes nor fails is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arrow::array::AsArray;
use common::*;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

/// A tansu broker of the test's own: sqlite in `dir`, listening on `port`.
struct Broker {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    fn start(dir: &Path) -> Option<Broker> {
        let bin =
            tributary_skip_log::require_env("TRIBUTARY_TANSU_BIN", "scripts/services/kafka.sh")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let mut b = Broker {
            bin: bin.into(),
            dir: dir.to_path_buf(),
            port,
            child: None,
        };
        b.up();
        Some(b)
    }

    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn up(&mut self) {
        let url = format!("tcp://127.0.0.1:{}", self.port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("tansu.log"))
            .unwrap();
        let child = Command::new(&self.bin)
            .current_dir(&self.dir)
            .env_remove("LISTENER_URL")
            .env_remove("ADVERTISED_LISTENER_URL")
            .env_remove("STORAGE_ENGINE")
            .env_remove("CLUSTER_ID")
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args([
                "--storage-engine",
                "sqlite://data/tansu.db?maintenance_interval=1s",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "tansu did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `kill -9`: no chance to flush or close connections.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

fn create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    rt().block_on(async {
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .create()
            .unwrap();
        for r in admin
            .create_topics(
                &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
                &AdminOptions::new(),
            )
            .await
            .unwrap()
        {
            r.unwrap();
        }
    });
}

fn produce(bootstrap: &str, topic: &str, ids: std::ops::Range<u64>) {
    rt().block_on(async {
        let p: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("linger.ms", "5")
            .create()
            .unwrap();
        let sends: Vec<_> = ids
            .map(|i| {
                let payload = i.to_string();
                let key = format!("k{}", i % 11);
                let p = p.clone();
                let topic = topic.to_string();
                async move {
                    p.send(
                        FutureRecord::to(&topic).payload(&payload).key(&key),
                        Duration::from_secs(30),
                    )
                    .await
                    .map_err(|(e, _)| e)
                }
            })
            .collect();
        for r in futures::future::join_all(sends).await {
            r.unwrap();
        }
    });
}

/// Every (partition, offset) → value in the Parquet output, and how many rows it has.
fn parquet_positions(dir: &Path) -> (BTreeMap<(i32, i64), String>, usize) {
    let mut out = BTreeMap::new();
    let mut rows = 0;
    for b in tributary_sinks::parquet::read_dir_batches(dir).unwrap() {
        let partition = b.column_by_name("partition").unwrap();
        let partition = partition.as_primitive::<arrow::datatypes::Int32Type>();
        let offset = b.column_by_name("offset").unwrap();
        let offset = offset.as_primitive::<arrow::datatypes::Int64Type>();
        let value = b.column_by_name("value").unwrap();
        let value = value.as_binary::<i32>();
        for i in 0..b.num_rows() {
            rows += 1;
            out.insert(
                (partition.value(i), offset.value(i)),
                String::from_utf8_lossy(value.value(i)).into_owned(),
            );
        }
    }
    (out, rows)
}

/// A run of `pipeline` during which the broker is killed after `kill_after` and started again
/// `away` later. Returns whether it succeeded; a failure must be one clear error.
fn run_through_a_broker_kill(
    pipeline: &Path,
    broker: &mut Broker,
    kill_after: Duration,
    away: Duration,
) -> bool {
    let mut child = tributary()
        .args(["run", "-q"])
        .arg(pipeline)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(kill_after);
    broker.kill();
    std::thread::sleep(away);
    broker.up();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            panic!("the run neither finished nor failed within 180 s of the broker's return");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    if !status.success() {
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(
            errors.len(),
            1,
            "one clear error when the broker went away: {err}"
        );
        eprintln!("run failed while the broker was away: {}", errors[0]);
    }
    status.success()
}

fn run_to_the_end(pipeline: &Path) {
    let o = tributary()
        .args(["run", "-q"])
        .arg(pipeline)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn kafka_source_survives_a_broker_kill_exactly_once() {
    let l = Layout::new();
    let Some(mut broker) = Broker::start(&l.root.path().join("broker")) else {
        return;
    };
    let bootstrap = broker.bootstrap();
    const N: u64 = 6000;
    create_topic(&bootstrap, "in", 3);
    produce(&bootstrap, "in", 0..N);
    let pipeline = l.root.path().join("k2p.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
name = "broker-kill-source"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "in", startingOffsets = "earliest", maxOffsetsPerTrigger = "150" }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
            ck = l.checkpoint().display(),
            out = l.output().display(),
        ),
    )
    .unwrap();

    let mut failed = 0;
    for (kill_after, away) in [(800, 3000), (1500, 1000), (400, 6000)] {
        if !run_through_a_broker_kill(
            &pipeline,
            &mut broker,
            Duration::from_millis(kill_after),
            Duration::from_millis(away),
        ) {
            failed += 1;
        }
    }
    run_to_the_end(&pipeline);
    let (positions, rows) = parquet_positions(&l.output());
    let values: std::collections::BTreeSet<u64> =
        positions.values().map(|v| v.parse().unwrap()).collect();
    assert_eq!(
        rows,
        positions.len(),
        "a (partition, offset) was written twice"
    );
    assert_eq!(rows as u64, N, "rows in the output");
    assert_eq!(values, (0..N).collect(), "every produced value once");
    eprintln!("{failed} of 3 runs failed while the broker was away; {rows} rows exactly once");
}

/// The ids in `topic`, read from the beginning until `want` distinct ones (or 30 s).
fn topic_ids(bootstrap: &str, topic: &str, partitions: i32, want: usize) -> Vec<u64> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "broker-kill-check")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let (mut ids, mut distinct) = (Vec::new(), std::collections::BTreeSet::new());
    let t0 = Instant::now();
    while distinct.len() < want && t0.elapsed() < Duration::from_secs(30) {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            let id: u64 = std::str::from_utf8(m.payload().unwrap())
                .unwrap()
                .parse()
                .unwrap();
            distinct.insert(id);
            ids.push(id);
        }
    }
    ids
}

#[test]
fn kafka_sink_survives_a_broker_kill_at_least_once() {
    let l = Layout::new();
    let Some(mut broker) = Broker::start(&l.root.path().join("broker")) else {
        return;
    };
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "out", 2);
    let n = write_json_files(&l.input(), "f", 60, 100, 0);
    let pipeline = l.root.path().join("f2k.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
name = "broker-kill-sink"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING, amount DOUBLE", "cloudFiles.maxFilesPerTrigger" = 2 }}
[transform]
sql = "SELECT CAST(id AS STRING) AS key, CAST(id AS STRING) AS value FROM source"
[[sink]]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", topic = "out" }}
[trigger]
kind = "availableNow"
"#,
            ck = l.checkpoint().display(),
            input = l.input().display(),
        ),
    )
    .unwrap();
    let mut failed = 0;
    for (kill_after, away) in [(600, 3000), (300, 5000)] {
        if !run_through_a_broker_kill(
            &pipeline,
            &mut broker,
            Duration::from_millis(kill_after),
            Duration::from_millis(away),
        ) {
            failed += 1;
        }
    }
    run_to_the_end(&pipeline);
    let ids = topic_ids(&bootstrap, "out", 2, n as usize);
    let distinct: std::collections::BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        distinct,
        (0..n).collect(),
        "every id in the topic at least once"
    );
    eprintln!(
        "{failed} of 2 runs failed while the broker was away; {} records for {n} ids",
        ids.len()
    );
}
