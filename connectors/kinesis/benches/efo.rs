//! EFO source vs a raw aws-sdk-kinesis SubscribeToShard loop, side by side in one run on the
//! same kinesis-mock stream (`scripts/services/kinesis.sh`; skipped when it is not running).
//!
//! 1. Throughput: N records already in a 2-shard stream (filled with parallel PutRecords calls
//!    on kinesis-mock's plain port), read from TRIM_HORIZON to the last by (a) the raw loop,
//!    (b) the EFO source driven like the micro-batch runtime (latest_offset + read, no trigger
//!    pause) and (c) the EFO source's real-time read (`start_stream` into a bounded chunk
//!    queue, as the `realTime` trigger drives it). Records/s and the ratios.
//! 2. Delivery latency: records produced live (each carrying its send time) while each reader
//!    runs; latency = receive time − send time, p50/p99 for the three.
//!
//! Like with like: every reader starts from what the source is given — the TLS endpoint, the
//! stream name and the name of an ACTIVE consumer registered before any timing (one consumer
//! per reader) — and its timing includes building its own client. The raw loop then calls
//! DescribeStreamSummary, DescribeStreamConsumer, ListShards and one SubscribeToShard per shard
//! at once; the source calls DescribeStreamSummary and ListShards at once, then
//! DescribeStreamConsumer and ListStreamConsumers (its leak report) at once, then one
//! SubscribeToShard per shard at once; plan+read also describes the stream on each `read` and
//! refreshes the shard list each second. Registering a new consumer is timed on its own (a
//! one-off cost of a new pipeline). Live reads start at AT_TIMESTAMP now on both sides (what
//! `initialPosition = latest` subscribes with). Set `RUST_LOG=tributary_kinesis=debug` to see
//! where the source's start goes.
//!
//! kinesis-mock (one Node.js process sharing the 2 cores) is the bottleneck for all three
//! readers: the ratio is what matters. It takes about 2 s to open a subscription and pushes a
//! backlog of up to 10,000 records per event, for every reader alike.
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
use futures::StreamExt;
use tributary_kinesis::config::{BaseCredentials, ConnectionSettings};
use tributary_kinesis::efo::consumers;
use tributary_sdk::{
    chunk_queue, ConnectorContext, EnvSecretStore, Options, ReadLimit, Secret, Source,
    SourceFactoryExt,
};

/// Backlog size (`KINESIS_BENCH_EFO_RECORDS`, default 20,000: kinesis-mock pushes
/// SubscribeToShard events slowly, see the module docs).
fn backlog_size() -> usize {
    std::env::var("KINESIS_BENCH_EFO_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}
/// The consumers of the plan+read and the streaming source (registered before the timing, as
/// the raw loop's is; one each, so that no run finds the previous run's subscription still
/// open on the server — kinesis-mock keeps it a few seconds and answers ResourceInUse).
const SOURCE_CONSUMER: &str = "bench-source";
const STREAM_CONSUMER: &str = "bench-stream";
/// PutRecords calls in flight while filling the backlog.
const FILL_CONCURRENCY: usize = 4;
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

/// The client that fills the stream and produces live records, on kinesis-mock's plain HTTP
/// port (same server, same streams): kinesis-mock shares 2 cores with everything else, and
/// TLS connections under a fill could take longer than the SDK's 3.1 s connect timeout or be
/// dropped. Long connect timeout, retries.
async fn setup_client(plain_endpoint: &str) -> Client {
    let settings = ConnectionSettings {
        region: Some("us-east-1".into()),
        endpoint: Some(plain_endpoint.into()),
        credentials: BaseCredentials::Static {
            access_key: Secret::new("AKIDBENCH"),
            secret_key: Secret::new("bench"),
        },
        assume_role: None,
        ca_file: None,
    };
    let c = tributary_kinesis::build_client(&settings, &EnvSecretStore)
        .await
        .unwrap();
    let conf = c
        .config()
        .to_builder()
        .timeout_config(
            aws_sdk_kinesis::config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(30))
                .build(),
        )
        .retry_config(aws_sdk_kinesis::config::retry::RetryConfig::standard().with_max_attempts(10))
        .build();
    Client::from_conf(conf)
}

async fn put_batch(c: &Client, stream: &str, values: &[String]) {
    let calls = values.chunks(500).map(|chunk| {
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
        let req = c
            .put_records()
            .stream_name(stream)
            .set_records(Some(records));
        async move {
            let out = req.send().await.unwrap();
            assert_eq!(out.failed_record_count(), Some(0));
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

/// What the raw loop starts from: what the source is given (an endpoint, a stream name and the
/// name of an existing consumer) — so it builds its own client, looks up the stream ARN
/// (DescribeStreamSummary), the consumer (DescribeStreamConsumer, ACTIVE) and the shards
/// (ListShards) inside the timing, like the source's start — then subscribes to every shard
/// at once.
async fn raw_setup(
    endpoint: &str,
    ca: &str,
    stream: &str,
    consumer: &str,
) -> (Client, String, Vec<String>) {
    let c = client(endpoint, ca).await;
    let arn = c
        .describe_stream_summary()
        .stream_name(stream)
        .send()
        .await
        .unwrap()
        .stream_description_summary()
        .unwrap()
        .stream_arn()
        .to_string();
    let desc = c
        .describe_stream_consumer()
        .stream_arn(&arn)
        .consumer_name(consumer)
        .send()
        .await
        .unwrap();
    let d = desc.consumer_description().unwrap();
    assert_eq!(d.consumer_status().as_str(), "ACTIVE");
    let consumer_arn = d.consumer_arn().to_string();
    let shards = c
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .unwrap()
        .shards()
        .iter()
        .map(|s| s.shard_id().to_string())
        .collect();
    (c, consumer_arn, shards)
}

/// Raw loop: one SubscribeToShard per shard from TRIM_HORIZON (or, `latest`, AT_TIMESTAMP now:
/// what the source's `initialPosition = latest` subscribes with), all started at once, until `want` records or `deadline`; returns the data and receive time (µs) of each.
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
    let now_ms = now_us() / 1000;
    for shard in shards {
        let (c, arn, shard, tx) = (
            c.clone(),
            consumer_arn.to_string(),
            shard.clone(),
            tx.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let position = if latest {
                StartingPosition::builder()
                    .r#type(ShardIteratorType::AtTimestamp)
                    .timestamp(aws_sdk_kinesis::primitives::DateTime::from_millis(now_ms))
            } else {
                StartingPosition::builder().r#type(ShardIteratorType::TrimHorizon)
            };
            let mut out = c
                .subscribe_to_shard()
                .consumer_arn(arn)
                .shard_id(shard)
                .starting_position(position.build().unwrap())
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

/// When a reader reached its first milestones (µs since its timing started).
#[derive(Debug, Default, Clone, Copy)]
struct Phases {
    /// The source's `initial_offset` returned (client, consumer lookup, shards), or the raw
    /// loop's setup.
    started_us: i64,
    /// The first record was received.
    first_record_us: i64,
    /// Plans (batches) or events.
    batches: usize,
}

/// The EFO source driven like the runtime with no trigger pause.
async fn source_loop(
    source: &mut dyn Source,
    want: usize,
    deadline: Instant,
    phases: &mut Phases,
) -> Vec<(String, i64)> {
    let t0 = now_us();
    let mut at = source.initial_offset().await.unwrap();
    phases.started_us = now_us() - t0;
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        let end = source.latest_offset(&at, &ReadLimit::All).await.unwrap();
        if end == at {
            continue;
        }
        let batches = source.read(&at, &end).await.unwrap();
        let t = now_us();
        phases.batches += 1;
        if got.is_empty() && batches.iter().any(|b| b.num_rows() > 0) {
            phases.first_record_us = t - t0;
        }
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

/// The EFO source's real-time read (`as_streaming().start_stream`, what the runtime's
/// `realTime` trigger drives): chunks are received from the bounded queue until `want`
/// records or `deadline`; returns the data and receive time (µs) of each.
async fn streaming_loop(
    source: &mut dyn Source,
    want: usize,
    deadline: Instant,
    phases: &mut Phases,
) -> Vec<(String, i64)> {
    let t0 = now_us();
    let start = source.initial_offset().await.unwrap();
    phases.started_us = now_us() - t0;
    let (tx, mut rx) = chunk_queue(64);
    let streaming = source.as_streaming().expect("EFO streams");
    streaming.start_stream(&start, tx).await.unwrap();
    let mut got = Vec::new();
    while got.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(c)) => c.unwrap(),
            _ => break,
        };
        let t = now_us();
        phases.batches += 1;
        if got.is_empty() && chunk.batch.num_rows() > 0 {
            phases.first_record_us = t - t0;
        }
        let data = chunk
            .batch
            .column_by_name("data")
            .unwrap()
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        for i in 0..data.len() {
            got.push((String::from_utf8_lossy(data.value(i)).into_owned(), t));
        }
    }
    streaming.stop_stream().await.unwrap();
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

fn efo_options(endpoint: &str, ca: &str, stream: &str, initial: &str, consumer: &str) -> Options {
    Options::new()
        .with("endpoint", endpoint)
        .with("region", "us-east-1")
        .with("awsAccessKey", "AKIDBENCH")
        .with("awsSecretKey", "bench")
        .with("tls.truststore.location", ca)
        .with("streamName", stream)
        .with("initialPosition", initial)
        .with("consumerMode", "efo")
        .with("consumerName", consumer)
        .with("minFetchPeriod", "50ms")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("RUST_LOG").is_some() {
        // RUST_LOG=tributary_kinesis=debug shows where the source's start time goes.
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_timer(tracing_subscriber::fmt::time::uptime())
            .with_writer(std::io::stderr)
            .init();
    }
    let (Ok(endpoint), Ok(ca), Ok(plain)) = (
        std::env::var("TRIBUTARY_KINESIS_ENDPOINT"),
        std::env::var("TRIBUTARY_KINESIS_CA"),
        std::env::var("TRIBUTARY_KINESIS_PLAIN_ENDPOINT"),
    ) else {
        eprintln!("skipped: TRIBUTARY_KINESIS_ENDPOINT / _CA / _PLAIN_ENDPOINT not set (scripts/services/kinesis.sh start)");
        return;
    };
    let c = setup_client(&plain).await;
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
    // Both consumers exist before any timing: each reader finds an ACTIVE consumer by name
    // (registration is a one-off cost of a new pipeline, timed here on its own).
    let raw_consumer = consumers::register(&c, &arn, "bench-raw", Duration::from_secs(30))
        .await
        .unwrap()
        .consumer;
    let t = Instant::now();
    let reg = consumers::register(&c, &arn, SOURCE_CONSUMER, Duration::from_secs(30))
        .await
        .unwrap();
    println!(
        "registering a new consumer until ACTIVE took {:.2} s (created: {}; not in the ratios below)",
        t.elapsed().as_secs_f64(),
        reg.created
    );
    consumers::register(&c, &arn, STREAM_CONSUMER, Duration::from_secs(30))
        .await
        .unwrap();
    let n = backlog_size();
    let values: Vec<String> = (0..n).map(|i| format!("rec-{i}:0")).collect();
    let t = Instant::now();
    put_batch(&c, &stream, &values).await;
    println!(
        "filled {n} records into 2 shards in {:.1} s ({FILL_CONCURRENCY} PutRecords calls in flight)",
        t.elapsed().as_secs_f64()
    );
    let ctx = ConnectorContext::default();
    let long = || Instant::now() + Duration::from_secs(600);

    // 1. Throughput over the same backlog. Each reader starts from an endpoint, the stream
    //    name and an existing consumer's name, and its timing includes building its client.
    let t = Instant::now();
    let t0 = now_us();
    let (rc, rarn, rshards) = raw_setup(&endpoint, &ca, &stream, "bench-raw").await;
    let mut raw_ph = Phases {
        started_us: now_us() - t0,
        ..Phases::default()
    };
    let raw = raw_loop(&rc, &rarn, &rshards, false, n, long()).await;
    let raw_s = t.elapsed().as_secs_f64();
    raw_ph.first_record_us = raw.iter().map(|r| r.1).min().unwrap_or(t0) - t0;
    drop(rc);
    let mut source = tributary_kinesis::KinesisSourceFactory
        .create(
            &efo_options(&endpoint, &ca, &stream, "trim_horizon", SOURCE_CONSUMER),
            &ctx,
        )
        .unwrap();
    let mut src_ph = Phases::default();
    let t = Instant::now();
    let src = source_loop(source.as_mut(), n, long(), &mut src_ph).await;
    let src_s = t.elapsed().as_secs_f64();
    source.stop().await.unwrap();
    let mut source = tributary_kinesis::KinesisSourceFactory
        .create(
            &efo_options(&endpoint, &ca, &stream, "trim_horizon", STREAM_CONSUMER),
            &ctx,
        )
        .unwrap();
    let mut str_ph = Phases::default();
    let t = Instant::now();
    let streamed = streaming_loop(source.as_mut(), n, long(), &mut str_ph).await;
    let streamed_s = t.elapsed().as_secs_f64();
    source.stop().await.unwrap();
    check_exact(&raw, &values, "raw loop");
    check_exact(&src, &values, "EFO source (plan+read)");
    check_exact(&streamed, &values, "EFO source (streaming)");
    let rps = |s: f64| n as f64 / s;
    let ms = |us: i64| us as f64 / 1000.0;
    // Records/s after the first record: the reading itself, without the start.
    let steady = |s: f64, ph: &Phases| n as f64 / (s - ph.first_record_us as f64 / 1e6);
    println!("throughput over {n} records (2 shards, kinesis-mock, TLS+HTTP/2):");
    println!(
        "  raw SubscribeToShard loop : {:>9.0} records/s ({raw_s:.2} s; set-up {:.0} ms, first record {:.0} ms; after it {:.0} records/s)",
        rps(raw_s),
        ms(raw_ph.started_us),
        ms(raw_ph.first_record_us),
        steady(raw_s, &raw_ph)
    );
    for (name, secs, ph) in [
        ("EFO source plan+read      ", src_s, src_ph),
        ("EFO source streaming      ", streamed_s, str_ph),
    ] {
        println!(
            "  {name}: {:>9.0} records/s ({secs:.2} s; initial_offset {:.0} ms, first record {:.0} ms, {} batches; after it {:.0} records/s)  ratio {:.2}x",
            rps(secs),
            ms(ph.started_us),
            ms(ph.first_record_us),
            ph.batches,
            steady(secs, &ph),
            raw_s / secs
        );
    }
    println!(
        "  (raw: client, DescribeStreamSummary, DescribeStreamConsumer, ListShards, one SubscribeToShard per shard at once;"
    );
    println!(
        "   source: client, DescribeStreamSummary, DescribeStreamConsumer, ListStreamConsumers (leak report), ListShards,"
    );
    println!(
        "   one SubscribeToShard task per shard at once; plan+read adds DescribeStreamSummary per read and a shard refresh each second)"
    );

    // 2. Delivery latency of live records, one reader at a time on the same stream.
    let deadline = || Instant::now() + Duration::from_secs(LIVE_SECONDS + 5);
    let (pc, ps) = (c.clone(), stream.clone());
    let producer = tokio::spawn(async move {
        // Let the raw loop subscribe first (as the sources do below).
        tokio::time::sleep(Duration::from_millis(500)).await;
        produce_live(pc, ps).await
    });
    let tls = client(&endpoint, &ca).await;
    let raw_live = raw_loop(
        &tls,
        &raw_consumer.arn,
        &shards,
        true,
        usize::MAX,
        deadline(),
    )
    .await;
    let sent_raw = producer.await.unwrap();
    let live_source = |mode: &'static str| {
        let (c, stream) = (c.clone(), stream.clone());
        let mut source = tributary_kinesis::KinesisSourceFactory
            .create(
                &efo_options(
                    &endpoint,
                    &ca,
                    &stream,
                    "latest",
                    if mode == "streaming" {
                        STREAM_CONSUMER
                    } else {
                        SOURCE_CONSUMER
                    },
                ),
                &ctx,
            )
            .unwrap();
        async move {
            let producer = tokio::spawn(async move {
                // Let the source subscribe first (as the raw loop did).
                tokio::time::sleep(Duration::from_millis(500)).await;
                produce_live(c, stream).await
            });
            let got = if mode == "streaming" {
                streaming_loop(
                    source.as_mut(),
                    usize::MAX,
                    deadline(),
                    &mut Phases::default(),
                )
                .await
            } else {
                source_loop(
                    source.as_mut(),
                    usize::MAX,
                    deadline(),
                    &mut Phases::default(),
                )
                .await
            };
            let sent = producer.await.unwrap();
            source.stop().await.unwrap();
            let got: Vec<_> = got
                .into_iter()
                .filter(|r| r.0.starts_with("live-") && sent.contains(&r.0))
                .collect();
            check_exact(&got, &sent, mode);
            got
        }
    };
    let src_live = live_source("plan+read").await;
    let streamed_live = live_source("streaming").await;
    let raw_live: Vec<_> = raw_live
        .into_iter()
        .filter(|r| r.0.starts_with("live-"))
        .collect();
    check_exact(&raw_live, &sent_raw, "raw loop (live)");
    let (r50, r99) = percentiles(&raw_live);
    let (s50, s99) = percentiles(&src_live);
    let (t50, t99) = percentiles(&streamed_live);
    println!(
        "delivery latency of {} live records ({} per 100 ms):",
        sent_raw.len(),
        LIVE_PER_100MS
    );
    println!("  raw SubscribeToShard loop : p50 {r50:>7.1} ms  p99 {r99:>7.1} ms");
    println!("  EFO source plan+read      : p50 {s50:>7.1} ms  p99 {s99:>7.1} ms");
    println!("  EFO source streaming      : p50 {t50:>7.1} ms  p99 {t99:>7.1} ms");
    // Deleting the stream deletes its consumers.
    let _ = c.delete_stream().stream_name(&stream).send().await;
}
