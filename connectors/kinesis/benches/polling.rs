//! Polling source against a raw `aws-sdk-kinesis` GetRecords loop on the same stream of
//! kinesis-mock (plain HTTP endpoint from `scripts/services/kinesis.sh`), in one run, plus the
//! resident memory of the source over the run with `fetchBufferSize` at its default.
//!
//! The stream is filled with parallel PutRecords calls, then read by: the raw loop (one task per
//! shard, GetRecords of 10,000 until caught up); the source driven like the runtime
//! (`latest_offset` plans, `read` returns the planned range, a null sink drops it) with
//! `minFetchPeriod=0` and with its defaults; and a fresh source reading the whole logged range
//! in one `read` (the replay path). On kinesis-mock the server is the bottleneck (a Node.js
//! process on the same 2 cores): the ratio is what matters, not the absolute rate.
//!
//! Beside wall time, each side's CPU (this process's utime + stime, from `/proc/self/stat`; the
//! server is another process) gives records per CPU-second: records/s per core of the client,
//! which the slow server does not hide.
//!
//! `cargo bench -p tributary-kinesis --bench polling` (`KINESIS_BENCH_RECORDS`, default 200000;
//! `KINESIS_BENCH_SHARDS`, default 4; `KINESIS_BENCH_REPLAY_OPTIONS`, `k=v,k=v` options of the
//! replaying source, e.g. `maxFetchRate=2`). Record counts and contents are checked outside the timing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use arrow_array::{Array, BinaryArray, RecordBatch};
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{PutRecordsRequestEntry, ShardIteratorType, StreamStatus};
use aws_sdk_kinesis::Client;
use futures::StreamExt;
use tributary_kinesis::config::{BaseCredentials, ConnectionSettings};
use tributary_kinesis::KinesisSourceFactory;
use tributary_sdk::{
    ConnectorContext, EnvSecretStore, Offset, Options, ReadLimit, Secret, SourceFactoryExt,
};

/// PutRecords calls in flight while filling the stream.
const FILL_CONCURRENCY: usize = 8;

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

async fn fill(client: &Client, stream: &str, shards: i32, n: usize) {
    client
        .create_stream()
        .stream_name(stream)
        .shard_count(shards)
        .send()
        .await
        .unwrap();
    loop {
        let d = client
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
    // PutRecords calls of 500 records, `FILL_CONCURRENCY` in flight at once.
    let payload = vec![b'x'; 100];
    let calls = (0..n).step_by(500).map(|sent| {
        let batch = (n - sent).min(500);
        let entries: Vec<_> = (0..batch)
            .map(|i| {
                PutRecordsRequestEntry::builder()
                    .partition_key(format!("k{}", sent + i))
                    .data(Blob::new(payload.clone()))
                    .build()
                    .unwrap()
            })
            .collect();
        let req = client
            .put_records()
            .stream_name(stream)
            .set_records(Some(entries));
        async move {
            let out = req.send().await.unwrap();
            assert_eq!(
                out.failed_record_count().unwrap_or(0),
                0,
                "PutRecords failures while filling"
            );
        }
    });
    // Collected first: a lazy `map` closure inside a spawned future trips a known
    // higher-ranked lifetime limitation of the compiler.
    let calls: Vec<_> = calls.collect();
    futures::stream::iter(calls)
        .buffer_unordered(FILL_CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
}

/// Raw GetRecords loop, one task per shard at once (as the source reads its shards),
/// TRIM_HORIZON until caught up; returns records and bytes.
async fn raw_loop(client: &Client, stream: &str) -> (usize, usize) {
    let shards = client
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .unwrap();
    let per_shard = shards.shards().iter().map(|s| async move {
        let mut total = (0, 0);
        let mut it = client
            .get_shard_iterator()
            .stream_name(stream)
            .shard_id(s.shard_id())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .unwrap()
            .shard_iterator()
            .map(str::to_string);
        while let Some(i) = it {
            let out = client
                .get_records()
                .shard_iterator(i)
                .limit(10_000)
                .send()
                .await
                .unwrap();
            total.0 += out.records().len();
            total.1 += out
                .records()
                .iter()
                .map(|r| r.data().as_ref().len())
                .sum::<usize>();
            if out.records().is_empty() && out.millis_behind_latest().unwrap_or(0) == 0 {
                break;
            }
            it = out.next_shard_iterator().map(str::to_string);
        }
        total
    });
    futures::future::join_all(per_shard)
        .await
        .into_iter()
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

fn options(endpoint: &str, stream: &str, extra: &[(&str, &str)]) -> Options {
    let mut o = Options::new()
        .with("endpoint", endpoint)
        .with("region", "us-east-1")
        .with("awsAccessKey", "AKIDBENCH")
        .with("awsSecretKey", "bench")
        .with("streamName", stream)
        .with("initialPosition", "trim_horizon");
    for (k, v) in extra {
        o.set(*k, *v);
    }
    o
}

fn count(batches: &[RecordBatch]) -> (usize, usize) {
    batches.iter().fold((0, 0), |(rows, bytes), b| {
        let d = b
            .column_by_name("data")
            .unwrap()
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        (rows + b.num_rows(), bytes + d.value_data().len())
    })
}

/// What one run of the source measured.
struct SourceRun {
    rows: usize,
    bytes: usize,
    peak_rss_kib: u64,
    total: Duration,
    planning: Duration,
    reading: Duration,
    batches: usize,
    start: Offset,
    end: Offset,
}

/// The source driven like the runtime (plan with `latest_offset`, `read` the planned range,
/// hand it to a null sink, commit), trim_horizon until every record was read. Counting rows
/// and bytes is outside the timed calls.
async fn source_loop(endpoint: &str, stream: &str, n: usize, extra: &[(&str, &str)]) -> SourceRun {
    let mut source = KinesisSourceFactory
        .create(
            &options(endpoint, stream, extra),
            &ConnectorContext::default(),
        )
        .unwrap();
    let t0 = Instant::now();
    let start = source.initial_offset().await.unwrap();
    let mut at = start.clone();
    let mut run = SourceRun {
        rows: 0,
        bytes: 0,
        peak_rss_kib: 0,
        total: Duration::ZERO,
        planning: Duration::ZERO,
        reading: Duration::ZERO,
        batches: 0,
        start: start.clone(),
        end: start,
    };
    let mut counting = Duration::ZERO;
    while run.rows < n {
        let t = Instant::now();
        let end = source.latest_offset(&at, &ReadLimit::All).await.unwrap();
        run.planning += t.elapsed();
        if end == at {
            // Nothing new yet: wait as a trigger does before asking again (Spark's
            // spark.sql.streaming.pollingDelay, 10 ms; the runtime waits 500 ms). Asking again at
            // once spun this loop on the source's prefetch buffer and made it 18x the raw loop's
            // CPU, all of it the bench's own spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let t = Instant::now();
        let batches = source.read(&at, &end).await.unwrap();
        run.reading += t.elapsed();
        let t = Instant::now();
        let (rows, bytes) = count(&batches);
        run.rows += rows;
        run.bytes += bytes;
        run.batches += 1;
        run.peak_rss_kib = run.peak_rss_kib.max(rss_kib());
        drop(batches); // the null sink
        counting += t.elapsed();
        source.commit(&end).await.unwrap();
        at = end;
    }
    run.total = t0.elapsed() - counting;
    run.end = at;
    source.stop().await.unwrap();
    run
}

/// A fresh source reading the whole logged range `[start, end)` in one `read` (the replay
/// path: every shard fetched up to its end sequence number).
async fn replay(
    endpoint: &str,
    stream: &str,
    start: &Offset,
    end: &Offset,
) -> (usize, usize, Duration) {
    // Extra options of the replaying source for experiments: KINESIS_BENCH_REPLAY_OPTIONS=k=v,k=v.
    let extra = std::env::var("KINESIS_BENCH_REPLAY_OPTIONS").unwrap_or_default();
    let mut opts: Vec<(&str, &str)> = vec![("minFetchPeriod", "0")];
    opts.extend(extra.split(',').filter_map(|kv| kv.split_once('=')));
    let mut source = KinesisSourceFactory
        .create(
            &options(endpoint, stream, &opts),
            &ConnectorContext::default(),
        )
        .unwrap();
    let t = Instant::now();
    let batches = source.read(start, end).await.unwrap();
    let took = t.elapsed();
    let (rows, bytes) = count(&batches);
    source.stop().await.unwrap();
    (rows, bytes, took)
}

/// This process's CPU time so far (zero where it cannot be read).
fn process_cpu() -> Duration {
    tributary_proc_cpu::process_cpu().unwrap_or_default()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Ok(endpoint) = std::env::var("TRIBUTARY_KINESIS_PLAIN_ENDPOINT") else {
        eprintln!("TRIBUTARY_KINESIS_PLAIN_ENDPOINT is not set (scripts/services/kinesis.sh start); skipping");
        return;
    };
    let n: usize = std::env::var("KINESIS_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let shards: i32 = std::env::var("KINESIS_BENCH_SHARDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let c = client(&endpoint).await;
    let stream = format!("bench-{}", std::process::id());
    let t = Instant::now();
    fill(&c, &stream, shards, n).await;
    let fill_s = t.elapsed().as_secs_f64();
    println!(
        "filled {n} records x 100 B into {shards} shards in {fill_s:.1} s ({:.0} records/s, {FILL_CONCURRENCY} PutRecords calls in flight)",
        n as f64 / fill_s
    );

    let t = Instant::now();
    let cpu0 = process_cpu();
    let (raw_n, raw_b) = raw_loop(&c, &stream).await;
    let raw = t.elapsed();
    let raw_cpu = process_cpu().saturating_sub(cpu0);
    assert_eq!(raw_n, n, "raw loop read every record");

    let rss_before = rss_kib();
    let cpu0 = process_cpu();
    let fast = source_loop(&endpoint, &stream, n, &[("minFetchPeriod", "0")]).await;
    let fast_cpu = process_cpu().saturating_sub(cpu0);
    assert_eq!(
        (fast.rows, fast.bytes),
        (raw_n, raw_b),
        "source read the same records"
    );
    let cpu0 = process_cpu();
    let (rep_n, rep_b, rep) = replay(&endpoint, &stream, &fast.start, &fast.end).await;
    let rep_cpu = process_cpu().saturating_sub(cpu0);
    assert_eq!(
        (rep_n, rep_b),
        (raw_n, raw_b),
        "replay read the same records"
    );
    let cpu0 = process_cpu();
    let def = source_loop(&endpoint, &stream, n, &[]).await;
    let def_cpu = process_cpu().saturating_sub(cpu0);
    assert_eq!(
        (def.rows, def.bytes),
        (raw_n, raw_b),
        "source (defaults) read the same records"
    );

    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    let ratio = |d: Duration| rate(d) / rate(raw);
    println!(
        "raw GetRecords loop (1 task/shard)   : {:>9.0} records/s ({raw:.2?})",
        rate(raw)
    );
    println!(
        "source plan+read, minFetchPeriod=0   : {:>9.0} records/s ({:.2?}, {} batches; planning {:.2?}, read of planned ranges {:.2?})  ratio {:.2}x",
        rate(fast.total), fast.total, fast.batches, fast.planning, fast.reading, ratio(fast.total)
    );
    println!(
        "source read of the whole logged range: {:>9.0} records/s ({rep:.2?}, one read, replay path)  ratio {:.2}x",
        rate(rep), ratio(rep)
    );
    println!(
        "source plan+read, defaults (400 ms)  : {:>9.0} records/s ({:.2?}, {} batches)  ratio {:.2}x",
        rate(def.total), def.total, def.batches, ratio(def.total)
    );
    println!(
        "RSS before source {rss_before} KiB, peak during source {} KiB (minFetchPeriod=0), {} KiB (defaults)",
        fast.peak_rss_kib, def.peak_rss_kib
    );
    let per_cpu = |c: Duration| n as f64 / c.as_secs_f64().max(1e-9);
    println!(
        "client CPU: raw loop {raw_cpu:.2?} ({:.0} records per CPU-second), source minFetchPeriod=0 {fast_cpu:.2?} ({:.0}, ratio {:.2}x), replay {rep_cpu:.2?} ({:.0}, ratio {:.2}x), defaults {def_cpu:.2?} ({:.0}, ratio {:.2}x)",
        per_cpu(raw_cpu),
        per_cpu(fast_cpu),
        per_cpu(fast_cpu) / per_cpu(raw_cpu),
        per_cpu(rep_cpu),
        per_cpu(rep_cpu) / per_cpu(raw_cpu),
        per_cpu(def_cpu),
        per_cpu(def_cpu) / per_cpu(raw_cpu)
    );
    let _ = c.delete_stream().stream_name(&stream).send().await;
}
