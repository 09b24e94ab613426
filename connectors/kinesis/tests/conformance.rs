//! The conformance suite against the Kinesis source and kinesis-mock (HTTPS with the test CA,
//! started by `scripts/services/kinesis.sh`; `TRIBUTARY_KINESIS_ENDPOINT`, `TRIBUTARY_KINESIS_CA`;
//! missing: a recorded skip, a failure under `CI`). Needs the `conformance` feature.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tributary_conformance::{CaseStatus, Setup};
use tributary_kinesis::conformance::KinesisFixture;
use tributary_kinesis::KinesisSourceFactory;

async fn setup() -> Option<Setup> {
    let endpoint = tributary_skip_log::require_env(
        "TRIBUTARY_KINESIS_ENDPOINT",
        "scripts/services/kinesis.sh",
    )?;
    let ca = std::env::var("TRIBUTARY_KINESIS_CA").ok();
    Some(Setup {
        connector: Arc::new(KinesisSourceFactory),
        fixture: Box::new(KinesisFixture::new(&endpoint, ca.as_deref())),
    })
}

tributary_conformance::conformance_tests!(setup);

/// The whole suite through the runner, with its report (passed / skipped / failed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_report_for_kinesis() {
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
    let count = |s: CaseStatus| report.cases.iter().filter(|c| c.status == s).count();
    println!(
        "kinesis conformance: passed {} skipped {} failed {}",
        count(CaseStatus::Passed),
        count(CaseStatus::Skipped),
        report.cases.len() - count(CaseStatus::Passed) - count(CaseStatus::Skipped)
    );
    assert!(report.is_success(), "{}", report.to_table());
}
