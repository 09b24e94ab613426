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
//! ## Example
//!
//! ```no_run
//! use tributary_conformance::{fixtures::FilesFixture, runner};
//!
//! # async fn demo() -> tributary_sdk::Result<()> {
//! let mut fixture = FilesFixture::new()?;
//! let report = runner::run(&tributary_files::FilesSourceFactory, &mut fixture, &Default::default()).await;
//! println!("{}", report.to_table());
//! assert!(report.is_success());
//! # Ok(()) }
//! ```

pub mod capability;
pub mod cases;
pub mod fixture;
pub mod fixtures;
pub mod report;
pub mod runner;
pub mod sink;

pub use capability::{Capability, LimitUnit, RateLimit};
pub use cases::{all_cases, Case, CaseResult, Failure, Outcome};
pub use fixture::{DecodeMode, EfoSetup, Fixture, ReadSetup, Starting, Subscription};
pub use report::{CaseReport, CaseStatus, Report};
pub use runner::{run, run_case, RunOptions, Setup};
pub use sink::{all_sink_cases, run_sinks, SinkCase, SinkFixture, SinkSetup};

/// Generates one `#[tokio::test]` per conformance case for a connector.
///
/// `$setup` is an async function `() -> Option<Setup>` returning the connector and a fresh
/// fixture (or `None` when the external system is not available; see [`runner::require_env`]).
/// The calling crate needs `tokio` (features `macros`, `rt-multi-thread`) as a dev-dependency.
/// A test named `all_cases_generated` fails if the suite has a case this macro does not list.
///
/// ```ignore
/// async fn setup() -> Option<tributary_conformance::Setup> { /* ... */ }
/// tributary_conformance::conformance_tests!(setup);
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($setup:path) => {
        $crate::conformance_tests!(@cases $setup;
            subscribe_list,
            subscribe_pattern_includes_new_target,
            assign_partitions,
            starting_earliest,
            starting_latest,
            read_range_determinism,
            replay_after_restart,
            rate_limit_honoured,
            fail_on_data_loss_true,
            fail_on_data_loss_false,
            permissive_decoding,
            failfast_decoding_stops,
            idle_source_returns_empty,
            shutdown_releases_resources,
            secrets_hidden,
            unknown_option_refused,
            efo_consumer_registered_active,
            efo_consumer_reused_by_name,
            efo_consumer_deregistered_on_stop,
            efo_consumer_leak_listed,
        );
    };
    (@cases $setup:path; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $crate::runner::run_case_test(stringify!($case), $setup).await;
            }
        )*

        #[test]
        fn all_cases_generated() {
            let generated: &[&str] = &[$(stringify!($case)),*];
            for case in $crate::all_cases() {
                assert!(
                    generated.contains(&case.name),
                    "conformance_tests! does not generate a test for case {}",
                    case.name
                );
            }
        }
    };
}

/// Generates one `#[tokio::test]` per sink conformance case for a sink.
///
/// `$setup` is an async function `() -> Option<SinkSetup>` returning the sink factory and a fresh
/// [`SinkFixture`] (or `None` when the external system is not available; see
/// [`runner::require_env`]). The calling crate needs `tokio` (features `macros`,
/// `rt-multi-thread`) as a dev-dependency. Every listed case must exist (the generated tests
/// name the case functions, so a stale name does not compile), and a test named
/// `all_sink_cases_generated` fails if the suite has a case this macro does not list.
///
/// ```ignore
/// async fn setup() -> Option<tributary_conformance::SinkSetup> { /* ... */ }
/// tributary_conformance::sink_conformance_tests!(setup);
/// ```
#[macro_export]
macro_rules! sink_conformance_tests {
    ($setup:path) => {
        $crate::sink_conformance_tests!(@cases $setup;
            sink_writes_every_row,
            sink_replay_replaces_batch,
            sink_replay_after_restart,
            sink_empty_batch,
            sink_unknown_option_refused,
            sink_secrets_hidden,
        );
    };
    (@cases $setup:path; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                // A name that is not a case function does not compile.
                let _: $crate::sink::SinkCaseFn = |c, f| ::std::boxed::Box::pin($crate::sink::cases::$case(c, f));
                $crate::sink::run_sink_case_test(stringify!($case), $setup).await;
            }
        )*

        #[test]
        fn all_sink_cases_generated() {
            let generated: &[&str] = &[$(stringify!($case)),*];
            for case in $crate::all_sink_cases() {
                assert!(
                    generated.contains(&case.name),
                    "sink_conformance_tests! does not generate a test for sink case {}",
                    case.name
                );
            }
        }
    };
}
