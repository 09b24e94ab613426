//! Source throughput: the Tributary Kafka source (built through `KafkaSourceFactory`, then
//! latest_offset + read, as the runtime runs it) against a raw rdkafka `BaseConsumer` poll loop,
//! on librdkafka's in-process mock cluster, the same records, in one run.
//!
//! ```text
//! cargo bench -p tributary-kafka --bench throughput
//! ```
//!
//! The broker must not be the bottleneck: an earlier version of this bench read from tansu and
//! measured tansu. The mock cluster serves fetches from memory in-process. It keeps at most 5 MB
//! per partition, so `TRIBUTARY_KAFKA_BENCH_RECORDS` (default 1 000 000) records of a 10-byte key
//! and a 100-byte pseudo-random value are spread over enough partitions (32 for 1 M) and produced
//! once before any timing. Each round reads them all with the raw loop, then with the source; both
//! sinks do the same work per record (a checksum of the value). Outside the timing, the row
//! counts and value checksums of both sides are compared with what was produced. Rounds:
//! `TRIBUTARY_KAFKA_BENCH_ROUNDS` (default 3); the best time of each side is compared, and so is
//! the CPU each side used (this process's utime + stime over the loop, from `/proc/self/stat`;
//! it includes the mock cluster's own threads, the same work for both sides): records per
//! CPU-second is records/s per core, the measure that does not depend on idle waits. Both
//! consumers use `fetch.queue.backoff.ms=10` (see `reader.rs`). For experiments,
//! `TRIBUTARY_KAFKA_BENCH_SOURCE_OPTIONS` and `TRIBUTARY_KAFKA_BENCH_RAW_PROPERTIES` (`k=v,k=v`)
//! add source options and raw-consumer properties.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tributary_kafka::KafkaSourceFactory;
use tributary_sdk::{ConnectorContext, Options, SourceFactoryExt};

const TOPIC: &str = "bench";
const VALUE_BYTES: usize = 100;
/// Bytes of log per record (value, key and record overhead), to size partitions under 5 MB.
const LOG_BYTES_PER_RECORD: usize = VALUE_BYTES + 10 + 12;
const PARTITION_LIMIT: usize = 4 * 1024 * 1024;

/// Order-independent checksum of values: the wrapping sum of a per-value FNV-style hash over
/// 8-byte words.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Sum {
    rows: u64,
    hash: u64,
}

impl Sum {
    #[inline]
    fn add(&mut self, value: &[u8]) {
        let mut h = value.len() as u64 ^ 0xcbf2_9ce4_8422_2325;
        let mut chunks = value.chunks_exact(8);
        for c in &mut chunks {
            h = (h ^ u64::from_le_bytes(c.try_into().unwrap())).wrapping_mul(0x0000_0100_0000_01b3);
        }
        for &b in chunks.remainder() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.rows += 1;
        self.hash = self.hash.wrapping_add(h);
    }
}

fn value_of(i: usize) -> [u8; VALUE_BYTES] {
    // xorshift64* from the record number: values differ, so the checksum means something.
    let mut x = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut v = [0u8; VALUE_BYTES];
    for chunk in v.chunks_mut(8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let w = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
    v
}

fn produce(bootstrap: &str, n: usize, partitions: i32) -> Sum {
    let producer: ThreadedProducer<_> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "50")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    let mut sum = Sum::default();
    for i in 0..n {
        let key = format!("{i:010}");
        let value = value_of(i);
        sum.add(&value);
        let mut rec = BaseRecord::<str, [u8]>::to(TOPIC)
            .key(&key)
            .payload(&value)
            .partition((i % partitions as usize) as i32);
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
    producer.flush(Duration::from_secs(300)).unwrap();
    sum
}

fn raw_loop(bootstrap: &str, n: u64, partitions: i32) -> (Duration, Sum) {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "bench-raw")
        .set("enable.auto.commit", "false")
        // As the source's reader does: librdkafka's default (1 s) idles a consumer whose
        // prefetch queue filled up, which made the raw loop's times vary by a second.
        .set("fetch.queue.backoff.ms", "10");
    // Extra librdkafka properties of the raw consumer for experiments: `k=v,k=v`.
    if let Ok(extra) = std::env::var("TRIBUTARY_KAFKA_BENCH_RAW_PROPERTIES") {
        for kv in extra.split(',').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').expect("k=v");
            config.set(k, v);
        }
    }
    let consumer: BaseConsumer = config.create().unwrap();
    let t0 = Instant::now();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(TOPIC, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut sum = Sum::default();
    while sum.rows < n {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            sum.add(m.payload().unwrap_or_default());
        }
    }
    (t0.elapsed(), sum)
}

async fn source_loop(bootstrap: &str, n: u64) -> (Duration, Sum, Vec<RecordBatch>) {
    let mut options: Options = [
        ("kafka.bootstrap.servers", bootstrap),
        ("subscribe", TOPIC),
        ("startingOffsets", "earliest"),
    ]
    .into_iter()
    .collect();
    // Extra source options for experiments: `k=v,k=v`.
    if let Ok(extra) = std::env::var("TRIBUTARY_KAFKA_BENCH_SOURCE_OPTIONS") {
        for kv in extra.split(',').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').expect("k=v");
            options.set(k, v);
        }
    }
    let t0 = Instant::now();
    let mut source = KafkaSourceFactory
        .create(&options, &ConnectorContext::default())
        .unwrap();
    let mut start = source.initial_offset().await.unwrap();
    let limit = source.default_read_limit();
    let mut sum = Sum::default();
    let mut kept = Vec::new();
    let (mut planning, mut reading) = (Duration::ZERO, Duration::ZERO);
    let setup = t0.elapsed();
    while sum.rows < n {
        let t = Instant::now();
        let end = source.latest_offset(&start, &limit).await.unwrap();
        planning += t.elapsed();
        if end == start {
            continue;
        }
        let t = Instant::now();
        let batches = source.read(&start, &end).await.unwrap();
        reading += t.elapsed();
        for b in batches {
            let values = b.column_by_name("value").unwrap().as_binary::<i32>();
            for i in 0..values.len() {
                sum.add(values.value(i));
            }
            kept.push(b);
        }
        start = end;
    }
    let elapsed = t0.elapsed();
    println!(
        "  source phases: create+initial_offset {setup:.2?}, latest_offset {planning:.2?}, read {reading:.2?}, sink {:.2?}",
        elapsed - setup - planning - reading
    );
    source.stop().await.unwrap();
    (elapsed, sum, kept)
}

/// The CPU time `f` used (this process), with its result.
fn with_cpu<T>(f: impl FnOnce() -> T) -> (T, Option<Duration>) {
    let before = tributary_proc_cpu::process_cpu();
    let out = f();
    let used = tributary_proc_cpu::process_cpu()
        .zip(before)
        .map(|(a, b)| a.saturating_sub(b));
    (out, used)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let n = env_usize("TRIBUTARY_KAFKA_BENCH_RECORDS", 1_000_000);
    let rounds = env_usize("TRIBUTARY_KAFKA_BENCH_ROUNDS", 3).max(1);
    let partitions = (n * LOG_BYTES_PER_RECORD).div_ceil(PARTITION_LIMIT).max(1) as i32;
    let cluster = MockCluster::new(1).unwrap();
    let bootstrap = cluster.bootstrap_servers();
    cluster.create_topic(TOPIC, partitions, 1).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    let t0 = Instant::now();
    let produced = produce(&bootstrap, n, partitions);
    println!(
        "produced {n} records (10 B key, {VALUE_BYTES} B value, {partitions} partitions) into the mock cluster in {:.1?}",
        t0.elapsed()
    );

    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    let cpu_text = |c: Option<Duration>| match c {
        Some(c) => format!("CPU {c:.2?}, {:.0} records per CPU-second", rate(c)),
        None => "CPU not measured".to_string(),
    };
    let (mut raw_times, mut source_times) = (Vec::new(), Vec::new());
    let (mut raw_cpu, mut source_cpu) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let ((d, raw), cpu) = with_cpu(|| raw_loop(&bootstrap, n as u64, partitions));
        println!(
            "round {round}: raw rdkafka BaseConsumer {:>10.0} records/s ({d:.2?}; {})",
            rate(d),
            cpu_text(cpu)
        );
        raw_times.push(d);
        raw_cpu.extend(cpu);
        let ((d, sum, batches), cpu) = with_cpu(|| rt.block_on(source_loop(&bootstrap, n as u64)));
        println!(
            "round {round}: tributary KafkaSource    {:>10.0} records/s ({d:.2?}, {} Arrow batches; {})",
            rate(d),
            batches.len(),
            cpu_text(cpu)
        );
        source_times.push(d);
        source_cpu.extend(cpu);
        // Checked outside the timing: same rows, same values, as produced.
        assert_eq!(raw, produced, "raw consumer read what was produced");
        assert_eq!(sum, produced, "source read what was produced");
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, n, "source row count");
    }
    let best = |v: &[Duration]| v.iter().min().copied().unwrap();
    let (raw, src) = (best(&raw_times), best(&source_times));
    println!(
        "best of {rounds}: raw {:.0} records/s, tributary {:.0} records/s, ratio tributary/raw = {:.2}x",
        rate(raw),
        rate(src),
        rate(src) / rate(raw)
    );
    if let (Some(raw), Some(src)) = (raw_cpu.iter().min(), source_cpu.iter().min()) {
        println!(
            "least CPU of {rounds}: raw {:.0} records per CPU-second ({raw:.2?}), tributary {:.0} ({src:.2?}), ratio tributary/raw = {:.2}x",
            rate(*raw),
            rate(*src),
            raw.as_secs_f64() / src.as_secs_f64().max(1e-9)
        );
    }
}
