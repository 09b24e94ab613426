//! The Delta sink against deltalake's own writer and against the Parquet sink, side by side in
//! one run.
//!
//! Each round writes the same micro-batches (Kafka-shaped rows: key, value, topic, partition,
//! offset, timestamp) to a fresh location three ways, in rotating order:
//!
//! - `delta sink`: `DeltaSink::write(batch_id, ..)` (schema check, `txn` action, retry loop);
//! - `deltalake`: `DeltaTable::write(..)` in append mode with the same writer properties, one
//!   commit per batch and nothing else — the library underneath;
//! - `parquet sink`: the crate's Parquet directory sink (snappy, like Delta's default).
//!
//! Outputs are checked after the timed part (rows read back from each table/directory). The
//! medians and the ratios are printed at the end.
//!
//! `CARGO_TARGET_DIR=target/df cargo bench -p tributary-sinks --features delta --bench delta_write`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{
    ArrayRef, BinaryArray, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use tributary_sdk::{ConnectorContext, Options, Sink, SinkFactoryExt};
use tributary_sinks::delta::deltalake::datafusion::prelude::SessionContext;
use tributary_sinks::delta::deltalake::parquet::basic::Compression;
use tributary_sinks::delta::deltalake::parquet::file::properties::WriterProperties;
use tributary_sinks::delta::deltalake::protocol::SaveMode;
use tributary_sinks::delta::deltalake::{ensure_table_uri, DeltaTable};
use tributary_sinks::delta::{DeltaConfig, DeltaSink};
use tributary_sinks::ParquetSinkFactory;

const BATCHES: u64 = 20;
const ROWS: usize = 50_000;
const ROUNDS: usize = 5;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
        Field::new("topic", DataType::Utf8, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
    ]))
}

fn batch(b: u64) -> RecordBatch {
    let first = i64::try_from(b).unwrap() * ROWS as i64;
    let offsets: Vec<i64> = (first..first + ROWS as i64).collect();
    let keys: Vec<Vec<u8>> = offsets
        .iter()
        .map(|o| format!("user-{}", o % 9973).into_bytes())
        .collect();
    let values: Vec<Vec<u8>> = offsets
        .iter()
        .map(|o| {
            format!(
                "{{\"id\":{o},\"amount\":{:.2},\"currency\":\"EUR\",\"note\":\"payment {o} of the day\"}}",
                (o % 1000) as f64 * 1.25
            )
            .into_bytes()
        })
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from_iter_values(keys.iter())),
        Arc::new(BinaryArray::from_iter_values(values.iter())),
        Arc::new(StringArray::from(vec!["payments"; ROWS])),
        Arc::new(Int32Array::from(
            offsets.iter().map(|o| (o % 8) as i32).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(offsets.clone())),
        Arc::new(
            TimestampMillisecondArray::from(
                offsets
                    .iter()
                    .map(|o| 1_700_000_000_000 + o)
                    .collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

async fn through_delta_sink(path: &Path, batches: &[RecordBatch]) {
    let mut sink = DeltaSink::new(
        DeltaConfig::new(path.display().to_string()),
        Default::default(),
        Some("bench-checkpoint".into()),
    );
    sink.open(schema()).await.unwrap();
    for (id, b) in batches.iter().enumerate() {
        sink.write(id as u64, std::slice::from_ref(b))
            .await
            .unwrap();
    }
    sink.stop().await.unwrap();
}

async fn through_deltalake(path: &Path, batches: &[RecordBatch]) {
    let url = ensure_table_uri(path.display().to_string()).unwrap();
    let mut table = DeltaTable::try_from_url(url).await.unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    for b in batches {
        table = table
            .write(vec![b.clone()])
            .with_save_mode(SaveMode::Append)
            .with_writer_properties(props.clone())
            .await
            .unwrap();
    }
}

async fn through_parquet_sink(path: &Path, batches: &[RecordBatch]) {
    let options = Options::new()
        .with("path", path.display().to_string())
        .with("compression", "snappy");
    let mut sink = ParquetSinkFactory
        .create(&options, &ConnectorContext::default())
        .unwrap();
    sink.open(schema()).await.unwrap();
    for (id, b) in batches.iter().enumerate() {
        sink.write(id as u64, std::slice::from_ref(b))
            .await
            .unwrap();
    }
    sink.stop().await.unwrap();
}

async fn delta_rows(path: &Path) -> (usize, Option<i64>) {
    let url = ensure_table_uri(path.display().to_string()).unwrap();
    let table = DeltaTable::try_from_url(url).await.unwrap();
    let provider = table.table_provider().await.unwrap();
    let rows = SessionContext::new()
        .read_table(provider)
        .unwrap()
        .count()
        .await
        .unwrap();
    let txn = table
        .snapshot()
        .unwrap()
        .transaction_version(table.log_store().as_ref(), "bench-checkpoint")
        .await
        .unwrap();
    (rows, txn)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = (0..BATCHES).map(batch).collect();
    let total = BATCHES as usize * ROWS;
    let names = ["delta sink", "deltalake", "parquet sink"];
    let mut times: [Vec<Duration>; 3] = Default::default();
    for round in 0..ROUNDS + 1 {
        for k in 0..3 {
            let which = (round + k) % 3;
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t");
            let start = Instant::now();
            rt.block_on(async {
                match which {
                    0 => through_delta_sink(&path, &batches).await,
                    1 => through_deltalake(&path, &batches).await,
                    _ => through_parquet_sink(&path, &batches).await,
                }
            });
            let elapsed = start.elapsed();
            // Outputs checked outside the timing.
            match which {
                0 => assert_eq!(
                    rt.block_on(delta_rows(&path)),
                    (total, Some(BATCHES as i64 - 1))
                ),
                1 => assert_eq!(rt.block_on(delta_rows(&path)).0, total),
                _ => assert_eq!(
                    tributary_sinks::parquet::read_dir_rows(&path).unwrap(),
                    total
                ),
            }
            if round > 0 {
                times[which].push(elapsed); // round 0 warms up
            }
        }
    }
    println!("{BATCHES} batches x {ROWS} rows, median of {ROUNDS} rounds:");
    let medians: Vec<Duration> = times.iter().cloned().map(median).collect();
    for (name, m) in names.iter().zip(&medians) {
        println!(
            "  {name:<13} {:>8.1} ms  {:>10.0} rows/s",
            m.as_secs_f64() * 1e3,
            total as f64 / m.as_secs_f64()
        );
    }
    let rate = |i: usize| total as f64 / medians[i].as_secs_f64();
    println!(
        "  delta sink / deltalake writer: {:.3}x (goal >= 0.95x)",
        rate(0) / rate(1)
    );
    println!("  delta sink / parquet sink:     {:.3}x", rate(0) / rate(2));
}
