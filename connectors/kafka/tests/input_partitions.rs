//! Input partitions (scale-out) against a real broker (tansu on sqlite, from
//! `scripts/services/kafka.sh`): the driver's `plan_partitions` splits a planned range into one
//! partition per offset range, executors — sources built from the same options without a
//! checkpoint — read them with `read_partition`, and together they read exactly what `read`
//! returns: the same rows (compared whole: topic, partition, offset, key, value, timestamp,
//! headers) as a multiset and in the same order within each partition. Also: `minPartitions`
//! splits, planning is deterministic, an executor commits no group offset, and data loss is
//! reported by `plan_partitions` as by `read` (deleted and recreated topic, on the scratch
//! broker, whose DeleteTopics removes every topic).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use futures::TryStreamExt;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::TopicPartitionList;
use tributary_kafka::KafkaSource;
use tributary_sdk::{ConnectorContext, InputPartition, Offset, Options, ReadLimit, Source};

fn broker() -> Option<String> {
    env("TRIBUTARY_KAFKA_BOOTSTRAP")
}

/// How an executor builds its source: same options, no checkpoint, its own pipeline name.
fn executor(options: &Options) -> KafkaSource {
    let context = ConnectorContext {
        state_dir: None,
        pipeline: "executor-1".into(),
        checkpoint_id: None,
        ..context()
    };
    KafkaSource::new(options, &context).unwrap()
}

/// A topic with 4 partitions and `per_partition` records in each (`p<P>-<i>`, with a header).
async fn four_partitions(b: &str, hint: &str, per_partition: usize) -> String {
    let cfg = client_config(b, &[]);
    let topic = unique(hint);
    create_topic(&cfg, &topic, 4, &[]).await;
    let recs: Vec<Rec> = (0..per_partition)
        .flat_map(|i| {
            (0..4).map(move |p| {
                let mut r = Rec::new(p, format!("p{p}-{i}"));
                r.headers = vec![("i".into(), Some(i.to_string()))];
                r
            })
        })
        .collect();
    produce(&cfg, &topic, &recs).await;
    topic
}

/// Reads each partition on `executor`, as if shipped to it: the partition goes through JSON.
async fn read_partitions(executor: &mut KafkaSource, parts: &[InputPartition]) -> Vec<Vec<Row>> {
    let mut out = Vec::new();
    for p in parts {
        let shipped: InputPartition =
            serde_json::from_str(&serde_json::to_string(p).unwrap()).unwrap();
        let batches: Vec<_> = executor
            .read_partition(&shipped)
            .await
            .unwrap_or_else(|e| panic!("reading {}: {e}", p.label))
            .try_collect()
            .await
            .unwrap();
        out.push(rows(&batches));
    }
    out
}

fn key(r: &Row) -> (String, i32, i64) {
    (r.topic.clone(), r.partition, r.offset)
}

/// Rows by topic-partition, in the order they came.
fn by_partition(rows: &[Row]) -> BTreeMap<(String, i32), Vec<Row>> {
    let mut m: BTreeMap<(String, i32), Vec<Row>> = BTreeMap::new();
    for r in rows {
        m.entry((r.topic.clone(), r.partition))
            .or_default()
            .push(r.clone());
    }
    m
}

/// Checks that the partitions' rows are exactly `read`'s: each partition holds what its spec
/// says, the union is `read` as a multiset, and within a topic-partition the order is the same.
fn assert_cover(parts: &[InputPartition], pieces: &[Vec<Row>], read: &[Row]) {
    assert_eq!(
        parts.iter().map(|p| p.index).collect::<Vec<_>>(),
        (0..parts.len()).collect::<Vec<_>>()
    );
    for (p, rows) in parts.iter().zip(pieces) {
        let topic = p.spec["topic"].as_str().unwrap();
        let partition = p.spec["partition"].as_i64().unwrap() as i32;
        let (start, end) = (
            p.spec["start"].as_i64().unwrap(),
            p.spec["end"].as_i64().unwrap(),
        );
        assert_eq!(p.label, format!("{topic}-{partition} [{start}, {end})"));
        assert_eq!(p.expected_records, Some((end - start) as u64));
        assert_eq!(rows.len() as i64, end - start, "{}", p.label);
        for (i, r) in rows.iter().enumerate() {
            assert_eq!((r.topic.as_str(), r.partition), (topic, partition));
            assert_eq!(r.offset, start + i as i64, "{}", p.label);
        }
    }
    let union: Vec<Row> = pieces.iter().flatten().cloned().collect();
    let mut a = union.clone();
    let mut b = read.to_vec();
    a.sort_by_key(key);
    b.sort_by_key(key);
    assert_eq!(a, b, "the partitions' rows differ from read's");
    // Pieces are planned in offset order, so concatenating them keeps each partition's order.
    assert_eq!(by_partition(&union), by_partition(read));
}

async fn plan(src: &mut KafkaSource, start: &Offset, end: &Offset) -> Vec<InputPartition> {
    src.plan_partitions(start, end, 2)
        .await
        .unwrap()
        .expect("the Kafka source plans input partitions")
}

#[tokio::test]
async fn partitions_of_a_four_partition_topic_read_what_read_returns() {
    let Some(b) = broker() else { return };
    let topic = four_partitions(&b, "parts", 6).await;
    let options = opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("includeHeaders", "true"),
        ],
    );
    let mut driver = source(&options);
    let start = driver.initial_offset().await.unwrap();
    let end = driver.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let parts = plan(&mut driver, &start, &end).await;
    assert_eq!(parts.len(), 4, "{parts:?}");
    assert_eq!(
        parts.iter().map(|p| p.label.clone()).collect::<Vec<_>>(),
        (0..4)
            .map(|p| format!("{topic}-{p} [0, 6)"))
            .collect::<Vec<_>>()
    );
    let read = rows(&driver.read(&start, &end).await.unwrap());
    assert_eq!(read.len(), 24);

    let mut exec = executor(&options);
    let pieces = read_partitions(&mut exec, &parts).await;
    assert_cover(&parts, &pieces, &read);
    assert!(read
        .iter()
        .all(|r| r.headers.as_ref().is_some_and(|h| h.len() == 1)));

    // Deterministic, and the engine's parallelism does not change the plan.
    for parallelism in [1, 2, 64] {
        assert_eq!(
            driver
                .plan_partitions(&start, &end, parallelism)
                .await
                .unwrap(),
            Some(parts.clone())
        );
    }
    // A second executor (another process) reads the same partition identically.
    let mut other = executor(&options);
    assert_eq!(
        read_partitions(&mut other, &parts[2..3]).await[0],
        pieces[2]
    );

    // The executor joined no group and committed nothing.
    let probe: BaseConsumer = client_config(&b, &[("group.id", exec.group_id())])
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..4 {
        tpl.add_partition(&topic, p);
    }
    let committed = probe
        .committed_offsets(tpl, Duration::from_secs(10))
        .unwrap();
    for e in committed.elements() {
        assert_eq!(
            e.offset(),
            rdkafka::Offset::Invalid,
            "the executor committed {e:?}"
        );
    }
    exec.stop().await.unwrap();
    other.stop().await.unwrap();
    driver.stop().await.unwrap();
}

#[tokio::test]
async fn min_partitions_splits_the_ranges_into_eight_partitions() {
    let Some(b) = broker() else { return };
    let topic = four_partitions(&b, "minparts", 10).await;
    let options = opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("minPartitions", "8"),
        ],
    );
    let mut driver = source(&options);
    let start = driver.initial_offset().await.unwrap();
    let end = driver.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let parts = plan(&mut driver, &start, &end).await;
    assert_eq!(parts.len(), 8, "{parts:?}");
    // Two pieces per topic-partition, adjacent: [0, 5) and [5, 10).
    for (i, p) in parts.iter().enumerate() {
        let (s, e) = if i % 2 == 0 { (0, 5) } else { (5, 10) };
        assert_eq!(p.label, format!("{topic}-{} [{s}, {e})", i / 2));
    }
    let read = rows(&driver.read(&start, &end).await.unwrap());
    assert_eq!(read.len(), 40);
    let mut exec = executor(&options);
    let pieces = read_partitions(&mut exec, &parts).await;
    assert_cover(&parts, &pieces, &read);
    assert_eq!(plan(&mut driver, &start, &end).await, parts);
    // The same range without minPartitions: 4 partitions, the same rows.
    let plain = opts(&b, &[("subscribe", &topic)]);
    let mut four = source(&plain);
    let parts4 = plan(&mut four, &start, &end).await;
    assert_eq!(parts4.len(), 4);
    let pieces4 = read_partitions(&mut executor(&plain), &parts4).await;
    assert_cover(&parts4, &pieces4, &read);
}

#[tokio::test]
async fn an_executor_refuses_a_partition_of_another_subscription() {
    let Some(b) = broker() else { return };
    let topic = four_partitions(&b, "foreign", 1).await;
    let mut driver = source(&opts(
        &b,
        &[("subscribe", &topic), ("startingOffsets", "earliest")],
    ));
    let start = driver.initial_offset().await.unwrap();
    let end = driver.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let parts = plan(&mut driver, &start, &end).await;
    assert_eq!(parts.len(), 4);
    let mut stranger = executor(&opts(&b, &[("subscribe", "some-other-topic")]));
    let err = match stranger.read_partition(&parts[0]).await {
        Ok(_) => panic!("a partition of {topic} was read by a source subscribed elsewhere"),
        Err(e) => e,
    };
    assert!(err.to_string().contains(&parts[0].label), "{err}");
    assert!(
        err.to_string().contains("subscribe=some-other-topic"),
        "{err}"
    );
}

#[tokio::test]
async fn a_deleted_and_recreated_topic_is_reported_by_plan_partitions_as_by_read() {
    // tansu 0.6.0 deletes every topic of the cluster on DeleteTopics: a broker of its own.
    let Some(b) = env("TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP") else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let topic = unique("parts-recreate");
    create_topic(&cfg, &topic, 1, &[]).await;
    let old: Vec<Rec> = (0..10).map(|i| Rec::new(0, format!("v1-{i}"))).collect();
    produce(&cfg, &topic, &old).await;
    let strict_opts = opts(
        &b,
        &[("subscribe", &topic), ("startingOffsets", "earliest")],
    );
    let lenient_opts = opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("failOnDataLoss", "false"),
            ("kafkaConsumer.pollTimeoutMs", "20000"),
        ],
    );
    let mut strict = source(&strict_opts);
    let mut lenient = source(&lenient_opts);
    let start = strict.initial_offset().await.unwrap();
    let checkpoint = strict.latest_offset(&start, &ReadLimit::All).await.unwrap();
    // Planned before the topic goes away, read after (an executor late to its task).
    let planned = plan(&mut strict, &start, &checkpoint).await;
    assert_eq!(planned.len(), 1);

    delete_topic(&cfg, &topic).await;
    let gone = Offset::parse("{}").unwrap();
    let by_plan = strict
        .plan_partitions(&checkpoint, &gone, 2)
        .await
        .unwrap_err();
    let by_read = strict.read(&checkpoint, &gone).await.unwrap_err();
    assert_eq!(by_plan.code().as_str(), "DATA_LOSS.PARTITIONS_DELETED");
    assert_eq!(by_plan.code(), by_read.code());
    assert_eq!(by_plan.context_value("topic"), Some(topic.as_str()));
    assert_eq!(
        lenient
            .plan_partitions(&checkpoint, &gone, 2)
            .await
            .unwrap(),
        Some(Vec::new())
    );
    assert_eq!(
        lenient.metrics()["dataLoss.DATA_LOSS.PARTITIONS_DELETED"],
        1
    );

    create_topic(&cfg, &topic, 1, &[]).await;
    let new: Vec<Rec> = (0..3).map(|i| Rec::new(0, format!("v2-{i}"))).collect();
    produce(&cfg, &topic, &new).await;
    // The end the runtime plans for a recreated partition keeps its lower offset.
    let recreated = Offset::parse(&format!(r#"{{"{topic}":{{"0":3}}}}"#)).unwrap();
    let by_plan = strict
        .plan_partitions(&checkpoint, &recreated, 2)
        .await
        .unwrap_err();
    let by_read = strict.read(&checkpoint, &recreated).await.unwrap_err();
    assert_eq!(
        by_plan.code().as_str(),
        "DATA_LOSS.PARTITION_OFFSET_CHANGED"
    );
    assert_eq!(by_plan.code(), by_read.code());
    assert_eq!(by_plan.context_value("expected"), Some("10"));
    assert_eq!(by_plan.context_value("actual"), Some("3"));
    let parts = plan(&mut lenient, &checkpoint, &recreated).await;
    assert_eq!(
        parts.iter().map(|p| p.label.clone()).collect::<Vec<_>>(),
        vec![format!("{topic}-0 [0, 3)")]
    );
    assert_eq!(
        lenient.metrics()["dataLoss.DATA_LOSS.PARTITION_OFFSET_CHANGED"],
        1
    );
    let read = rows(&lenient.read(&checkpoint, &recreated).await.unwrap());
    let pieces = read_partitions(&mut executor(&lenient_opts), &parts).await;
    assert_cover(&parts, &pieces, &read);
    assert_eq!(values(&read), vec!["v2-0", "v2-1", "v2-2"]);

    // The partition planned before the deletion, [0, 10), now ends at 3: inside the range,
    // data loss follows failOnDataLoss on the executor too.
    assert_eq!(planned[0].label, format!("{topic}-0 [0, 10)"));
    let mut strict_exec = executor(&strict_opts);
    let err = match strict_exec.read_partition(&planned[0]).await {
        Ok(_) => panic!("a partition whose records were replaced was read"),
        Err(e) => e,
    };
    assert_eq!(
        err.code().as_str(),
        "DATA_LOSS.PARTITION_OFFSET_CHANGED",
        "{err}"
    );
    let mut lenient_exec = executor(&lenient_opts);
    let rest = read_partitions(&mut lenient_exec, &planned).await;
    assert_eq!(values(&rest[0]), vec!["v2-0", "v2-1", "v2-2"]);
    assert_eq!(
        lenient_exec.metrics()["dataLoss.DATA_LOSS.PARTITION_OFFSET_CHANGED"],
        1
    );
}
