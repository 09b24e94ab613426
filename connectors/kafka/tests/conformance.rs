//! The conformance suite against the built-in Kafka connector and a real broker (tansu, started
//! by `scripts/services/kafka.sh`; endpoints from `TRIBUTARY_KAFKA_BOOTSTRAP`,
//! `TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP` and `TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP`; a missing one is a
//! recorded skip, a failure under `CI`). Needs the `conformance` feature.
//!
//! The generated tests run every case with a plain fixture on the main broker. The data-loss
//! cases run again with the fixtures that can cause data loss, one kind at a time: topics with a
//! short retention on the main broker (`START_OFFSET_RESET`), and topics recreated
//! (`PARTITION_OFFSET_CHANGED`) or deleted (`PARTITIONS_DELETED`) on the scratch broker. The
//! secrets case runs again on the SCRAM broker, where the source's password is a secret
//! reference it must resolve to read at all.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use tributary_conformance::fixture::{Fixture, ReadSetup};
use tributary_conformance::runner::run_case_test;
use tributary_conformance::{CaseStatus, Setup};
use tributary_kafka::conformance::KafkaFixture;
use tributary_kafka::KafkaSourceFactory;
use tributary_sdk::{
    ConnectorContext, DataLossKind, ErrorCode, ReadLimit, Result, Secret, SecretRef, SecretStore,
    SourceFactoryExt,
};

fn require_env(var: &str) -> Option<String> {
    tributary_skip_log::require_env(var, "scripts/services/kafka.sh")
}

/// The reference the SCRAM fixture gives the source as `auth.password`.
const PASSWORD_REFERENCE: &str = "{{secrets/conformance/auth.password}}";

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

/// The SCRAM broker, with the conformance user the service script creates.
async fn scram_setup() -> Option<Setup> {
    let (bootstrap, user, password) = scram_env()?;
    Some(Setup {
        connector: Arc::new(KafkaSourceFactory),
        fixture: Box::new(KafkaFixture::scram(
            &bootstrap,
            &user,
            &password,
            PASSWORD_REFERENCE,
        )),
    })
}

fn scram_env() -> Option<(String, String, String)> {
    Some((
        require_env("TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP")?,
        require_env("TRIBUTARY_KAFKA_CONFORMANCE_USER")?,
        require_env("TRIBUTARY_KAFKA_CONFORMANCE_PASSWORD")?,
    ))
}

tributary_conformance::conformance_tests!(setup);

/// The secrets case where the sensitive option is a real credential: `auth.password` given as
/// a reference that only the case's secret store resolves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_hidden_scram() {
    run_case_test("secrets_hidden", scram_setup).await;
}

/// Resolves scope `conformance` to one value.
#[derive(Debug)]
struct OneSecret(String);

impl SecretStore for OneSecret {
    fn resolve(&self, reference: &SecretRef) -> Result<Secret> {
        assert_eq!(reference.scope, "conformance", "{reference}");
        Ok(Secret::new(self.0.clone()))
    }
}

/// What the secrets case cannot see by itself: the source reads from the SCRAM broker only when
/// the reference resolves to the right password, and a wrong one is AUTHENTICATION_FAILED
/// without the password in the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_fixture_secret_is_resolved_and_used() {
    let Some((bootstrap, user, password)) = scram_env() else {
        return;
    };
    let mut fixture = KafkaFixture::scram(&bootstrap, &user, &password, PASSWORD_REFERENCE);
    let topic = fixture.create_target("secret-used").await.unwrap();
    let produced = fixture.produce(&topic, 3).await.unwrap();
    let options = fixture
        .source_options(&ReadSetup::target(&topic))
        .unwrap()
        .with("fetchOffset.timeoutMs", "4000")
        .with("fetchOffset.numRetries", "2");
    let context = |value: &str| ConnectorContext {
        secrets: Arc::new(OneSecret(value.to_string())),
        ..Default::default()
    };
    let mut source = KafkaSourceFactory
        .create(&options, &context(&password))
        .unwrap();
    assert!(!format!("{source:?}").contains(&password));
    let start = source.initial_offset().await.unwrap();
    let end = source.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let batches = source.read(&start, &end).await.unwrap();
    assert_eq!(fixture.payloads(&batches).unwrap().len(), produced.len());
    source.stop().await.unwrap();

    let wrong = "not-the-conformance-password";
    let mut source = KafkaSourceFactory
        .create(&options, &context(wrong))
        .unwrap();
    let e = source.initial_offset().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authentication, "{e}");
    assert!(!format!("{e} {e:?}").contains(wrong), "{e}");
    let _ = source.stop().await;
    fixture.teardown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_true_retention() {
    run_case_test("fail_on_data_loss_true", retention_setup).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_data_loss_false_retention() {
    run_case_test("fail_on_data_loss_false", retention_setup).await;
}

/// A restart from a committed position that retention removed while no pipeline ran fails
/// with OFFSET_OUT_OF_RANGE (failOnDataLoss=true) ...
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_position_lost_true_retention() {
    run_case_test("resume_position_lost_true", retention_setup).await;
}

/// ... or counts the loss and reads exactly the records produced since (false).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_position_lost_false_retention() {
    run_case_test("resume_position_lost_false", retention_setup).await;
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
        "input_partitions_cover_range",
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
