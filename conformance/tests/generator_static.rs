//! The conformance suite against the example generator connector, linked statically.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tributary_conformance::fixtures::GeneratorFixture;
use tributary_conformance::Setup;

async fn setup() -> Option<Setup> {
    Some(Setup {
        connector: Arc::new(tributary_plugin_generator::GeneratorSourceFactory),
        fixture: Box::new(GeneratorFixture::new(2)),
    })
}

tributary_conformance::conformance_tests!(setup);
