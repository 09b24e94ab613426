//! Kafka → Delta ingest throughput, side by side in one run:
//!
//! 1. `kafka → parquet`: a `tributary` pipeline (library API, `availableNow`) from a Kafka topic
//!    to the Parquet sink;
//! 2. `kafka → delta`: the same pipeline and the same topic range to the Delta sink (the runtime
//!    streams each batch's parts into the sink's part writer);
//!    the goal of issue 12 is (2) ≥ 0.8 × (1) in rows/s;
//! 3. the same batches (read back from run 1's output, regrouped as the pipeline's batches) written
//!    three ways with no Kafka in the loop: the Delta sink's part writer, the Delta sink's `write`,
//!    and deltalake's own `DeltaTable::write` with the same `txn` commit property, one commit per
//!    batch each; the goal is the sink ≥ 0.95 × deltalake.
//!
//! The broker is rdkafka's in-process mock cluster by default (tansu, on sqlite, serves a few
//! thousand records/s to one consumer and would measure the broker, not the sinks);
//! `KD_BENCH_BROKER=tansu` uses `TRIBUTARY_KAFKA_BOOTSTRAP` from `scripts/services/kafka.sh`.
//! `KD_BENCH_RECORDS` (default 100 000) and `KD_BENCH_BATCH` (`maxOffsetsPerTrigger`, default
//! 25 000) size the run. The mock cluster keeps about 5 MB per partition and trims older
//! records, so larger runs on it lose their start (the row check then fails, as it should). Outputs are checked outside the timing: every run's table or directory
//! is read back and must hold exactly the records of the topic.
//! Run: `cargo bench -p tributary-runtime --bench kafka_delta`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::ClientConfig;
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;
use tributary_sdk::Sink;
use tributary_sinks::delta::deltalake::datafusion::prelude::SessionContext;
use tributary_sinks::delta::deltalake::kernel::transaction::CommitProperties;
use tributary_sinks::delta::deltalake::kernel::Transaction;
use tributary_sinks::delta::deltalake::protocol::SaveMode;
use tributary_sinks::delta::deltalake::{DeltaTable, DeltaTableBuilder};
use tributary_sinks::delta::{DeltaConfig, DeltaSink};

const PARTITIONS: i32 = 2;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn produce(bootstrap: &str, topic: &str, records: usize) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    for i in 0..records {
        let payload = format!(
            r#"{{"id":{i},"name":"row-{i}","amount":{}.25,"country":"{}"}}"#,
            i % 997,
            ["de", "fr", "nl"][i % 3]
        );
        let key = format!("k{}", i % 1024);
        loop {
            match p.send(
                BaseRecord::to(topic)
                    .payload(&payload)
                    .key(&key)
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

fn pipeline_text(
    bootstrap: &str,
    topic: &str,
    batch: usize,
    sink: &str,
    dir: &std::path::Path,
) -> String {
    format!(
        r#"
name = "bench"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{topic}", startingOffsets = "earliest", maxOffsetsPerTrigger = {batch} }}
[[sink]]
connector = "{sink}"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
        ck = dir.join("ck").display(),
        out = dir.join("out").display(),
    )
}

/// Runs a pipeline to the end; returns its wall time.
fn run_pipeline(rt: &tokio::runtime::Runtime, text: &str) -> Duration {
    let spec = PipelineSpec::parse(text, "bench.toml").unwrap();
    let mut p = Pipeline::build(
        &spec,
        &Registry::builtin(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    let t = Instant::now();
    rt.block_on(p.run()).unwrap();
    t.elapsed()
}

/// Rows in a Delta table, read through DataFusion (not from the log's statistics).
fn delta_rows(rt: &tokio::runtime::Runtime, path: &std::path::Path) -> (usize, u64) {
    rt.block_on(async {
        let url = tributary_sinks::delta::deltalake::ensure_table_uri(path.display().to_string())
            .unwrap();
        let mut table: DeltaTable = DeltaTableBuilder::from_url(url).unwrap().build().unwrap();
        table.load().await.unwrap();
        let ctx = SessionContext::new();
        table.update_datafusion_session(&ctx.state()).unwrap();
        let provider = table.table_provider().await.unwrap();
        ctx.register_table("t", provider).unwrap();
        let batches = ctx
            .sql("SELECT COUNT(*) FROM t")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let n = arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(
            batches[0].column(0),
        )
        .value(0);
        (n as usize, table.version().unwrap_or(u64::MAX))
    })
}

fn parquet_rows(path: &std::path::Path) -> usize {
    tributary_sinks::parquet::read_dir_batches(path)
        .unwrap()
        .iter()
        .map(RecordBatch::num_rows)
        .sum()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let records = env_usize("KD_BENCH_RECORDS", 100_000);
    let batch = env_usize("KD_BENCH_BATCH", 25_000);
    let tansu = std::env::var("KD_BENCH_BROKER").as_deref() == Ok("tansu");
    let mock = if tansu {
        None
    } else {
        Some(rdkafka::mocking::MockCluster::new(1).unwrap())
    };
    let bootstrap = match mock.as_ref() {
        None => {
            let Ok(b) = std::env::var("TRIBUTARY_KAFKA_BOOTSTRAP") else {
                eprintln!("kafka_delta: TRIBUTARY_KAFKA_BOOTSTRAP is not set (scripts/services/kafka.sh); not run");
                return;
            };
            println!("broker: tansu at {b}");
            b
        }
        Some(m) => {
            println!("broker: rdkafka mock cluster (in process)");
            m.bootstrap_servers()
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let topic = format!("kafka-delta-bench-{}", std::process::id());
    if let Some(m) = mock.as_ref() {
        m.create_topic(&topic, PARTITIONS, 1).unwrap();
    } else {
        use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
        let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .create()
            .unwrap();
        rt.block_on(admin.create_topics(
            &[NewTopic::new(
                &topic,
                PARTITIONS,
                TopicReplication::Fixed(1),
            )],
            &AdminOptions::new(),
        ))
        .unwrap();
    }
    let t = Instant::now();
    produce(&bootstrap, &topic, records);
    println!(
        "produced {records} records in {:.2} s; batches of {batch}",
        t.elapsed().as_secs_f64()
    );

    // 1 and 2: pipelines, alternated twice, best of two each.
    let mut best = [Duration::MAX; 2];
    let mut parquet_dir = None;
    for round in 0..2 {
        for (i, sink) in ["parquet", "delta"].into_iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let took = run_pipeline(
                &rt,
                &pipeline_text(&bootstrap, &topic, batch, sink, dir.path()),
            );
            let out = dir.path().join("out");
            let rows = if sink == "parquet" {
                parquet_rows(&out)
            } else {
                delta_rows(&rt, &out).0
            };
            assert_eq!(
                rows, records,
                "{sink} run {round}: {rows} rows for {records} records"
            );
            println!(
                "kafka -> {sink:<8} round {round}: {:>7.2} s  {:>10.0} rows/s",
                took.as_secs_f64(),
                records as f64 / took.as_secs_f64()
            );
            best[i] = best[i].min(took);
            if sink == "parquet" && parquet_dir.is_none() {
                parquet_dir = Some(dir);
            }
        }
    }
    let rate = |d: Duration| records as f64 / d.as_secs_f64();
    println!(
        "kafka -> delta / kafka -> parquet: {:.2} (goal >= 0.80)",
        rate(best[1]) / rate(best[0])
    );

    // 3: the same batches to the Delta sink and to deltalake directly.
    let read = tributary_sinks::parquet::read_dir_batches(
        &parquet_dir.as_ref().unwrap().path().join("out"),
    )
    .unwrap();
    let schema = read[0].schema();
    let whole = concat_batches(&schema, &read).unwrap();
    let batches: Vec<RecordBatch> = (0..records)
        .step_by(batch)
        .map(|o| whole.slice(o, batch.min(records - o)))
        .collect();
    // Parts as the Kafka source streams them (8192 rows).
    let parts = |b: &RecordBatch| -> Vec<RecordBatch> {
        (0..b.num_rows())
            .step_by(8192)
            .map(|o| b.slice(o, 8192.min(b.num_rows() - o)))
            .collect()
    };
    let mut results: Vec<(&str, Duration)> = Vec::new();
    for round in 0..2 {
        for how in ["sink parts", "sink write", "deltalake"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t");
            let took = rt.block_on(async {
                let t = Instant::now();
                match how {
                    "deltalake" => {
                        let url = tributary_sinks::delta::deltalake::ensure_table_uri(
                            path.display().to_string(),
                        )
                        .unwrap();
                        let mut table = DeltaTableBuilder::from_url(url).unwrap().build().unwrap();
                        for (id, b) in batches.iter().enumerate() {
                            table = table
                                .write(vec![b.clone()])
                                .with_save_mode(SaveMode::Append)
                                .with_commit_properties(
                                    CommitProperties::default().with_application_transaction(
                                        Transaction::new("bench", id as i64),
                                    ),
                                )
                                .await
                                .unwrap();
                        }
                    }
                    _ => {
                        let mut s = DeltaSink::new(
                            DeltaConfig::new(path.display().to_string()),
                            Default::default(),
                            Some("bench".into()),
                        );
                        s.open(schema.clone()).await.unwrap();
                        for (id, b) in batches.iter().enumerate() {
                            if how == "sink write" {
                                s.write(id as u64, std::slice::from_ref(b)).await.unwrap();
                            } else {
                                let w = s.as_part_writer().unwrap();
                                w.begin_batch(id as u64, schema.clone()).await.unwrap();
                                for p in parts(b) {
                                    w.write_part(&p).await.unwrap();
                                }
                                w.commit_batch().await.unwrap();
                            }
                        }
                    }
                }
                t.elapsed()
            });
            let (rows, version) = delta_rows(&rt, &path);
            assert_eq!(rows, records, "{how}: {rows} rows");
            assert_eq!(
                version as usize,
                batches.len() - 1,
                "{how}: one commit per batch"
            );
            println!(
                "{how:<11} round {round}: {:>7.2} s  {:>10.0} rows/s",
                took.as_secs_f64(),
                records as f64 / took.as_secs_f64()
            );
            match results.iter_mut().find(|(h, _)| *h == how) {
                Some((_, d)) => *d = (*d).min(took),
                None => results.push((how, took)),
            }
        }
    }
    let get = |h: &str| results.iter().find(|(x, _)| *x == h).unwrap().1;
    let lib = rate(get("deltalake"));
    println!(
        "sink parts / deltalake write: {:.2}; sink write / deltalake write: {:.2} (goal >= 0.95)",
        rate(get("sink parts")) / lib,
        rate(get("sink write")) / lib
    );
}
