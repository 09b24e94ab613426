//! The Kafka source end to end with 100 B records, records/s and records per CPU-second (= per
//! core), side by side in one run against the raw rdkafka loop underneath:
//!
//! - `raw BaseConsumer`: one consumer assigned every partition, polling until every record
//!   arrived, a checksum of each value (the client's own limit);
//! - `kafka → null`: a `tributary` pipeline (library API, `availableNow`) into a sink that only
//!   counts (registered by this bench: the sink costs nothing, so this is source + engine);
//! - `kafka → decode → null`: the same with the payload decoded by an inline JSON Schema;
//! - `kafka → decode → parquet`: the same into the Parquet sink.
//!
//! The broker is rdkafka's in-process mock cluster (tansu serves a few thousand records/s to
//! one consumer and would measure itself); it keeps about 5 MB per partition, so the records are
//! spread over enough partitions. CPU is this process's utime + stime over each run (from
//! `/proc/self/stat`), which includes the mock cluster's threads — the same fetches for every
//! side. Outputs are checked outside the timing: every side saw every record; the decoded sides
//! have no null row and the sum of the decoded ids is the produced one; the Parquet files are
//! read back and hold every id once.
//!
//! `E2E_BENCH_RECORDS` (default 1,000,000), `E2E_BENCH_BATCH` (`maxOffsetsPerTrigger`, default
//! 100,000), `E2E_BENCH_ROUNDS` (default 2, best of), `E2E_BENCH_MODES`
//! (`raw,null,decode,parquet`: for a profile of one side under `perf record`),
//! `E2E_BENCH_SOURCE_OPTIONS` (`k=v,k=v`, for experiments).
//! Run: `cargo bench -p tributary-benchmarks --bench kafka_e2e`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;
use tributary_sdk::{
    ConnectorContext, Delivery, OptionSpec, Options, PreparedSink, Result, Sink, SinkFactory,
};

const TOPIC: &str = "e2e";
const RECORD_BYTES: usize = 100;
const PARTITION_LIMIT: usize = 4 * 1024 * 1024;
const SCHEMA: &str = r#"{"type":"object","properties":{"id":{"type":"integer"},"user":{"type":"string"},"amount":{"type":"number"},"ok":{"type":"boolean"},"tag":{"type":"string"}}}"#;

/// The JSON record `i`, padded to exactly [`RECORD_BYTES`].
fn record(i: u64) -> String {
    let head = format!(
        r#"{{"id":{i},"user":"u{:05}","amount":{}.{:02},"ok":{},"tag":""#,
        i % 50_000,
        i % 1000,
        i % 100,
        i.is_multiple_of(2)
    );
    let pad = RECORD_BYTES - head.len() - 2;
    format!("{head}{}\"}}", "x".repeat(pad))
}

/// What the counting sink saw, over every instance of the run.
static ROWS: AtomicU64 = AtomicU64::new(0);
static NULLS: AtomicU64 = AtomicU64::new(0);
static ID_SUM: AtomicU64 = AtomicU64::new(0);

/// A sink that counts rows, null payload rows and the decoded ids (when there are any).
#[derive(Debug)]
struct CountingSinkFactory;

impl SinkFactory for CountingSinkFactory {
    fn name(&self) -> &str {
        "count"
    }
    fn options(&self) -> Vec<OptionSpec> {
        Vec::new()
    }
    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSink>> {
        OptionSpec::validate_all(&self.options(), options, self.name())?;
        Ok(Box::new(CountingSink))
    }
}

#[derive(Debug)]
struct CountingSink;

impl PreparedSink for CountingSink {
    fn build(self: Box<Self>, _context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        Ok(self)
    }
}

#[async_trait]
impl Sink for CountingSink {
    fn delivery(&self) -> Delivery {
        Delivery::AtLeastOnce
    }
    async fn open(&mut self, _schema: SchemaRef) -> Result<()> {
        Ok(())
    }
    async fn write(&mut self, _batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        for b in batches {
            ROWS.fetch_add(b.num_rows() as u64, Ordering::Relaxed);
            if let Some(value) = b.column_by_name("value") {
                NULLS.fetch_add(value.null_count() as u64, Ordering::Relaxed);
                if let Some(ids) = value.as_struct_opt().and_then(|s| s.column_by_name("id")) {
                    let ids = ids.as_primitive::<Int64Type>();
                    let sum: i64 = ids.iter().flatten().sum();
                    ID_SUM.fetch_add(sum as u64, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

fn produce(bootstrap: &str, n: u64, partitions: i32) {
    let producer: ThreadedProducer<_> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "50")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    for i in 0..n {
        let value = record(i);
        let key = format!("{i:010}");
        let mut rec = BaseRecord::<str, str>::to(TOPIC)
            .key(&key)
            .payload(&value)
            .partition((i % partitions as u64) as i32);
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
}

/// The raw loop: every record polled once, a checksum of each value; the bytes seen.
fn raw_loop(bootstrap: &str, n: u64, partitions: i32) -> u64 {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "e2e-raw")
        .set("enable.auto.commit", "false")
        .set("fetch.queue.backoff.ms", "10")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(TOPIC, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let (mut rows, mut bytes) = (0u64, 0u64);
    while rows < n {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            let v = m.payload().unwrap_or_default();
            bytes = bytes.wrapping_add(v.len() as u64 + u64::from(v.last().copied().unwrap_or(0)));
            rows += 1;
        }
    }
    bytes
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    Raw,
    Null,
    Decode,
    Parquet,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Raw => "raw BaseConsumer",
            Side::Null => "kafka → null",
            Side::Decode => "kafka → decode → null",
            Side::Parquet => "kafka → decode → parquet",
        }
    }
    fn key(self) -> &'static str {
        match self {
            Side::Raw => "raw",
            Side::Null => "null",
            Side::Decode => "decode",
            Side::Parquet => "parquet",
        }
    }
}

fn pipeline_text(bootstrap: &str, side: Side, batch: usize, dir: &std::path::Path) -> String {
    let decode = if side == Side::Null {
        String::new()
    } else {
        format!("decode = {{ json_schema = '{SCHEMA}' }}\n")
    };
    let sink = if side == Side::Parquet {
        format!(
            "connector = \"parquet\"\noptions = {{ path = \"{}\" }}",
            dir.join("out").display()
        )
    } else {
        "connector = \"count\"".to_string()
    };
    // Extra source options for experiments: E2E_BENCH_SOURCE_OPTIONS=k=v,k=v.
    let extra: String = std::env::var("E2E_BENCH_SOURCE_OPTIONS")
        .unwrap_or_default()
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| format!(", \"{}\" = \"{}\"", k.trim(), v.trim()))
        .collect();
    format!(
        r#"
name = "e2e"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{TOPIC}", startingOffsets = "earliest", maxOffsetsPerTrigger = "{batch}"{extra} }}
{decode}
[[sink]]
{sink}
[trigger]
kind = "availableNow"
"#,
        ck = dir.join("ck").display()
    )
}

/// The batches' phase durations (ms), summed over a run: where a pipeline's time goes.
static PHASES: std::sync::Mutex<Option<tributary_runtime::progress::Durations>> =
    std::sync::Mutex::new(None);

struct PhaseListener;

impl tributary_runtime::progress::ProgressListener for PhaseListener {
    fn on_progress(&mut self, event: &tributary_runtime::progress::ProgressEvent) {
        let mut all = PHASES.lock().unwrap();
        let sum = all.get_or_insert_with(Default::default);
        let d = &event.duration_ms;
        sum.latest_offset += d.latest_offset;
        sum.get_batch += d.get_batch;
        sum.add_batch += d.add_batch;
        sum.wal_commit += d.wal_commit;
        sum.trigger_execution += d.trigger_execution;
        for (k, v) in &d.stages {
            *sum.stages.entry(k.clone()).or_default() += v;
        }
    }
}

/// Runs the pipeline of `side` over the whole topic.
fn run_pipeline(
    rt: &tokio::runtime::Runtime,
    bootstrap: &str,
    side: Side,
    batch: usize,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let text = pipeline_text(bootstrap, side, batch, dir.path());
    let spec = PipelineSpec::parse(&text, "e2e.toml").unwrap();
    let mut registry = Registry::builtin();
    registry.add_sink(Arc::new(CountingSinkFactory));
    let t = Instant::now();
    let mut p = Pipeline::build(&spec, &registry, Arc::new(tributary_sdk::EnvSecretStore)).unwrap();
    p.add_listener(Box::new(PhaseListener));
    let built = t.elapsed();
    rt.block_on(p.run()).unwrap();
    let ran = t.elapsed() - built;
    drop(p);
    println!(
        "  build {built:.2?}, run {ran:.2?}, drop {:.2?}",
        t.elapsed() - built - ran
    );
    dir
}

/// Rows and the sum of `value.id` in the Parquet files under `dir`.
fn parquet_ids(dir: &std::path::Path) -> (u64, u64, u64) {
    let (mut rows, mut nulls, mut sum) = (0u64, 0u64, 0u64);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "parquet") {
                let file = std::fs::File::open(&path).unwrap();
                let reader =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                        .unwrap()
                        .build()
                        .unwrap();
                for b in reader {
                    let b = b.unwrap();
                    rows += b.num_rows() as u64;
                    let value = b.column_by_name("value").unwrap();
                    nulls += value.null_count() as u64;
                    let ids = value.as_struct().column_by_name("id").unwrap();
                    sum += ids
                        .as_primitive::<Int64Type>()
                        .iter()
                        .flatten()
                        .sum::<i64>() as u64;
                }
            }
        }
    }
    (rows, nulls, sum)
}

/// This process's CPU time so far (zero where it cannot be read).
fn process_cpu() -> Duration {
    tributary_proc_cpu::process_cpu().unwrap_or_default()
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n = env_usize("E2E_BENCH_RECORDS", 1_000_000) as u64;
    let batch = env_usize("E2E_BENCH_BATCH", 100_000);
    let rounds = env_usize("E2E_BENCH_ROUNDS", 2).max(1);
    let wanted =
        std::env::var("E2E_BENCH_MODES").unwrap_or_else(|_| "raw,null,decode,parquet".into());
    let sides: Vec<Side> = [Side::Raw, Side::Null, Side::Decode, Side::Parquet]
        .into_iter()
        .filter(|s| wanted.split(',').any(|w| w.trim() == s.key()))
        .collect();
    // Bytes of log per record: value, key and record overhead.
    let partitions = (n as usize * (RECORD_BYTES + 10 + 12))
        .div_ceil(PARTITION_LIMIT)
        .max(1) as i32;
    let cluster = MockCluster::new(1).unwrap();
    let bootstrap = cluster.bootstrap_servers();
    cluster.create_topic(TOPIC, partitions, 1).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    produce(&bootstrap, n, partitions);
    let id_sum: u64 = (0..n).sum();
    println!(
        "produced {n} JSON records of {RECORD_BYTES} B ({partitions} partitions) into the mock cluster in {:.1?}; maxOffsetsPerTrigger {batch}",
        t.elapsed()
    );
    println!(
        "{:<26} {:>12} {:>9} {:>14} {:>14}",
        "side", "records/s", "wall", "CPU", "rec/CPU-s"
    );
    // Best (least) wall and CPU time of each side over the rounds.
    let mut best: Vec<(Side, Duration, Duration)> = Vec::new();
    for _ in 0..rounds {
        for &side in &sides {
            ROWS.store(0, Ordering::SeqCst);
            NULLS.store(0, Ordering::SeqCst);
            ID_SUM.store(0, Ordering::SeqCst);
            let (t, c) = (Instant::now(), process_cpu());
            let out = match side {
                Side::Raw => {
                    let bytes = raw_loop(&bootstrap, n, partitions);
                    assert!(bytes > n * RECORD_BYTES as u64, "raw loop read every value");
                    None
                }
                _ => Some(run_pipeline(&rt, &bootstrap, side, batch)),
            };
            let (wall, cpu) = (t.elapsed(), process_cpu().saturating_sub(c));
            // Checked outside the timing.
            match (side, &out) {
                (Side::Null, _) => {
                    assert_eq!(ROWS.load(Ordering::SeqCst), n, "rows into the sink");
                }
                (Side::Decode, _) => {
                    assert_eq!(ROWS.load(Ordering::SeqCst), n, "rows into the sink");
                    assert_eq!(NULLS.load(Ordering::SeqCst), 0, "no record decoded to null");
                    assert_eq!(ID_SUM.load(Ordering::SeqCst), id_sum, "decoded ids");
                }
                (Side::Parquet, Some(dir)) => {
                    assert_eq!(
                        parquet_ids(&dir.path().join("out")),
                        (n, 0, id_sum),
                        "Parquet rows, null rows and the sum of ids"
                    );
                }
                _ => {}
            }
            let rate = |d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
            println!(
                "{:<26} {:>12.0} {:>9.2?} {:>14.2?} {:>14.0}",
                side.label(),
                rate(wall),
                wall,
                cpu,
                rate(cpu)
            );
            if let Some(d) = PHASES.lock().unwrap().take() {
                println!(
                    "  phases (ms, summed over batches): latestOffset {}, getBatch {}, addBatch {}, walCommit {}, triggerExecution {}{}",
                    d.latest_offset,
                    d.get_batch,
                    d.add_batch,
                    d.wal_commit,
                    d.trigger_execution,
                    d.stages
                        .iter()
                        .map(|(k, v)| format!(", {k} {v}"))
                        .collect::<String>()
                );
            }
            match best.iter_mut().find(|(s, _, _)| *s == side) {
                Some(b) => {
                    b.1 = b.1.min(wall);
                    b.2 = b.2.min(cpu);
                }
                None => best.push((side, wall, cpu)),
            }
        }
    }
    let Some(&(_, raw_wall, raw_cpu)) = best.iter().find(|(s, _, _)| *s == Side::Raw) else {
        return;
    };
    for &(side, wall, cpu) in best.iter().filter(|(s, _, _)| *s != Side::Raw) {
        println!(
            "best of {rounds}: {} / raw: records/s {:.2}x, records per CPU-second {:.2}x",
            side.label(),
            raw_wall.as_secs_f64() / wall.as_secs_f64(),
            raw_cpu.as_secs_f64() / cpu.as_secs_f64().max(1e-9)
        );
    }
}
