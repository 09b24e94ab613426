//! EFO source vs a raw aws-sdk-kinesis SubscribeToShard loop, side by side in one run on the
//! same kinesis-mock stream (`scripts/services/kinesis.sh`; skipped when it is not running).
//!
//! 1. Throughput: N records already in a 2-shard stream, read from TRIM_HORIZON to the last by
//!    (a) the raw loop (one subscription per shard, records counted) and (b) the EFO source
//!    driven like the runtime (latest_offset + read, no trigger pause). Records/s and the ratio.
//! 2. Delivery latency: records produced live (each carrying its send time) while each reader
//!    runs; latency = receive time − send time, p50/p99 for both.
//!
//! Outputs are checked outside the timing (every record exactly once, by content).
//! Run: `cargo bench -p tributary-kinesis --bench efo`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arrow_array::{Array, BinaryArray};
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{
    PutRecordsRequestEntry, ShardIteratorType, StartingPosition, SubscribeToShardEventStream,
};
use aws_sdk_kinesis::Client;
use tributary_kinesis::config::{BaseCredentials, ConnectionSettings};
use tributary_kinesis::efo::consumers;
use tributary_sdk::{
    ConnectorContext, EnvSecretStore, Options, ReadLimit, Secret, Source, SourceFactoryExt,
};

const N: usize = 10_000;
const LIVE_SECONDS: u64 = 8;
const LIVE_PER_100MS: usize = 20;

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

async fn client(endpoint: &str, ca: &str) -> Client {
    let settings = ConnectionSettings {
        region: Some("us-east-1".into()),
        endpoint: Some(endpoint.into()),
        credentials: BaseCredentials::Static {
            access_key: Secret::new("AKIDBENCH"),
            secret_key: Secret::new("bench"),
        },
        assume_role: None,
        ca_file: Some(ca.into()),
    };
    tributary_kinesis::build_client(&settings, &EnvSecretStore)
        .await
        .unwrap()
}

async fn put_batch(c: &Client, stream: &str, values: &[String]) {
    for chunk in values.chunks(500) {
        let records = chunk
            .iter()
            .enumerate()
            .map(|(i, v)| {
                PutRecordsRequestEntry::builder()
                    .partition_key(format!("k{i}"))
                    .data(Blob::new(v.as_bytes()))
                    .build()
                    .unwrap()
            })
            .collect();
        let out = c
            .put_records()
            .stream_name(stream)
            .set_records(Some(records))
            .send()
            .await
            .unwrap();
        assert_eq!(out.failed_record_count(), Some(0));
    }
}

/// Raw loop: one SubscribeToShard per shard from TRIM_HORIZON (or LATEST), until `want`
/// records or `deadline`; returns the data and receive time (µs) of each.
async fn raw_loop(
    c: &Client,
    consumer_arn: &str,
    shards: &[String],
    latest: bool,
    want: usize,
    deadline: Instant,
) -> Vec<(String, i64)> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for shard in shards {
        let (c, arn, shard, tx) = (
            c.clone(),
            consumer_arn.to_string(),
            shard.clone(),
            tx.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let ty = if latest {
                ShardIteratorType::Latest
            } else {
                ShardIteratorType::TrimHorizon
            };
            let mut out = c
                .subscribe_to_shard()
                .consumer_arn(arn)
                .shard_id(shard)
                .starting_position(StartingPosition::builder().r#type(ty).build().unwrap())
                .send()
                .await
                .unwrap();
            while let Ok(Some(ev)) = out.event_stream.recv().await {
                if let SubscribeToShardEventStream::SubscribeToShardEvent(e) = ev {
                    let t = now_us();
                    for r in e.records() {
                        if tx
                            .send((String::from_utf8_lossy(r.data().as_ref()).into_owned(), t))
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
        }));
    }
    drop(tx);
    let mut got = Vec::new();
    while got.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(r)) => got.push(r),
            _ => break,
        }
    }
    for t in tasks {
        t.abort();
    }
    got
}

/// The EFO source driven like the runtime with no trigger pause.
async fn source_loop(
    source: &mut dyn Source,
    want: usize,
    deadline: Instant,
) -> Vec<(String, i64)> {
    let mut at = source.initial_offset().await.unwrap();
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        let end = source.latest_offset(&at, &ReadLimit::All).await.unwrap();
        if end == at {
            continue;
        }
        let batches = source.read(&at, &end).await.unwrap();
        let t = now_us();
        for b in &batches {
            let data = b
                .column_by_name("data")
                .unwrap()
                .as_any()
                .downcast_ref::<BinaryArray>()
                .unwrap();
            for i in 0..data.len() {
                got.push((String::from_utf8_lossy(data.value(i)).into_owned(), t));
            }
        }
        source.commit(&end).await.unwrap();
        at = end;
    }
    got
}

fn check_exact(got: &[(String, i64)], want: &[String], who: &str) {
    let g: BTreeSet<&str> = got.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(got.len(), want.len(), "{who}: every record once");
    assert_eq!(g.len(), want.len(), "{who}: no duplicate");
    assert!(
        want.iter().all(|w| g.contains(w.as_str())),
        "{who}: nothing missing"
    );
}

fn percentiles(got: &[(String, i64)]) -> (f64, f64) {
    let mut lat: Vec<i64> = got
        .iter()
        .map(|(v, t)| t - v.rsplit(':').next().unwrap().parse::<i64>().unwrap())
        .collect();
    lat.sort_unstable();
    let p = |q: f64| lat[((lat.len() as f64 - 1.0) * q) as usize] as f64 / 1000.0;
    (p(0.5), p(0.99))
}

/// Produces LIVE_SECONDS of records (each `live-<i>:<send µs>`), returns them.
async fn produce_live(c: Client, stream: String) -> Vec<String> {
    let mut all = Vec::new();
    let mut i = 0;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(LIVE_SECONDS) {
        let batch: Vec<String> = (0..LIVE_PER_100MS)
            .map(|_| {
                i += 1;
                format!("live-{i}:{}", now_us())
            })
            .collect();
        put_batch(&c, &stream, &batch).await;
        all.extend(batch);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    all
}

fn efo_options(endpoint: &str, ca: &str, stream: &str, initial: &str) -> Options {
    Options::new()
        .with("endpoint", endpoint)
        .with("region", "us-east-1")
        .with("awsAccessKey", "AKIDBENCH")
        .with("awsSecretKey", "bench")
        .with("tls.truststore.location", ca)
        .with("streamName", stream)
        .with("initialPosition", initial)
        .with("consumerMode", "efo")
        .with("consumerName", "bench-source")
        .with("minFetchPeriod", "50ms")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (Ok(endpoint), Ok(ca)) = (
        std::env::var("TRIBUTARY_KINESIS_ENDPOINT"),
        std::env::var("TRIBUTARY_KINESIS_CA"),
    ) else {
        eprintln!("skipped: TRIBUTARY_KINESIS_ENDPOINT / TRIBUTARY_KINESIS_CA not set (scripts/services/kinesis.sh start)");
        return;
    };
    let c = client(&endpoint, &ca).await;
    let stream = format!("bench-efo-{}", std::process::id());
    c.create_stream()
        .stream_name(&stream)
        .shard_count(2)
        .send()
        .await
        .unwrap();
    loop {
        let d = c
            .describe_stream_summary()
            .stream_name(&stream)
            .send()
            .await
            .unwrap();
        if d.stream_description_summary()
            .unwrap()
            .stream_status()
            .as_str()
            == "ACTIVE"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let arn = consumers::stream_arn(&c, &consumers::stream_ref(&stream))
        .await
        .unwrap();
    let shards: Vec<String> = c
        .list_shards()
        .stream_name(&stream)
        .send()
        .await
        .unwrap()
        .shards()
        .iter()
        .map(|s| s.shard_id().to_string())
        .collect();
    let raw_consumer = consumers::register(&c, &arn, "bench-raw", Duration::from_secs(30))
        .await
        .unwrap()
        .consumer;
    let values: Vec<String> = (0..N).map(|i| format!("rec-{i}:0")).collect();
    put_batch(&c, &stream, &values).await;

    // 1. Throughput over the same backlog.
    let t = Instant::now();
    let raw = raw_loop(
        &c,
        &raw_consumer.arn,
        &shards,
        false,
        N,
        Instant::now() + Duration::from_secs(300),
    )
    .await;
    let raw_s = t.elapsed().as_secs_f64();
    let ctx = ConnectorContext::default();
    let mut source = tributary_kinesis::KinesisSourceFactory
        .create(&efo_options(&endpoint, &ca, &stream, "trim_horizon"), &ctx)
        .unwrap();
    let t = Instant::now();
    let src = source_loop(
        source.as_mut(),
        N,
        Instant::now() + Duration::from_secs(300),
    )
    .await;
    let src_s = t.elapsed().as_secs_f64();
    source.stop().await.unwrap();
    check_exact(&raw, &values, "raw loop");
    check_exact(&src, &values, "EFO source");
    let (raw_rps, src_rps) = (N as f64 / raw_s, N as f64 / src_s);
    println!("throughput over {N} records (2 shards, kinesis-mock, TLS+HTTP/2):");
    println!("  raw SubscribeToShard loop: {raw_rps:>9.0} records/s ({raw_s:.2} s)");
    println!("  EFO source (plan+read)   : {src_rps:>9.0} records/s ({src_s:.2} s)  ratio {:.2}x (includes consumer registration check and stream describe per plan)", src_rps / raw_rps);

    // 2. Delivery latency of live records, one reader at a time on the same stream.
    let deadline = || Instant::now() + Duration::from_secs(LIVE_SECONDS + 5);
    let producer = tokio::spawn(produce_live(c.clone(), stream.clone()));
    let raw_live = raw_loop(&c, &raw_consumer.arn, &shards, true, usize::MAX, deadline()).await;
    let sent_raw = producer.await.unwrap();
    let mut source = tributary_kinesis::KinesisSourceFactory
        .create(&efo_options(&endpoint, &ca, &stream, "latest"), &ctx)
        .unwrap();
    let producer = tokio::spawn(async move {
        // Let the source subscribe first (as the raw loop did).
        tokio::time::sleep(Duration::from_millis(500)).await;
        produce_live(c, stream).await
    });
    let src_live = source_loop(source.as_mut(), usize::MAX, deadline()).await;
    let sent_src = producer.await.unwrap();
    source.stop().await.unwrap();
    let raw_live: Vec<_> = raw_live
        .into_iter()
        .filter(|r| r.0.starts_with("live-"))
        .collect();
    let src_live: Vec<_> = src_live
        .into_iter()
        .filter(|r| r.0.starts_with("live-") && sent_src.contains(&r.0))
        .collect();
    check_exact(&raw_live, &sent_raw, "raw loop (live)");
    check_exact(&src_live, &sent_src, "EFO source (live)");
    let (r50, r99) = percentiles(&raw_live);
    let (s50, s99) = percentiles(&src_live);
    println!(
        "delivery latency of {} live records ({} per 100 ms):",
        sent_raw.len(),
        LIVE_PER_100MS
    );
    println!("  raw SubscribeToShard loop: p50 {r50:>7.1} ms  p99 {r99:>7.1} ms");
    println!("  EFO source (plan+read)   : p50 {s50:>7.1} ms  p99 {s99:>7.1} ms");
}
