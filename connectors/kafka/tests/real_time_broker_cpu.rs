//! The broker's CPU while a real-time batch idles on 8 partitions: one reader (consumer) for
//! every partition, the default, against one per partition (`maxPartitions=8`, what Spark's task
//! per partition would be). tansu reached a whole core serving one consumer per partition
//! (TESTING.md); this measures the difference on the plain tansu the
//! service script started (its pid file), in a test binary of its own so that no other test
//! of this crate loads the broker meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use tributary_kafka::KafkaSource;
use tributary_sdk::{chunk_queue, ConnectorContext, Options, Source, StreamingSource};

fn source(bootstrap: &str, topic: &str, extra: &[(&str, &str)]) -> KafkaSource {
    let mut o: Options = [
        ("kafka.bootstrap.servers", bootstrap),
        ("subscribe", topic),
        ("startingOffsets", "earliest"),
        ("fetchOffset.timeoutMs", "10000"),
    ]
    .into_iter()
    .collect();
    for (k, v) in extra {
        o.set(*k, *v);
    }
    KafkaSource::new(&o, &ConnectorContext::default()).unwrap()
}

/// The broker's CPU time while a real-time batch idles on an 8-partition topic for `idle`.
async fn broker_cpu_while_idle(pid: &str, src: &mut KafkaSource, idle: Duration) -> Duration {
    let start = src.initial_offset().await.unwrap();
    let (tx, _rx) = chunk_queue(16);
    src.start_stream(&start, tx).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = tributary_proc_cpu::cpu_time(pid).unwrap();
    tokio::time::sleep(idle).await;
    let after = tributary_proc_cpu::cpu_time(pid).unwrap();
    src.stop_stream().await.unwrap();
    after - before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_single_reader_costs_the_broker_less_cpu_than_one_per_partition() {
    let Some(b) = env("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        return;
    };
    let Some(dir) = var("TRIBUTARY_SERVICES_DIR") else {
        eprintln!("skipped: TRIBUTARY_SERVICES_DIR is not set (the broker's pid file)");
        return;
    };
    let Ok(pid) = std::fs::read_to_string(format!("{dir}/kafka/plain.pid")) else {
        eprintln!("skipped: no pid file for the plain broker");
        return;
    };
    let pid = pid.trim().to_string();
    let cfg = client_config(&b, &[]);
    let topic = unique("rtcpu");
    create_topic(&cfg, &topic, 8, &[]).await;
    let idle = Duration::from_secs(8);
    let each = broker_cpu_while_idle(
        &pid,
        &mut source(&b, &topic, &[("maxPartitions", "8")]),
        idle,
    )
    .await;
    let one = broker_cpu_while_idle(&pid, &mut source(&b, &topic, &[]), idle).await;
    eprintln!(
        "tansu CPU over {idle:?} of idle real-time reading of 8 partitions: one reader per partition (maxPartitions=8) {each:?}, default (one reader) {one:?}"
    );
    assert!(
        one < each,
        "one consumer costs the broker less: {one:?} vs {each:?}"
    );
}
