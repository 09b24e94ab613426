//! End-to-end latency of real-time Kafka → Kafka pipelines, side by side in one run on the same
//! broker (tansu from `scripts/services/kafka.sh`, `TRIBUTARY_KAFKA_BOOTSTRAP`):
//!
//! - `floor`: the broker's own produce → consume latency (no pipeline);
//! - `raw loop`: a plain rdkafka consume → produce loop (one `BaseConsumer` assigned to every
//!   input partition, a `FutureProducer`, each record forwarded as it is polled);
//!
//! Each partition count has one input and one output topic for all its runs; every reader
//! starts at the topic's end (`startingOffsets = "latest"`), after which the producer starts.
//! - `realTime`: a `tributary` pipeline with trigger `realTime` (library API), its defaults;
//! - `realTime 1/part`: the same with `maxPartitions` = the partition count, one reader
//!   (consumer) per partition, which was the default before one consumer read them all;
//! - `microBatch`: the same pipeline with trigger `processingTime = 0`;
//! - `realTime+sql`: real-time with a SQL projection, when the transform stage is built in;
//! - `realTime+window`: real-time with a stateful 1-minute window count per key in `update` mode
//!   (`GROUP BY window(timestamp, '1 minute'), key`, a 10 s watermark), when the transform stage
//!   is built in. It emits one record per changed group per chunk, whose value starts with the
//!   newest creation time among the group's records: its latency is that record's creation →
//!   the update's arrival. Checked outside the timing: each group's last count, summed over the
//!   groups, equals the records offered.
//!
//! A producer thread offers 1 k, 10 k and 100 k records/s (`RT_BENCH_RATES`) to topics of 4
//! partitions (`RT_BENCH_PARTITIONS`, a list: `1,4,16`); each payload carries its creation time
//! in microseconds; a consumer of the output topic computes creation → arrival latencies into an
//! HDR histogram. Records of the first 500 ms are warm-up and not counted. Outputs are checked
//! outside the timing: every offered record must arrive (a mode that drops records is reported
//! as such, not as fast). `RT_BENCH_MODES` picks modes (`floor,raw,realTime,perPartition,
//! microBatch,sql,window`). Run: `cargo bench -p tributary-benchmarks --bench realtime_latency`
//! (`--features sql` adds realTime+sql and realTime+window).
//!
//! On tansu (`RT_BENCH_BROKER=tansu`) the broker's cost is measured beside the latency, over
//! the same window: its CPU (utime + stime of the pid in
//! `$TRIBUTARY_SERVICES_DIR/kafka/plain.pid`, as % of one core) and the data segments its
//! client connections delivered to it per second (`ss -tin`'s `data_segs_in`, sampled every
//! 100 ms per connection: a fetch request fits one segment, so this counts requests, plus the
//! producer's larger ones, the same in every mode).
//! The consumers of the raw loop and the pipeline use the same fetch settings
//! (`fetch.wait.max.ms=10`), so the comparison is of the loops, not of client tuning.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, FutureProducer, FutureRecord, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;

const SECONDS: f64 = 4.0;
const WARMUP: Duration = Duration::from_millis(500);
const PAYLOAD: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Floor,
    RawLoop,
    RealTime,
    PerPartition,
    MicroBatch,
    RealTimeSql,
    RealTimeWindow,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Floor => "floor (broker)",
            Mode::RawLoop => "raw rdkafka loop",
            Mode::RealTime => "realTime",
            Mode::PerPartition => "realTime 1/part",
            Mode::MicroBatch => "microBatch pt=0",
            Mode::RealTimeSql => "realTime+sql",
            Mode::RealTimeWindow => "realTime+window",
        }
    }

    /// The name `RT_BENCH_MODES` uses.
    fn key(self) -> &'static str {
        match self {
            Mode::Floor => "floor",
            Mode::RawLoop => "raw",
            Mode::RealTime => "realTime",
            Mode::PerPartition => "perPartition",
            Mode::MicroBatch => "microBatch",
            Mode::RealTimeSql => "sql",
            Mode::RealTimeWindow => "window",
        }
    }
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    c
}

fn consumer(bootstrap: &str, topic: &str, partitions: i32) -> BaseConsumer {
    let c: BaseConsumer = config(bootstrap)
        .set("group.id", format!("bench-{}", now_us()))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "10")
        .set("fetch.queue.backoff.ms", "1")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::End).unwrap();
    }
    c.assign(&tpl).unwrap();
    c
}

/// The in-process mock cluster, when the bench runs on it (it has no CreateTopics API).
type Mock = rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext>;

fn create_topics(
    rt: &tokio::runtime::Runtime,
    bootstrap: &str,
    mock: Option<&Mock>,
    topics: &[&str],
    partitions: i32,
) {
    if let Some(m) = mock {
        for t in topics {
            m.create_topic(t, partitions, 1).unwrap();
        }
        return;
    }
    let admin: AdminClient<DefaultClientContext> = config(bootstrap).create().unwrap();
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|t| NewTopic::new(t, partitions, TopicReplication::Fixed(1)))
        .collect();
    for r in rt
        .block_on(admin.create_topics(&new, &AdminOptions::new()))
        .unwrap()
    {
        r.unwrap();
    }
}

/// Offers `rate` records/s to `topic` for SECONDS; returns how many were sent.
fn offer(bootstrap: &str, topic: &str, rate: u64) -> u64 {
    let p: BaseProducer = config(bootstrap).set("linger.ms", "1").create().unwrap();
    let total = (rate as f64 * SECONDS) as u64;
    let t0 = Instant::now();
    let mut sent = 0u64;
    let pad = "x".repeat(PAYLOAD - 20);
    while sent < total {
        let due = ((t0.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        while sent < due {
            let payload = format!("{:020}{pad}", now_us());
            let key = format!("k{}", sent % 64);
            loop {
                match p.send(BaseRecord::to(topic).payload(&payload).key(&key)) {
                    Ok(()) => break,
                    Err((_, _)) => {
                        p.poll(Duration::from_millis(1));
                    }
                }
            }
            sent += 1;
        }
        p.poll(Duration::ZERO);
        std::thread::sleep(Duration::from_micros(200));
    }
    p.flush(Duration::from_secs(30)).unwrap();
    sent
}

/// Reads `topic` until `expected` records arrived or 20 s of silence passed.
fn measure(c: &BaseConsumer, expected: u64, started: Instant) -> (Histogram<u64>, u64) {
    let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).unwrap();
    let mut got = 0u64;
    let mut last = Instant::now();
    while got < expected && last.elapsed() < Duration::from_secs(20) {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
            let arrived = now_us();
            let payload = m.payload().unwrap();
            let created: i64 = std::str::from_utf8(&payload[..20])
                .unwrap()
                .parse()
                .unwrap();
            got += 1;
            last = Instant::now();
            if started.elapsed() > WARMUP {
                let _ = h.record(((arrived - created).max(1)) as u64);
            }
        }
    }
    (h, got)
}

/// Reads the updates of `realTime+window` until the producer is done and 3 s passed without
/// one (or 20 s of silence): latencies from each update's newest creation time, and the sum of
/// every group's last count. A group is the record key and the minute of its newest creation
/// time (the record timestamp the window is computed from is the produce time, taken right
/// after the creation time).
fn measure_updates(
    c: &BaseConsumer,
    started: Instant,
    produced: &AtomicBool,
) -> (Histogram<u64>, u64) {
    let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).unwrap();
    let mut counts: std::collections::HashMap<(Vec<u8>, i64), u64> = Default::default();
    let mut last = Instant::now();
    loop {
        let quiet = last.elapsed();
        if quiet > Duration::from_secs(20)
            || (produced.load(Ordering::SeqCst) && quiet > Duration::from_secs(3))
        {
            break;
        }
        if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
            let arrived = now_us();
            let text = std::str::from_utf8(m.payload().unwrap()).unwrap();
            let (created, count) = text.split_once(' ').unwrap();
            let created: i64 = created.parse().unwrap();
            let count: u64 = count.trim().parse().unwrap();
            let group = (m.key().unwrap_or_default().to_vec(), created / 60_000_000);
            let held = counts.entry(group).or_default();
            *held = (*held).max(count);
            last = Instant::now();
            if started.elapsed() > WARMUP {
                let _ = h.record(((arrived - created).max(1)) as u64);
            }
        }
    }
    (h, counts.values().sum())
}

fn raw_loop(bootstrap: &str, input: &str, output: &str, partitions: i32, stop: Arc<AtomicBool>) {
    let c = consumer(bootstrap, input, partitions);
    let p: FutureProducer = config(bootstrap).create().unwrap();
    let mut tpl = TopicPartitionList::new();
    for part in 0..partitions {
        tpl.add_partition_offset(input, part, Offset::End).unwrap();
    }
    c.assign(&tpl).unwrap();
    while !stop.load(Ordering::SeqCst) {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
            let rec = FutureRecord::to(output)
                .payload(m.payload().unwrap_or_default())
                .key(m.key().unwrap_or_default());
            // Fire and forget: the delivery future is dropped, the record still goes out.
            let _ = p.send_result(rec);
        }
        p.poll(Duration::ZERO);
    }
    let _ = p.flush(Duration::from_secs(10));
}

fn pipeline_text(
    bootstrap: &str,
    input: &str,
    output: &str,
    mode: Mode,
    partitions: i32,
    ck: &str,
) -> String {
    let trigger = match mode {
        Mode::MicroBatch => "kind = \"processingTime\"\ninterval = \"0s\"".to_string(),
        _ => "kind = \"realTime\"\ninterval = \"5 minutes\"".to_string(),
    };
    let readers = if mode == Mode::PerPartition {
        format!(", maxPartitions = \"{partitions}\"")
    } else {
        String::new()
    };
    // Extra options for experiments (`k=v,k=v`), e.g. RT_BENCH_SINK_OPTIONS=kafka.linger.ms=0.
    let extra = |var: &str| -> String {
        std::env::var(var)
            .unwrap_or_default()
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| format!(", \"{}\" = \"{}\"", k.trim(), v.trim()))
            .collect()
    };
    let (source_extra, sink_extra) = (
        extra("RT_BENCH_SOURCE_OPTIONS"),
        extra("RT_BENCH_SINK_OPTIONS"),
    );
    let transform = match mode {
        Mode::RealTimeSql => {
            "[transform]\nsql = \"SELECT key, CAST(value AS STRING) AS value FROM source\"\n"
        }
        // The value: the newest creation time among the group's records, then its count.
        Mode::RealTimeWindow => concat!(
            "[transform]\n",
            "sql = \"SELECT window(timestamp, '1 minute') AS window, key, ",
            "concat(max(substr(CAST(value AS STRING), 1, 20)), ' ', CAST(count(*) AS STRING)) AS value ",
            "FROM source GROUP BY window(timestamp, '1 minute'), key\"\n",
            "outputMode = \"update\"\n",
            "watermark = { eventTime = \"timestamp\", delayThreshold = \"10 seconds\" }\n"
        ),
        _ => "",
    };
    format!(
        r#"
name = "bench"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{input}", startingOffsets = "latest"{readers}{source_extra} }}
{transform}
[[sink]]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", topic = "{output}"{sink_extra} }}
[trigger]
{trigger}
"#
    )
}

struct Row {
    mode: Mode,
    partitions: i32,
    rate: u64,
    offered: u64,
    got: u64,
    p50_ms: f64,
    p99_ms: f64,
    broker: Option<BrokerCost>,
}

/// What the broker spent over a measurement window.
#[derive(Debug, Clone, Copy)]
struct BrokerCost {
    /// % of one core.
    cpu_pct: f64,
    /// Data segments received from clients per second (≈ requests/s).
    segments_per_s: f64,
}

/// `data_segs_in` of each established connection to `port`, by peer address.
fn segments_in(port: &str) -> Option<std::collections::HashMap<String, u64>> {
    let out = std::process::Command::new("ss")
        .args([
            "-tinH",
            "state",
            "established",
            "sport",
            "=",
            &format!(":{port}"),
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut by_peer = std::collections::HashMap::new();
    let mut peer = None;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            // `Recv-Q Send-Q Local:Port Peer:Port`
            peer = line.split_whitespace().nth(3).map(str::to_string);
            continue;
        }
        let segs = line
            .split_whitespace()
            .find_map(|f| f.strip_prefix("data_segs_in:"))
            .and_then(|v| v.parse::<u64>().ok());
        if let (Some(p), Some(n)) = (peer.take(), segs) {
            by_peer.insert(p, n);
        }
    }
    Some(by_peer)
}

/// Samples the broker's CPU and client segments from `start` until `stop` is set.
struct BrokerProbe {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Option<BrokerCost>>,
}

impl BrokerProbe {
    fn start(pid: String, port: String) -> BrokerProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let t0 = Instant::now();
            let cpu0 = tributary_proc_cpu::cpu_time(&pid)?;
            // Per connection: the count when first seen (0 for connections opened later) and
            // the latest, so connections closed before the end still count up to their last
            // sample.
            let mut first: std::collections::HashMap<String, u64> = segments_in(&port)?;
            let mut last = first.clone();
            while !s.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
                for (peer, n) in segments_in(&port)? {
                    first.entry(peer.clone()).or_insert(0);
                    last.insert(peer, n);
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            let cpu = tributary_proc_cpu::cpu_time(&pid)?.saturating_sub(cpu0);
            let segments: u64 = last
                .iter()
                .map(|(p, n)| n.saturating_sub(first.get(p).copied().unwrap_or(0)))
                .sum();
            Some(BrokerCost {
                cpu_pct: cpu.as_secs_f64() / secs * 100.0,
                segments_per_s: segments as f64 / secs,
            })
        });
        BrokerProbe { stop, thread }
    }

    fn finish(self) -> Option<BrokerCost> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().ok().flatten()
    }
}

/// Where the bench runs: the broker, and the tansu pid to measure (none on the mock cluster).
struct Setup<'a> {
    rt: &'a tokio::runtime::Runtime,
    bootstrap: &'a str,
    mock: Option<&'a Mock>,
    broker_pid: Option<String>,
    /// (partitions, input, output) of the topics made so far.
    topics: std::sync::Mutex<Vec<(i32, String, String)>>,
}

impl Setup<'_> {
    /// The input and output topics of `partitions` partitions, created on first use and shared
    /// by every run of that partition count: every reader starts at the end, so a run sees only
    /// its own records. New topics per run made tansu (sqlite) slower run by run, which moved
    /// the later modes' latencies more than the modes differ.
    fn topics(&self, partitions: i32) -> (String, String) {
        let mut made = self.topics.lock().unwrap();
        if let Some(t) = made.iter().find(|t| t.0 == partitions) {
            return (t.1.clone(), t.2.clone());
        }
        let tag = format!("{}-{partitions}", now_us());
        let (input, output) = (format!("bench-rt-in-{tag}"), format!("bench-rt-out-{tag}"));
        create_topics(
            self.rt,
            self.bootstrap,
            self.mock,
            &[&input, &output],
            partitions,
        );
        made.push((partitions, input.clone(), output.clone()));
        (input, output)
    }
}

fn run(setup: &Setup<'_>, mode: Mode, partitions: i32, rate: u64) -> Option<Row> {
    let (rt, bootstrap) = (setup.rt, setup.bootstrap);
    let (input, output) = setup.topics(partitions);
    let read_from = if mode == Mode::Floor { &input } else { &output };
    let out = consumer(bootstrap, read_from, partitions);
    let stop = Arc::new(AtomicBool::new(false));
    let dir = tempfile::tempdir().unwrap();
    let mut pipeline_task = None;
    let mut loop_thread = None;
    let mut shutdown = None;
    match mode {
        Mode::Floor => {}
        Mode::RawLoop => {
            let (b, i, o, s) = (
                bootstrap.to_string(),
                input.clone(),
                output.clone(),
                stop.clone(),
            );
            loop_thread = Some(std::thread::spawn(move || {
                raw_loop(&b, &i, &o, partitions, s)
            }));
        }
        _ => {
            let text = pipeline_text(
                bootstrap,
                &input,
                &output,
                mode,
                partitions,
                &dir.path().join("ck").display().to_string(),
            );
            let spec = match PipelineSpec::parse(&text, "bench.toml") {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("{}: not run ({e})", mode.label());
                    return None;
                }
            };
            let mut p = match Pipeline::build(
                &spec,
                &Registry::builtin(),
                Arc::new(tributary_sdk::EnvSecretStore),
            ) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("{}: not run ({e})", mode.label());
                    return None;
                }
            };
            shutdown = Some(p.shutdown_handle());
            pipeline_task = Some(rt.spawn(async move { p.run().await }));
        }
    }
    // Let readers and consumers settle on their partitions.
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let probe = setup.broker_pid.clone().map(|pid| {
        let port = bootstrap.rsplit(':').next().unwrap_or_default().to_string();
        BrokerProbe::start(pid, port)
    });
    let (b, i) = (bootstrap.to_string(), input.clone());
    let produced = Arc::new(AtomicBool::new(false));
    let done = produced.clone();
    let producer = std::thread::spawn(move || {
        let n = offer(&b, &i, rate);
        done.store(true, Ordering::SeqCst);
        n
    });
    let (h, got) = if mode == Mode::RealTimeWindow {
        measure_updates(&out, started, &produced)
    } else {
        measure(&out, (rate as f64 * SECONDS) as u64, started)
    };
    let broker = probe.and_then(BrokerProbe::finish);
    let offered = producer.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    if let Some(t) = loop_thread {
        t.join().unwrap();
    }
    if let (Some(s), Some(task)) = (shutdown, pipeline_task) {
        s.trigger();
        let _ = rt.block_on(task);
    }
    Some(Row {
        mode,
        partitions,
        rate,
        offered,
        got,
        p50_ms: h.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
        broker,
    })
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // The broker: rdkafka's in-process mock cluster by default (tansu's own produce → consume
    // floor is seconds from 10 k/s, so it would measure the broker, not the pipeline); tansu
    // with RT_BENCH_BROKER=tansu (TRIBUTARY_KAFKA_BOOTSTRAP from scripts/services/kafka.sh).
    let mut mock = None;
    let bootstrap = match std::env::var("RT_BENCH_BROKER").as_deref() {
        Ok("tansu") => {
            let Ok(b) = std::env::var("TRIBUTARY_KAFKA_BOOTSTRAP") else {
                eprintln!("realtime_latency: TRIBUTARY_KAFKA_BOOTSTRAP is not set (start scripts/services/kafka.sh); not run");
                return;
            };
            println!("broker: tansu at {b}");
            b
        }
        _ => {
            let m: Mock = rdkafka::mocking::MockCluster::new(1).unwrap();
            println!("broker: rdkafka mock cluster (in process)");
            let b = m.bootstrap_servers();
            mock = Some(m);
            b
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let list = |var: &str, default: &str| -> Vec<String> {
        std::env::var(var)
            .unwrap_or_else(|_| default.to_string())
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect()
    };
    let rates: Vec<u64> = list("RT_BENCH_RATES", "1000,10000,100000")
        .iter()
        .filter_map(|r| r.parse().ok())
        .collect();
    let partition_counts: Vec<i32> = list("RT_BENCH_PARTITIONS", "4")
        .iter()
        .filter_map(|r| r.parse().ok())
        .collect();
    let wanted = list(
        "RT_BENCH_MODES",
        "floor,raw,realTime,perPartition,microBatch,sql,window",
    );
    let modes: Vec<Mode> = [
        Mode::Floor,
        Mode::RawLoop,
        Mode::RealTime,
        Mode::PerPartition,
        Mode::MicroBatch,
        Mode::RealTimeSql,
        Mode::RealTimeWindow,
    ]
    .into_iter()
    .filter(|m| wanted.iter().any(|w| w == m.key()))
    .collect();
    // The broker's pid, to measure its cost (tansu only; the mock cluster is this process).
    let broker_pid = if mock.is_none() {
        std::env::var("RT_BENCH_BROKER_PID").ok().or_else(|| {
            let dir = std::env::var("TRIBUTARY_SERVICES_DIR").ok()?;
            let pid = std::fs::read_to_string(format!("{dir}/kafka/plain.pid")).ok()?;
            Some(pid.trim().to_string())
        })
    } else {
        None
    };
    if mock.is_none() && broker_pid.is_none() {
        println!("broker cost: not measured (no RT_BENCH_BROKER_PID, no $TRIBUTARY_SERVICES_DIR/kafka/plain.pid)");
    }
    let setup = Setup {
        rt: &rt,
        bootstrap: &bootstrap,
        mock: mock.as_ref(),
        broker_pid,
        topics: std::sync::Mutex::new(Vec::new()),
    };
    println!(
        "{:<18} {:>5} {:>9} {:>9} {:>9} {:>10} {:>10} {:>11} {:>10}",
        "mode",
        "parts",
        "offered/s",
        "sent",
        "received",
        "p50 ms",
        "p99 ms",
        "broker CPU",
        "segs in/s"
    );
    // Each (partitions, rate) cell runs its modes one after the other, RT_BENCH_REPEAT times
    // (default 1), so a slow spell of the broker falls on every mode alike; medians compare.
    let repeat = std::env::var("RT_BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let mut rows = Vec::new();
    for &partitions in &partition_counts {
        for &rate in &rates {
            for &mode in modes.iter().cycle().take(modes.len() * repeat) {
                let Some(r) = run(&setup, mode, partitions, rate) else {
                    continue;
                };
                let note = if r.got < r.offered {
                    format!("  ({} records missing)", r.offered - r.got)
                } else {
                    String::new()
                };
                let (cpu, segs) = match r.broker {
                    Some(b) => (
                        format!("{:.0} %", b.cpu_pct),
                        format!("{:.0}", b.segments_per_s),
                    ),
                    None => ("-".to_string(), "-".to_string()),
                };
                println!(
                    "{:<18} {:>5} {:>9} {:>9} {:>9} {:>10.2} {:>10.2} {:>11} {:>10}{note}",
                    r.mode.label(),
                    r.partitions,
                    r.rate,
                    r.offered,
                    r.got,
                    r.p50_ms,
                    r.p99_ms,
                    cpu,
                    segs
                );
                rows.push(r);
            }
        }
    }
    if repeat > 1 {
        println!("medians of {repeat} runs:");
    }
    for &partitions in &partition_counts {
        for &rate in &rates {
            let median = |m: Mode, f: fn(&Row) -> f64| -> Option<f64> {
                let mut v: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.mode == m && r.rate == rate && r.partitions == partitions)
                    .map(f)
                    .collect();
                v.sort_by(f64::total_cmp);
                (!v.is_empty()).then(|| v[v.len() / 2])
            };
            if repeat > 1 {
                for &m in &modes {
                    let (Some(p50), Some(p99)) = (median(m, |r| r.p50_ms), median(m, |r| r.p99_ms))
                    else {
                        continue;
                    };
                    let cpu = median(m, |r| r.broker.map_or(f64::NAN, |b| b.cpu_pct));
                    let segs = median(m, |r| r.broker.map_or(f64::NAN, |b| b.segments_per_s));
                    println!(
                        "{:<18} {:>5} {:>9} {:>9} {:>9} {:>10.2} {:>10.2} {:>9.0} % {:>10.0}",
                        m.label(),
                        partitions,
                        rate,
                        "",
                        "",
                        p50,
                        p99,
                        cpu.unwrap_or(f64::NAN),
                        segs.unwrap_or(f64::NAN)
                    );
                }
            }
            // The stateful window against the stateless pipeline (#21's goal: p99 <= 1.3x).
            if let (Some(w), Some(plain)) = (
                median(Mode::RealTimeWindow, |r| r.p99_ms),
                median(Mode::RealTime, |r| r.p99_ms),
            ) {
                println!(
                    "{partitions} partitions, {rate}/s: realTime+window p99 / realTime p99 = {:.2}x",
                    w / plain.max(1e-3)
                );
            }
            let Some(raw) = median(Mode::RawLoop, |r| r.p99_ms) else {
                continue;
            };
            for m in [
                Mode::RealTime,
                Mode::PerPartition,
                Mode::RealTimeSql,
                Mode::RealTimeWindow,
            ] {
                if let Some(p99) = median(m, |r| r.p99_ms) {
                    let missing = rows.iter().any(|r| {
                        r.mode == m
                            && r.rate == rate
                            && r.partitions == partitions
                            && r.got < r.offered
                    });
                    println!(
                        "{partitions} partitions, {rate}/s: {} p99 / raw loop p99 = {:.2}x{}",
                        m.label(),
                        p99 / raw.max(1e-3),
                        if missing { " (records missing)" } else { "" }
                    );
                }
            }
        }
    }
}
