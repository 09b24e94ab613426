//! Real-time mode on tansu: `maxPartitions` spreads the partitions over fewer readers (each
//! consumer polls several partitions) and every record still arrives exactly once, in its
//! partition's order, in chunks bounded by `kafka.max.poll.records`. (The broker's CPU with
//! fewer readers is measured in `broker_cpu.rs`, a test binary of its own.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use common::*;
use tributary_sdk::{chunk_queue, Source, StreamingSource};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_partitions_reads_every_partition_once_on_fewer_readers() {
    let Some(b) = env("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let topic = unique("rtmax");
    create_topic(&cfg, &topic, 4, &[]).await;
    let recs: Vec<Rec> = (0..10)
        .flat_map(|i| (0..4).map(move |p| Rec::new(p, format!("r-{p}-{i}"))))
        .collect();
    produce(&cfg, &topic, &recs).await;

    let mut src = earliest_source(
        &b,
        &topic,
        &[("maxPartitions", "1"), ("kafka.max.poll.records", "3")],
    );
    let start = src.initial_offset().await.unwrap();
    let (tx, mut rx) = chunk_queue(16);
    src.start_stream(&start, tx).await.unwrap();
    let mut by_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    let mut chunks = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while by_partition.values().map(Vec::len).sum::<usize>() < 40 {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, rx.recv())
            .await
            .expect("40 records within 60 s")
            .expect("the reader runs")
            .unwrap();
        assert!(chunk.batch.num_rows() <= 3, "max.poll.records=3");
        let parts = chunk
            .batch
            .column_by_name("partition")
            .unwrap()
            .as_primitive::<Int32Type>();
        let offs = chunk
            .batch
            .column_by_name("offset")
            .unwrap()
            .as_primitive::<Int64Type>();
        let p = parts.value(0);
        assert!(
            parts.iter().all(|x| x == Some(p)),
            "one partition per chunk"
        );
        assert_eq!(chunk.partition, format!("{topic}/{p}"));
        by_partition
            .entry(p)
            .or_default()
            .extend(offs.iter().flatten());
        chunks += 1;
    }
    src.stop_stream().await.unwrap();
    assert_eq!(by_partition.len(), 4, "{by_partition:?}");
    for (p, offs) in &by_partition {
        assert_eq!(
            offs,
            &(0..10).collect::<Vec<i64>>(),
            "partition {p}: each once, in order"
        );
    }
    assert!(
        chunks >= 16,
        "chunks of at most 3 of 10 records per partition: {chunks}"
    );
}
