//! The conformance suite's data-loss cases against the Kinesis source and kinesalite under
//! libfaketime (`TRIBUTARY_KINESALITE_ENDPOINT`, `TRIBUTARY_KINESALITE_FAKETIME_FILE`, started
//! by `scripts/services/kinesis.sh`): kinesalite trims records by retention, which kinesis-mock
//! does not, so here a committed position can age out while no source runs
//! (`resume_position_lost_*`); a few reading cases run beside them to show the fixture itself
//! is sound. One test running the cases one after the other: moving the fake clock ages out
//! every stream of the server. Needs the `conformance` feature.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tributary_conformance::{CaseStatus, RunOptions};
use tributary_kinesis::conformance::KinesisFixture;
use tributary_kinesis::KinesisSourceFactory;

const CASES: &[&str] = &[
    "resume_position_lost_true",
    "resume_position_lost_false",
    "starting_earliest",
    "read_range_determinism",
    "replay_after_restart",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_cases_on_kinesalite() {
    if tributary_skip_log::require_env(
        "TRIBUTARY_KINESALITE_ENDPOINT",
        "scripts/services/kinesis.sh",
    )
    .is_none()
    {
        return;
    }
    let mut fixture = KinesisFixture::kinesalite_from_env().unwrap();
    let options = RunOptions {
        only: CASES.iter().map(|c| c.to_string()).collect(),
        ..RunOptions::default()
    };
    let report = tributary_conformance::run(&KinesisSourceFactory, &mut fixture, &options).await;
    tributary_conformance::Fixture::teardown(&mut fixture)
        .await
        .unwrap();
    println!("{}", report.to_table());
    for case in CASES {
        let c = report
            .cases
            .iter()
            .find(|c| c.name == *case)
            .unwrap_or_else(|| panic!("{case} not run"));
        assert_eq!(c.status, CaseStatus::Passed, "{}", report.to_table());
    }
}
