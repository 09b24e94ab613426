//! failOnDataLoss both ways for the data-loss kinds a real broker cannot produce on demand, on
//! librdkafka's in-process mock cluster (size-based retention: at most 5 MB per partition):
//!
//! - a partition added after the checkpoint whose first records are already gone
//!   (`ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO`);
//! - records lost *inside* a range while it is being read (`COULD_NOT_READ_OFFSET_RANGE`);
//! - a replayed batch whose end offset is below its start (`END_OFFSET_BEFORE_START_OFFSET`),
//!   told apart from a partition that now ends below the start (`PARTITION_OFFSET_CHANGED`).
//!
//! Each strict case asserts the stable error code with its location and positions; each lenient
//! case asserts the `dataLoss.*` counter, which records were read, and that the next batch goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod data_loss_support;

use std::time::Duration;

use data_loss_support::*;
use rdkafka::producer::FutureRecord;
use tributary_sdk::{ReadLimit, Source};

/// A new topic matched by `subscribePattern` after the checkpoint, whose earliest offset is
/// already 2. Mock cluster: tansu's retention is time-based (a race against `retention.ms`),
/// the mock's drops the oldest batch as soon as a partition passes 5 MB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_partition_not_starting_at_zero_fails_or_reads_from_its_earliest() {
    let mock = Mock::new();
    let p = mock.producer();
    mock.create_topic("added-a", 1);
    send_each(&p, "added-a", 0, &small("a", 3)).await;
    let options = |fail: &str| {
        opts(
            &mock.bootstrap,
            &[
                ("subscribePattern", "added-.*"),
                ("startingOffsets", "earliest"),
                ("failOnDataLoss", fail),
            ],
        )
    };
    let checkpoint = {
        let mut src = source(&options("true"));
        let start = src.initial_offset().await.unwrap();
        let (end, rows) = batch(&mut *src, &start, &ReadLimit::All).await;
        assert_eq!(offsets_of(&rows, "added-a"), vec![0, 1, 2]);
        end
    };

    // Seven records of 900 KB: the mock keeps five, the earliest offset becomes 2.
    mock.create_topic("added-b", 1);
    send_each(&p, "added-b", 0, &big("b", 7)).await;
    assert_eq!(mock.watermarks("added-b", 0), (2, 7));

    let mut strict = source(&options("true"));
    let end = strict
        .latest_offset(&checkpoint, &ReadLimit::All)
        .await
        .unwrap();
    let err = strict.read(&checkpoint, &end).await.unwrap_err();
    assert_eq!(
        err.code().as_str(),
        "DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO",
        "{err}"
    );
    assert!(err.is_data_loss());
    assert_eq!(err.context_value("location"), Some("added-b-0"));
    assert_eq!(err.context_value("topic"), Some("added-b"));
    assert_eq!(err.context_value("partition"), Some("0"));
    assert_eq!(err.context_value("expected"), Some("0"));
    assert_eq!(err.context_value("actual"), Some("2"));
    assert!(err.message().contains("failOnDataLoss"), "{err}");

    let mut lenient = source(&options("false"));
    let (end, rows) = batch(&mut *lenient, &checkpoint, &ReadLimit::All).await;
    assert_eq!(offsets_of(&rows, "added-b"), vec![2, 3, 4, 5, 6]);
    assert_eq!(
        rows.iter().find(|r| r.topic == "added-b").unwrap().tag(),
        "b2"
    );
    assert_eq!(
        losses(
            &*lenient,
            "DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"
        ),
        1
    );
    assert_eq!(losses(&*lenient, "total"), 1);
    // and it goes on normally
    send(&p, "added-b", 0, b"after").await;
    let (_, rows) = batch(&mut *lenient, &end, &ReadLimit::All).await;
    assert_eq!(offsets_of(&rows, "added-b"), vec![7]);
    assert_eq!(losses(&*lenient, "total"), 1);
}

/// Plans `[0, 5)` of five 900 KB records and reads it while the mock drops offsets 0..=2: every
/// response is delayed 1.5 s, so once the reader's second Fetch (offset 1) has reached the broker
/// there is a whole round trip before its third (offset 2). Three more records are written in
/// that window; the third Fetch is out of range, librdkafka resets to the earliest offset (3) and
/// the reader sees offset 3 after offset 1. Mock cluster: a real broker's retention cannot be
/// timed between two fetches of one read. Returns the source, the read's result and the end.
async fn read_while_records_are_trimmed(
    mock: &Mock,
    fail_on_data_loss: &str,
) -> (
    Box<dyn Source>,
    tributary_sdk::Result<Vec<arrow_array::RecordBatch>>,
    tributary_sdk::Offset,
) {
    let p = mock.producer();
    mock.create_topic("gap", 1);
    send_each(&p, "gap", 0, &big("old", 5)).await;
    let mut src = source(&opts(
        &mock.bootstrap,
        &[
            ("assign", r#"{"gap":[0]}"#),
            ("startingOffsets", "earliest"),
            ("failOnDataLoss", fail_on_data_loss),
        ],
    ));
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    assert_eq!(end.to_json_string(), r#"{"gap":{"0":5}}"#);

    mock.set_rtt(1500);
    mock.track_requests();
    let planned = end.clone();
    let reading = tokio::spawn(async move {
        let result = src.read(&start, &planned).await;
        (src, result)
    });
    wait_until(
        "the reader's second fetch reached the broker",
        Duration::from_secs(60),
        || mock.requests(FETCH) >= 2,
    )
    .await;
    let values = big("new", 3);
    let acks: Vec<_> = values
        .iter()
        .map(|v| {
            p.send_result(FutureRecord::<(), [u8]>::to("gap").partition(0).payload(v))
                .map_err(|(e, _)| e)
                .unwrap()
        })
        .collect();
    let (src, result) = reading.await.unwrap();
    for a in acks {
        a.await.unwrap().map_err(|(e, _)| e).unwrap();
    }
    mock.set_rtt(0);
    assert_eq!(
        mock.watermarks("gap", 0),
        (3, 8),
        "the mock dropped offsets 0..=2"
    );
    (src, result, end)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_lost_inside_a_range_fail_the_read() {
    let mock = Mock::new();
    let (_src, result, _) = read_while_records_are_trimmed(&mock, "true").await;
    let err = result.unwrap_err();
    assert_eq!(
        err.code().as_str(),
        "DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
        "{err}"
    );
    assert!(err.is_data_loss());
    assert_eq!(err.context_value("topic"), Some("gap"));
    assert_eq!(err.context_value("partition"), Some("0"));
    assert_eq!(err.context_value("expected"), Some("2"));
    assert_eq!(err.context_value("actual"), Some("3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_lost_inside_a_range_are_skipped_counted_and_reading_goes_on() {
    let mock = Mock::new();
    let (mut src, result, end) = read_while_records_are_trimmed(&mock, "false").await;
    let got = rows(&result.unwrap());
    assert_eq!(offsets_of(&got, "gap"), vec![0, 1, 3, 4]);
    assert_eq!(
        got.iter().map(Row::tag).collect::<Vec<_>>(),
        vec!["old0", "old1", "old3", "old4"]
    );
    assert_eq!(losses(&*src, "DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"), 1);
    assert_eq!(losses(&*src, "total"), 1);
    let (_, next) = batch(&mut *src, &end, &ReadLimit::All).await;
    assert_eq!(offsets_of(&next, "gap"), vec![5, 6, 7]);
    assert_eq!(losses(&*src, "total"), 1);
}

/// A replayed batch whose logged end is below its start (a damaged or hand-edited offset log)
/// while the partition still holds the start: `END_OFFSET_BEFORE_START_OFFSET`, and with
/// failOnDataLoss=false nothing is read for it. A partition that now ends below the start was
/// recreated: `PARTITION_OFFSET_CHANGED`. Mock cluster: no broker is needed to invert a range,
/// only a partition with known watermarks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_end_before_the_start_is_reported_as_such() {
    let mock = Mock::new();
    let p = mock.producer();
    mock.create_topic("inv", 1);
    send_each(&p, "inv", 0, &small("i", 10)).await;
    let options = |fail: &str| {
        opts(
            &mock.bootstrap,
            &[("subscribe", "inv"), ("failOnDataLoss", fail)],
        )
    };
    let (start, end) = (offset(r#"{"inv":{"0":7}}"#), offset(r#"{"inv":{"0":4}}"#));

    let mut strict = source(&options("true"));
    let err = strict.read(&start, &end).await.unwrap_err();
    assert_eq!(
        err.code().as_str(),
        "DATA_LOSS.END_OFFSET_BEFORE_START_OFFSET",
        "{err}"
    );
    assert_eq!(err.context_value("location"), Some("inv-0"));
    assert_eq!(err.context_value("expected"), Some("7"));
    assert_eq!(err.context_value("actual"), Some("4"));
    // The partition ends at 10, below a start of 12: recreated, not an inverted plan.
    let err = strict
        .read(
            &offset(r#"{"inv":{"0":12}}"#),
            &offset(r#"{"inv":{"0":9}}"#),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.code().as_str(),
        "DATA_LOSS.PARTITION_OFFSET_CHANGED",
        "{err}"
    );

    let mut lenient = source(&options("false"));
    let got = rows(&lenient.read(&start, &end).await.unwrap());
    assert!(got.is_empty(), "an inverted range reads nothing: {got:?}");
    assert_eq!(
        losses(&*lenient, "DATA_LOSS.END_OFFSET_BEFORE_START_OFFSET"),
        1
    );
    let (_, next) = batch(&mut *lenient, &end, &ReadLimit::All).await;
    assert_eq!(offsets_of(&next, "inv"), (4..10).collect::<Vec<_>>());
    assert_eq!(losses(&*lenient, "total"), 1);
}
