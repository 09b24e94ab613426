//! The sink conformance suite against the built-in Parquet directory sink.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tributary_conformance::SinkSetup;
use tributary_sinks::conformance::ParquetSinkFixture;

async fn setup() -> Option<SinkSetup> {
    Some(SinkSetup {
        connector: Arc::new(tributary_sinks::ParquetSinkFactory),
        fixture: Box::new(ParquetSinkFixture::new().expect("temp dir")),
    })
}

tributary_conformance::sink_conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_report_for_parquet() {
    let mut fixture = ParquetSinkFixture::new().expect("temp dir");
    let report = tributary_conformance::run_sinks(
        &tributary_sinks::ParquetSinkFactory,
        &mut fixture,
        &Default::default(),
    )
    .await;
    println!("{}", report.to_table());
    assert!(report.is_success(), "{}", report.to_table());
    // Everything but secrets (the Parquet sink has no sensitive option) and the streaming
    // acknowledgements (it stages until the checkpoint) runs and passes, the staged write of
    // distributed batches included.
    assert_eq!(report.passed(), 7, "{}", report.summary());
    assert_eq!(report.skipped(), 2, "{}", report.summary());
    let xml = report.to_junit_xml();
    assert!(xml.contains("testsuite name=\"parquet/parquet\""), "{xml}");
}

/// The same suite against the Delta sink (feature `delta`).
#[cfg(feature = "delta")]
mod delta {
    use super::*;
    use tributary_sinks::conformance::DeltaSinkFixture;

    async fn setup() -> Option<SinkSetup> {
        Some(SinkSetup {
            connector: Arc::new(tributary_sinks::DeltaSinkFactory),
            fixture: Box::new(DeltaSinkFixture::new().expect("temp dir")),
        })
    }

    tributary_conformance::sink_conformance_tests!(setup);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runner_report_for_delta() {
        let mut fixture = DeltaSinkFixture::new().expect("temp dir");
        let report = tributary_conformance::run_sinks(
            &tributary_sinks::DeltaSinkFactory,
            &mut fixture,
            &Default::default(),
        )
        .await;
        println!("{}", report.to_table());
        assert!(report.is_success(), "{}", report.to_table());
        // The secrets case is skipped (the only sensitive option is the storage.* prefix, and
        // the suite checks named options), and the streaming acknowledgements (Delta stages).
        assert_eq!(report.passed(), 7, "{}", report.summary());
        assert_eq!(report.skipped(), 2, "{}", report.summary());
    }
}
