//! The conformance suite against the example generator loaded as a plugin through the C ABI:
//! the same cases and the same entry point as the statically linked run.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod plugin_common;

use tributary_conformance::fixtures::GeneratorFixture;
use tributary_conformance::Setup;

async fn setup() -> Option<Setup> {
    let lib = tokio::task::spawn_blocking(|| plugin_common::build_plugin("", "debug"))
        .await
        .expect("build");
    let plugin = tributary_runtime::plugin::load(&lib).expect("the example plugin loads");
    let connector = plugin
        .source_factories()
        .into_iter()
        .find(|f| f.name() == "generator")
        .expect("the plugin offers the generator source");
    Some(Setup {
        connector,
        fixture: Box::new(GeneratorFixture::new(2).expect("temp dir")),
    })
}

tributary_conformance::conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_reports_the_same_results_through_the_plugin_and_statically() {
    let Some(mut s) = setup().await else { return };
    let options = tributary_conformance::RunOptions::default();
    let through_plugin =
        tributary_conformance::run(s.connector.as_ref(), s.fixture.as_mut(), &options).await;
    let mut fixture = GeneratorFixture::new(2).expect("temp dir");
    let statically = tributary_conformance::run(
        &tributary_plugin_generator::GeneratorSourceFactory,
        &mut fixture,
        &options,
    )
    .await;
    println!("{}", through_plugin.to_table());
    println!("{}", statically.to_table());
    let outcome = |r: &tributary_conformance::Report| {
        r.cases
            .iter()
            .map(|c| (c.name.clone(), c.status))
            .collect::<Vec<_>>()
    };
    assert_eq!(outcome(&through_plugin), outcome(&statically));
    assert!(through_plugin.is_success(), "{}", through_plugin.to_table());
    assert!(
        through_plugin.passed() >= 14,
        "{}",
        through_plugin.summary()
    );
}
