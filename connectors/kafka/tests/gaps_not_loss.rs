//! Offset gaps that are not data loss: transaction markers and compaction leave offsets without
//! a record, and the source must read every record around them without reporting loss (Spark
//! skips them too).
//!
//! Mock cluster, with batches written by a raw Produce request: tansu's transactions are
//! incomplete (no EndTxn on sqlite) and it has no compaction, and librdkafka's mock cluster
//! accepts transactional producers but writes no COMMIT marker on EndTxn (checked in the
//! librdkafka 2.12.1 sources: its EndTxn handler only validates the producer id). So the tests
//! write what a real broker's log holds: transactional batches each followed by a COMMIT control
//! batch, and a batch whose records skip offsets as a compacted one does. The gaps are checked
//! with a raw rdkafka consumer first (offsets not contiguous, latest offset past the last record).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod data_loss_support;

use std::time::Duration;

use data_loss_support::raw_produce::{produce_raw, RawBatch};
use data_loss_support::*;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Message, TopicPartitionList};
use tributary_sdk::ReadLimit;

/// Every record's (offset, value) of a partition, read with a plain rdkafka consumer.
fn raw_read(bootstrap: &str, topic: &str, upto: i64) -> Vec<(i64, String)> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "raw-reader")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert!(std::time::Instant::now() < deadline, "raw read timed out");
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => out.push((
                m.offset(),
                String::from_utf8_lossy(m.payload().unwrap_or_default()).to_string(),
            )),
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => {
                let pos = c.position().unwrap();
                let at = pos
                    .find_partition(topic, 0)
                    .unwrap()
                    .offset()
                    .to_raw()
                    .unwrap();
                if at >= upto {
                    return out;
                }
            }
            _ => {}
        }
    }
}

/// Writes two committed transactions (3 and 2 records), each followed by its COMMIT marker:
/// records at 0, 1, 2, 4, 5; markers at 3 and 6 (the last offset of the partition).
fn two_transactions(mock: &Mock, topic: &str) {
    mock.create_topic(topic, 1);
    let pid = 4242;
    let b = &mock.bootstrap;
    assert_eq!(
        produce_raw(b, topic, 0, &RawBatch::data(&["t0", "t1", "t2"], Some(pid))),
        0
    );
    assert_eq!(produce_raw(b, topic, 0, &RawBatch::commit_marker(pid)), 3);
    assert_eq!(
        produce_raw(b, topic, 0, &RawBatch::data(&["t4", "t5"], Some(pid))),
        4
    );
    assert_eq!(produce_raw(b, topic, 0, &RawBatch::commit_marker(pid)), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_markers_are_skipped_without_reporting_data_loss() {
    let mock = Mock::new();
    two_transactions(&mock, "txn");
    // The gap is real: five records, offsets not contiguous, the partition ends at 7.
    assert_eq!(mock.watermarks("txn", 0), (0, 7));
    let raw = raw_read(&mock.bootstrap, "txn", 7);
    assert_eq!(
        raw,
        [(0, "t0"), (1, "t1"), (2, "t2"), (4, "t4"), (5, "t5")]
            .map(|(o, v)| (o, v.to_string()))
            .to_vec()
    );

    // One batch over everything, strict: the trailing marker must not stall or fail the read.
    let mut src = source(&opts(
        &mock.bootstrap,
        &[("subscribe", "txn"), ("startingOffsets", "earliest")],
    ));
    let start = src.initial_offset().await.unwrap();
    let t0 = std::time::Instant::now();
    let (end, got) = batch(&mut *src, &start, &ReadLimit::All).await;
    assert_eq!(end.to_json_string(), r#"{"txn":{"0":7}}"#);
    assert_eq!(offsets_of(&got, "txn"), vec![0, 1, 2, 4, 5]);
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "a trailing marker should end the read promptly, took {:?}",
        t0.elapsed()
    );
    assert_eq!(losses(&*src, "total"), 0);

    // Batches of at most 2 offsets put a marker at the start and at the end of ranges.
    let mut src = source(&opts(
        &mock.bootstrap,
        &[
            ("subscribe", "txn"),
            ("startingOffsets", "earliest"),
            ("maxOffsetsPerTrigger", "2"),
        ],
    ));
    let mut at = src.initial_offset().await.unwrap();
    let mut all = Vec::new();
    let mut ends = Vec::new();
    for _ in 0..10 {
        let (end, got) = batch(&mut *src, &at, &ReadLimit::MaxRows(2)).await;
        if end == at {
            break;
        }
        all.extend(got);
        ends.push(end.to_json_string());
        at = end;
    }
    assert_eq!(offsets_of(&all, "txn"), vec![0, 1, 2, 4, 5]);
    assert_eq!(ends.last().unwrap(), r#"{"txn":{"0":7}}"#, "{ends:?}");
    assert_eq!(losses(&*src, "total"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_holes_are_skipped_without_reporting_data_loss() {
    let mock = Mock::new();
    mock.create_topic("compacted", 1);
    let b = &mock.bootstrap;
    // Offsets 0..=4 of which compaction kept 0, 2 and 4; then 5 and 6 as written.
    assert_eq!(
        produce_raw(
            b,
            "compacted",
            0,
            &RawBatch::compacted(5, &[(0, "c0"), (2, "c2"), (4, "c4")])
        ),
        0
    );
    assert_eq!(
        produce_raw(b, "compacted", 0, &RawBatch::data(&["c5", "c6"], None)),
        5
    );
    assert_eq!(mock.watermarks("compacted", 0), (0, 7));
    let raw: Vec<i64> = raw_read(b, "compacted", 7)
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(raw, vec![0, 2, 4, 5, 6]);

    for fail in ["true", "false"] {
        let mut src = source(&opts(
            b,
            &[("subscribe", "compacted"), ("failOnDataLoss", fail)],
        ));
        // From the start, and from a checkpoint that points into a hole (offset 1).
        for (from, expect) in [(0, vec![0, 2, 4, 5, 6]), (1, vec![2, 4, 5, 6])] {
            let start = offset(&format!(r#"{{"compacted":{{"0":{from}}}}}"#));
            let (end, got) = batch(&mut *src, &start, &ReadLimit::All).await;
            assert_eq!(end.to_json_string(), r#"{"compacted":{"0":7}}"#);
            assert_eq!(offsets_of(&got, "compacted"), expect, "from {from}");
        }
        assert_eq!(losses(&*src, "total"), 0);
    }
}
