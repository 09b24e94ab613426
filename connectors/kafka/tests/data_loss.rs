//! failOnDataLoss both ways against a real broker (tansu on sqlite, from
//! `scripts/services/kafka.sh`): retention moving the earliest offset past the checkpoint, a topic
//! added under `subscribePattern` whose first records retention already deleted, and a topic
//! deleted (and recreated) under a running query. The kinds a real broker cannot produce on
//! demand are in `data_loss_mock.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use rdkafka::consumer::{BaseConsumer, Consumer};
use tributary_sdk::{ErrorCode, ReadLimit, Source};

fn broker() -> Option<String> {
    tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
}

async fn wait_earliest_above(b: &str, topic: &str, offset: i64) -> i64 {
    let consumer: BaseConsumer = client_config(b, &[]).create().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (low, _) = consumer
            .fetch_watermarks(topic, 0, Duration::from_secs(5))
            .unwrap();
        if low > offset {
            return low;
        }
        assert!(
            Instant::now() < deadline,
            "retention did not move the earliest offset of {topic}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn retention_past_the_checkpoint_fails_or_skips_to_the_earliest() {
    let Some(b) = broker() else { return };
    let cfg = client_config(&b, &[]);
    let topic = unique("retention");
    create_topic(
        &cfg,
        &topic,
        1,
        &[("cleanup.policy", "delete"), ("retention.ms", "8000")],
    )
    .await;
    produce(
        &cfg,
        &topic,
        &(0..10)
            .map(|i| Rec::new(0, format!("old{i}")))
            .collect::<Vec<_>>(),
    )
    .await;

    // A checkpoint at offset 2.
    let checkpoint = {
        let mut src = source(&opts(
            &b,
            &[("subscribe", &topic), ("startingOffsets", "earliest")],
        ));
        let start = src.initial_offset().await.unwrap();
        let (end, rows) = batch(&mut src, &start, &ReadLimit::MaxRows(2)).await;
        assert_eq!(rows.len(), 2);
        end
    };
    // tansu deletes by record timestamp every maintenance interval (1 s); with no record left it
    // reports earliest 0, so new records are written after the old ones aged out (and are read
    // well before they age out themselves).
    tokio::time::sleep(Duration::from_secs(10)).await;
    produce(
        &cfg,
        &topic,
        &(0..3)
            .map(|i| Rec::new(0, format!("new{i}")))
            .collect::<Vec<_>>(),
    )
    .await;
    let low = wait_earliest_above(&b, &topic, 2).await;

    let mut strict = source(&opts(&b, &[("subscribe", &topic)]));
    let end = strict
        .latest_offset(&checkpoint, &ReadLimit::All)
        .await
        .unwrap();
    let err = strict.read(&checkpoint, &end).await.unwrap_err();
    assert_eq!(err.code().as_str(), "DATA_LOSS.START_OFFSET_RESET", "{err}");
    assert_eq!(err.context_value("topic"), Some(topic.as_str()));
    assert_eq!(err.context_value("partition"), Some("0"));
    assert_eq!(err.context_value("expected"), Some("2"));
    assert!(err.message().contains("failOnDataLoss"));

    let mut lenient = source(&opts(
        &b,
        &[("subscribe", &topic), ("failOnDataLoss", "false")],
    ));
    let (_, rows) = drain(&mut lenient, checkpoint, &ReadLimit::All).await;
    assert!(
        rows.iter().all(|r| r.offset >= low),
        "read from the earliest available offset"
    );
    assert!(rows.iter().any(|r| r.value.as_deref() == Some("new2")));
    let m = lenient.metrics();
    assert_eq!(m["dataLoss.DATA_LOSS.START_OFFSET_RESET"], 1, "{m:?}");
    assert_eq!(m["dataLoss.total"], 1);
}

/// A topic created after the checkpoint, matched by `subscribePattern`, whose first records
/// retention deleted before the query saw the topic: its partition starts above 0.
#[tokio::test]
async fn added_topic_with_records_already_deleted_fails_or_reads_from_its_earliest() {
    let Some(b) = broker() else { return };
    let cfg = client_config(&b, &[]);
    let prefix = unique("added");
    let (first, second) = (format!("{prefix}-a"), format!("{prefix}-b"));
    create_topic(&cfg, &first, 1, &[]).await;
    produce(&cfg, &first, &[Rec::new(0, "a0")]).await;
    let options = |fail: &str| {
        opts(
            &b,
            &[
                ("subscribePattern", &format!("{prefix}-.*")),
                ("startingOffsets", "earliest"),
                ("failOnDataLoss", fail),
            ],
        )
    };
    let checkpoint = {
        let mut src = source(&options("true"));
        let start = src.initial_offset().await.unwrap();
        let (end, rows) = batch(&mut src, &start, &ReadLimit::All).await;
        assert_eq!(values(&rows), vec!["a0"]);
        end
    };

    create_topic(
        &cfg,
        &second,
        1,
        &[("cleanup.policy", "delete"), ("retention.ms", "8000")],
    )
    .await;
    produce(
        &cfg,
        &second,
        &(0..5)
            .map(|i| Rec::new(0, format!("old{i}")))
            .collect::<Vec<_>>(),
    )
    .await;
    // As above: the old records age out, then new ones are written and read before they do.
    tokio::time::sleep(Duration::from_secs(10)).await;
    produce(
        &cfg,
        &second,
        &(0..3)
            .map(|i| Rec::new(0, format!("new{i}")))
            .collect::<Vec<_>>(),
    )
    .await;
    let low = wait_earliest_above(&b, &second, 0).await;

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
    assert_eq!(
        err.context_value("location"),
        Some(format!("{second}-0").as_str())
    );
    assert_eq!(err.context_value("expected"), Some("0"));
    assert_eq!(err.context_value("actual"), Some(low.to_string().as_str()));

    let mut lenient = source(&options("false"));
    let (_, rows) = batch(&mut lenient, &checkpoint, &ReadLimit::All).await;
    assert!(
        rows.iter().all(|r| r.topic == second && r.offset >= low),
        "{rows:?}"
    );
    assert!(rows.iter().any(|r| r.value.as_deref() == Some("new2")));
    let m = lenient.metrics();
    assert_eq!(
        m["dataLoss.DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"], 1,
        "{m:?}"
    );
    assert_eq!(m["dataLoss.total"], 1);
}

#[tokio::test]
async fn deleted_and_recreated_topic_fails_or_restarts_from_the_new_earliest() {
    // tansu 0.6.0 deletes every topic of the cluster on DeleteTopics: a broker of its own.
    let Some(b) = tributary_skip_log::require_env(
        "TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP",
        "scripts/services/kafka.sh",
    ) else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let topic = unique("recreate");
    create_topic(&cfg, &topic, 1, &[]).await;
    produce(
        &cfg,
        &topic,
        &(0..10)
            .map(|i| Rec::new(0, format!("v1-{i}")))
            .collect::<Vec<_>>(),
    )
    .await;
    let checkpoint = {
        let mut src = source(&opts(
            &b,
            &[("subscribe", &topic), ("startingOffsets", "earliest")],
        ));
        let start = src.initial_offset().await.unwrap();
        let (end, rows) = batch(&mut src, &start, &ReadLimit::All).await;
        assert_eq!(rows.len(), 10);
        end
    };

    delete_topic(&cfg, &topic).await;
    let mut strict = source(&opts(&b, &[("subscribe", &topic)]));
    let err = strict
        .latest_offset(&checkpoint, &ReadLimit::All)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "DATA_LOSS.PARTITIONS_DELETED", "{err}");
    assert_eq!(err.context_value("topic"), Some(topic.as_str()));

    create_topic(&cfg, &topic, 1, &[]).await;
    produce(
        &cfg,
        &topic,
        &(0..3)
            .map(|i| Rec::new(0, format!("v2-{i}")))
            .collect::<Vec<_>>(),
    )
    .await;
    let err = strict
        .latest_offset(&checkpoint, &ReadLimit::All)
        .await
        .unwrap_err();
    assert_eq!(
        err.code().as_str(),
        "DATA_LOSS.PARTITION_OFFSET_CHANGED",
        "{err}"
    );
    assert_eq!(err.context_value("expected"), Some("10"));
    assert_eq!(err.context_value("actual"), Some("3"));
    assert!(err.is_data_loss());

    let mut lenient = source(&opts(
        &b,
        &[("subscribe", &topic), ("failOnDataLoss", "false")],
    ));
    let (end, rows) = batch(&mut lenient, &checkpoint, &ReadLimit::All).await;
    assert_eq!(values(&rows), vec!["v2-0", "v2-1", "v2-2"]);
    assert_eq!(end.to_json_string(), format!(r#"{{"{topic}":{{"0":3}}}}"#));
    assert_eq!(
        lenient.metrics()["dataLoss.DATA_LOSS.PARTITION_OFFSET_CHANGED"],
        1
    );
    // and it goes on normally
    produce(&cfg, &topic, &[Rec::new(0, "v2-3")]).await;
    let (_, rows) = batch(&mut lenient, &end, &ReadLimit::All).await;
    assert_eq!(values(&rows), vec!["v2-3"]);
    let _ = ErrorCode::SourceRead;
}
