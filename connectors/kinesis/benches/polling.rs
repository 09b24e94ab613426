//! Polling source against a raw `aws-sdk-kinesis` GetRecords loop on the same stream of
//! kinesis-mock (plain HTTP endpoint from `scripts/services/kinesis.sh`), in one run, plus the
//! resident memory of the source over the run with `fetchBufferSize` at its default.
//!
//! `cargo bench -p tributary-kinesis --bench polling` (`KINESIS_BENCH_RECORDS`, default 200000;
//! `KINESIS_BENCH_SHARDS`, default 4). Record counts and contents are checked outside the timing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use arrow_array::{Array, BinaryArray};
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{PutRecordsRequestEntry, ShardIteratorType, StreamStatus};
use aws_sdk_kinesis::Client;
use tributary_kinesis::config::{BaseCredentials, ConnectionSettings};
use tributary_kinesis::KinesisSourceFactory;
use tributary_sdk::{
    ConnectorContext, EnvSecretStore, Options, ReadLimit, Secret, SourceFactoryExt,
};

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
    let payload = vec![b'x'; 100];
    let mut sent = 0;
    while sent < n {
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
        let out = client
            .put_records()
            .stream_name(stream)
            .set_records(Some(entries))
            .send()
            .await
            .unwrap();
        assert_eq!(
            out.failed_record_count().unwrap_or(0),
            0,
            "PutRecords failures while filling"
        );
        sent += batch;
    }
}

/// Raw GetRecords loop over every shard (TRIM_HORIZON to caught-up); returns records and bytes.
async fn raw_loop(client: &Client, stream: &str) -> (usize, usize) {
    let shards = client
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .unwrap();
    let mut total = (0, 0);
    for s in shards.shards() {
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
    }
    total
}

/// The source, trim_horizon until every record was read; returns records, bytes, peak RSS.
async fn source_loop(
    endpoint: &str,
    stream: &str,
    n: usize,
    extra: &[(&str, &str)],
) -> (usize, usize, u64) {
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
    let mut source = KinesisSourceFactory
        .create(&o, &ConnectorContext::default())
        .unwrap();
    let mut at = source.initial_offset().await.unwrap();
    let (mut rows, mut bytes, mut peak) = (0usize, 0usize, 0u64);
    while rows < n {
        let end = source.latest_offset(&at, &ReadLimit::All).await.unwrap();
        if end == at {
            continue;
        }
        let batches = source.read(&at, &end).await.unwrap();
        for b in &batches {
            rows += b.num_rows();
            let d = b
                .column_by_name("data")
                .unwrap()
                .as_any()
                .downcast_ref::<BinaryArray>()
                .unwrap();
            bytes += d.value_data().len();
        }
        drop(batches); // the null sink
        source.commit(&end).await.unwrap();
        at = end;
        peak = peak.max(rss_kib());
    }
    source.stop().await.unwrap();
    (rows, bytes, peak)
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
    println!(
        "filled {n} records x 100 B into {shards} shards in {:.1?}",
        t.elapsed()
    );

    let t = Instant::now();
    let (raw_n, raw_b) = raw_loop(&c, &stream).await;
    let raw = t.elapsed();
    assert_eq!(raw_n, n, "raw loop read every record");

    let rss_before = rss_kib();
    let t = Instant::now();
    let (src_n, src_b, peak) = source_loop(&endpoint, &stream, n, &[("minFetchPeriod", "0")]).await;
    let src = t.elapsed();
    assert_eq!(
        (src_n, src_b),
        (raw_n, raw_b),
        "source read the same records"
    );

    let t = Instant::now();
    let (def_n, _, peak_default) = source_loop(&endpoint, &stream, n, &[]).await;
    let src_default = t.elapsed();
    assert_eq!(def_n, n);

    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "raw GetRecords loop           : {:>10.0} records/s ({raw:.2?})",
        rate(raw)
    );
    println!(
        "source minFetchPeriod=0       : {:>10.0} records/s ({src:.2?})  ratio {:.2}x",
        rate(src),
        raw.as_secs_f64() / src.as_secs_f64()
    );
    println!(
        "source defaults (400ms period): {:>10.0} records/s ({src_default:.2?})  ratio {:.2}x",
        rate(src_default),
        raw.as_secs_f64() / src_default.as_secs_f64()
    );
    println!("RSS before source {rss_before} KiB, peak during source {peak} KiB (minFetchPeriod=0), {peak_default} KiB (defaults)");
    let _ = c.delete_stream().stream_name(&stream).send().await;
}
