//! The polling source against kinesis-mock (HTTPS with the test CA): starting positions,
//! deterministic replay, several streams, restarts that add, remove or rename streams,
//! resharding (parents before children), available-now, the TLS trust store, and input
//! partitions (scale-out: per-shard ranges read by an executor, polling and EFO).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use tributary_sdk::{ErrorCode, ReadLimit};

#[tokio::test]
async fn trim_horizon_reads_everything_and_a_range_replays_exactly() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "th", 2).await;
    let sent = values("v", 20);
    put(&client, &stream, "k1", &sent[..10]).await;
    put(&client, &stream, "k2", &sent[10..]).await;
    let opts = source_options(Server::Mock, &stream, &[]);
    let mut s = source(&opts);
    let start = s.initial_offset().await.unwrap();
    let (batches, end) = drain(s.as_mut(), start.clone(), 20, Duration::from_secs(20)).await;
    let mut got = data(&batches);
    got.sort();
    let mut want = sent.clone();
    want.sort();
    assert_eq!(got, want);
    // Per-key order.
    let k1: Vec<String> = rows(&batches)
        .into_iter()
        .filter(|r| r.1 == "k1")
        .map(|r| r.0)
        .collect();
    assert_eq!(k1, sent[..10].to_vec());
    // A fresh source (a restart) replays the logged range exactly.
    let mut again = source(&opts);
    let replay = again.read(&start, &end).await.unwrap();
    assert_eq!(rows(&replay), rows(&batches));
    let m = s.metrics();
    assert!(
        m.contains_key("avgMsBehindLatest")
            && m.contains_key("maxMsBehindLatest")
            && m.contains_key("minMsBehindLatest"),
        "{m:?}"
    );
    s.stop().await.unwrap();
}

#[tokio::test]
async fn latest_starts_after_existing_records() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "latest", 1).await;
    put(&client, &stream, "k", &values("old", 3)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut s = source(&source_options(
        Server::Mock,
        &stream,
        &[("initialPosition", "latest")],
    ));
    let start = s.initial_offset().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    put(&client, &stream, "k", &values("new", 2)).await;
    let (batches, _) = drain(s.as_mut(), start, 2, Duration::from_secs(20)).await;
    assert_eq!(data(&batches), values("new", 2));
}

#[tokio::test]
async fn wrong_ca_is_a_connection_error() {
    if !available(Server::Mock) {
        return;
    }
    let wrong = std::env::var("TRIBUTARY_KINESIS_WRONG_CA").unwrap();
    let mut opts = source_options(Server::Mock, "any", &[]);
    opts.set("tls.truststore.location", wrong);
    let mut s = source(&opts);
    let e = s.initial_offset().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Connection, "{e}");
}

#[tokio::test]
async fn restart_adds_removes_and_refuses_arn_switch() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let a = create_stream(&client, "ra", 1).await;
    let b = create_stream(&client, "rb", 1).await;
    put(&client, &a, "k", &values("a", 3)).await;
    put(&client, &b, "k", &values("b", 2)).await;
    let mut s = source(&source_options(Server::Mock, &a, &[]));
    let start = s.initial_offset().await.unwrap();
    let (_, end) = drain(s.as_mut(), start, 3, Duration::from_secs(20)).await;
    // Restart with b added: b is read from its oldest record.
    let mut s2 = source(&source_options(Server::Mock, &format!("{a},{b}"), &[]));
    let (batches, end2) = drain(s2.as_mut(), end.clone(), 2, Duration::from_secs(20)).await;
    assert_eq!(data(&batches), values("b", 2));
    // Restart without a: removed → error, unless failOnDataLoss=false.
    let mut s3 = source(&source_options(Server::Mock, &b, &[]));
    let e = s3.latest_offset(&end2, &ReadLimit::All).await.unwrap_err();
    assert_eq!(
        e.code().as_str(),
        "KINESIS_SOURCE_STREAMS_REMOVED_ON_RESTART",
        "{e}"
    );
    let mut s4 = source(&source_options(
        Server::Mock,
        &b,
        &[("failOnDataLoss", "false")],
    ));
    let next = s4.latest_offset(&end2, &ReadLimit::All).await.unwrap();
    assert!(!next.to_json_string().contains(&a));
    assert_eq!(
        s4.metrics()["dataLoss.KINESIS_SOURCE_STREAMS_REMOVED_ON_RESTART"],
        1
    );
    // Names → ARNs on the same checkpoint is refused, saying why.
    let arn = client
        .describe_stream_summary()
        .stream_name(&a)
        .send()
        .await
        .unwrap()
        .stream_description_summary()
        .unwrap()
        .stream_arn()
        .to_string();
    let mut opts = source_options(Server::Mock, &a, &[]);
    opts.remove("streamName");
    opts.set("streamARN", arn);
    let mut s5 = source(&opts);
    let e = s5.latest_offset(&end, &ReadLimit::All).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::CheckpointIncompatible);
    assert!(
        e.to_string().contains("duplicates") && e.to_string().contains("streamName"),
        "{e}"
    );
}

#[tokio::test]
async fn split_reads_parents_before_children_and_keeps_key_order() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "split", 1).await;
    let before = values("p", 6);
    put(&client, &stream, "key", &before).await;
    let mut s = source(&source_options(Server::Mock, &stream, &[]));
    let start = s.initial_offset().await.unwrap();
    // Plan one batch before the split, then split while the source runs.
    let (first, at) = drain(s.as_mut(), start, 6, Duration::from_secs(20)).await;
    assert_eq!(data(&first), before);
    let parent = split_first_shard(&client, &stream).await;
    let after = values("c", 6);
    put(&client, &stream, "key", &after).await;
    let (second, end) = drain(s.as_mut(), at.clone(), 6, Duration::from_secs(30)).await;
    let r = rows(&second);
    assert_eq!(
        r.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
        after,
        "per-key order across the split"
    );
    assert!(r.iter().all(|x| x.2 != parent));
    // The batches across the split, as input partitions read by an executor: the same rows.
    let mut executor = source(&source_options(Server::Mock, &stream, &[]));
    let parts = s.plan_partitions(&at, &end, 2).await.unwrap().unwrap();
    let mut pieces = Vec::new();
    for p in &parts {
        let stream = executor.read_partition(p).await.unwrap();
        let batches: Vec<_> = futures::TryStreamExt::try_collect(stream).await.unwrap();
        pieces.extend(data(&batches));
    }
    assert_eq!(pieces, after, "{parts:?}");
    // The finished parent leaves the offsets once its children are in them.
    let mut later = end.clone();
    for _ in 0..3 {
        later = s.latest_offset(&later, &ReadLimit::All).await.unwrap();
    }
    let o = tributary_kinesis::offsets::KinesisOffsets::from_offset(&later).unwrap();
    assert!(o.shard(&stream, &parent).is_none(), "{later}");
    assert_eq!(o.shard_count(), 2, "{later}");
    // A restart at the split point (a fresh source from `at`) reads the same, nothing lost or doubled.
    let mut again = source(&source_options(Server::Mock, &stream, &[]));
    let (replayed, _) = drain(again.as_mut(), at, 6, Duration::from_secs(30)).await;
    assert_eq!(data(&replayed), after);
}

#[tokio::test]
async fn available_now_stops_at_the_tip_seen_at_start() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "avnow", 1).await;
    put(&client, &stream, "k", &values("a", 5)).await;
    let mut s = source(&source_options(
        Server::Mock,
        &stream,
        &[("maxRecordsPerFetch", "2")],
    ));
    let mut at = s.initial_offset().await.unwrap();
    s.prepare_available_now().await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    put(&client, &stream, "k", &values("late", 3)).await;
    let mut got = Vec::new();
    loop {
        let end = s.latest_offset(&at, &ReadLimit::MaxRows(2)).await.unwrap();
        if end == at {
            break;
        }
        let b = s.read(&at, &end).await.unwrap();
        assert!(
            b.iter().map(|b| b.num_rows()).sum::<usize>() <= 2,
            "read limit"
        );
        got.extend(data(&b));
        at = end;
    }
    assert_eq!(got, values("a", 5));
}

#[tokio::test]
async fn merge_reads_both_parents_before_the_child() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "merge", 2).await;
    let mut s = source(&source_options(Server::Mock, &stream, &[]));
    let start = s.initial_offset().await.unwrap();
    // Keys spread over both parents.
    let keys: Vec<String> = (0..8).map(|i| format!("key{i}")).collect();
    for k in &keys {
        put(&client, &stream, k, &[format!("{k}-before")]).await;
    }
    let listed = client
        .list_shards()
        .stream_name(&stream)
        .send()
        .await
        .unwrap();
    let ids: Vec<String> = listed
        .shards()
        .iter()
        .map(|s| s.shard_id().to_string())
        .collect();
    client
        .merge_shards()
        .stream_name(&stream)
        .shard_to_merge(&ids[0])
        .adjacent_shard_to_merge(&ids[1])
        .send()
        .await
        .unwrap();
    wait_active(&client, &stream).await;
    for k in &keys {
        put(&client, &stream, k, &[format!("{k}-after")]).await;
    }
    let (batches, _) = drain(s.as_mut(), start, 16, Duration::from_secs(30)).await;
    let r = rows(&batches);
    assert_eq!(r.len(), 16);
    for k in &keys {
        let mine: Vec<&str> = r
            .iter()
            .filter(|x| &x.1 == k)
            .map(|x| x.0.as_str())
            .collect();
        assert_eq!(
            mine,
            vec![format!("{k}-before"), format!("{k}-after")],
            "per-key order across the merge"
        );
    }
    // Every record of the parents comes before any record of the child.
    let first_child = r.iter().position(|x| !ids.contains(&x.2)).unwrap();
    assert!(
        r[first_child..].iter().all(|x| !ids.contains(&x.2)),
        "{r:?}"
    );
}

/// fetchBufferSize bounds the read-ahead: with a consumer that stops reading, the background
/// fetch fills the budget and stops there (at most one GetRecords page per shard over it), then
/// everything is read once, in order, when the consumer resumes.
#[tokio::test]
async fn read_ahead_is_bounded_by_fetch_buffer_size_under_a_slow_consumer() {
    if !available(Server::Mock) {
        return;
    }
    const RECORD: usize = 8_000;
    const PER_KEY: usize = 150;
    const PAGE: usize = 10;
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "fbs", 2).await;
    let pad = "x".repeat(RECORD);
    let mut sent = Vec::new();
    for key in ["k1", "k2"] {
        let vals: Vec<String> = (0..PER_KEY)
            .map(|i| format!("{key}-{i:04}-{pad}"))
            .collect();
        put(&client, &stream, key, &vals).await;
        sent.extend(vals);
    }
    let opts = source_options(
        Server::Mock,
        &stream,
        &[
            ("fetchBufferSize", "1mb"),
            ("maxRecordsPerFetch", "10"),
            ("minFetchPeriod", "0"),
        ],
    );
    let limit: i64 = 1 << 20;
    // One page per shard: PAGE records of RECORD bytes plus key and value prefix.
    let bound = limit + 2 * (PAGE * (RECORD + 20)) as i64;
    let mut s = source(&opts);
    let start = s.initial_offset().await.unwrap();
    let first_end = s
        .latest_offset(&start, &ReadLimit::MaxRows(5))
        .await
        .unwrap();
    // The slow consumer: nothing is read for a while; the background fetch goes on.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = |s: &dyn tributary_sdk::Source, k: &str| s.metrics()[k].as_i64().unwrap();
    let (now, peak) = (
        held(s.as_ref(), "prefetch.heldBytes"),
        held(s.as_ref(), "prefetch.peakHeldBytes"),
    );
    assert!(
        now >= limit,
        "the read-ahead filled the budget ({now} of {limit} bytes held)"
    );
    assert!(
        peak <= bound,
        "peak held {peak} bytes, over fetchBufferSize {limit} + one page per shard ({bound})"
    );
    let mut batches = s.read(&start, &first_end).await.unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
    let (rest, _) = drain(
        s.as_mut(),
        first_end,
        2 * PER_KEY - 5,
        Duration::from_secs(60),
    )
    .await;
    batches.extend(rest);
    let got = rows(&batches);
    assert_eq!(got.len(), 2 * PER_KEY, "every record once");
    for key in ["k1", "k2"] {
        let of_key: Vec<&String> = got.iter().filter(|r| r.1 == key).map(|r| &r.0).collect();
        let want: Vec<&String> = sent.iter().filter(|v| v.starts_with(key)).collect();
        assert_eq!(of_key, want, "per-key order of {key}");
    }
    let peak = held(s.as_ref(), "prefetch.peakHeldBytes");
    assert!(
        peak <= bound,
        "peak held {peak} bytes over the run (bound {bound})"
    );
    s.stop().await.unwrap();
    assert_eq!(
        held(s.as_ref(), "prefetch.heldBytes"),
        0,
        "stop releases every buffer"
    );
    let _ = client.delete_stream().stream_name(&stream).send().await;
}

/// Input partitions (scale-out): a 4-shard stream's range split per shard on the driver
/// (`shardsPerTask = 1`; the default 5 plans these 4 shards as one task), each partition read by
/// an executor's source (same options, `state_dir: None`); together they are exactly the range
/// `read` returns, shard by shard in the same order, and planning is deterministic.
#[tokio::test]
async fn input_partitions_are_the_range_per_shard() {
    use futures::TryStreamExt;
    use std::collections::BTreeMap;
    use tributary_sdk::{ConnectorContext, SourceFactoryExt};

    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "parts", 4).await;
    let mut sent = Vec::new();
    for k in 0..8 {
        let v = values(&format!("k{k}"), 5);
        put(&client, &stream, &format!("key-{k}"), &v).await;
        sent.extend(v);
    }
    let opts = source_options(Server::Mock, &stream, &[("shardsPerTask", "1")]);
    let mut driver = source(&opts);
    let start = driver.initial_offset().await.unwrap();
    let (_, end) = drain(
        driver.as_mut(),
        start.clone(),
        sent.len(),
        Duration::from_secs(30),
    )
    .await;

    let parts = driver
        .plan_partitions(&start, &end, 3)
        .await
        .unwrap()
        .expect("kinesis plans input partitions");
    let again = driver.plan_partitions(&start, &end, 7).await.unwrap();
    assert_eq!(again.as_ref(), Some(&parts), "planning is deterministic");
    let shards: std::collections::BTreeSet<String> = parts
        .iter()
        .map(|p| p.label.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(
        parts.len(),
        shards.len(),
        "one partition per shard: {parts:?}"
    );
    assert!(parts.len() > 1, "records spread over shards: {parts:?}");
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p.index, i);
        assert!(
            p.label.starts_with(&format!("{stream}/shardId-")),
            "{}",
            p.label
        );
        assert!(p.label.contains(" [TRIM_HORIZON, "), "{}", p.label);
    }
    let whole = rows(&driver.read(&start, &end).await.unwrap());

    // An executor: the same factory and options, no checkpoint state directory, never planning.
    let context = ConnectorContext {
        state_dir: None,
        ..ConnectorContext::default()
    };
    let mut executor = tributary_kinesis::KinesisSourceFactory
        .create(&opts, &context)
        .unwrap();
    let mut pieces = Vec::new();
    for p in &parts {
        let wire: tributary_sdk::InputPartition =
            serde_json::from_str(&serde_json::to_string(p).unwrap()).unwrap();
        let batches: Vec<_> = executor
            .read_partition(&wire)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let got = rows(&batches);
        assert!(!got.is_empty(), "partition {} is empty", p.label);
        pieces.extend(got);
    }
    let by_shard = |rows: &[(String, String, String)]| {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (data, _, shard) in rows {
            m.entry(shard.clone()).or_default().push(data.clone());
        }
        m
    };
    assert_eq!(by_shard(&pieces), by_shard(&whole), "per-shard order");
    let (mut a, mut b, mut c) = (data_of(&pieces), data_of(&whole), sent.clone());
    a.sort();
    b.sort();
    c.sort();
    assert_eq!(a, b);
    assert_eq!(b, c);
    executor.stop().await.unwrap();
    driver.stop().await.unwrap();
    // kinesis-mock counts shards against its SHARD_LIMIT until the stream is deleted.
    let _ = client.delete_stream().stream_name(&stream).send().await;
}

fn data_of(rows: &[(String, String, String)]) -> Vec<String> {
    rows.iter().map(|r| r.0.clone()).collect()
}

/// consumerMode = efo plans input partitions too; an executor (same options, `state_dir: None`)
/// reads them by polling, as a replay does, and registers no consumer of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efo_input_partitions_are_read_by_polling_without_a_consumer() {
    use futures::TryStreamExt;
    use tributary_kinesis::efo::consumers;
    use tributary_sdk::{ConnectorContext, SourceFactoryExt};

    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efoparts", 2).await;
    let sent = values("p", 12);
    put(&client, &stream, "a", &sent[..6]).await;
    put(&client, &stream, "b", &sent[6..]).await;
    let opts = source_options(
        Server::Mock,
        &stream,
        &[
            ("consumerMode", "efo"),
            ("minFetchPeriod", "300ms"),
            ("consumerNamePrefix", "efoparts_"),
        ],
    );
    let id = unique("ckpt");
    let mut driver = tributary_kinesis::KinesisSourceFactory
        .create(
            &opts,
            &ConnectorContext {
                checkpoint_id: Some(id.clone()),
                ..ConnectorContext::default()
            },
        )
        .unwrap();
    let start = driver.initial_offset().await.unwrap();
    let (_, end) = drain(driver.as_mut(), start.clone(), 12, Duration::from_secs(20)).await;
    let parts = driver
        .plan_partitions(&start, &end, 2)
        .await
        .unwrap()
        .expect("planned under efo too");
    assert!(!parts.is_empty());

    let executor_id = unique("exec");
    let context = ConnectorContext {
        state_dir: None,
        checkpoint_id: Some(executor_id.clone()),
        ..ConnectorContext::default()
    };
    let mut executor = tributary_kinesis::KinesisSourceFactory
        .create(&opts, &context)
        .unwrap();
    let mut got = Vec::new();
    for p in &parts {
        let batches: Vec<_> = executor
            .read_partition(p)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        got.extend(data(&batches));
    }
    got.sort();
    let mut want = sent.clone();
    want.sort();
    assert_eq!(got, want);
    executor.stop().await.unwrap();
    let arn = consumers::stream_arn(&client, &consumers::stream_ref(&stream))
        .await
        .unwrap();
    assert!(
        consumers::describe(&client, &arn, &format!("efoparts_{executor_id}"))
            .await
            .unwrap()
            .is_none(),
        "an executor registers no EFO consumer"
    );
    driver.stop().await.unwrap();
    consumers::deregister(
        &client,
        &arn,
        &format!("efoparts_{id}"),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let _ = client
        .delete_stream()
        .stream_name(&stream)
        .enforce_consumer_deletion(true)
        .send()
        .await;
}
