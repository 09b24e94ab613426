//! The conformance suite against the example generator connector, linked statically: one test
//! per case, generated from the suite's case table.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use tributary_conformance::fixtures::GeneratorFixture;
use tributary_conformance::{CaseStatus, Setup};

async fn setup() -> Option<Setup> {
    Some(Setup {
        connector: Arc::new(tributary_plugin_generator::GeneratorSourceFactory),
        fixture: Box::new(GeneratorFixture::new(2).expect("temp dir")),
    })
}

tributary_conformance::conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generator_runs_every_case_it_has_capabilities_for() {
    let mut fixture = GeneratorFixture::new(2).unwrap();
    let report = tributary_conformance::run(
        &tributary_plugin_generator::GeneratorSourceFactory,
        &mut fixture,
        &Default::default(),
    )
    .await;
    println!("{}", report.to_table());
    assert!(report.is_success(), "{}", report.to_table());
    let skipped: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Skipped)
        .map(|c| c.name.as_str())
        .collect();
    // The generator reads one target, has no secret, plans no input partitions (so nothing to rescale), cannot age
    // records out while stopped and has no EFO consumer: nothing else skips.
    assert_eq!(
        skipped,
        [
            "subscribe_list",
            "subscribe_pattern_includes_new_target",
            "input_partitions_cover_range",
            "rescale_reads_same_rows",
            "resume_position_lost_true",
            "resume_position_lost_false",
            "secrets_hidden",
            "efo_consumer_registered_active",
            "efo_consumer_reused_by_name",
            "efo_consumer_deregistered_on_stop",
            "efo_consumer_leak_listed",
        ],
        "{}",
        report.to_table()
    );
}
