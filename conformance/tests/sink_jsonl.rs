//! The sink conformance suite against the example plugin's JSON-lines sink, linked statically.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use tributary_conformance::fixtures::JsonLinesSinkFixture;
use tributary_conformance::SinkSetup;

async fn setup() -> Option<SinkSetup> {
    Some(SinkSetup {
        connector: Arc::new(tributary_plugin_generator::JsonLinesSinkFactory),
        fixture: Box::new(JsonLinesSinkFixture::new().expect("temp dir")),
    })
}

tributary_conformance::sink_conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_report_for_jsonlines() {
    let mut fixture = JsonLinesSinkFixture::new().expect("temp dir");
    let report = tributary_conformance::run_sinks(
        &tributary_plugin_generator::JsonLinesSinkFactory,
        &mut fixture,
        &Default::default(),
    )
    .await;
    println!("{}", report.to_table());
    assert!(report.is_success(), "{}", report.to_table());
    // Skipped: secrets (no sensitive option) and the staged write (the JSON-lines sink has none).
    assert_eq!(report.passed(), 7, "{}", report.summary());
    assert_eq!(report.skipped(), 2, "{}", report.summary());
}
