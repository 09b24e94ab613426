//! Resident memory of the polling source over a long run, `fetchBufferSize` at its default
//! (256 MB) and every other option at its default too: is the source's memory flat while it
//! reads a large stream?
//!
//! Against kinesalite (`scripts/services/kinesis.sh` starts it; kinesis-mock serves about 231
//! records/s, too slow for this). A child process (this binary again, so its allocations do not
//! count) fills `KINESIS_RSS_RECORDS` records (default 1,000,000; `KINESIS_RSS_BYTES` bytes of
//! data each, default 100) into `KINESIS_RSS_SHARDS` shards (default 4) with PutRecords of 500
//! records, 8 calls in flight. Then the source, driven like the runtime (`latest_offset` plans,
//! `read` returns the planned range, a null sink drops it, `commit`), reads from trim_horizon
//! until every record was read. A sampler reads this process's VmRSS from `/proc/self/status`
//! every second, with the records read so far and the source's `prefetch.heldBytes` at the last
//! plan (read-ahead buffers plus the planned batch); the curve,
//! the peak and the growth between a quarter of the records and the end are printed. Record
//! count and bytes are checked at the end. The fill is cut at 10 minutes (what was filled is
//! read and reported).
//!
//! Only under `cargo bench -p tributary-kinesis --bench polling_rss` (a several-minute run):
//! without `--bench` (e.g. `cargo test --all-targets`) it prints how to run it and exits.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Array, BinaryArray};
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{PutRecordsRequestEntry, StreamStatus};
use aws_sdk_kinesis::Client;
use futures::StreamExt;
use tributary_kinesis::config::{BaseCredentials, ConnectionSettings};
use tributary_kinesis::KinesisSourceFactory;
use tributary_sdk::{
    ConnectorContext, EnvSecretStore, Options, ReadLimit, Secret, SourceFactoryExt,
};

const FILL_CONCURRENCY: usize = 8;
const FILL_LIMIT: Duration = Duration::from_secs(600);
/// Set in the child process: the stream to fill.
const FILL_ENV: &str = "KINESIS_RSS_FILL_STREAM";

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

async fn client(endpoint: &str) -> Client {
    let settings = ConnectionSettings {
        region: Some("us-east-1".into()),
        endpoint: Some(endpoint.into()),
        credentials: BaseCredentials::Static {
            access_key: Secret::new("AKIDBENCH"),
            secret_key: Secret::new("bench"),
        },
        assume_role: None,
        ca_file: None,
    };
    tributary_kinesis::build_client(&settings, &EnvSecretStore)
        .await
        .unwrap()
}

/// The child: fills `n` records of `size` bytes, prints how many it put (cut at FILL_LIMIT).
async fn fill(endpoint: &str, stream: &str, n: usize, size: usize) {
    let c = client(endpoint).await;
    let t = Instant::now();
    let calls: Vec<_> = (0..n)
        .step_by(500)
        .map(|sent| {
            let c = c.clone();
            let stream = stream.to_string();
            async move {
                if t.elapsed() > FILL_LIMIT {
                    return 0;
                }
                let batch = (n - sent).min(500);
                let entries: Vec<_> = (0..batch)
                    .map(|i| {
                        let mut data = format!("{:012}", sent + i).into_bytes();
                        data.resize(size.max(12), b'x');
                        PutRecordsRequestEntry::builder()
                            .partition_key(format!("k{}", sent + i))
                            .data(Blob::new(data))
                            .build()
                            .unwrap()
                    })
                    .collect();
                let out = c
                    .put_records()
                    .stream_name(&stream)
                    .set_records(Some(entries))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(
                    out.failed_record_count().unwrap_or(0),
                    0,
                    "PutRecords failures"
                );
                batch
            }
        })
        .collect();
    let put: usize = futures::stream::iter(calls)
        .buffer_unordered(FILL_CONCURRENCY)
        .collect::<Vec<usize>>()
        .await
        .into_iter()
        .sum();
    println!("{put}");
    eprintln!(
        "filled {put} records x {size} B in {:.1} s ({:.0} records/s, {FILL_CONCURRENCY} PutRecords calls in flight)",
        t.elapsed().as_secs_f64(),
        put as f64 / t.elapsed().as_secs_f64()
    );
}

async fn create_stream(c: &Client, stream: &str, shards: i32) {
    c.create_stream()
        .stream_name(stream)
        .shard_count(shards)
        .send()
        .await
        .unwrap();
    loop {
        let d = c
            .describe_stream_summary()
            .stream_name(stream)
            .send()
            .await
            .unwrap();
        if d.stream_description_summary().unwrap().stream_status() == &StreamStatus::Active {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One sample of the curve.
#[derive(Debug, Clone, Copy)]
struct Sample {
    secs: f64,
    records: u64,
    rss_kib: u64,
    held_bytes: i64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Ok(endpoint) = std::env::var("TRIBUTARY_KINESALITE_ENDPOINT") else {
        eprintln!(
            "skipped: TRIBUTARY_KINESALITE_ENDPOINT is not set (scripts/services/kinesis.sh start)"
        );
        return;
    };
    let n = env_num("KINESIS_RSS_RECORDS", 1_000_000);
    let size = env_num("KINESIS_RSS_BYTES", 100);
    if let Ok(stream) = std::env::var(FILL_ENV) {
        fill(&endpoint, &stream, n, size).await;
        return;
    }
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("polling_rss is a several-minute measurement: run it with `cargo bench -p tributary-kinesis --bench polling_rss`");
        return;
    }
    let shards = env_num("KINESIS_RSS_SHARDS", 4) as i32;
    let c = client(&endpoint).await;
    let stream = format!("rss-{}", std::process::id());
    create_stream(&c, &stream, shards).await;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(FILL_ENV, &stream)
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the fill process failed");
    let filled: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    if filled < n {
        println!("the fill was cut at {FILL_LIMIT:?}: {filled} of {n} records are in the stream");
    }

    let options = Options::new()
        .with("endpoint", endpoint.as_str())
        .with("region", "us-east-1")
        .with("awsAccessKey", "AKIDBENCH")
        .with("awsSecretKey", "bench")
        .with("streamName", stream.as_str())
        .with("initialPosition", "trim_horizon");
    let mut source = KinesisSourceFactory
        .create(&options, &ConnectorContext::default())
        .unwrap();
    let records = Arc::new(AtomicU64::new(0));
    let held = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let rss_start = rss_kib();
    let sampler = {
        let (records, held, done) = (records.clone(), held.clone(), done.clone());
        tokio::spawn(async move {
            let mut curve = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            while !done.load(Ordering::SeqCst) {
                tick.tick().await;
                curve.push(Sample {
                    secs: t0.elapsed().as_secs_f64(),
                    records: records.load(Ordering::SeqCst),
                    rss_kib: rss_kib(),
                    held_bytes: held.load(Ordering::SeqCst),
                });
            }
            curve
        })
    };
    let mut at = source.initial_offset().await.unwrap();
    let (mut rows, mut bytes, mut batches) = (0usize, 0usize, 0usize);
    while rows < filled {
        let end = source.latest_offset(&at, &ReadLimit::All).await.unwrap();
        // Held now: the read-ahead buffers plus the planned batch, before `read` hands it out.
        if let Some(h) = source
            .metrics()
            .get("prefetch.heldBytes")
            .and_then(|v| v.as_i64())
        {
            held.store(h, Ordering::SeqCst);
        }
        if end == at {
            continue;
        }
        let read = source.read(&at, &end).await.unwrap();
        for b in &read {
            let d = b
                .column_by_name("data")
                .unwrap()
                .as_any()
                .downcast_ref::<BinaryArray>()
                .unwrap();
            rows += d.len();
            bytes += d.value_data().len();
        }
        drop(read); // the null sink
        batches += 1;
        records.store(rows as u64, Ordering::SeqCst);
        source.commit(&end).await.unwrap();
        at = end;
    }
    let took = t0.elapsed();
    let peak_held = source
        .metrics()
        .get("prefetch.peakHeldBytes")
        .and_then(|v| v.as_i64())
        .unwrap_or(-1);
    done.store(true, Ordering::SeqCst);
    let mut curve = sampler.await.unwrap();
    curve.push(Sample {
        secs: took.as_secs_f64(),
        records: rows as u64,
        rss_kib: rss_kib(),
        held_bytes: 0,
    });
    source.stop().await.unwrap();
    let _ = c.delete_stream().stream_name(&stream).send().await;
    assert_eq!(rows, filled, "every record read once");
    assert_eq!(bytes, filled * size.max(12), "every byte read");

    println!(
        "polling source, defaults (fetchBufferSize 256 MB, minFetchPeriod 400 ms, maxRecordsPerFetch 10000), kinesalite, {shards} shards:"
    );
    println!(
        "read {rows} records x {} B in {:.1} s ({:.0} records/s, {batches} batches); prefetch.peakHeldBytes {peak_held}",
        size.max(12),
        took.as_secs_f64(),
        rows as f64 / took.as_secs_f64()
    );
    println!("RSS curve (one sample a second):");
    println!(
        "  {:>7} {:>9} {:>9} {:>12}",
        "t (s)", "records", "RSS MiB", "held bytes"
    );
    for s in &curve {
        println!(
            "  {:>7.1} {:>9} {:>9.1} {:>12}",
            s.secs,
            s.records,
            s.rss_kib as f64 / 1024.0,
            s.held_bytes
        );
    }
    let peak = curve.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let rss_at = |frac: f64| {
        curve
            .iter()
            .find(|s| s.records as f64 >= frac * rows as f64)
            .map_or(0, |s| s.rss_kib)
    };
    let (q, h, e) = (rss_at(0.25), rss_at(0.5), rss_at(1.0));
    println!(
        "RSS: before the source {:.1} MiB, peak {:.1} MiB; at 25% of the records {:.1} MiB, at 50% {:.1} MiB, at the end {:.1} MiB (growth 25%->end {:+.1} MiB over {} records)",
        rss_start as f64 / 1024.0,
        peak as f64 / 1024.0,
        q as f64 / 1024.0,
        h as f64 / 1024.0,
        e as f64 / 1024.0,
        (e as f64 - q as f64) / 1024.0,
        rows - rows / 4
    );
}
