//! What the monitoring endpoint costs: the same Kafka → Parquet pipeline (library API,
//! `availableNow`, `maxOffsetsPerTrigger` batches) run with and without `[monitoring]`, the
//! monitored runs scraped (`/metrics`, `/api/progress`, `/api/status`) every second by a
//! client thread, interleaved round by round in one run.
//!
//! ```text
//! cargo bench -p tributary-benchmarks --bench monitor_cost
//! ```
//!
//! The broker is librdkafka's in-process mock cluster (tansu would be the bottleneck and its
//! noise would hide a 2 % difference). `TRIBUTARY_MONITOR_BENCH_RECORDS` (default 1 000 000)
//! records of a 100-byte value are produced once; each round reads them all in batches of
//! `TRIBUTARY_MONITOR_BENCH_BATCH` (default 50 000) records into a fresh Parquet directory.
//! Outside the timing, every run's Parquet row count must equal what was produced. Rounds:
//! `TRIBUTARY_MONITOR_BENCH_ROUNDS` (default 5); the medians are compared (goal: monitored at
//! most 2 % slower).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::ClientConfig;
use tributary_runtime::engine::Pipeline;
use tributary_runtime::monitor::{self, Monitor};
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;

const TOPIC: &str = "bench";
const PARTITIONS: i32 = 32;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn produce(bootstrap: &str, n: usize) {
    let producer: ThreadedProducer<_> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "50")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .expect("producer");
    let value = [b'x'; 100];
    for i in 0..n {
        let key = format!("{i:010}");
        let mut rec = BaseRecord::<str, [u8]>::to(TOPIC)
            .key(&key)
            .payload(&value)
            .partition((i % PARTITIONS as usize) as i32);
        loop {
            match producer.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    rec = r;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
    producer.flush(Duration::from_secs(300)).expect("flush");
}

fn spec(dir: &std::path::Path, bootstrap: &str, batch: usize) -> PipelineSpec {
    let text = format!(
        r#"
name = "monitor-cost"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{TOPIC}", startingOffsets = "earliest", maxOffsetsPerTrigger = {batch} }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
        ck = dir.join("ck").display(),
        out = dir.join("out").display(),
    );
    PipelineSpec::parse(&text, "monitor-cost.toml").expect("spec")
}

fn get(addr: SocketAddr, path: &str) -> usize {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return 0;
    };
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let mut body = Vec::new();
    let _ = s.read_to_end(&mut body);
    body.len()
}

/// One run; returns its time and the rows Parquet holds, and the scrapes made.
fn run(
    rt: &tokio::runtime::Runtime,
    bootstrap: &str,
    batch: usize,
    monitored: bool,
) -> (Duration, u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path(), bootstrap, batch);
    let scrapes = Arc::new(AtomicU64::new(0));
    let t = rt.block_on(async {
        let mut p = Pipeline::build(
            &spec,
            &Registry::builtin(),
            Arc::new(tributary_sdk::EnvSecretStore),
        )
        .expect("pipeline");
        let mut server = None;
        let stop = Arc::new(AtomicBool::new(false));
        let mut scraper = None;
        if monitored {
            let m = Monitor::new(monitor::DEFAULT_READY_WITHIN);
            p.add_listener(m.listener(&spec.name, "availableNow"));
            let s = monitor::serve(m, "127.0.0.1:0".parse().expect("addr"))
                .await
                .expect("serve");
            let addr = s.addr();
            server = Some(s);
            let (stop, scrapes) = (stop.clone(), scrapes.clone());
            scraper = Some(std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    for path in ["/metrics", "/api/progress", "/api/status"] {
                        if get(addr, path) > 0 {
                            scrapes.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            }));
        }
        let t0 = Instant::now();
        let summary = p.run().await.expect("run");
        let t = t0.elapsed();
        stop.store(true, Ordering::SeqCst);
        if let Some(s) = scraper {
            let _ = tokio::task::spawn_blocking(move || s.join()).await;
        }
        drop(server);
        assert!(summary.batches > 0);
        t
    });
    let rows: u64 = tributary_sinks::parquet::read_dir_batches(&dir.path().join("out"))
        .expect("parquet output")
        .iter()
        .map(|b| b.num_rows() as u64)
        .sum();
    (t, rows, scrapes.load(Ordering::SeqCst))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let n = env_usize("TRIBUTARY_MONITOR_BENCH_RECORDS", 1_000_000);
    let batch = env_usize("TRIBUTARY_MONITOR_BENCH_BATCH", 50_000);
    let rounds = env_usize("TRIBUTARY_MONITOR_BENCH_ROUNDS", 5).max(1);
    let cluster = MockCluster::new(1).expect("mock cluster");
    let bootstrap = cluster.bootstrap_servers();
    cluster.create_topic(TOPIC, PARTITIONS, 1).expect("topic");
    produce(&bootstrap, n);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // A warm-up run of each, not counted.
    for monitored in [false, true] {
        let (_, rows, _) = run(&rt, &bootstrap, batch, monitored);
        assert_eq!(rows, n as u64, "warm-up wrote every row");
    }
    let (mut plain, mut watched) = (Vec::new(), Vec::new());
    let mut total_scrapes = 0;
    for round in 0..rounds {
        for monitored in [round % 2 == 0, round % 2 != 0] {
            let (t, rows, scrapes) = run(&rt, &bootstrap, batch, monitored);
            assert_eq!(rows, n as u64, "every row reached Parquet");
            println!(
                "round {round} {:>9}: {t:>8.2?} ({:.0} rows/s){}",
                if monitored { "monitored" } else { "plain" },
                n as f64 / t.as_secs_f64(),
                if monitored {
                    format!(", {scrapes} scrapes")
                } else {
                    String::new()
                }
            );
            if monitored {
                watched.push(t);
                total_scrapes += scrapes;
            } else {
                plain.push(t);
            }
        }
    }
    let (p, w) = (median(plain.clone()), median(watched.clone()));
    let spread = |v: &[Duration]| {
        let min = v.iter().min().copied().unwrap_or_default().as_secs_f64();
        let max = v.iter().max().copied().unwrap_or_default().as_secs_f64();
        (max - min) / min.max(1e-9) * 100.0
    };
    println!(
        "median plain {p:.2?}, monitored {w:.2?} ({total_scrapes} scrapes): monitored/plain = {:.3} (spread plain {:.1} %, monitored {:.1} %; goal <= 1.02)",
        w.as_secs_f64() / p.as_secs_f64(),
        spread(&plain),
        spread(&watched),
    );
}
