//! Source throughput: the Tributary Kafka source (latest_offset + read into a null sink) against a
//! raw rdkafka `BaseConsumer` poll loop, on the same broker and the same records, in one run.
//!
//! ```text
//! scripts/services/kafka.sh start && . target/services/kafka.env
//! cargo bench -p tributary-kafka --bench throughput
//! ```
//!
//! `TRIBUTARY_KAFKA_BENCH_RECORDS` (default 1 000 000) records of a 10-byte key and a 100-byte
//! value are produced once into a fresh 4-partition topic of the broker at
//! `TRIBUTARY_KAFKA_BOOTSTRAP` (the sqlite tansu of the service script: the memory engine
//! misreports latest offsets after batched produce). Each side then reads them all, twice,
//! alternating; the best run of each side is compared.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tributary_kafka::KafkaSource;
use tributary_sdk::{ConnectorContext, Options, Source};

const PARTITIONS: i32 = 4;

fn produce(bootstrap: &str, topic: &str, n: usize) {
    let producer: ThreadedProducer<_> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    let value = vec![b'v'; 100];
    for i in 0..n {
        let key = format!("{i:010}");
        let mut rec = BaseRecord::<str, [u8]>::to(topic)
            .key(&key)
            .payload(&value)
            .partition((i % PARTITIONS as usize) as i32);
        loop {
            match producer.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    rec = r;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
    producer.flush(Duration::from_secs(300)).unwrap();
}

fn raw_loop(bootstrap: &str, topic: &str, n: usize) -> (Duration, u64) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "bench-raw")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let t0 = Instant::now();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let (mut count, mut bytes) = (0usize, 0u64);
    while count < n {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            bytes += (m.key().map_or(0, <[u8]>::len) + m.payload().map_or(0, <[u8]>::len)) as u64;
            count += 1;
        }
    }
    (t0.elapsed(), bytes)
}

async fn tributary_loop(bootstrap: &str, topic: &str, n: usize) -> (Duration, u64) {
    let options: Options = [
        ("kafka.bootstrap.servers", bootstrap),
        ("subscribe", topic),
        ("startingOffsets", "earliest"),
    ]
    .into_iter()
    .collect();
    let t0 = Instant::now();
    let mut source = KafkaSource::new(&options, &ConnectorContext::default()).unwrap();
    let mut start = source.initial_offset().await.unwrap();
    let limit = source.default_read_limit();
    let (mut count, mut bytes) = (0usize, 0u64);
    while count < n {
        let end = source.latest_offset(&start, &limit).await.unwrap();
        if end == start {
            continue;
        }
        // The null sink: count rows and payload bytes.
        for b in source.read(&start, &end).await.unwrap() {
            count += b.num_rows();
            for col in ["key", "value"] {
                bytes += b.column_by_name(col).unwrap().to_data().buffers()[1].len() as u64;
            }
        }
        start = end;
    }
    let elapsed = t0.elapsed();
    source.stop().await.unwrap();
    (elapsed, bytes)
}

fn main() {
    let Ok(bootstrap) = std::env::var("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        eprintln!(
            "skipped: TRIBUTARY_KAFKA_BOOTSTRAP is not set (run scripts/services/kafka.sh start)"
        );
        return;
    };
    let n: usize = std::env::var("TRIBUTARY_KAFKA_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let topic = format!("bench-{}-{}", std::process::id(), n);
    rt.block_on(async {
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .create()
            .unwrap();
        for r in admin
            .create_topics(
                &[NewTopic::new(
                    &topic,
                    PARTITIONS,
                    TopicReplication::Fixed(1),
                )],
                &AdminOptions::new(),
            )
            .await
            .unwrap()
        {
            r.unwrap();
        }
    });
    let t0 = Instant::now();
    produce(&bootstrap, &topic, n);
    println!(
        "produced {n} records (10 B key, 100 B value, {PARTITIONS} partitions) in {:.1?}",
        t0.elapsed()
    );

    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    let (mut best_raw, mut best_trib) = (Duration::MAX, Duration::MAX);
    for round in 1..=2 {
        let (d, raw_bytes) = raw_loop(&bootstrap, &topic, n);
        println!(
            "round {round}: raw rdkafka BaseConsumer   {:>10.0} records/s ({d:.2?}, {raw_bytes} B)",
            rate(d)
        );
        best_raw = best_raw.min(d);
        let (d, trib_bytes) = rt.block_on(tributary_loop(&bootstrap, &topic, n));
        println!("round {round}: tributary KafkaSource      {:>10.0} records/s ({d:.2?}, {trib_bytes} B)", rate(d));
        assert_eq!(raw_bytes, trib_bytes, "both sides read the same bytes");
        best_trib = best_trib.min(d);
    }
    println!(
        "best: raw {:.0} records/s, tributary {:.0} records/s, ratio tributary/raw = {:.2}x",
        rate(best_raw),
        rate(best_trib),
        rate(best_trib) / rate(best_raw)
    );
}
