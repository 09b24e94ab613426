//! The broker's CPU while a stream idles, on the plain tansu the service script started (its
//! pid file), in a test binary of its own so that no other test of this crate loads the broker
//! meanwhile (and its tests one at a time):
//! - a real-time batch on 8 partitions: one reader (consumer) for every partition, the
//!   default, against one per partition (`maxPartitions=8`, what Spark's task per partition
//!   would be). tansu reached a whole core serving one consumer per partition (TESTING.md);
//! - micro-batches: the range-read consumers stay positioned between batches (`reader.rs`),
//!   but a partition caught up with its end is paused when the next batch is planned, so an
//!   idle stream does not keep fetching.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use tributary_kafka::KafkaSource;
use tributary_sdk::{chunk_queue, ReadLimit, Source, StreamingSource};

/// One test at a time: each measures the broker alone.
static BROKER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The plain broker and its pid, or why the test is skipped.
fn broker() -> Option<(String, String)> {
    let b = env("TRIBUTARY_KAFKA_BOOTSTRAP")?;
    let Some(dir) = var("TRIBUTARY_SERVICES_DIR") else {
        eprintln!("skipped: TRIBUTARY_SERVICES_DIR is not set (the broker's pid file)");
        return None;
    };
    let Ok(pid) = std::fs::read_to_string(format!("{dir}/kafka/plain.pid")) else {
        eprintln!("skipped: no pid file for the plain broker");
        return None;
    };
    Some((b, pid.trim().to_string()))
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
    let Some((b, pid)) = broker() else {
        return;
    };
    let _alone = BROKER.lock().await;
    let cfg = client_config(&b, &[]);
    let topic = unique("rtcpu");
    create_topic(&cfg, &topic, 8, &[]).await;
    let idle = Duration::from_secs(8);
    let each = broker_cpu_while_idle(
        &pid,
        &mut earliest_source(&b, &topic, &[("maxPartitions", "8")]),
        idle,
    )
    .await;
    let one = broker_cpu_while_idle(&pid, &mut earliest_source(&b, &topic, &[]), idle).await;
    eprintln!(
        "tansu CPU over {idle:?} of idle real-time reading of 8 partitions: one reader per partition (maxPartitions=8) {each:?}, default (one reader) {one:?}"
    );
    assert!(
        one < each,
        "one consumer costs the broker less: {one:?} vs {each:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caught_up_range_read_consumers_stop_fetching_when_the_next_batch_is_planned() {
    let Some((b, pid)) = broker() else {
        return;
    };
    let _alone = BROKER.lock().await;
    let cfg = client_config(&b, &[]);
    let topic = unique("idlebatch");
    create_topic(&cfg, &topic, 8, &[]).await;
    let recs: Vec<Rec> = (0..800).map(|i| Rec::new(i % 8, format!("v{i}"))).collect();
    produce(&cfg, &topic, &recs).await;
    let mut src = earliest_source(&b, &topic, &[]);
    let start = src.initial_offset().await.unwrap();
    let (end, rows) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(rows.len(), 800);
    let idle = Duration::from_secs(8);
    // the pooled consumers, positioned at the end, fetch on (nothing arrives)
    let before = tributary_proc_cpu::cpu_time(&pid).unwrap();
    tokio::time::sleep(idle).await;
    let fetching = tributary_proc_cpu::cpu_time(&pid).unwrap() - before;
    // a trigger loop plans every 500 ms and finds nothing new: the partitions are paused
    let before = tributary_proc_cpu::cpu_time(&pid).unwrap();
    for _ in 0..idle.as_millis() / 500 {
        assert_eq!(src.latest_offset(&end, &ReadLimit::All).await.unwrap(), end);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let planning = tributary_proc_cpu::cpu_time(&pid).unwrap() - before;
    eprintln!(
        "tansu CPU over {idle:?} after a batch on 8 partitions: consumers left fetching {fetching:?}, planned every 500 ms (caught-up partitions paused) {planning:?}"
    );
    assert!(
        planning < fetching,
        "paused consumers cost the broker less: {planning:?} vs {fetching:?}"
    );
    // a paused partition is resumed by its next read
    produce(&cfg, &topic, &recs).await;
    let (_, rows) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(rows.len(), 800, "the next batch reads the new records");
}
