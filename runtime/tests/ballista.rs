//! Scale-out on Apache Ballista with real processes on loopback: a `tributary scheduler`, two
//! `tributary executor`s and the pipeline's own `tributary run` as the driver.
//!
//! - a files landing directory and a Kafka topic with 8 partitions, each ingested to Parquet by
//!   one pipeline whose tasks ran on both executors (asserted from the progress events);
//! - kill -9 of one executor mid-batch: its tasks run again on the other, rows exactly once;
//! - kill -9 of the driver between `offsets/N` and `commits/N`: the same ranges replay, rows
//!   exactly once;
//! - an unreachable scheduler, a sink without a staged write and a literal secret are each one
//!   clear error.
//!
//! Rows are checked with the Parquet reader, independent of the pipeline.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Why a child never listened: it exited (with its log's tail) or the time ran out.
enum NotListening {
    Exited(String),
    TimedOut(String),
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Waits until `child` listens on every port, watching that it has not exited meanwhile.
fn wait_listening(child: &mut Child, ports: &[u16], log: &Path) -> Result<(), NotListening> {
    let t = Instant::now();
    for &port in ports {
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                return Err(NotListening::Exited(format!(
                    "exited ({status}) before listening on {port}; log:\n{}",
                    log_tail(log)
                )));
            }
            if t.elapsed() > Duration::from_secs(120) {
                return Err(NotListening::TimedOut(format!(
                    "never listened on {port} in 120 s; log:\n{}",
                    log_tail(log)
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// Spawns a process listening on freshly chosen ports until it listens on them: a port chosen
/// free can be taken by a parallel test before the child binds it, so a child that exits early
/// is started again on new ports (three attempts).
fn spawn_listening(
    what: &str,
    log: &Path,
    ports: usize,
    command: impl Fn(&[u16]) -> std::process::Command,
) -> (Child, Vec<u16>) {
    let mut last = String::new();
    for _ in 0..3 {
        let mut chosen: Vec<u16> = Vec::new();
        while chosen.len() < ports {
            let p = free_port();
            if !chosen.contains(&p) {
                chosen.push(p);
            }
        }
        let mut child = command(&chosen)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        match wait_listening(&mut child, &chosen, log) {
            Ok(()) => return (child, chosen),
            Err(NotListening::Exited(why)) => last = why,
            Err(NotListening::TimedOut(why)) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} {why}");
            }
        }
    }
    panic!("{what} {last}")
}

/// A scheduler and executors, killed when dropped.
struct Cluster {
    url: String,
    scheduler: Child,
    executors: Vec<(String, Child)>,
    logs: PathBuf,
}

impl Cluster {
    fn start(logs: &Path, executors: usize) -> Cluster {
        std::fs::create_dir_all(logs).unwrap();
        let (scheduler, ports) =
            spawn_listening("the scheduler", &logs.join("scheduler.log"), 1, |p| {
                let mut c = tributary();
                c.args(["scheduler", "--bind", &format!("127.0.0.1:{}", p[0])])
                    .args(["--executor-timeout", "6s"])
                    .env("TRIBUTARY_LOG", "info");
                c
            });
        let port = ports[0];
        let url = format!("df://127.0.0.1:{port}");
        let mut cluster = Cluster {
            url: url.clone(),
            scheduler,
            executors: Vec::new(),
            logs: logs.to_path_buf(),
        };
        for i in 0..executors {
            cluster.add_executor(&format!("exec-{i}"));
        }
        // Registration happens with the first heartbeat.
        std::thread::sleep(Duration::from_secs(2));
        cluster
    }

    fn add_executor(&mut self, id: &str) {
        let url = self.url.clone();
        let (child, _) = spawn_listening(id, &self.logs.join(format!("{id}.log")), 2, |p| {
            let mut c = tributary();
            c.args(["executor", "--scheduler", &url, "--id", id])
                .args(["--flight-port", &p[0].to_string()])
                .args(["--grpc-port", &p[1].to_string()])
                .args(["--slots", "2", "--heartbeat", "1s"])
                .env("TRIBUTARY_LOG", "info");
            c
        });
        self.executors.push((id.to_string(), child));
    }

    fn kill_executor(&mut self, id: &str) {
        let (_, child) = self.executors.iter_mut().find(|(i, _)| i == id).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, c) in &mut self.executors {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = self.scheduler.kill();
        let _ = self.scheduler.wait();
    }
}

/// A files → Parquet pipeline on the cluster.
fn files_pipeline(l: &Layout, url: &str, extra_engine: &str) -> PathBuf {
    let text = format!(
        r#"
name = "scale"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING, amount DOUBLE" }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
[engine]
kind = "ballista"
scheduler = "{url}"
parallelism = 8
batchTimeout = "5m"
{extra_engine}
"#,
        ck = l.checkpoint().display(),
        input = l.input().display(),
        out = l.output().display(),
    );
    let p = l.root.path().join("scale.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// The progress events a run wrote.
fn events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The executors that ran the committed tasks.
fn task_executors(events: &[serde_json::Value]) -> std::collections::BTreeSet<String> {
    events
        .iter()
        .flat_map(|e| e["tasks"].as_array().cloned().unwrap_or_default())
        .map(|t| t["executor"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn files_batches_run_on_both_executors_exactly_once() {
    let l = Layout::new();
    let mut cluster = Cluster::start(&l.root.path().join("logs"), 2);
    let rows = write_json_files(&l.input(), "f", 16, 500, 0);
    let p = files_pipeline(&l, &cluster.url, "");
    let progress = l.root.path().join("progress.jsonl");
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        output_ids(&l.output()),
        (0..rows as i64).collect::<Vec<_>>()
    );
    let ev = events(&progress);
    let tasks: usize = ev
        .iter()
        .map(|e| e["tasks"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(tasks >= 2, "expected several tasks, got {tasks}: {ev:?}");
    assert_eq!(
        task_executors(&ev),
        ["exec-0", "exec-1"].iter().map(|s| s.to_string()).collect(),
        "{ev:?}"
    );
    assert!(ev.iter().all(|e| e["schedulingMs"].is_u64()), "{ev:?}");
    // The executors' rows and bytes reach the events: read = written = the output.
    let sum = |f: &dyn Fn(&serde_json::Value) -> u64| ev.iter().map(f).sum::<u64>();
    assert_eq!(sum(&|e| e["numInputRows"].as_u64().unwrap()), rows);
    assert_eq!(
        sum(&|e| e["sinks"][0]["numOutputRows"].as_u64().unwrap()),
        rows
    );
    let bytes_in = sum(&|e| e["sources"][0]["numInputBytes"].as_u64().unwrap());
    let bytes_out = sum(&|e| e["sinks"][0]["numOutputBytes"].as_u64().unwrap());
    assert!(
        bytes_in > 0 && bytes_in == bytes_out,
        "{bytes_in} / {bytes_out}"
    );

    // The executors' counts reach the driver: the same files read by the embedded engine
    // report the same numFilesRead and numMalformedRecords (one malformed line).
    let embedded = Layout::new();
    copy_dir(&l.input(), &embedded.input());
    std::fs::write(embedded.input().join("bad.json"), "not json\n").unwrap();
    std::fs::write(l.input().join("bad.json"), "not json\n").unwrap();
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let distributed = events(&progress);
    let text = std::fs::read_to_string(&p).unwrap();
    let text = text[..text.find("[engine]").unwrap()]
        .replace(
            &l.checkpoint().display().to_string(),
            &embedded.checkpoint().display().to_string(),
        )
        .replace(
            &l.input().display().to_string(),
            &embedded.input().display().to_string(),
        )
        .replace(
            &l.output().display().to_string(),
            &embedded.output().display().to_string(),
        );
    let embedded_pipeline = embedded.root.path().join("embedded.toml");
    std::fs::write(&embedded_pipeline, text).unwrap();
    let embedded_progress = embedded.root.path().join("progress.jsonl");
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&embedded_progress)
        .arg(&embedded_pipeline)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let local = events(&embedded_progress);
    let metric = |ev: &[serde_json::Value], k: &str| {
        ev.last()
            .map(|e| e["sources"][0]["metrics"][k].clone())
            .unwrap_or_default()
    };
    for k in ["numMalformedRecords", "numFilesRead"] {
        // The distributed pipeline read the 16 files in its first run and bad.json now.
        let d = metric(&distributed, k).as_u64().unwrap_or(0);
        let e = metric(&local, k).as_u64().unwrap_or(0);
        let first_run = if k == "numFilesRead" { 16 } else { 0 };
        assert_eq!(
            d + first_run,
            e,
            "{k}: ballista {distributed:?}\nembedded {local:?}"
        );
    }
    assert_eq!(metric(&local, "numMalformedRecords"), 1, "{local:?}");

    // A second run finds nothing new; new files are a new batch, still exactly once.
    let more = write_json_files(&l.input(), "g", 4, 500, rows);
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        output_ids(&l.output()),
        (0..more as i64).collect::<Vec<_>>()
    );
    cluster.kill_executor("exec-1");
}

#[test]
fn a_killed_executor_s_tasks_run_again_elsewhere_exactly_once() {
    let l = Layout::new();
    let mut cluster = Cluster::start(&l.root.path().join("logs"), 2);
    // Big enough that tasks are still running when the executor dies.
    let rows = write_json_files(&l.input(), "f", 8, 60_000, 0);
    let p = files_pipeline(&l, &cluster.url, "");
    let progress = l.root.path().join("progress.jsonl");
    let mut driver = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Tasks stage under <out>/_staging/<batch>: kill exec-1 once both executors are writing.
    let staging = l.output().join("_staging");
    let t = Instant::now();
    loop {
        let staged = walk(&staging);
        if staged >= 3 {
            break;
        }
        assert!(
            driver.try_wait().unwrap().is_none(),
            "the batch ended before an executor could be killed"
        );
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no staged file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    cluster.kill_executor("exec-1");
    let o = driver.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        output_ids(&l.output()),
        (0..rows as i64).collect::<Vec<_>>()
    );
    let ev = events(&progress);
    // The committed attempts all ran on the executor that survived: exec-1's tasks were
    // retried there (exec-1 was killed while its tasks ran, before its results were fetched).
    let killed_log = std::fs::read_to_string(l.root.path().join("logs/exec-1.log")).unwrap();
    assert!(
        killed_log.contains("Execute task"),
        "exec-1 was killed before it ran a task: {killed_log}"
    );
    assert_eq!(
        task_executors(&ev),
        ["exec-0".to_string()].into_iter().collect(),
        "{ev:?}"
    );
}

#[test]
fn a_scheduler_killed_mid_batch_is_one_clear_error_and_the_batch_replays() {
    let l = Layout::new();
    let mut cluster = Cluster::start(&l.root.path().join("logs"), 1);
    let rows = write_json_files(&l.input(), "f", 4, 60_000, 0);
    let p = files_pipeline(&l, &cluster.url, "");
    let driver = tributary()
        .args(["run", "-q"])
        .arg(&p)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let staging = l.output().join("_staging");
    let t = Instant::now();
    while walk(&staging) < 1 {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no staged file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    cluster.scheduler.kill().unwrap();
    cluster.scheduler.wait().unwrap();
    let o = driver.wait_with_output().unwrap();
    assert!(!o.status.success());
    let line = assert_one_clear_error(&o);
    assert!(line.contains("CONNECTION_FAILED"), "{line}");
    assert!(
        line.contains("the connection to the Ballista scheduler") && line.contains("was lost"),
        "{line}"
    );
    for noise in ["h2", "MetadataMap", "tonic", "Status {"] {
        assert!(!line.contains(noise), "{noise} in: {line}");
    }
    // Nothing of the batch was committed: a new cluster replays it, every row once.
    assert!(!l.checkpoint().join("commits/0").exists());
    drop(cluster);
    let cluster = Cluster::start(&l.root.path().join("logs2"), 1);
    let text = std::fs::read_to_string(&p).unwrap();
    let old = text
        .lines()
        .find(|l| l.contains("df://"))
        .unwrap()
        .to_string();
    std::fs::write(
        &p,
        text.replace(&old, &format!("scheduler = \"{}\"", cluster.url)),
    )
    .unwrap();
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        output_ids(&l.output()),
        (0..rows as i64).collect::<Vec<_>>()
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn walk(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            if e.path().is_dir() {
                walk(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn a_driver_killed_between_offsets_and_commits_replays_the_same_ranges() {
    let l = Layout::new();
    let cluster = Cluster::start(&l.root.path().join("logs"), 2);
    let rows = write_json_files(&l.input(), "f", 8, 40_000, 0);
    let p = files_pipeline(&l, &cluster.url, "");
    let mut driver = tributary().args(["run", "-q"]).arg(&p).spawn().unwrap();
    let offsets = l.checkpoint().join("offsets").join("0");
    let commits = l.checkpoint().join("commits").join("0");
    let t = Instant::now();
    while !offsets.exists() {
        assert!(driver.try_wait().unwrap().is_none(), "the run ended first");
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "offsets/0 never appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !commits.exists(),
        "the batch committed before the driver could be killed"
    );
    driver.kill().unwrap();
    driver.wait().unwrap();
    let logged = std::fs::read_to_string(&offsets).unwrap();

    let progress = l.root.path().join("progress.jsonl");
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&offsets).unwrap(), logged);
    let ev = events(&progress);
    assert_eq!(ev[0]["batchId"], 0, "{ev:?}");
    assert_eq!(ev[0]["replayed"], true, "{ev:?}");
    assert_eq!(
        output_ids(&l.output()),
        (0..rows as i64).collect::<Vec<_>>()
    );
    drop(cluster);
}

#[test]
fn an_unreachable_scheduler_is_one_clear_error() {
    let l = Layout::new();
    write_json_files(&l.input(), "f", 1, 10, 0);
    let url = format!("df://127.0.0.1:{}", free_port());
    let p = files_pipeline(&l, &url, "");
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains(&url), "{line}");
}

#[test]
fn sinks_without_a_staged_write_and_literal_secrets_are_refused() {
    let l = Layout::new();
    write_json_files(&l.input(), "f", 1, 10, 0);
    let p = files_pipeline(&l, "df://127.0.0.1:1", "");
    let text = std::fs::read_to_string(&p).unwrap();

    let console = l.root.path().join("console.toml");
    std::fs::write(
        &console,
        text.replace("connector = \"parquet\"", "connector = \"console\"")
            .replace(
                &format!("options = {{ path = \"{}\" }}", l.output().display()),
                "",
            ),
    )
    .unwrap();
    let o = tributary()
        .args(["run", "-q"])
        .arg(&console)
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("'console'") && line.contains("staged write"),
        "{line}"
    );

    let secret = l.root.path().join("secret.toml");
    std::fs::write(
        &secret,
        text.replace(
            "\"cloudFiles.format\" = \"json\"",
            "\"cloudFiles.format\" = \"json\", \"cloudFiles.awsSecretKey\" = \"hunter2\"",
        ),
    )
    .unwrap();
    let o = tributary()
        .args(["run", "-q"])
        .arg(&secret)
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("cloudFiles.awsSecretKey") && line.contains("secret reference"),
        "{line}"
    );
    assert!(!stderr(&o).contains("hunter2"), "{}", stderr(&o));
}

/// An 8-partition topic on the real broker (tansu) → Parquet, tasks on both executors.
#[cfg(feature = "kafka")]
#[test]
fn kafka_partitions_run_on_both_executors_exactly_once() {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    use rdkafka::producer::{FutureProducer, FutureRecord};
    use rdkafka::ClientConfig;

    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let topic = format!("scale-{}-{}", std::process::id(), rand::random::<u32>());
    let records = 800usize;
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut cfg = ClientConfig::new();
        cfg.set("bootstrap.servers", &bootstrap);
        let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
        admin
            .create_topics(
                &[NewTopic::new(&topic, 8, TopicReplication::Fixed(1))],
                &AdminOptions::new(),
            )
            .await
            .unwrap();
        let producer: FutureProducer = cfg.create().unwrap();
        let sends: Vec<_> = (0..records)
            .map(|i| {
                let payload = format!("{{\"id\": {i}}}");
                let producer = producer.clone();
                let topic = topic.clone();
                async move {
                    producer
                        .send(
                            FutureRecord::<(), _>::to(&topic)
                                .payload(&payload)
                                .partition((i % 8) as i32),
                            Duration::from_secs(30),
                        )
                        .await
                        .unwrap();
                }
            })
            .collect();
        futures::future::join_all(sends).await;
    });

    let l = Layout::new();
    let cluster = Cluster::start(&l.root.path().join("logs"), 2);
    let text = format!(
        r#"
name = "scale-kafka"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{topic}", startingOffsets = "earliest" }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
[engine]
kind = "ballista"
scheduler = "{url}"
"#,
        ck = l.checkpoint().display(),
        out = l.output().display(),
        url = cluster.url,
    );
    let p = l.root.path().join("kafka.toml");
    std::fs::write(&p, text).unwrap();
    let progress = l.root.path().join("progress.jsonl");
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let ev = events(&progress);
    let labels: Vec<String> = ev
        .iter()
        .flat_map(|e| e["tasks"].as_array().cloned().unwrap_or_default())
        .map(|t| t["label"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels.len(), 8, "one task per topic-partition: {labels:?}");
    assert_eq!(
        task_executors(&ev),
        ["exec-0", "exec-1"].iter().map(|s| s.to_string()).collect(),
        "{ev:?}"
    );
    // Every (partition, offset) exactly once, read back with the Parquet reader.
    use arrow::array::{AsArray, Int32Array, Int64Array};
    let mut seen = std::collections::BTreeSet::new();
    let mut n = 0;
    for b in tributary_sinks::parquet::read_dir_batches(&l.output()).unwrap() {
        let part: &Int32Array = b.column_by_name("partition").unwrap().as_primitive();
        let off: &Int64Array = b.column_by_name("offset").unwrap().as_primitive();
        for i in 0..b.num_rows() {
            seen.insert((part.value(i), off.value(i)));
            n += 1;
        }
    }
    assert_eq!((n, seen.len()), (records, records));
    for p in 0..8 {
        let offsets: Vec<i64> = seen
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, o)| *o)
            .collect();
        assert_eq!(
            offsets,
            (0..(records / 8) as i64).collect::<Vec<_>>(),
            "partition {p}"
        );
    }
}

/// The files landing directory → a Delta table: one transaction per batch, read back by the
/// independent Python deltalake reader.
#[cfg(feature = "delta")]
#[test]
fn files_to_delta_commits_each_batch_once() {
    let l = Layout::new();
    let cluster = Cluster::start(&l.root.path().join("logs"), 2);
    let rows = write_json_files(&l.input(), "f", 12, 300, 0);
    let p = files_pipeline(&l, &cluster.url, "");
    let table = l.root.path().join("table");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        &format!(
            "connector = \"parquet\"\noptions = {{ path = \"{}\" }}",
            l.output().display()
        ),
        &format!(
            "connector = \"delta\"\noptions = {{ path = \"{}\" }}",
            table.display()
        ),
    );
    std::fs::write(&p, text).unwrap();
    let progress = l.root.path().join("progress.jsonl");
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let ev = events(&progress);
    assert_eq!(
        task_executors(&ev),
        ["exec-0", "exec-1"].iter().map(|s| s.to_string()).collect(),
        "{ev:?}"
    );
    // One commit per batch: the log's versions are the batches.
    let versions = std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .count();
    assert_eq!(versions, ev.len(), "{ev:?}");
    let Some(python) = tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    ) else {
        return;
    };
    let script = "import sys, os\nfrom deltalake import DeltaTable\nt = DeltaTable(sys.argv[1]).to_pyarrow_table(columns=['id'])\nids = sorted(t.column('id').to_pylist())\nprint(len(ids), len(set(ids)), ids[0], ids[-1])\nsys.stdout.flush()\nos._exit(0)\n";
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(&table)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim(),
        format!("{rows} {rows} 0 {}", rows - 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A task that fails on every executor (a malformed record under `mode = FAILFAST`, met only by
/// the executor that reads the file) fails the batch with one clear error naming the
/// partition, after the scheduler's retries — it does not hang, and nothing is committed.
#[test]
fn a_task_failing_everywhere_is_one_clear_error() {
    let l = Layout::new();
    let cluster = Cluster::start(&l.root.path().join("logs"), 2);
    write_json_files(&l.input(), "f", 3, 10, 0);
    std::fs::write(l.input().join("g-bad.json"), "{\"id\": 1, \"name\": \n").unwrap();
    let p = files_pipeline(&l, &cluster.url, "");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "\"cloudFiles.format\" = \"json\"",
        "\"cloudFiles.format\" = \"json\", mode = \"FAILFAST\"",
    );
    std::fs::write(&p, text).unwrap();
    let t = Instant::now();
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        t.elapsed() < Duration::from_secs(120),
        "took {:?}",
        t.elapsed()
    );
    assert!(line.contains("g-bad.json"), "{line}");
    assert!(line.contains("partition"), "{line}");
    assert!(!l.checkpoint().join("commits").join("0").exists());
    assert!(output_ids(&l.output()).is_empty());
}

/// An executor pointed at an address where nothing listens exits with one clear error after
/// its connect timeout (Ballista's own loop would retry forever).
#[test]
fn an_executor_without_a_scheduler_is_one_clear_error() {
    let url = format!("df://127.0.0.1:{}", free_port());
    let t = Instant::now();
    let o = tributary()
        .args(["executor", "--scheduler", &url, "--id", "lonely"])
        .args(["--flight-port", &free_port().to_string()])
        .args(["--grpc-port", &free_port().to_string()])
        .args(["--connect-timeout", "2s"])
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("CONNECTION_FAILED") && line.contains("cannot reach the scheduler"),
        "{line}"
    );
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
}
