//! Consumer-group lag as existing tools see it (tansu on sqlite, started by
//! scripts/services/kafka.sh): an independent client reads the group's committed offsets
//! (OffsetFetch) and the high watermarks (ListOffsets), as `kafka-consumer-groups --describe`
//! does. The group follows the committed batches, never runs ahead of them, and is left alone
//! with `commitOffsetsToGroup=false`; a group commit the broker refuses (librdkafka's mock
//! cluster) is a warning, and the query goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod data_loss_support;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::TopicPartitionList;
use tributary_sdk::{Offset, ReadLimit, Source};

/// The documented group id: `<groupIdPrefix>-<pipeline>-<FNV-1a of the subscription>`.
fn documented_group(prefix: &str, pipeline: &str, subscription: &str) -> String {
    let hash = subscription.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{prefix}-{pipeline}-{hash:016x}")
}

/// What a lag tool sees for `group` on `topic`: per partition the committed offset (`None`
/// when the group has none) and the high watermark.
struct GroupView {
    committed: BTreeMap<i32, Option<i64>>,
    high: BTreeMap<i32, i64>,
}

impl GroupView {
    fn read(bootstrap: &str, group: &str, topic: &str, partitions: i32) -> GroupView {
        let client: BaseConsumer = client_config(bootstrap, &[("group.id", group)])
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition(topic, p);
        }
        let offsets = client
            .committed_offsets(tpl, Duration::from_secs(10))
            .unwrap();
        let mut committed = BTreeMap::new();
        let mut high = BTreeMap::new();
        for p in 0..partitions {
            let c = match offsets.find_partition(topic, p).unwrap().offset() {
                rdkafka::Offset::Offset(o) => Some(o),
                rdkafka::Offset::Invalid => None,
                other => panic!("partition {p}: unexpected committed offset {other:?}"),
            };
            committed.insert(p, c);
            let (_, h) = client
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .unwrap();
            high.insert(p, h);
        }
        GroupView { committed, high }
    }

    /// Committed offsets as the source's offset JSON (`{"topic":{"0":4,...}}`).
    fn committed_json(&self, topic: &str) -> String {
        let parts: Vec<String> = self
            .committed
            .iter()
            .map(|(p, c)| format!(r#""{p}":{}"#, c.unwrap()))
            .collect();
        format!(r#"{{"{topic}":{{{}}}}}"#, parts.join(","))
    }

    /// Records not yet in the group's committed offsets (the lag a tool reports).
    fn lag(&self) -> i64 {
        self.high
            .iter()
            .map(|(p, h)| h - self.committed[p].unwrap_or(0))
            .sum()
    }
}

#[tokio::test]
async fn the_group_follows_committed_batches_and_never_runs_ahead() {
    let Some(b) = env("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let topic = unique("lag");
    create_topic(&cfg, &topic, 2, &[]).await;
    let recs: Vec<Rec> = (0..10)
        .flat_map(|i| (0..2).map(move |p| Rec::new(p, format!("r-{p}-{i:02}"))))
        .collect();
    produce(&cfg, &topic, &recs).await;

    let mut src = source(&opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("maxOffsetsPerTrigger", "8"),
            ("groupIdPrefix", "lagtest"),
        ],
    ));
    let group = src.group_id().to_string();
    assert_eq!(
        group,
        documented_group("lagtest", "tributary", &format!("subscribe={topic}"))
    );
    let view = || GroupView::read(&b, &group, &topic, 2);
    let limit = src.default_read_limit();
    assert_eq!(limit, ReadLimit::MaxRows(8));

    // Batch 0 planned and read, not committed: the group has nothing yet.
    let start = src.initial_offset().await.unwrap();
    let (end0, rows0) = batch(&mut src, &start, &limit).await;
    assert_eq!(rows0.len(), 8);
    let v = view();
    assert_eq!(v.high, BTreeMap::from([(0, 10), (1, 10)]));
    assert!(
        v.committed.values().all(Option::is_none),
        "ahead of the checkpoint"
    );

    // Committed: the group is at batch 0's end, lag = records not in a committed batch.
    src.commit(&end0).await.unwrap();
    let v = view();
    assert_eq!(v.committed_json(&topic), end0.to_json_string());
    assert_eq!(v.lag(), 20 - 8);

    // Batch 1 planned and read but not committed: the group has not moved.
    let (end1, rows1) = batch(&mut src, &end0, &limit).await;
    assert_eq!(rows1.len(), 8);
    let v = view();
    assert_eq!(v.committed_json(&topic), end0.to_json_string());
    assert_eq!(v.lag(), 12);

    src.commit(&end1).await.unwrap();
    let v = view();
    assert_eq!(v.committed_json(&topic), end1.to_json_string());
    assert_eq!(v.lag(), 20 - 16);

    // Batch 2 planned only (latest_offset), then read: still batch 1's end.
    let end2 = src.latest_offset(&end1, &limit).await.unwrap();
    assert_ne!(end2, end1);
    let v = view();
    assert_eq!(v.committed_json(&topic), end1.to_json_string());
    let rest = src.read(&end1, &end2).await.unwrap();
    assert_eq!(rows(&rest).len(), 4);
    assert_eq!(view().lag(), 4);

    // New records raise the lag; the committed offsets stay.
    produce(&cfg, &topic, &[Rec::new(0, "late")]).await;
    let v = view();
    assert_eq!(v.committed_json(&topic), end1.to_json_string());
    assert_eq!(v.lag(), 5);

    // A restart (a new source, as the runtime builds it) re-publishes the last committed end
    // and keeps the group id.
    src.stop().await.unwrap();
    let mut again = source(&opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("maxOffsetsPerTrigger", "8"),
            ("groupIdPrefix", "lagtest"),
        ],
    ));
    assert_eq!(again.group_id(), group);
    again.commit(&end1).await.unwrap();
    assert_eq!(view().committed_json(&topic), end1.to_json_string());
    again.commit(&end2).await.unwrap();
    let v = view();
    assert_eq!(v.committed_json(&topic), end2.to_json_string());
    assert_eq!(v.lag(), 1);
    again.stop().await.unwrap();
}

#[tokio::test]
async fn kafka_group_id_names_the_group_the_tools_query() {
    let Some(b) = env("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let topic = unique("lagid");
    create_topic(&cfg, &topic, 1, &[]).await;
    produce(
        &cfg,
        &topic,
        &(0..3)
            .map(|i| Rec::new(0, format!("g-{i}")))
            .collect::<Vec<_>>(),
    )
    .await;
    let group = unique("explicit-group");
    let mut src = source(&opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("kafka.group.id", &group),
        ],
    ));
    assert_eq!(src.group_id(), group);
    let start = src.initial_offset().await.unwrap();
    let (end, _) = batch(&mut src, &start, &ReadLimit::All).await;
    src.commit(&end).await.unwrap();
    let v = GroupView::read(&b, &group, &topic, 1);
    assert_eq!(v.committed, BTreeMap::from([(0, Some(3))]));
    assert_eq!(v.lag(), 0);
    src.stop().await.unwrap();
}

#[tokio::test]
async fn with_commit_offsets_to_group_off_the_group_has_no_offsets() {
    let Some(b) = env("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let topic = unique("lagoff");
    create_topic(&cfg, &topic, 2, &[]).await;
    let recs: Vec<Rec> = (0..4)
        .flat_map(|i| (0..2).map(move |p| Rec::new(p, format!("o-{p}-{i}"))))
        .collect();
    produce(&cfg, &topic, &recs).await;
    let mut src = source(&opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("maxOffsetsPerTrigger", "4"),
            ("commitOffsetsToGroup", "false"),
        ],
    ));
    // The group the default prefix would name.
    let group = src.group_id().to_string();
    assert_eq!(
        group,
        documented_group(
            "spark-kafka-source",
            "tributary",
            &format!("subscribe={topic}")
        )
    );
    let mut start: Offset = src.initial_offset().await.unwrap();
    for _ in 0..2 {
        let (end, rows) = batch(&mut src, &start, &ReadLimit::MaxRows(4)).await;
        assert_eq!(rows.len(), 4);
        src.commit(&end).await.unwrap();
        start = end;
    }
    src.stop().await.unwrap();
    let v = GroupView::read(&b, &group, &topic, 2);
    assert_eq!(v.committed, BTreeMap::from([(0, None), (1, None)]));
    assert_eq!(v.lag(), 8);
}

/// A group commit the broker refuses is for monitoring only: the batch's commit returns within
/// `fetchOffset.timeoutMs`, the group has no offsets, and the next batch runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_group_commit_is_a_warning_and_the_query_goes_on() {
    use rdkafka::producer::FutureRecord;
    use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
    let mock = data_loss_support::Mock::new();
    mock.create_topic("refused", 1);
    let producer = mock.producer();
    let send = |i: u32| {
        let payload = format!("r-{i}");
        let producer = producer.clone();
        async move {
            producer
                .send(
                    FutureRecord::<(), _>::to("refused")
                        .partition(0)
                        .payload(&payload),
                    Duration::from_secs(10),
                )
                .await
                .unwrap();
        }
    };
    for i in 0..3 {
        send(i).await;
    }
    let mut src = source(&opts(
        &mock.bootstrap,
        &[
            ("subscribe", "refused"),
            ("startingOffsets", "earliest"),
            ("fetchOffset.timeoutMs", "2000"),
        ],
    ));
    let start = src.initial_offset().await.unwrap();
    let (end, rows) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(rows.len(), 3);
    mock.refuse(
        RDKafkaApiKey::OffsetCommit,
        RDKafkaRespErr::RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
        100,
    );
    let t = std::time::Instant::now();
    src.commit(&end).await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let v = GroupView::read(&mock.bootstrap, src.group_id(), "refused", 1);
    assert_eq!(v.committed, BTreeMap::from([(0, None)]));
    send(3).await;
    let (next, rows) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(rows.len(), 1);
    // Once the broker accepts commits again, the group catches up with the next batch.
    mock.clear_request_errors(RDKafkaApiKey::OffsetCommit);
    src.commit(&next).await.unwrap();
    let v = GroupView::read(&mock.bootstrap, src.group_id(), "refused", 1);
    assert_eq!(v.committed, BTreeMap::from([(0, Some(4))]));
    src.stop().await.unwrap();
}
