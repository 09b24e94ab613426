//! End-to-end latency of real-time Kafka → Kafka pipelines, side by side in one run on the same
//! broker (tansu from `scripts/services/kafka.sh`, `TRIBUTARY_KAFKA_BOOTSTRAP`):
//!
//! - `floor`: the broker's own produce → consume latency (no pipeline);
//! - `raw loop`: a plain rdkafka consume → produce loop (one `BaseConsumer` assigned to every
//!   input partition, a `FutureProducer`, each record forwarded as it is polled);
//! - `realTime`: a `tributary` pipeline with trigger `realTime` (library API);
//! - `microBatch`: the same pipeline with trigger `processingTime = 0`;
//! - `realTime+sql`: real-time with a SQL projection, when the transform stage is built in.
//!
//! A producer thread offers 1 k, 10 k and 100 k records/s (each payload carries its creation time
//! in microseconds); a consumer of the output topic computes creation → arrival latencies into an
//! HDR histogram. Records of the first 500 ms are warm-up and not counted. Outputs are checked
//! outside the timing: every offered record must arrive (a mode that drops records is reported
//! as such, not as fast). Run: `cargo bench -p tributary-benchmarks --bench realtime_latency` (`--features sql` adds realTime+sql).
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

const PARTITIONS: i32 = 4;
const SECONDS: f64 = 4.0;
const WARMUP: Duration = Duration::from_millis(500);
const PAYLOAD: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Floor,
    RawLoop,
    RealTime,
    MicroBatch,
    RealTimeSql,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Floor => "floor (broker)",
            Mode::RawLoop => "raw rdkafka loop",
            Mode::RealTime => "realTime",
            Mode::MicroBatch => "microBatch pt=0",
            Mode::RealTimeSql => "realTime+sql",
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

fn consumer(bootstrap: &str, topic: &str) -> BaseConsumer {
    let c: BaseConsumer = config(bootstrap)
        .set("group.id", format!("bench-{}", now_us()))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "10")
        .set("fetch.queue.backoff.ms", "1")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
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
) {
    if let Some(m) = mock {
        for t in topics {
            m.create_topic(t, PARTITIONS, 1).unwrap();
        }
        return;
    }
    let admin: AdminClient<DefaultClientContext> = config(bootstrap).create().unwrap();
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|t| NewTopic::new(t, PARTITIONS, TopicReplication::Fixed(1)))
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

fn raw_loop(bootstrap: &str, input: &str, output: &str, stop: Arc<AtomicBool>) {
    let c = consumer(bootstrap, input);
    let p: FutureProducer = config(bootstrap).create().unwrap();
    let mut tpl = TopicPartitionList::new();
    for part in 0..PARTITIONS {
        tpl.add_partition_offset(input, part, Offset::Beginning)
            .unwrap();
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

fn pipeline_text(bootstrap: &str, input: &str, output: &str, mode: Mode, ck: &str) -> String {
    let trigger = match mode {
        Mode::MicroBatch => "kind = \"processingTime\"\ninterval = \"0s\"".to_string(),
        _ => "kind = \"realTime\"\ninterval = \"5 minutes\"".to_string(),
    };
    let transform = if mode == Mode::RealTimeSql {
        "[transform]\nsql = \"SELECT key, CAST(value AS STRING) AS value FROM source\"\n"
    } else {
        ""
    };
    format!(
        r#"
name = "bench"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{input}", startingOffsets = "earliest" }}
{transform}
[[sink]]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", topic = "{output}" }}
[trigger]
{trigger}
"#
    )
}

struct Row {
    mode: Mode,
    rate: u64,
    offered: u64,
    got: u64,
    p50_ms: f64,
    p99_ms: f64,
}

fn run(
    rt: &tokio::runtime::Runtime,
    bootstrap: &str,
    mock: Option<&Mock>,
    mode: Mode,
    rate: u64,
) -> Option<Row> {
    let tag = format!("{}-{}", now_us(), rate);
    let input = format!("bench-rt-in-{tag}");
    let output = format!("bench-rt-out-{tag}");
    create_topics(rt, bootstrap, mock, &[&input, &output]);
    let read_from = if mode == Mode::Floor { &input } else { &output };
    let out = consumer(bootstrap, read_from);
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
            loop_thread = Some(std::thread::spawn(move || raw_loop(&b, &i, &o, s)));
        }
        _ => {
            let text = pipeline_text(
                bootstrap,
                &input,
                &output,
                mode,
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
    let (b, i) = (bootstrap.to_string(), input.clone());
    let producer = std::thread::spawn(move || offer(&b, &i, rate));
    let (h, got) = measure(&out, (rate as f64 * SECONDS) as u64, started);
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
        rate,
        offered,
        got,
        p50_ms: h.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
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
    let rates: Vec<u64> = std::env::var("RT_BENCH_RATES")
        .ok()
        .map(|s| s.split(',').filter_map(|r| r.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    println!(
        "{:<18} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "mode", "offered/s", "sent", "received", "p50 ms", "p99 ms"
    );
    let mut rows = Vec::new();
    for &rate in &rates {
        for mode in [
            Mode::Floor,
            Mode::RawLoop,
            Mode::RealTime,
            Mode::MicroBatch,
            Mode::RealTimeSql,
        ] {
            if let Some(r) = run(&rt, &bootstrap, mock.as_ref(), mode, rate) {
                let note = if r.got < r.offered {
                    format!("  ({} records missing)", r.offered - r.got)
                } else {
                    String::new()
                };
                println!(
                    "{:<18} {:>9} {:>9} {:>9} {:>10.2} {:>10.2}{note}",
                    r.mode.label(),
                    r.rate,
                    r.offered,
                    r.got,
                    r.p50_ms,
                    r.p99_ms
                );
                rows.push(r);
            }
        }
    }
    for &rate in &rates {
        let find = |m: Mode| rows.iter().find(|r| r.mode == m && r.rate == rate);
        if let (Some(raw), Some(rtm)) = (find(Mode::RawLoop), find(Mode::RealTime)) {
            println!(
                "rate {rate}/s: realTime p99 / raw loop p99 = {:.2}x{}",
                rtm.p99_ms / raw.p99_ms.max(1e-3),
                match find(Mode::RealTimeSql) {
                    Some(sql) => format!(", SQL adds {:.2} ms to p99", sql.p99_ms - rtm.p99_ms),
                    None => String::new(),
                }
            );
        }
    }
}
