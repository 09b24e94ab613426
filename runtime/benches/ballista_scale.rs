//! Scale-out overhead, side by side in one run: an 8-partition Kafka topic → Parquet, with
//!
//! 1. the embedded engine (the pipeline's own process reads and writes), and
//! 2. `[engine] kind = "ballista"`: a `tributary scheduler` and two `tributary executor`
//!    processes on loopback (one task slot each), the pipeline's process as the driver;
//!
//! both as `tributary run` processes over the same topic, availableNow, in batches of
//! `SCALE_BENCH_BATCH` records (`maxOffsetsPerTrigger`), so per-batch overhead shows. Reported:
//! rows/s of each, the ratio, mean and p50/max scheduling overhead per batch (`schedulingMs`
//! of the progress events: the job's time at the driver minus the span in which its tasks
//! ran), the wait between two tasks on one executor slot, and the
//! plan/codec overhead per batch (a job of 8 partitions encoded and decoded through the
//! physical codec, in process).
//!
//! On this 2-core machine the two executors share the cores with the driver and the broker, so
//! (2) is not expected to be faster; the point is the measured overhead per batch.
//! The broker is rdkafka's in-process mock cluster (tansu would be the bottleneck), reachable
//! from the other processes over loopback. Outputs are checked outside the timing: each run's
//! Parquet directory must hold every (partition, offset) of the topic exactly once.
//! Run: `cargo bench -p tributary-runtime --bench ballista_scale`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::ClientConfig;
use tributary_ballista::exec::TaskExec;
use tributary_ballista::{JobSpec, TributaryPhysicalCodec};
use tributary_sdk::InputPartition;

const PARTITIONS: i32 = 8;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_listening(port: u16) {
    let t = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "port {port} never opened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tributary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tributary"))
}

fn produce(bootstrap: &str, topic: &str, records: usize) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    for i in 0..records {
        let payload = format!(r#"{{"id":{i},"name":"row-{i}","amount":{}.25}}"#, i % 997);
        loop {
            match p.send(
                BaseRecord::<(), _>::to(topic)
                    .payload(&payload)
                    .partition((i % PARTITIONS as usize) as i32),
            ) {
                Ok(()) => break,
                Err(_) => {
                    p.poll(Duration::from_millis(5));
                }
            }
        }
    }
    p.flush(Duration::from_secs(60)).unwrap();
}

fn pipeline(
    dir: &Path,
    bootstrap: &str,
    topic: &str,
    batch: usize,
    engine: &str,
) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "scale-bench"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{topic}", startingOffsets = "earliest", maxOffsetsPerTrigger = {batch} }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
{engine}
"#,
        ck = dir.join("ck").display(),
        out = dir.join("out").display(),
    );
    let p = dir.join("p.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs a pipeline to its end; returns the wall time and its progress events.
fn run(p: &Path, progress: &Path) -> (Duration, Vec<serde_json::Value>) {
    let t = Instant::now();
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(progress)
        .arg(p)
        .output()
        .unwrap();
    let wall = t.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let events = std::fs::read_to_string(progress)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (wall, events)
}

/// Every (partition, offset) once, outside the timing.
fn check_output(dir: &Path, records: usize) {
    use arrow::array::{AsArray, Int32Array, Int64Array};
    let mut seen = std::collections::BTreeSet::new();
    let mut n = 0;
    for b in tributary_sinks::parquet::read_dir_batches(dir).unwrap() {
        let p: &Int32Array = b.column_by_name("partition").unwrap().as_primitive();
        let o: &Int64Array = b.column_by_name("offset").unwrap().as_primitive();
        for i in 0..b.num_rows() {
            seen.insert((p.value(i), o.value(i)));
            n += 1;
        }
    }
    assert_eq!(n, records, "rows in {}", dir.display());
    assert_eq!(
        seen.len(),
        records,
        "distinct (partition, offset) in {}",
        dir.display()
    );
}

fn codec_overhead() -> Duration {
    let job = JobSpec {
        name: "scale-bench batch 7".into(),
        batch_id: 7,
        payload: serde_json::json!({
            "pipeline": "scale-bench", "source": "kafka",
            "source_options": {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"},
            "sinks": [["parquet", {"path": "/data/out"}]]
        }),
        partitions: (0..PARTITIONS as usize)
            .map(|i| {
                InputPartition::new(
                    i,
                    format!("t-{i} [0, 25000)"),
                    serde_json::json!({"topic": "t", "partition": i, "start": 0, "end": 25000}),
                )
            })
            .collect(),
    };
    let codec = TributaryPhysicalCodec::default();
    let conv = DefaultPhysicalProtoConverter {};
    let input = tributary_ballista::exec::index_scan(&job).unwrap();
    let plan: Arc<dyn ExecutionPlan> = Arc::new(TaskExec::new(Arc::new(job), input.clone(), None));
    let ctx = datafusion::execution::TaskContext::default();
    let n = 2000;
    let t = Instant::now();
    for _ in 0..n {
        let mut buf = Vec::new();
        codec.try_encode(plan.clone(), &mut buf, &conv).unwrap();
        let back = codec
            .try_decode(&buf, std::slice::from_ref(&input), &ctx, &conv)
            .unwrap();
        assert_eq!(back.properties().output_partitioning().partition_count(), 8);
    }
    t.elapsed() / n
}

fn percentile(v: &mut [u64], q: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let records = env_usize("SCALE_BENCH_RECORDS", 200_000);
    let batch = env_usize("SCALE_BENCH_BATCH", 25_000);
    let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
    let bootstrap = mock.bootstrap_servers();
    let topic = "scale-bench";
    mock.create_topic(topic, PARTITIONS, 1).unwrap();
    let t = Instant::now();
    produce(&bootstrap, topic, records);
    println!(
        "broker: rdkafka mock cluster (in process); produced {records} records to {PARTITIONS} partitions in {:.1} s; batches of {batch}",
        t.elapsed().as_secs_f64()
    );

    // The cluster: a scheduler and two single-slot executors.
    let root = tempfile::tempdir().unwrap();
    let sport = free_port();
    let mut procs: Vec<Child> = vec![tributary()
        .args(["scheduler", "--bind", &format!("127.0.0.1:{sport}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()];
    wait_listening(sport);
    let url = format!("df://127.0.0.1:{sport}");
    for i in 0..2 {
        let (f, g) = (free_port(), free_port());
        procs.push(
            tributary()
                .args([
                    "executor",
                    "--scheduler",
                    &url,
                    "--id",
                    &format!("exec-{i}"),
                ])
                .args([
                    "--flight-port",
                    &f.to_string(),
                    "--grpc-port",
                    &g.to_string(),
                ])
                .args(["--slots", "1", "--heartbeat", "1s"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_listening(f);
        wait_listening(g);
    }
    std::thread::sleep(Duration::from_secs(2));

    let engines = [
        ("embedded", String::new()),
        (
            "ballista, 2 executors",
            format!("[engine]\nkind = \"ballista\"\nscheduler = \"{url}\"\nparallelism = 8\n"),
        ),
    ];
    let mut rates = Vec::new();
    for (name, engine) in &engines {
        let dir = root.path().join(name.replace([' ', ','], "_"));
        std::fs::create_dir_all(&dir).unwrap();
        let p = pipeline(&dir, &bootstrap, topic, batch, engine);
        let (wall, events) = run(&p, &dir.join("progress.jsonl"));
        check_output(&dir.join("out"), records);
        let exec_ms: u64 = events
            .iter()
            .map(|e| e["durationMs"]["triggerExecution"].as_u64().unwrap())
            .sum();
        let rate = records as f64 / (exec_ms as f64 / 1000.0);
        rates.push(rate);
        println!(
            "{name:<22} {:>3} batches, {:>9.0} rows/s (batch time), wall {:.2} s, mean batch {:.0} ms",
            events.len(),
            rate,
            wall.as_secs_f64(),
            exec_ms as f64 / events.len() as f64
        );
        let mut sched: Vec<u64> = events
            .iter()
            .filter_map(|e| e["schedulingMs"].as_u64())
            .collect();
        if !sched.is_empty() {
            let executors: std::collections::BTreeSet<String> = events
                .iter()
                .flat_map(|e| e["tasks"].as_array().cloned().unwrap_or_default())
                .map(|t| t["executor"].as_str().unwrap().to_string())
                .collect();
            // Between two tasks on one single-slot executor: the wait for the next task.
            let mut gaps = Vec::new();
            for e in &events {
                let tasks = e["tasks"].as_array().cloned().unwrap_or_default();
                for ex in &executors {
                    let mut mine: Vec<(u64, u64)> = tasks
                        .iter()
                        .filter(|t| t["executor"].as_str() == Some(ex.as_str()))
                        .map(|t| {
                            let s = t["startedMs"].as_u64().unwrap();
                            (s, s + t["durationMs"].as_u64().unwrap())
                        })
                        .collect();
                    mine.sort_unstable();
                    for w in mine.windows(2) {
                        gaps.push(w[1].0.saturating_sub(w[0].1));
                    }
                }
            }
            let task_ms: Vec<u64> = events
                .iter()
                .flat_map(|e| e["tasks"].as_array().cloned().unwrap_or_default())
                .map(|t| t["durationMs"].as_u64().unwrap())
                .collect();
            println!(
                "{:<22} tasks: {} of mean {:.0} ms; wait between two tasks on one executor slot: mean {:.1} ms, max {} ms",
                "",
                task_ms.len(),
                task_ms.iter().sum::<u64>() as f64 / task_ms.len().max(1) as f64,
                gaps.iter().sum::<u64>() as f64 / gaps.len().max(1) as f64,
                gaps.iter().max().copied().unwrap_or(0)
            );
            let mean = sched.iter().sum::<u64>() as f64 / sched.len() as f64;
            println!(
                "{:<22} scheduling overhead per batch: mean {mean:.0} ms, p50 {} ms, max {} ms; tasks ran on {executors:?}",
                "",
                percentile(&mut sched, 0.5),
                percentile(&mut sched, 1.0)
            );
        }
    }
    println!(
        "ratio ballista / embedded (rows/s): {:.2}x",
        rates[1] / rates[0]
    );
    let codec = codec_overhead();
    println!(
        "plan/codec: a job of {PARTITIONS} partitions encoded + decoded through the physical codec in {:.1} us",
        codec.as_secs_f64() * 1e6
    );
    for mut c in procs {
        let _ = c.kill();
        let _ = c.wait();
    }
}
