//! The conformance suite against the built-in Kafka connector and a real broker (tansu, started
//! by `scripts/services/kafka.sh`; endpoints from `TRIBUTARY_KAFKA_BOOTSTRAP` and
//! `TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP`, skipped when unset unless `CI` is set).
//!
//! The generated tests run every case with a plain fixture on the main broker. The data-loss
//! cases run again with the fixtures that can cause data loss, one kind at a time: topics with a
//! short retention on the main broker (`START_OFFSET_RESET`), and topics recreated
//! (`PARTITION_OFFSET_CHANGED`) or deleted (`PARTITIONS_DELETED`) on the scratch broker.

#![cfg(feature = "kafka")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use tributary_conformance::fixtures::KafkaFixture;
use tributary_conformance::runner::{require_env, run_case_test};
use tributary_conformance::{CaseStatus, Setup};
use tributary_kafka::KafkaSourceFactory;
use tributary_sdk::DataLossKind;

/// Retention of the topics of the retention fixture: long enough for a case to plan its first
/// batch, short enough that waiting for it is bearable.
const RETENTION: Duration = Duration::from_secs(8);

async fn setup() -> Option<Setup> {
    let bootstrap = require_env("TRIBUTARY_KAFKA_BOOTSTRAP")?;
    Some(Setup {
        connector: Arc::new(KafkaSourceFactory),
        fixture: Box::new(KafkaFixture::new(&bootstrap)),
    })
}

async fn retention_setup() -> Option<Setup> {
    let bootstrap = require_env("TRIBUTARY_KAFKA_BOOTSTRAP")?;
    Some(Setup {
        connector: Arc::new(KafkaSourceFactory),
        fixture: Box::new(KafkaFixture::with_retention(&bootstrap, RETENTION)),
    })
}

async fn recreated_setup() -> Option<Setup> {
    let bootstrap = require_env("TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP")?;
    Some(Setup {
        connector: Arc::new(KafkaSourceFactory),
        fixture: Box::new(
            KafkaFixture::scratch(&bootstrap).only_data_loss(&[DataLossKind::PartitionRecreated]),
        ),
    })
}

async fn deleted_setup() -> Option<Setup> {
    let bootstrap = require_env("TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP")?;
    Some(Setup {
        connector: Arc::new(KafkaSourceFactory),
        fixture: Box::new(
            KafkaFixture::scratch(&bootstrap).only_data_loss(&[DataLossKind::PartitionDeleted]),
        ),
    })
}

tributary_conformance::conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_true_retention() {
    run_case_test("fail_on_data_loss_true", retention_setup).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_false_retention() {
    run_case_test("fail_on_data_loss_false", retention_setup).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_true_recreated_topic() {
    run_case_test("fail_on_data_loss_true", recreated_setup).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_false_recreated_topic() {
    run_case_test("fail_on_data_loss_false", recreated_setup).await;
}

/// Reading a planned range of a topic deleted after planning fails with PARTITIONS_DELETED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_true_deleted_topic() {
    run_case_test("fail_on_data_loss_true", deleted_setup).await;
}

/// With failOnDataLoss=false the same read counts the loss and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_false_deleted_topic() {
    run_case_test("fail_on_data_loss_false", deleted_setup).await;
}

/// The whole suite through the runner (as `tributary conformance` runs it), with its report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_report_for_kafka() {
    let Some(mut setup) = setup().await else {
        return;
    };
    let report = tributary_conformance::run(
        setup.connector.as_ref(),
        setup.fixture.as_mut(),
        &Default::default(),
    )
    .await;
    setup.fixture.teardown().await.unwrap();
    println!("{}", report.to_table());
    assert!(report.is_success(), "{}", report.to_table());
    // Decoding (the source returns raw bytes), EFO (Kinesis only) and data loss (the fixtures
    // above) skip here; everything else runs.
    let passed: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Passed)
        .map(|c| c.name.as_str())
        .collect();
    for case in [
        "subscribe_list",
        "subscribe_pattern_includes_new_target",
        "assign_partitions",
        "starting_earliest",
        "starting_latest",
        "read_range_determinism",
        "replay_after_restart",
        "rate_limit_honoured",
        "idle_source_returns_empty",
        "shutdown_releases_resources",
        "secrets_hidden",
        "unknown_option_refused",
    ] {
        assert!(
            passed.contains(&case),
            "{case} did not pass: {}",
            report.to_table()
        );
    }
    let xml = report.to_junit_xml();
    assert!(xml.contains("testsuite name=\"kafka/kafka\""), "{xml}");
}
