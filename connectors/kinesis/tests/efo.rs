//! Enhanced fan-out against kinesis-mock (SubscribeToShard over HTTP/2 with TLS): records
//! arrive through the consumer, which is registered ACTIVE, reused by name, deregistered on a
//! clean stop when asked; a consumer deleted from outside while subscribed is registered again
//! and nothing is lost; parents are read before children; an idle EFO source does not spin;
//! the consumer manager's leak report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use tributary_kinesis::efo::consumers;
use tributary_sdk::{ConnectorContext, Options, Source, SourceFactoryExt};

fn efo_source(options: &Options, checkpoint: &str) -> Box<dyn Source> {
    let ctx = ConnectorContext {
        checkpoint_id: Some(checkpoint.to_string()),
        ..ConnectorContext::default()
    };
    tributary_kinesis::KinesisSourceFactory
        .create(options, &ctx)
        .unwrap()
}

fn efo_options(stream: &str, extra: &[(&str, &str)]) -> Options {
    let mut o = source_options(
        Server::Mock,
        stream,
        &[("consumerMode", "efo"), ("minFetchPeriod", "300ms")],
    );
    for (k, v) in extra {
        o.set(*k, *v);
    }
    o
}

async fn arn(client: &aws_sdk_kinesis::Client, stream: &str) -> String {
    consumers::stream_arn(client, &consumers::stream_ref(stream))
        .await
        .unwrap()
}

/// Deletes a test stream (kinesis-mock allows 50 shards in all).
async fn gone(client: &aws_sdk_kinesis::Client, stream: &str) {
    let _ = client
        .delete_stream()
        .stream_name(stream)
        .enforce_consumer_deletion(true)
        .send()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efo_reads_through_an_active_consumer_named_prefix_plus_pipeline_id() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efo", 2).await;
    let sent = values("e", 30);
    put(&client, &stream, "a", &sent[..15]).await;
    put(&client, &stream, "b", &sent[15..]).await;
    let id = unique("ckpt");
    let mut s = efo_source(
        &efo_options(&stream, &[("consumerNamePrefix", "efotest_")]),
        &id,
    );
    let start = s.initial_offset().await.unwrap();
    let name = format!("efotest_{id}");
    let arn = arn(&client, &stream).await;
    let c = consumers::describe(&client, &arn, &name)
        .await
        .unwrap()
        .expect("registered at start");
    assert!(c.is_active(), "{c:?}");
    let (batches, end) = drain(s.as_mut(), start.clone(), 20, Duration::from_secs(20)).await;
    let mut got = data(&batches);
    got.sort();
    let mut want = sent.clone();
    want.sort();
    assert_eq!(got, want);
    let m = s.metrics();
    assert_eq!(m["efo.consumerName"], name.as_str());
    assert!(m["efo.subscriptions"].as_u64().unwrap() >= 2, "{m:?}");
    // Live records pushed after the subscription opened arrive too.
    put(&client, &stream, "a", &values("live", 3)).await;
    let (more, _) = drain(s.as_mut(), end.clone(), 3, Duration::from_secs(10)).await;
    assert_eq!(data(&more), values("live", 3));
    // A restart replays the logged range exactly by polling.
    let mut again = efo_source(
        &efo_options(&stream, &[("consumerNamePrefix", "efotest_")]),
        &id,
    );
    let replay = again.read(&start, &end).await.unwrap();
    assert_eq!(rows(&replay).len(), 30);
    again.stop().await.unwrap();
    s.stop().await.unwrap();
    // No deregistration asked: the consumer stays.
    assert!(consumers::describe(&client, &arn, &name)
        .await
        .unwrap()
        .is_some());
    consumers::deregister(&client, &arn, &name, Duration::from_secs(30))
        .await
        .unwrap();
    gone(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reuse_by_name_and_deregistration_on_a_clean_stop() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "eforeuse", 1).await;
    let arn = arn(&client, &stream).await;
    let opts = efo_options(&stream, &[("consumerName", "shared-consumer")]);
    let mut a = efo_source(&opts, "one");
    a.initial_offset().await.unwrap();
    let first = consumers::describe(&client, &arn, "shared-consumer")
        .await
        .unwrap()
        .unwrap();
    let mut b = efo_source(
        &opts.clone().with("requireConsumerDeregistration", "true"),
        "two",
    );
    b.initial_offset().await.unwrap();
    let all = consumers::list(&client, &arn).await.unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        (all[0].arn.as_str(), all[0].created_ms),
        (first.arn.as_str(), first.created_ms)
    );
    a.stop().await.unwrap();
    assert_eq!(
        consumers::list(&client, &arn).await.unwrap().len(),
        1,
        "a did not ask to deregister"
    );
    b.stop().await.unwrap();
    assert!(
        consumers::list(&client, &arn).await.unwrap().is_empty(),
        "gone once stop returned"
    );
    gone(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_deleted_while_subscribed_is_registered_again_without_loss() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efodel", 1).await;
    let arn = arn(&client, &stream).await;
    let opts = efo_options(&stream, &[("consumerName", "deleted-outside")]);
    // kinesis-mock keeps pushing to a deregistered consumer's open subscription (Kinesis ends
    // it); renewing every 2 s makes the next SubscribeToShard meet the deletion.
    std::env::set_var(tributary_kinesis::efo::RENEW_ENV, "2000");
    let mut s = efo_source(&opts, "x");
    std::env::remove_var(tributary_kinesis::efo::RENEW_ENV);
    let start = s.initial_offset().await.unwrap();
    put(&client, &stream, "k", &values("before", 5)).await;
    let (b1, at) = drain(s.as_mut(), start, 5, Duration::from_secs(10)).await;
    assert_eq!(data(&b1), values("before", 5));
    let old = consumers::describe(&client, &arn, "deleted-outside")
        .await
        .unwrap()
        .unwrap();
    consumers::deregister(&client, &arn, "deleted-outside", Duration::from_secs(30))
        .await
        .unwrap();
    put(&client, &stream, "k", &values("after", 5)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    put(&client, &stream, "k", &values("later", 5)).await;
    let (b2, _) = drain(s.as_mut(), at, 10, Duration::from_secs(40)).await;
    let want: Vec<String> = values("after", 5)
        .into_iter()
        .chain(values("later", 5))
        .collect();
    assert_eq!(data(&b2), want, "nothing lost, nothing twice");
    let all = consumers::list(&client, &arn).await.unwrap();
    assert_eq!(all.len(), 1, "exactly one consumer, no zombie: {all:?}");
    assert_ne!(all[0].arn, old.arn, "registered again");
    let m = s.metrics();
    assert!(m["efo.reRegistrations"].as_u64().unwrap() >= 1, "{m:?}");
    s.stop().await.unwrap();
    gone(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_are_read_before_children_under_efo() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efosplit", 1).await;
    let before = values("p", 6);
    put(&client, &stream, "key", &before).await;
    let mut s = efo_source(
        &efo_options(&stream, &[("consumerName", "split-reader")]),
        "s",
    );
    let start = s.initial_offset().await.unwrap();
    let (first, at) = drain(s.as_mut(), start, 5, Duration::from_secs(10)).await;
    assert_eq!(data(&first), before);
    let parent = split_first_shard(&client, &stream).await;
    let after = values("c", 6);
    put(&client, &stream, "key", &after).await;
    let (rest, _) = drain(s.as_mut(), at, 6, Duration::from_secs(40)).await;
    let r = rows(&rest);
    assert_eq!(
        r.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
        after,
        "per-key order, nothing lost"
    );
    assert!(
        r.iter().all(|x| x.2 != parent),
        "the children hold the new records"
    );
    s.stop().await.unwrap();
    let arn = arn(&client, &stream).await;
    consumers::deregister(&client, &arn, "split-reader", Duration::from_secs(30))
        .await
        .unwrap();
    gone(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_efo_source_does_not_spin() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efoidle", 2).await;
    let mut s = efo_source(
        &efo_options(&stream, &[("consumerName", "idle-reader")]),
        "i",
    );
    let start = s.initial_offset().await.unwrap();
    s.latest_offset(&start, &tributary_sdk::ReadLimit::All)
        .await
        .unwrap();
    let (t0, c0) = (
        Instant::now(),
        tributary_proc_cpu::process_cpu().expect("this process's CPU time"),
    );
    let mut plans = 0;
    while t0.elapsed() < Duration::from_secs(30) {
        // The runtime's trigger loop on an idle stream: plan, nothing, wait.
        let end = s
            .latest_offset(&start, &tributary_sdk::ReadLimit::All)
            .await
            .unwrap();
        assert_eq!(end, start);
        plans += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let secs = tributary_proc_cpu::process_cpu()
        .expect("this process's CPU time")
        .saturating_sub(c0)
        .as_secs_f64();
    println!(
        "idle EFO source: {plans} plans in 30 s, CPU {secs:.2} s ({:.1}%)",
        secs / 30.0 * 100.0
    );
    assert!(plans > 20, "plans return promptly ({plans})");
    assert!(
        secs < 3.0,
        "an idle source uses under 10% of a core: {secs} s"
    );
    // Records produced now still arrive: no stall.
    put(&client, &stream, "k", &values("wake", 2)).await;
    let (b, _) = drain(s.as_mut(), start, 2, Duration::from_secs(10)).await;
    assert_eq!(data(&b), values("wake", 2));
    s.stop().await.unwrap();
    let arn = arn(&client, &stream).await;
    consumers::deregister(&client, &arn, "idle-reader", Duration::from_secs(30))
        .await
        .unwrap();
    gone(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leak_report_names_consumers_no_running_pipeline_owns() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efoleak", 1).await;
    let arn = arn(&client, &stream).await;
    let prefix = "leaktest_";
    // Pipeline "old" stops without deregistering: its consumer leaks.
    let mut old = efo_source(
        &efo_options(&stream, &[("consumerNamePrefix", prefix)]),
        "old",
    );
    old.initial_offset().await.unwrap();
    old.stop().await.unwrap();
    let mut new = efo_source(
        &efo_options(&stream, &[("consumerNamePrefix", prefix)]),
        "new",
    );
    new.initial_offset().await.unwrap();
    let m = new.metrics();
    assert_eq!(
        m["efo.leakedConsumers"],
        serde_json::json!(["leaktest_old"])
    );
    let orphans = consumers::orphaned(&client, &arn, prefix, &["new".into()])
        .await
        .unwrap();
    assert_eq!(
        orphans.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["leaktest_old"]
    );
    assert!(
        consumers::orphaned(&client, &arn, prefix, &["new".into(), "old".into()])
            .await
            .unwrap()
            .is_empty()
    );
    new.stop().await.unwrap();
    for n in ["leaktest_old", "leaktest_new"] {
        consumers::deregister(&client, &arn, n, Duration::from_secs(30))
            .await
            .unwrap();
    }
    gone(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_mode_streams_chunks_per_shard_and_the_end_offset_continues_exactly() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efort", 2).await;
    let opts = efo_options(&stream, &[("consumerName", "rt-reader")]);
    let d = tributary_kinesis::KinesisSourceFactory
        .describe(&opts)
        .unwrap();
    assert_eq!(d.real_time, tributary_sdk::RealTimeSupport::Supported);
    let polling = tributary_kinesis::KinesisSourceFactory
        .describe(&source_options(Server::Mock, &stream, &[]))
        .unwrap();
    assert!(
        matches!(polling.real_time, tributary_sdk::RealTimeSupport::Unsupported { ref reason } if reason.contains("set consumerMode = efo"))
    );
    let mut s = efo_source(&opts, "rt");
    let start = s.initial_offset().await.unwrap();
    let (tx, mut rx) = tributary_sdk::chunk_queue(4);
    s.as_streaming()
        .unwrap()
        .start_stream(&start, tx)
        .await
        .unwrap();
    let sent: Vec<String> = values("rt", 40);
    put(&client, &stream, "a", &sent[..20]).await;
    put(&client, &stream, "b", &sent[20..]).await;
    let mut got = Vec::new();
    let mut delivered = std::collections::BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < sent.len() && Instant::now() < deadline {
        let Ok(Some(c)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await else {
            continue;
        };
        let c = c.unwrap();
        assert_eq!(c.appended_ms.len(), c.batch.num_rows());
        got.extend(data(std::slice::from_ref(&c.batch)));
        delivered.insert(c.partition.clone(), c.position.clone());
    }
    s.as_streaming().unwrap().stop_stream().await.unwrap();
    let mut sorted_got = got.clone();
    sorted_got.sort();
    let mut want = sent.clone();
    want.sort();
    assert_eq!(sorted_got, want);
    let end = s
        .as_streaming()
        .unwrap()
        .end_offset(&start, &delivered)
        .unwrap();
    // The micro-batch contract takes over exactly where the stream stopped.
    put(&client, &stream, "a", &values("after", 2)).await;
    let (more, _) = drain(s.as_mut(), end.clone(), 2, Duration::from_secs(20)).await;
    assert_eq!(data(&more), values("after", 2));
    // And the logged range [start, end) replays the 40 records by polling.
    let replay = s.read(&start, &end).await.unwrap();
    assert_eq!(rows(&replay).len(), 40);
    s.stop().await.unwrap();
    let arn = arn(&client, &stream).await;
    consumers::deregister(&client, &arn, "rt-reader", Duration::from_secs(30))
        .await
        .unwrap();
    gone(&client, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumers_command_registers_lists_and_deregisters() {
    if !available(Server::Mock) {
        return;
    }
    use consumers::{consumers_command, ConsumersCommand};
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "efocli", 1).await;
    let settings = tributary_kinesis::config::ConnectionSettings {
        region: Some("us-east-1".into()),
        endpoint: Some(endpoint(Server::Mock)),
        credentials: tributary_kinesis::config::BaseCredentials::Static {
            access_key: tributary_sdk::Secret::new("AKIDTEST"),
            secret_key: tributary_sdk::Secret::new("test-secret"),
        },
        assume_role: None,
        ca_file: Some(ca().into()),
    };
    let secrets = tributary_sdk::EnvSecretStore;
    let run = |c: ConsumersCommand| consumers_command(&settings, &secrets, &stream, c);
    for n in ["cli_a", "cli_b"] {
        let r = run(ConsumersCommand::Register { name: n.into() })
            .await
            .unwrap();
        assert!(r[0].is_active(), "{r:?}");
    }
    let all = run(ConsumersCommand::List { orphaned: None })
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["cli_a", "cli_b"]
    );
    let orphans = run(ConsumersCommand::List {
        orphaned: Some(("cli_".into(), vec!["a".into()])),
    })
    .await
    .unwrap();
    assert_eq!(
        orphans.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["cli_b"]
    );
    let gone_one = run(ConsumersCommand::Deregister {
        name: "cli_b".into(),
    })
    .await
    .unwrap();
    assert_eq!(gone_one.len(), 1);
    let left = run(ConsumersCommand::List { orphaned: None })
        .await
        .unwrap();
    assert_eq!(
        left.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["cli_a"]
    );
    assert!(run(ConsumersCommand::Deregister {
        name: "cli_b".into()
    })
    .await
    .unwrap()
    .is_empty());
    gone(&client, &stream).await;
}

/// Fault injection (the only mock here): an SDK interceptor answers SubscribeToShard calls 2 to
/// 4 with `InternalFailure` (HTTP 500), at each renewal of the subscription.
#[derive(Debug, Default)]
struct FailSubscribes {
    calls: std::sync::Mutex<Vec<Instant>>,
    fail_next: std::sync::Mutex<bool>,
}

#[derive(Debug, Clone)]
struct FailSome(std::sync::Arc<FailSubscribes>);

impl aws_sdk_kinesis::config::Intercept for FailSome {
    fn name(&self) -> &'static str {
        "FailSome"
    }

    fn read_before_transmit(
        &self,
        ctx: &aws_sdk_kinesis::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _: &aws_sdk_kinesis::config::RuntimeComponents,
        _: &mut aws_sdk_kinesis::config::ConfigBag,
    ) -> Result<(), aws_sdk_kinesis::error::BoxError> {
        if ctx.request().headers().get("x-amz-target") == Some("Kinesis_20131202.SubscribeToShard")
        {
            let mut calls = self.0.calls.lock().unwrap();
            calls.push(Instant::now());
            *self.0.fail_next.lock().unwrap() = (2..=4).contains(&calls.len());
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        ctx: &mut aws_sdk_kinesis::config::interceptors::BeforeDeserializationInterceptorContextMut<
            '_,
        >,
        _: &aws_sdk_kinesis::config::RuntimeComponents,
        _: &mut aws_sdk_kinesis::config::ConfigBag,
    ) -> Result<(), aws_sdk_kinesis::error::BoxError> {
        let mut flag = self.0.fail_next.lock().unwrap();
        if *flag {
            *flag = false;
            let resp = ctx.response_mut();
            *resp.status_mut() = 500u16.try_into().unwrap();
            resp.headers_mut()
                .insert("content-type", "application/x-amz-json-1.1");
            *resp.body_mut() = aws_smithy_types::body::SdkBody::from(
                r#"{"__type":"InternalFailure","message":"injected"}"#,
            );
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_subscription_is_retried_with_backoff_without_loss_or_zombie() {
    if !available(Server::Mock) {
        return;
    }
    let raw = raw_client(Server::Mock).await;
    let stream = create_stream(&raw, "efofail", 1).await;
    let options = efo_options(&stream, &[("consumerName", "failing-sub")]);
    let parsed = tributary_sdk::OptionSpec::validate_all(
        &tributary_kinesis::config::source_option_specs(),
        &options,
        "kinesis",
    )
    .unwrap();
    let config = tributary_kinesis::config::SourceConfig::parse(&parsed).unwrap();
    let state = std::sync::Arc::new(FailSubscribes::default());
    let client = aws_sdk_kinesis::Client::from_conf(
        raw.config()
            .to_builder()
            .interceptor(FailSome(state.clone()))
            .build(),
    );
    let context = ConnectorContext::default();
    let identity = tributary_sdk::SourceIdentity {
        connector: "kinesis".into(),
        target: "test".into(),
    };
    // Renew every second so that renewals (and the injected failures) happen during the test.
    std::env::set_var(tributary_kinesis::efo::RENEW_ENV, "1000");
    let mut s =
        tributary_kinesis::KinesisSource::new(config, identity, context.secrets.clone(), &context)
            .with_client(client);
    let start = s.initial_offset().await.unwrap();
    std::env::remove_var(tributary_kinesis::efo::RENEW_ENV);
    let mut sent = Vec::new();
    let mut at = start;
    let mut got = Vec::new();
    for round in 0..6 {
        let v = values(&format!("r{round}"), 3);
        put(&raw, &stream, "k", &v).await;
        sent.extend(v);
        let (b, end) = drain(&mut s, at, 3, Duration::from_secs(30)).await;
        got.extend(data(&b));
        at = end;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    assert_eq!(got, sent, "nothing lost, nothing twice");
    let calls = state.calls.lock().unwrap().clone();
    assert!(
        calls.len() >= 5,
        "renewed and retried: {} SubscribeToShard calls",
        calls.len()
    );
    // Backoff: the retries after failures 1, 2, 3 wait at least 100, 200, 400 ms (2 -> 3 -> 4 -> 5).
    for (i, min_ms) in [(2usize, 190u64), (3, 390)] {
        let gap = calls[i].duration_since(calls[i - 1]);
        assert!(
            gap >= Duration::from_millis(min_ms),
            "gap before call {} is {gap:?}",
            i + 1
        );
    }
    let m = s.metrics();
    assert!(m["efo.subscribeFailures"].as_u64().unwrap() >= 3, "{m:?}");
    let arn = arn(&raw, &stream).await;
    let all = consumers::list(&raw, &arn).await.unwrap();
    assert_eq!(
        all.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["failing-sub"],
        "no zombie consumer"
    );
    assert_eq!(
        m["efo.reRegistrations"], 0,
        "a failure is not a reason to register again"
    );
    s.stop().await.unwrap();
    gone(&raw, &stream).await;
}

/// Deletes the streams these tests (and tests/sink.rs) left behind on kinesis-mock (its shard
/// limit is 50): `cargo test --test efo -- --ignored`.
#[tokio::test]
#[ignore]
async fn cleanup_leftover_streams() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let names = client
        .list_streams()
        .limit(1000)
        .send()
        .await
        .unwrap()
        .stream_names()
        .to_vec();
    for n in names {
        let hint = n.split('-').next().unwrap_or_default();
        if [
            "efort", "efofail", "efo", "eforeuse", "efodel", "efosplit", "efoidle", "efoleak",
            "sink", "sinkbig", "sinktext", "probe", "bench", "avnow", "cmd", "efocli", "fbs",
            "latest", "merge", "ra", "rb", "rtra", "rtrb", "split", "th", "throttle", "efodereg",
        ]
        .contains(&hint)
        {
            let _ = client
                .delete_stream()
                .stream_name(&n)
                .enforce_consumer_deletion(true)
                .send()
                .await;
        }
    }
}

/// Collects the chunks of a running real-time read until `want` records or 20 s.
async fn stream_records(
    rx: &mut tributary_sdk::ChunkReceiver,
    want: usize,
) -> (
    Vec<String>,
    std::collections::BTreeMap<String, serde_json::Value>,
) {
    let (mut got, mut delivered) = (Vec::new(), std::collections::BTreeMap::new());
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < want && Instant::now() < deadline {
        if let Ok(Some(c)) = tokio::time::timeout(Duration::from_secs(2), rx.recv()).await {
            let c = c.unwrap();
            got.extend(data(std::slice::from_ref(&c.batch)));
            delivered.insert(c.partition.clone(), c.position.clone());
        }
    }
    (got, delivered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_time_restart_applies_the_micro_batch_restart_checks() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let a = create_stream(&client, "rtra", 1).await;
    let b = create_stream(&client, "rtrb", 1).await;
    put(&client, &a, "k", &values("a", 2)).await;
    put(&client, &b, "k", &values("b", 2)).await;
    let opts = |streams: &str, extra: &[(&str, &str)]| {
        let mut o = efo_options(
            streams,
            &[
                ("consumerName", "rt-restart"),
                ("requireConsumerDeregistration", "true"),
            ],
        );
        for (k, v) in extra {
            o.set(*k, *v);
        }
        o
    };
    // First run: real-time on a.
    let mut s = efo_source(&opts(&a, &[]), "rtr");
    let start = s.initial_offset().await.unwrap();
    let (tx, mut rx) = tributary_sdk::chunk_queue(4);
    let st = s.as_streaming().unwrap();
    st.start_stream(&start, tx).await.unwrap();
    let (got, delivered) = stream_records(&mut rx, 2).await;
    st.stop_stream().await.unwrap();
    assert_eq!(got, values("a", 2));
    let end = st.end_offset(&start, &delivered).unwrap();
    s.stop().await.unwrap();

    // Restart straight into real-time without a: removed → error before anything is read.
    let mut s2 = efo_source(&opts(&b, &[]), "rtr");
    let (tx, _rx) = tributary_sdk::chunk_queue(4);
    let e = s2
        .as_streaming()
        .unwrap()
        .start_stream(&end, tx)
        .await
        .unwrap_err();
    assert_eq!(
        e.code().as_str(),
        "KINESIS_SOURCE_STREAMS_REMOVED_ON_RESTART",
        "{e}"
    );

    // failOnDataLoss=false: logged and counted; b (added) is read from its oldest record and
    // the end offset continues without a, with b.
    let mut s3 = efo_source(&opts(&b, &[("failOnDataLoss", "false")]), "rtr");
    let (tx, mut rx) = tributary_sdk::chunk_queue(4);
    let st = s3.as_streaming().unwrap();
    st.start_stream(&end, tx).await.unwrap();
    let (got, delivered) = stream_records(&mut rx, 2).await;
    st.stop_stream().await.unwrap();
    assert_eq!(got, values("b", 2));
    let end3 = st.end_offset(&end, &delivered).unwrap().to_json_string();
    assert!(!end3.contains(&a) && end3.contains(&b), "{end3}");
    assert_eq!(
        s3.metrics()["dataLoss.KINESIS_SOURCE_STREAMS_REMOVED_ON_RESTART"],
        1
    );
    // An end offset with nothing delivered still carries the added stream.
    let idle_end = s3
        .as_streaming()
        .unwrap()
        .end_offset(&end, &Default::default())
        .unwrap()
        .to_json_string();
    assert!(
        !idle_end.contains(&a) && idle_end.contains(&b),
        "{idle_end}"
    );
    s3.stop().await.unwrap();

    // Names → ARN on the same checkpoint is refused in real-time mode too.
    let arn_a = arn(&client, &a).await;
    let mut o = opts(&a, &[]);
    o.remove("streamName");
    o.set("streamARN", arn_a);
    let mut s4 = efo_source(&o, "rtr");
    let (tx, _rx) = tributary_sdk::chunk_queue(4);
    let e = s4
        .as_streaming()
        .unwrap()
        .start_stream(&end, tx)
        .await
        .unwrap_err();
    assert_eq!(
        e.code(),
        tributary_sdk::ErrorCode::CheckpointIncompatible,
        "{e}"
    );
    gone(&client, &a).await;
    gone(&client, &b).await;
}
