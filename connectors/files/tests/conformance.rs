//! The conformance suite against the built-in files connector.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tributary_conformance::Setup;
use tributary_files::conformance::FilesFixture;

async fn setup() -> Option<Setup> {
    Some(Setup {
        connector: Arc::new(tributary_files::FilesSourceFactory),
        fixture: Box::new(FilesFixture::new().expect("temp dir")),
    })
}

tributary_conformance::conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_report_for_files() {
    let mut fixture = FilesFixture::new().expect("temp dir");
    let report = tributary_conformance::run(
        &tributary_files::FilesSourceFactory,
        &mut fixture,
        &Default::default(),
    )
    .await;
    println!("{}", report.to_table());
    assert!(report.is_success(), "{}", report.to_table());
    // Everything but subscription modes, EFO and secrets (files has no sensitive option) runs.
    assert!(report.passed() >= 12, "{}", report.summary());
    let xml = report.to_junit_xml();
    assert!(xml.contains("testsuite name=\"files/files\""), "{xml}");
}
