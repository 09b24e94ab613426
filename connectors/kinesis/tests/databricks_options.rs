//! The effects of the Databricks options added for copy-paste parity (#24):
//!
//! - `stsEndpoint`: the role is assumed through that endpoint and Kinesis is called with the
//!   assumed credentials (a local STS and a local Kinesis endpoint that record what they got;
//!   no AWS account needed);
//! - `registeredConsumerId` / `registeredConsumerIdType`: EFO reads through a consumer
//!   registered outside the query, by name and by ARN, registers none of its own and leaves it
//!   registered on stop; a missing one is refused naming the option, and one deleted from
//!   outside while read is not registered again: the read fails naming the option (kinesis-mock);
//! - `maxFetchRate`: bytes per second per shard (kinesis-mock);
//! - `shardFetchInterval`: how often the shard list is polled (kinesis-mock);
//! - `coalesceThresholdBlockSize` / `coalesceBinSize`: the blocks of several shards come as one
//!   Arrow batch by default, one per shard with coalescing off (kinesis-mock);
//! - and two options that were already accepted without a test of their effect:
//!   `maxFetchDuration` (a plan still fetching is cut) and `shardsPerTask` (the shards of one task
//!   are read in parallel; a range is ceil(shards / shardsPerTask) tasks) (kinesis-mock).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_kinesis::primitives::Blob;
use common::*;
use tributary_kinesis::config::{AssumeRole, BaseCredentials, ConnectionSettings};
use tributary_kinesis::efo::consumers;
use tributary_sdk::{
    ConnectorContext, EnvSecretStore, Options, ReadLimit, Secret, Source, SourceFactoryExt,
};

/// A one-purpose HTTP/1.1 server on 127.0.0.1: answers every request with `body` and records
/// each request's head and body (lower-cased header names).
fn fake_server(
    content_type: &'static str,
    body: &'static str,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&lower);
            }
            let mut payload = vec![0; length];
            let _ = reader.read_exact(&mut payload);
            log.lock()
                .unwrap()
                .push(format!("{head}\n{}", String::from_utf8_lossy(&payload)));
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, seen)
}

const ASSUME_ROLE_RESPONSE: &str = r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/reader/tributary-kinesis</Arn><AssumedRoleId>AROATEST:tributary-kinesis</AssumedRoleId></AssumedRoleUser><Credentials><AccessKeyId>ASIAFROMSTSENDPOINT</AccessKeyId><SecretAccessKey>assumed-secret</SecretAccessKey><SessionToken>assumed-session-token</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleResponse>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sts_endpoint_is_where_the_role_is_assumed() {
    let (sts, sts_seen) = fake_server("text/xml", ASSUME_ROLE_RESPONSE);
    let (kinesis, kinesis_seen) = fake_server(
        "application/x-amz-json-1.1",
        r#"{"StreamNames":[],"HasMoreStreams":false}"#,
    );
    let settings = ConnectionSettings {
        region: Some("us-east-1".into()),
        endpoint: Some(kinesis),
        credentials: BaseCredentials::Static {
            access_key: Secret::new("AKIDBASEKEY"),
            secret_key: Secret::new("base-secret"),
        },
        assume_role: Some(AssumeRole {
            role_arn: "arn:aws:iam::123456789012:role/reader".into(),
            external_id: Some("ext-42".into()),
            session_name: "tributary-kinesis".into(),
            sts_endpoint: Some(format!("{sts}/")),
        }),
        ca_file: None,
    };
    let client = tributary_kinesis::build_client(&settings, &EnvSecretStore)
        .await
        .unwrap();
    client.list_streams().send().await.unwrap();
    let sts_requests = sts_seen.lock().unwrap().clone();
    assert_eq!(sts_requests.len(), 1, "{sts_requests:?}");
    let assume = &sts_requests[0];
    assert!(assume.contains("Action=AssumeRole"), "{assume}");
    assert!(
        assume.contains("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Freader"),
        "{assume}"
    );
    assert!(assume.contains("ExternalId=ext-42"), "{assume}");
    assert!(
        assume.contains("credential=akidbasekey/"),
        "STS is called with the base keys: {assume}"
    );
    let calls = kinesis_seen.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        calls[0].contains("credential=asiafromstsendpoint/"),
        "Kinesis is called with the assumed role's keys: {}",
        calls[0]
    );
    assert!(
        calls[0].contains("x-amz-security-token: assumed-session-token"),
        "{}",
        calls[0]
    );
}

fn efo_source(options: &Options, checkpoint: &str) -> Box<dyn Source> {
    let ctx = ConnectorContext {
        checkpoint_id: Some(checkpoint.to_string()),
        ..ConnectorContext::default()
    };
    tributary_kinesis::KinesisSourceFactory
        .create(options, &ctx)
        .unwrap()
}

async fn delete_stream(client: &aws_sdk_kinesis::Client, stream: &str) {
    let _ = client
        .delete_stream()
        .stream_name(stream)
        .enforce_consumer_deletion(true)
        .send()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_consumer_is_used_by_name_and_arn_and_never_deregistered() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "registered", 1).await;
    let sent = values("r", 6);
    put(&client, &stream, "k", &sent).await;
    let stream_arn = consumers::stream_arn(&client, &consumers::stream_ref(&stream))
        .await
        .unwrap();
    let outside = consumers::register(&client, &stream_arn, "ext-reader", Duration::from_secs(30))
        .await
        .unwrap()
        .consumer;
    let efo = |id: &str, kind: &str| {
        source_options(
            Server::Mock,
            &stream,
            &[
                ("consumerMode", "efo"),
                ("minFetchPeriod", "300ms"),
                ("registeredConsumerId", id),
                ("registeredConsumerIdType", kind),
            ],
        )
    };
    for (id, kind) in [("ext-reader", "name"), (outside.arn.as_str(), "ARN")] {
        let mut s = efo_source(&efo(id, kind), &unique("registered-ckpt"));
        let start = s.initial_offset().await.unwrap();
        let (batches, _) = drain(s.as_mut(), start, sent.len(), Duration::from_secs(20)).await;
        assert_eq!(data(&batches), sent, "read through {kind} {id}");
        let m = s.metrics();
        assert_eq!(
            m["efo.consumers"][0]["arn"],
            outside.arn.as_str(),
            "subscribed with the registered consumer: {m:?}"
        );
        assert!(m["efo.subscriptions"].as_u64().unwrap() >= 1, "{m:?}");
        s.stop().await.unwrap();
        let now = consumers::list(&client, &stream_arn).await.unwrap();
        assert_eq!(
            now.iter()
                .map(|c| (c.arn.as_str(), c.created_ms))
                .collect::<Vec<_>>(),
            [(outside.arn.as_str(), outside.created_ms)],
            "no consumer of its own, and the registered one stays after stop"
        );
    }
    // One that is not registered is refused, naming the option; nothing gets registered.
    let mut missing = efo_source(&efo("nobody", "name"), "missing");
    let e = missing.initial_offset().await.unwrap_err();
    assert_eq!(
        e.context_value("option"),
        Some("registeredConsumerId"),
        "{e}"
    );
    assert!(
        e.to_string().contains("'nobody'") && e.to_string().contains("not registered"),
        "{e}"
    );
    assert_eq!(
        consumers::list(&client, &stream_arn).await.unwrap().len(),
        1
    );
    consumers::deregister(&client, &stream_arn, "ext-reader", Duration::from_secs(30))
        .await
        .unwrap();
    delete_stream(&client, &stream).await;
}

/// Time to read every record of `stream` from its start with these options.
async fn time_to_read(stream: &str, extra: &[(&str, &str)], want: usize) -> Duration {
    let mut s = source(&source_options(Server::Mock, stream, extra));
    let start = s.initial_offset().await.unwrap();
    let t0 = Instant::now();
    let (batches, _) = drain(s.as_mut(), start, want, Duration::from_secs(60)).await;
    let took = t0.elapsed();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), want);
    s.stop().await.unwrap();
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_fetch_rate_bounds_the_bytes_per_second_of_a_shard() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "fetchrate", 1).await;
    // 16 records of 64 KiB = 1 MiB, fetched 4 per GetRecords page (256 KiB).
    let big: Vec<String> = (0..16)
        .map(|i| format!("{i:02}{}", "x".repeat(64 * 1024 - 2)))
        .collect();
    put(&client, &stream, "k", &big).await;
    let paged = [("maxRecordsPerFetch", "4"), ("minFetchPeriod", "100ms")];
    let slow = [paged[0], paged[1], ("maxFetchRate", "0.125")];
    let fast = [paged[0], paged[1], ("maxFetchRate", "100")];
    let slow_took = time_to_read(&stream, &slow, 16).await;
    let fast_took = time_to_read(&stream, &fast, 16).await;
    println!(
        "1 MiB in pages of 256 KiB: maxFetchRate 0.125 took {slow_took:?}, 100 took {fast_took:?}"
    );
    // At 0.125 MiB/s each 256 KiB page is followed by 2 s: 3 gaps before the last page.
    assert!(slow_took >= Duration::from_millis(5900), "{slow_took:?}");
    assert!(
        slow_took >= fast_took + Duration::from_millis(2500),
        "slow {slow_took:?} fast {fast_took:?}"
    );
    delete_stream(&client, &stream).await;
}

async fn refreshes_while_planning(stream: &str, interval: &str, run: Duration) -> u64 {
    let mut s = source(&source_options(
        Server::Mock,
        stream,
        &[
            ("shardFetchInterval", interval),
            ("minFetchPeriod", "100ms"),
        ],
    ));
    let start = s.initial_offset().await.unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < run {
        let end = s.latest_offset(&start, &ReadLimit::All).await.unwrap();
        assert_eq!(end, start, "an empty stream plans nothing");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let n = s.metrics()["numShardListRefreshes"].as_u64().unwrap();
    s.stop().await.unwrap();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_fetch_interval_spaces_the_shard_list_polls() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "shardpoll", 1).await;
    let run = Duration::from_millis(2500);
    let hourly = refreshes_while_planning(&stream, "1h", run).await;
    let often = refreshes_while_planning(&stream, "200ms", run).await;
    println!("shard-list refreshes in {run:?}: shardFetchInterval 1h {hourly}, 200ms {often}");
    assert_eq!(
        hourly, 0,
        "the start listed the shards; none due within the hour"
    );
    assert!(often >= 5, "{often}");
    delete_stream(&client, &stream).await;
}

/// Rows and Arrow batches of every read while draining `want` records.
async fn batches_per_read(
    stream: &str,
    extra: &[(&str, &str)],
    want: usize,
) -> Vec<(usize, usize)> {
    let mut s = source(&source_options(Server::Mock, stream, extra));
    let mut at = s.initial_offset().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut reads, mut total) = (Vec::new(), 0);
    while total < want {
        assert!(Instant::now() < deadline, "only {total} of {want}");
        let end = s.latest_offset(&at, &ReadLimit::All).await.unwrap();
        if end == at {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let b = s.read(&at, &end).await.unwrap();
        let rows: usize = b.iter().map(|b| b.num_rows()).sum();
        total += rows;
        reads.push((rows, b.len()));
        at = end;
    }
    s.stop().await.unwrap();
    reads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_blocks_of_several_shards_are_coalesced_into_one_batch() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "coalesce", 4).await;
    for i in 0..40 {
        client
            .put_record()
            .stream_name(&stream)
            .partition_key(format!("key-{i}"))
            .data(Blob::new(format!("v{i}").into_bytes()))
            .send()
            .await
            .unwrap();
    }
    let by_default = batches_per_read(&stream, &[], 40).await;
    let off = batches_per_read(&stream, &[("coalesceThresholdBlockSize", "0")], 40).await;
    println!("(rows, Arrow batches) per read: defaults {by_default:?}, coalescing off {off:?}");
    assert!(by_default.iter().all(|(_, b)| *b == 1), "{by_default:?}");
    assert!(
        off.iter().any(|(_, b)| *b > 1),
        "one batch per shard without coalescing: {off:?}"
    );
    delete_stream(&client, &stream).await;
}

/// Puts `n` records of 64 KiB on every shard of `stream` (each shard addressed by its starting
/// hash key).
async fn fill_shards(client: &aws_sdk_kinesis::Client, stream: &str, n: usize) {
    let shards = client
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .unwrap();
    for shard in shards.shards() {
        let hash = shard
            .hash_key_range()
            .unwrap()
            .starting_hash_key()
            .to_string();
        for _ in 0..n {
            let out = client
                .put_record()
                .stream_name(stream)
                .partition_key("k")
                .explicit_hash_key(&hash)
                .data(Blob::new(vec![b'x'; 64 * 1024]))
                .send()
                .await
                .unwrap();
            assert_eq!(out.shard_id(), shard.shard_id());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_fetch_duration_cuts_a_plan_that_is_still_fetching() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "fetchduration", 1).await;
    fill_shards(&client, &stream, 16).await;
    // Pages of 4 records (256 KiB) at 0.25 MiB/s: one page a second; 16 records take 4 s.
    let paced = [
        ("maxRecordsPerFetch", "4"),
        ("minFetchPeriod", "100ms"),
        ("maxFetchRate", "0.25"),
    ];
    let mut rows_planned = Vec::new();
    for duration in ["1500ms", "30s"] {
        let mut extra = paced.to_vec();
        extra.push(("maxFetchDuration", duration));
        let mut s = source(&source_options(Server::Mock, &stream, &extra));
        let start = s.initial_offset().await.unwrap();
        // availableNow plans by fetching page after page until caught up or maxFetchDuration.
        s.prepare_available_now().await.unwrap();
        let t0 = Instant::now();
        let end = s.latest_offset(&start, &ReadLimit::All).await.unwrap();
        let took = t0.elapsed();
        let n: usize = s
            .read(&start, &end)
            .await
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        println!("maxFetchDuration {duration}: first plan {n} records in {took:?}");
        rows_planned.push((n, took));
        s.stop().await.unwrap();
    }
    let (cut, cut_took) = rows_planned[0];
    let (whole, _) = rows_planned[1];
    assert!(
        (4..16).contains(&cut),
        "cut after about 1.5 s: {rows_planned:?}"
    );
    assert!(cut_took < Duration::from_millis(3500), "{rows_planned:?}");
    assert_eq!(whole, 16, "{rows_planned:?}");
    delete_stream(&client, &stream).await;
}

/// shardsPerTask as Databricks documents it: the shards of one task are prefetched in parallel,
/// and a range is planned as ceil(shards / shardsPerTask) tasks. Each shard here holds 4 pages
/// a second apart (maxFetchRate), so reading one shard takes 3 s; a replay of the 4 shards
/// yields them in shard order, and reading the later ones ahead (within fetchBufferSize) keeps
/// it near 3 s. Shards read one after the other took 12 s; read ahead by one part only, about 6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_per_task_prefetches_a_task_s_shards_in_parallel() {
    use futures::TryStreamExt;
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "pertask", 4).await;
    fill_shards(&client, &stream, 4).await;
    // Plan the whole range once, then replay it (a restart).
    let mut planner = source(&source_options(Server::Mock, &stream, &[]));
    let start = planner.initial_offset().await.unwrap();
    let (_, end) = drain(planner.as_mut(), start.clone(), 16, Duration::from_secs(30)).await;
    planner.stop().await.unwrap();
    // One record per page, 64 KiB at 0.0625 MiB/s: a second between two pages of a shard.
    let paced = |per_task: &'static str| {
        source_options(
            Server::Mock,
            &stream,
            &[
                ("shardsPerTask", per_task),
                ("maxRecordsPerFetch", "1"),
                ("minFetchPeriod", "100ms"),
                ("maxFetchRate", "0.0625"),
            ],
        )
    };
    let shard_of = |batches: &[arrow_array::RecordBatch]| -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        for b in batches {
            let col = b
                .column_by_name("shardId")
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap();
            for v in col.iter().flatten() {
                if order.last().map(String::as_str) != Some(v) {
                    order.push(v.to_string());
                }
            }
        }
        order
    };
    let mut s = source(&paced("5"));
    let t0 = Instant::now();
    let got = s.read(&start, &end).await.unwrap();
    let replay = t0.elapsed();
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 16);
    let order = shard_of(&got);
    assert_eq!(order.len(), 4, "each shard's rows together: {order:?}");
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "in shard order: {order:?}"
    );
    s.stop().await.unwrap();
    // The planned tasks: 4 with shardsPerTask 1, one with 4; the one task reads its 4 shards
    // together too.
    let mut s = source(&paced("1"));
    let parts = s.plan_partitions(&start, &end, 2).await.unwrap().unwrap();
    assert_eq!(parts.len(), 4, "{parts:?}");
    s.stop().await.unwrap();
    let mut s = source(&paced("4"));
    let parts = s.plan_partitions(&start, &end, 2).await.unwrap().unwrap();
    assert_eq!(parts.len(), 1, "{parts:?}");
    let t0 = Instant::now();
    let batches: Vec<_> = s
        .read_partition(&parts[0])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let task = t0.elapsed();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 16);
    s.stop().await.unwrap();
    println!(
        "replay of 4 shards x 4 pages a second apart: {replay:?}; the one task of 4: {task:?}"
    );
    for t in [replay, task] {
        assert!(
            t >= Duration::from_millis(2900) && t < Duration::from_millis(4800),
            "the 4 shards are read in parallel, each at its pace (3 s): replay {replay:?}, task {task:?}"
        );
    }
    delete_stream(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_consumer_deleted_from_outside_is_not_registered_again() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "registeredgone", 1).await;
    let stream_arn = consumers::stream_arn(&client, &consumers::stream_ref(&stream))
        .await
        .unwrap();
    consumers::register(&client, &stream_arn, "ext-gone", Duration::from_secs(30))
        .await
        .unwrap();
    let opts = source_options(
        Server::Mock,
        &stream,
        &[
            ("consumerMode", "efo"),
            ("minFetchPeriod", "300ms"),
            ("registeredConsumerId", "ext-gone"),
        ],
    );
    // kinesis-mock keeps pushing to a deregistered consumer's open subscription; renewing every
    // 2 s makes the next SubscribeToShard meet the deletion (as in tests/efo.rs).
    std::env::set_var(tributary_kinesis::efo::RENEW_ENV, "2000");
    let mut s = efo_source(&opts, "registered-gone");
    std::env::remove_var(tributary_kinesis::efo::RENEW_ENV);
    let start = s.initial_offset().await.unwrap();
    put(&client, &stream, "k", &values("before", 3)).await;
    let (b, mut at) = drain(s.as_mut(), start, 3, Duration::from_secs(20)).await;
    assert_eq!(data(&b), values("before", 3));
    consumers::deregister(&client, &stream_arn, "ext-gone", Duration::from_secs(30))
        .await
        .unwrap();
    put(&client, &stream, "k", &values("after", 3)).await;
    let deadline = Instant::now() + Duration::from_secs(40);
    let e = loop {
        assert!(Instant::now() < deadline, "the deletion was never noticed");
        match s.latest_offset(&at, &ReadLimit::All).await {
            Err(e) => break e,
            Ok(end) if end != at => {
                s.read(&at, &end).await.unwrap();
                at = end;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    };
    println!("registered consumer deleted from outside: {e}");
    assert_eq!(
        e.context_value("option"),
        Some("registeredConsumerId"),
        "{e}"
    );
    assert!(e.to_string().contains("never registers it again"), "{e}");
    assert!(
        consumers::list(&client, &stream_arn)
            .await
            .unwrap()
            .is_empty(),
        "the query registered no consumer in its place"
    );
    s.stop().await.unwrap();
    delete_stream(&client, &stream).await;
}
