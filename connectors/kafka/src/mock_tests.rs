//! Effects of the options that shape reads — `kafka.max.poll.records` (batch size) and
//! `maxPartitions` (consumers) — on librdkafka's in-process mock cluster. These are config
//! effects inside the client; the mock is enough and no broker is started.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use rdkafka::producer::{BaseProducer, FutureProducer, FutureRecord, Producer};
use rdkafka::ClientConfig;
use tributary_sdk::{chunk_queue, ConnectorContext, Options, ReadLimit, Source, StreamingSource};

use crate::source::KafkaSource;

struct Mock {
    owner: BaseProducer,
    bootstrap: String,
}

impl Mock {
    fn new(topic: &str, partitions: i32) -> Mock {
        let owner: BaseProducer = ClientConfig::new()
            .set("test.mock.num.brokers", "1")
            .create()
            .unwrap();
        let bootstrap = {
            let cluster = owner.client().mock_cluster().unwrap();
            cluster.create_topic(topic, partitions, 1).unwrap();
            cluster.bootstrap_servers()
        };
        Mock { owner, bootstrap }
    }

    async fn send(&self, topic: &str, partitions: i32, per_partition: usize) {
        for part in 0..partitions {
            self.send_to(topic, part, 0..per_partition).await;
        }
    }

    /// Records `{part}-{i}` for `i` in `ids` to partition `part`.
    async fn send_to(&self, topic: &str, part: i32, ids: std::ops::Range<usize>) {
        let p: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("linger.ms", "0")
            .create()
            .unwrap();
        {
            for i in ids {
                let v = format!("{part}-{i}");
                p.send(
                    FutureRecord::<(), str>::to(topic)
                        .partition(part)
                        .payload(&v),
                    Duration::from_secs(10),
                )
                .await
                .map_err(|(e, _)| e)
                .unwrap();
            }
        }
        let _ = self.owner.flush(Duration::from_secs(1));
    }

    fn source(&self, topic: &str, pairs: &[(&str, &str)]) -> KafkaSource {
        let mut o: Options = pairs.iter().copied().collect();
        o.set("kafka.bootstrap.servers", self.bootstrap.clone());
        o.set("subscribe", topic);
        o.set("startingOffsets", "earliest");
        if o.get("fetchOffset.timeoutMs").is_none() {
            o.set("fetchOffset.timeoutMs", "10000");
        }
        KafkaSource::new(&o, &ConnectorContext::default()).unwrap()
    }
}

/// Reads everything there is in one batch; the batches' row counts.
async fn read_all(src: &mut KafkaSource) -> Vec<usize> {
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let batches = src.read(&start, &end).await.unwrap();
    batches.iter().map(|b| b.num_rows()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_poll_records_bounds_the_batches_of_a_range_read() {
    let mock = Mock::new("polls", 1);
    mock.send("polls", 1, 10).await;
    let mut plain = mock.source("polls", &[]);
    assert_eq!(read_all(&mut plain).await, vec![10]);
    let mut bounded = mock.source("polls", &[("kafka.max.poll.records", "3")]);
    let sizes = read_all(&mut bounded).await;
    assert_eq!(sizes, vec![3, 3, 3, 1], "parts of at most 3 records");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_partitions_caps_the_consumers_of_a_range_read() {
    let mock = Mock::new("wide", 4);
    mock.send("wide", 4, 3).await;
    // By default each of the 4 partitions has a read thread (a thread that starts after
    // another finished reuses its consumer, so the pool holds 1 to 4); with maxPartitions=2
    // two threads read, so at most two consumers exist (reader.rs `parallelism` is unit-tested).
    let mut capped = mock.source("wide", &[("maxPartitions", "2")]);
    assert_eq!(read_all(&mut capped).await.iter().sum::<usize>(), 12);
    let used = capped.consumers().0;
    assert!((1..=2).contains(&used), "maxPartitions=2: {used} consumers");
}

/// Real-time mode: the chunks of every partition until `total` records arrived.
async fn stream(src: &mut KafkaSource, total: usize) -> (Vec<(String, usize)>, usize) {
    let start = src.initial_offset().await.unwrap();
    let (tx, mut rx) = chunk_queue(64);
    src.start_stream(&start, tx).await.unwrap();
    let readers = src.consumers().1;
    let mut chunks = Vec::new();
    let mut seen = 0;
    while seen < total {
        let chunk = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("chunks within 20 s")
            .expect("the readers are running")
            .unwrap();
        seen += chunk.batch.num_rows();
        chunks.push((chunk.partition.clone(), chunk.batch.num_rows()));
    }
    src.stop_stream().await.unwrap();
    (chunks, readers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_real_time_reader_polls_every_partition_unless_max_partitions_says_more() {
    let mock = Mock::new("live", 4);
    mock.send("live", 4, 5).await;
    let mut plain = mock.source("live", &[]);
    let (chunks, readers) = stream(&mut plain, 20).await;
    assert_eq!(
        readers, 1,
        "one reader (consumer) for every partition by default"
    );
    let partitions: BTreeSet<&str> = chunks.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(partitions.len(), 4, "every partition is read: {chunks:?}");

    let mut each = mock.source("live", &[("maxPartitions", "4")]);
    let (_, readers) = stream(&mut each, 20).await;
    assert_eq!(readers, 4, "maxPartitions=4 on 4 partitions: a reader each");
    let mut more = mock.source("live", &[("maxPartitions", "9")]);
    let (_, readers) = stream(&mut more, 20).await;
    assert_eq!(readers, 4, "never more readers than partitions");

    let mut capped = mock.source(
        "live",
        &[("maxPartitions", "2"), ("kafka.max.poll.records", "2")],
    );
    let (chunks, readers) = stream(&mut capped, 20).await;
    assert_eq!(readers, 2, "maxPartitions=2: two readers");
    let partitions: BTreeSet<&str> = chunks.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(partitions.len(), 4, "every partition is read: {chunks:?}");
    assert!(
        chunks.iter().all(|(_, n)| *n <= 2),
        "kafka.max.poll.records=2 bounds every chunk: {chunks:?}"
    );
    assert_eq!(chunks.iter().map(|(_, n)| n).sum::<usize>(), 20);
}

#[test]
fn min_partitions_above_max_partitions_is_a_conflict() {
    let o: Options = [
        ("kafka.bootstrap.servers", "127.0.0.1:1"),
        ("subscribe", "t"),
        ("minPartitions", "4"),
        ("maxPartitions", "2"),
    ]
    .into_iter()
    .collect();
    let e = KafkaSource::new(&o, &ConnectorContext::default()).unwrap_err();
    assert_eq!(
        e.code(),
        tributary_sdk::ErrorCode::ConflictingOptions,
        "{e}"
    );
    assert_eq!(e.context_value("option"), Some("minPartitions"));
    assert_eq!(e.context_value("conflicts_with"), Some("maxPartitions"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_partition_joins_the_running_reader() {
    let mock = Mock::new("grow-a", 1);
    mock.send("grow-a", 1, 2).await;
    let mut o: Options = [
        ("kafka.bootstrap.servers", mock.bootstrap.as_str()),
        ("subscribePattern", "grow-.*"),
        ("startingOffsets", "earliest"),
    ]
    .into_iter()
    .collect();
    o.set("fetchOffset.timeoutMs", "10000");
    let mut src = KafkaSource::new(&o, &ConnectorContext::default()).unwrap();
    let start = src.initial_offset().await.unwrap();
    let (tx, mut rx) = chunk_queue(64);
    src.start_stream(&start, tx).await.unwrap();
    let mut seen: Vec<(String, usize)> = Vec::new();
    while seen.iter().map(|(_, n)| n).sum::<usize>() < 2 {
        seen.push(next(&mut rx).await);
    }
    // A topic matching the pattern appears: the discovery task (every 5 s) hands its partition
    // to the one running reader (the default limit) instead of starting a second.
    mock.owner
        .client()
        .mock_cluster()
        .unwrap()
        .create_topic("grow-b", 1, 1)
        .unwrap();
    mock.send("grow-b", 1, 3).await;
    while seen
        .iter()
        .filter(|(p, _)| p == "grow-b/0")
        .map(|(_, n)| n)
        .sum::<usize>()
        < 3
    {
        seen.push(next(&mut rx).await);
    }
    assert_eq!(src.consumers().1, 1, "still one reader: {seen:?}");
    src.stop_stream().await.unwrap();
}

async fn next(rx: &mut tributary_sdk::ChunkReceiver) -> (String, usize) {
    let c = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a chunk within 20 s")
        .expect("the reader runs")
        .unwrap();
    (c.partition.clone(), c.batch.num_rows())
}

/// The values of `topic`-0's records `[start, end)`, read as one planned input partition.
async fn read_range(
    src: &mut KafkaSource,
    topic: &str,
    start: i64,
    end: i64,
) -> tributary_sdk::Result<Vec<String>> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    use futures::StreamExt;
    let range = crate::planner::OffsetRange {
        topic: topic.to_string(),
        partition: 0,
        start,
        end,
    };
    let partition = crate::partitions::input_partitions(vec![range])?.remove(0);
    let mut parts = src.read_partition(&partition).await?;
    let mut values = Vec::new();
    while let Some(part) = parts.next().await {
        let part = part?;
        let v = part.column_by_name("value").unwrap().as_binary::<i32>();
        values.extend((0..v.len()).map(|i| String::from_utf8_lossy(v.value(i)).into_owned()));
    }
    Ok(values)
}

/// Fault injection (the mock cluster's broker taken down): a range that starts where the last
/// read of its partition ended is read from what the pooled consumer already fetched, while a
/// range elsewhere needs the broker, so it fails until the broker is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_range_continues_from_what_the_consumer_already_fetched() {
    let mock = Mock::new("positioned", 1);
    mock.send("positioned", 1, 100).await;
    let mut src = mock.source(
        "positioned",
        &[
            ("kafkaConsumer.pollTimeoutMs", "3000"),
            ("fetchOffset.timeoutMs", "1000"),
        ],
    );
    let expect = |r: std::ops::Range<i64>| r.map(|i| format!("0-{i}")).collect::<Vec<_>>();
    assert_eq!(
        read_range(&mut src, "positioned", 0, 40).await.unwrap(),
        expect(0..40)
    );
    // librdkafka fetched the rest of the partition with the first fetch; let it settle
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cluster = mock.owner.client().mock_cluster().unwrap();
    cluster.broker_down(1).unwrap();
    assert_eq!(
        read_range(&mut src, "positioned", 40, 100).await.unwrap(),
        expect(40..100),
        "read from the consumer's queue with the broker down"
    );
    let err = read_range(&mut src, "positioned", 0, 10).await.unwrap_err();
    assert_eq!(err.code(), tributary_sdk::ErrorCode::Timeout, "{err}");
    cluster.broker_up(1).unwrap();
    // a new source (pollTimeoutMs at its default): the broker may take a while to lead again
    let mut src = mock.source("positioned", &[]);
    assert_eq!(
        read_range(&mut src, "positioned", 0, 10).await.unwrap(),
        expect(0..10)
    );
    assert_eq!(
        read_range(&mut src, "positioned", 10, 20).await.unwrap(),
        expect(10..20)
    );
}

/// One batch from `start`: its end and its rows.
async fn batch(
    src: &mut KafkaSource,
    start: tributary_sdk::Offset,
) -> (tributary_sdk::Offset, usize) {
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let rows = src
        .read(&start, &end)
        .await
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    (end, rows)
}

/// A partition paused when the source found it caught up, then left out of a read (so its
/// consumer unassigned it), is read again when it has new records: librdkafka keeps a pause
/// across an assignment, so it is resumed before it is unassigned (a reassigned partition that
/// stayed paused never fetched, and the read timed out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_partition_left_out_of_a_read_is_read_again_later() {
    let mock = Mock::new("paused", 2);
    mock.send_to("paused", 0, 0..5).await;
    let mut src = mock.source("paused", &[("kafkaConsumer.pollTimeoutMs", "5000")]);
    let start = src.initial_offset().await.unwrap();
    let (end, rows) = batch(&mut src, start).await;
    assert_eq!(rows, 5);
    // nothing new: partition 0's consumer is caught up, so it is paused
    let (end, rows) = batch(&mut src, end).await;
    assert_eq!(rows, 0);
    // a read of partition 1 alone: the consumer gives up partition 0
    mock.send_to("paused", 1, 0..3).await;
    let (end, rows) = batch(&mut src, end).await;
    assert_eq!(rows, 3);
    mock.send_to("paused", 0, 5..7).await;
    let (_, rows) = batch(&mut src, end).await;
    assert_eq!(rows, 2, "partition 0 is fetched again");
}
