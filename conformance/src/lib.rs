//! # tributary-conformance
//!
//! The conformance suite every Tributary connector runs: the same cases for the files source, a
//! Kafka source, and a connector loaded from a plugin.
//!
//! Modelled on `object_store`'s shared integration suite and Flink's connector testing framework:
//!
//! - each case is a public async function in [`cases`] taking the connector under test (as a
//!   `&dyn SourceFactory`) and a [`Fixture`] that acts on the external system (create
//!   topics/directories, produce records, cause data loss, list EFO consumers);
//! - cases declare the [`Capability`]s they need; a fixture that lacks one makes the case
//!   *skipped* with that reason, never silently passed;
//! - [`conformance_tests!`] generates one `#[tokio::test]` per case for a connector, so a new case
//!   reaches every connector without anyone remembering to add it;
//! - [`runner::run`] runs the suite as a library call (for `tributary conformance`) and returns a
//!   [`Report`] rendered as a table, JSON or JUnit XML.
//!
//! Sinks have their own suite in [`sink`]: cases taking a `&dyn SinkFactory` and a
//! [`SinkFixture`] that reads back what was written (every row once, replays after a crash,
//! empty batches, options, secrets), [`sink_conformance_tests!`] and [`sink::run_sinks`], which
//! returns the same [`Report`].
//!
//! Fixtures live beside their connectors: the files, Kafka and Parquet fixtures in those crates
//! behind their `conformance` feature, so a third-party connector is tested exactly like a
//! built-in one. This crate keeps the fixtures of its reference connectors ([`fixtures`]: the
//! example plugin's `generator` source and `jsonlines` sink) and the helpers fixture authors
//! share ([`fixture::unsupported`], [`fixtures::TempTargets`], [`fixtures::column_text`],
//! [`sink::fixture::rows_as_json`]).
//!
//! Skips are visible: a generated test whose case is skipped records it for the test summary
//! ([`skips`]); a capability the connector does not claim is a legitimate skip, never a failure.
//!
//! ## Example
//!
//! ```
//! use tributary_conformance::{fixtures::GeneratorFixture, runner, CaseStatus};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)] async fn main() -> tributary_sdk::Result<()> {
//! let mut fixture = GeneratorFixture::new(2)?;
//! let connector = tributary_plugin_generator::GeneratorSourceFactory;
//! let report = runner::run(&connector, &mut fixture, &Default::default()).await;
//! println!("{}", report.to_table());
//! assert!(report.is_success());
//! // The generator reads one target at a time: list subscriptions are skipped, with the reason.
//! let list = report.cases.iter().find(|c| c.name == "subscribe_list").unwrap();
//! assert_eq!(list.status, CaseStatus::Skipped);
//! # Ok(()) }
//! ```
//!
//! A connector crate generates one test per case with [`conformance_tests!`]:
//!
//! ```no_run
//! # mod demo {
//! use std::sync::Arc;
//! use tributary_conformance::{fixtures::GeneratorFixture, Setup};
//!
//! async fn setup() -> Option<Setup> {
//!     Some(Setup {
//!         connector: Arc::new(tributary_plugin_generator::GeneratorSourceFactory),
//!         fixture: Box::new(GeneratorFixture::new(2).ok()?),
//!     })
//! }
//!
//! tributary_conformance::conformance_tests!(setup);
//! # }
//! # fn main() {}
//! ```

pub mod capability;
pub mod cases;
pub mod fixture;
pub mod fixtures;
mod names;
pub mod report;
pub mod runner;
pub mod sink;
pub mod skips;

pub use capability::{Capability, LimitUnit, RateLimit};
pub use cases::option_checks::SECRET_MARKER;
pub use cases::{all_cases, Case, CaseResult, Failure, Outcome};
pub use fixture::{DecodeMode, EfoSetup, Fixture, ReadSetup, Starting, Subscription};
pub use names::unique_name;
pub use report::{CaseReport, CaseStatus, Report};
pub use runner::{run, run_case, RunOptions, Setup};
pub use sink::{all_sink_cases, run_sinks, SinkCase, SinkFixture, SinkSetup};
pub use skips::{record_skip, require_env};

/// Generates one `#[tokio::test]` per conformance case for a connector.
///
/// `$setup` is an async function `() -> Option<Setup>` returning the connector and a fresh
/// fixture (or `None` when the external system is not available; see [`runner::require_env`]).
/// The calling crate needs `tokio` (features `macros`, `rt-multi-thread`) as a dev-dependency.
/// The tests come from the suite's case table, so a new case reaches every connector; a test
/// named `all_cases_generated` checks the generated names against [`all_cases`].
///
/// ```ignore
/// async fn setup() -> Option<tributary_conformance::Setup> { /* ... */ }
/// tributary_conformance::conformance_tests!(setup);
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($setup:path) => {
        $crate::__source_cases!(__source_case_tests!($setup));
    };
}

/// `__source_cases!` callback: one test per case.
#[doc(hidden)]
#[macro_export]
macro_rules! __source_case_tests {
    (($setup:path) $($name:ident: [$($cap:ident),*] $description:literal,)*) => {
        $(
            #[doc = $description]
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $crate::runner::run_case_test(stringify!($name), $setup).await;
            }
        )*

        #[test]
        fn all_cases_generated() {
            let generated: &[&str] = &[$(stringify!($name)),*];
            let listed: ::std::vec::Vec<&str> =
                $crate::all_cases().iter().map(|c| c.name).collect();
            assert_eq!(generated, listed.as_slice());
        }
    };
}

/// Generates one `#[tokio::test]` per sink conformance case for a sink.
///
/// `$setup` is an async function `() -> Option<SinkSetup>` returning the sink factory and a fresh
/// [`SinkFixture`] (or `None` when the external system is not available; see
/// [`runner::require_env`]). The calling crate needs `tokio` (features `macros`,
/// `rt-multi-thread`) as a dev-dependency. The tests come from the sink suite's case table; a
/// test named `all_sink_cases_generated` checks the generated names against [`all_sink_cases`].
///
/// ```ignore
/// async fn setup() -> Option<tributary_conformance::SinkSetup> { /* ... */ }
/// tributary_conformance::sink_conformance_tests!(setup);
/// ```
#[macro_export]
macro_rules! sink_conformance_tests {
    ($setup:path) => {
        $crate::__sink_cases!(__sink_case_tests!($setup));
    };
}

/// `__sink_cases!` callback: one test per sink case.
#[doc(hidden)]
#[macro_export]
macro_rules! __sink_case_tests {
    (($setup:path) $($name:ident: $description:literal,)*) => {
        $(
            #[doc = $description]
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $crate::sink::run_sink_case_test(stringify!($name), $setup).await;
            }
        )*

        #[test]
        fn all_sink_cases_generated() {
            let generated: &[&str] = &[$(stringify!($name)),*];
            let listed: ::std::vec::Vec<&str> =
                $crate::all_sink_cases().iter().map(|c| c.name).collect();
            assert_eq!(generated, listed.as_slice());
        }
    };
}
