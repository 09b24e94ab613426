//! The sink conformance suite against the Kinesis sink and kinesis-mock
//! (`TRIBUTARY_KINESIS_ENDPOINT`; a missing one is a recorded skip, a failure under `CI`). The
//! sink is at-least-once: the replay cases are skipped after checking that nothing was lost.
//! Needs the `conformance` feature.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tributary_conformance::{CaseStatus, SinkSetup};
use tributary_kinesis::conformance::KinesisSinkFixture;
use tributary_kinesis::KinesisSinkFactory;

async fn setup() -> Option<SinkSetup> {
    tributary_skip_log::require_env("TRIBUTARY_KINESIS_ENDPOINT", "scripts/services/kinesis.sh")?;
    Some(SinkSetup {
        connector: Arc::new(KinesisSinkFactory),
        fixture: Box::new(KinesisSinkFixture::from_env().expect("endpoint checked above")),
    })
}

tributary_conformance::sink_conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kinesis_sink_report() {
    let Some(mut s) = setup().await else { return };
    let report = tributary_conformance::run_sinks(
        s.connector.as_ref(),
        s.fixture.as_mut(),
        &Default::default(),
    )
    .await;
    println!("{}", report.to_table());
    assert!(report.is_success(), "{}", report.to_table());
    let status = |n: &str| report.cases.iter().find(|c| c.name == n).unwrap().status;
    assert_eq!(status("sink_writes_every_row"), CaseStatus::Passed);
    assert_eq!(status("sink_replay_replaces_batch"), CaseStatus::Skipped);
    assert_eq!(status("sink_secrets_hidden"), CaseStatus::Passed);
}
