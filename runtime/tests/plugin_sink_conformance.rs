//! The sink conformance suite against the example plugin's JSON-lines sink loaded through the
//! C ABI: the same cases (and the same results) as the statically linked run.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod plugin_common;

use tributary_conformance::fixtures::JsonLinesSinkFixture;
use tributary_conformance::SinkSetup;

async fn setup() -> Option<SinkSetup> {
    let lib = tokio::task::spawn_blocking(|| plugin_common::build_plugin("", "debug"))
        .await
        .expect("build");
    let plugin = tributary_runtime::plugin::load(&lib).expect("the example plugin loads");
    let connector = plugin
        .sink_factories()
        .into_iter()
        .find(|f| f.name() == "jsonlines")
        .expect("the plugin offers the jsonlines sink");
    Some(SinkSetup {
        connector,
        fixture: Box::new(JsonLinesSinkFixture::new().expect("temp dir")),
    })
}

tributary_conformance::sink_conformance_tests!(setup);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_sink_reports_like_the_static_one() {
    let mut s = setup().await.expect("setup");
    let options = tributary_conformance::RunOptions::default();
    let through_plugin =
        tributary_conformance::run_sinks(s.connector.as_ref(), s.fixture.as_mut(), &options).await;
    let mut fixture = JsonLinesSinkFixture::new().expect("temp dir");
    let statically = tributary_conformance::run_sinks(
        &tributary_plugin_generator::JsonLinesSinkFactory,
        &mut fixture,
        &options,
    )
    .await;
    println!("{}\n{}", through_plugin.to_table(), statically.to_table());
    let outcome = |r: &tributary_conformance::Report| {
        r.cases
            .iter()
            .map(|c| (c.name.clone(), c.status))
            .collect::<Vec<_>>()
    };
    assert_eq!(outcome(&through_plugin), outcome(&statically));
    assert!(through_plugin.is_success(), "{}", through_plugin.to_table());
}
