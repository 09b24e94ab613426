//! Bad input gets a clear error (no broker needed), and fault injection with librdkafka's mock
//! cluster (broker down, request errors) — the only place mocks are used.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use rdkafka::mocking::MockCluster;
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
use tributary_kafka::{KafkaSinkFactory, KafkaSourceFactory};
use tributary_sdk::{
    ConnectorContext, ErrorCode, ReadLimit, SinkFactoryExt, Source, SourceFactoryExt,
};

#[tokio::test]
async fn unreachable_brokers_fail_clearly_in_bounded_time() {
    // Nothing listens on port 1.
    let o = opts(
        "127.0.0.1:1",
        &[
            ("subscribe", "t"),
            ("fetchOffset.timeoutMs", "1500"),
            ("fetchOffset.numRetries", "2"),
            ("fetchOffset.retryIntervalMs", "100"),
        ],
    );
    let t0 = Instant::now();
    let err = source(&o).initial_offset().await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Connection, "{err}");
    assert!(err.message().contains("127.0.0.1:1"), "{err}");
    assert!(err.is_retryable());
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
}

/// Options, the expected code and the option the error must name.
type Case<'a> = (Vec<(&'a str, &'a str)>, ErrorCode, &'a str);

#[test]
fn bad_options_are_refused_before_connecting() {
    let f = KafkaSourceFactory;
    let base = |pairs: &[(&str, &str)]| opts("127.0.0.1:9092", pairs);
    let cases: Vec<Case<'_>> = vec![
        (
            vec![("subscribePattern", "a[")],
            ErrorCode::InvalidOption,
            "subscribePattern",
        ),
        (
            vec![("assign", "{\"t\": 0}")],
            ErrorCode::InvalidOption,
            "assign",
        ),
        (
            vec![("subscribe", "t"), ("kafka.fetch.max.bytez", "1")],
            ErrorCode::UnknownOption,
            "kafka.fetch.max.bytez",
        ),
        (
            vec![("subscribe", "t"), ("kafka.fetch.wait.max.ms", "soon")],
            ErrorCode::InvalidOption,
            "kafka.fetch.wait.max.ms",
        ),
        (
            vec![("subscribe", "t"), ("maxOffsetsPerTriger", "1")],
            ErrorCode::UnknownOption,
            "maxOffsetsPerTriger",
        ),
        (
            vec![
                ("subscribe", "t"),
                ("startingOffsets", "{\"t\":{\"0\":\"x\"}}"),
            ],
            ErrorCode::InvalidOption,
            "startingOffsets",
        ),
        (
            vec![("subscribe", "t"), ("assign", "{\"t\":[0]}")],
            ErrorCode::ConflictingOptions,
            "subscribe, subscribePattern, assign",
        ),
        (
            vec![("subscribe", "t"), ("auth.mechanism", "SCRAM-SHA-256")],
            ErrorCode::MissingOption,
            "auth.username",
        ),
        (
            vec![
                ("subscribe", "t"),
                ("tls.truststore.location", "/nonexistent/ca.pem"),
            ],
            ErrorCode::InvalidOption,
            "tls.truststore.location",
        ),
    ];
    for (pairs, code, option) in cases {
        let o = base(&pairs);
        let err = match f.validate(&o) {
            Err(e) => e,
            Ok(()) => f.create(&o, &ConnectorContext::default()).unwrap_err(),
        };
        assert_eq!(err.code(), code, "{pairs:?}: {err}");
        assert_eq!(
            err.context_value("option"),
            Some(option),
            "{pairs:?}: {err}"
        );
    }
    // The sink shares the connection options.
    let o = opts("127.0.0.1:9092", &[("kafka.linger.mss", "5")]);
    assert_eq!(
        KafkaSinkFactory.validate(&o).unwrap_err().code(),
        ErrorCode::UnknownOption
    );
}

fn mock_cluster_source(
    mock: &MockCluster<'_, rdkafka::producer::DefaultProducerContext>,
    topic: &str,
) -> tributary_kafka::KafkaSource {
    source(&opts(
        &mock.bootstrap_servers(),
        &[
            ("subscribe", topic),
            ("startingOffsets", "earliest"),
            ("fetchOffset.timeoutMs", "1000"),
            ("fetchOffset.numRetries", "3"),
            ("fetchOffset.retryIntervalMs", "200"),
        ],
    ))
}

#[tokio::test]
async fn mock_cluster_broker_down_and_request_errors() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic("faults", 2, 1).unwrap();
    let cfg = client_config(&mock.bootstrap_servers(), &[]);
    produce(
        &cfg,
        "faults",
        &(0..10)
            .map(|i| Rec::new(i % 2, format!("f{i}")))
            .collect::<Vec<_>>(),
    )
    .await;

    let mut src = mock_cluster_source(&mock, "faults");
    let start = src.initial_offset().await.unwrap();
    let (end, rows) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(rows.len(), 10);

    // Transient ListOffsets errors are retried within fetchOffset.numRetries.
    mock.request_errors(
        RDKafkaApiKey::ListOffsets,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION; 2],
    );
    produce(&cfg, "faults", &[Rec::new(0, "after-errors")]).await;
    let (end2, rows) = batch(&mut src, &end, &ReadLimit::All).await;
    assert_eq!(values(&rows), vec!["after-errors"]);
    mock.clear_request_errors(RDKafkaApiKey::ListOffsets);

    // Broker down: a connection error in bounded time, then recovery when it is back.
    mock.broker_down(1).unwrap();
    let t0 = Instant::now();
    let err = src.latest_offset(&end2, &ReadLimit::All).await.unwrap_err();
    assert!(
        matches!(err.code(), ErrorCode::Connection | ErrorCode::SourceRead),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    mock.broker_up(1).unwrap();
    let mut ok = false;
    for _ in 0..20 {
        if src.latest_offset(&end2, &ReadLimit::All).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(ok, "the source recovers when the broker is back");
}
