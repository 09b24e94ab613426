//! The sink conformance suite: the same cases for every [`tributary_sdk::Sink`].
//!
//! It mirrors the source suite one level up:
//!
//! - each case is a public async function in [`cases`] taking the sink under test (as a
//!   `&dyn SinkFactory`, so a built-in sink and a plugin run the same code) and a
//!   [`SinkFixture`] that creates a fresh target and reads back what the sink wrote;
//! - the cases check the sink contract of `tributary_sdk::sink`: every row written once, a
//!   replayed batch id replacing its earlier attempt (in the same instance and after a crash)
//!   when the sink declares [`tributary_sdk::Delivery::ExactlyOnce`], empty micro-batches,
//!   unknown options and secrets; an at-least-once sink is *skipped* on the replay cases (with
//!   the reason) after a check that nothing was lost;
//! - [`crate::sink_conformance_tests!`] generates one `#[tokio::test]` per case, and
//!   [`run_sinks`] runs the suite as a library call and returns the same [`crate::Report`] as
//!   the source runner.
//!
//! ## Example
//!
//! ```
//! use tributary_conformance::{fixtures::JsonLinesSinkFixture, sink};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)] async fn main() -> tributary_sdk::Result<()> {
//! let mut fixture = JsonLinesSinkFixture::new()?;
//! let report = sink::run_sinks(
//!     &tributary_plugin_generator::JsonLinesSinkFactory,
//!     &mut fixture,
//!     &Default::default(),
//! )
//! .await;
//! println!("{}", report.to_table());
//! assert!(report.is_success());
//! # Ok(()) }
//! ```
//!
//! The Parquet and Kafka sinks run the same suite from their crates
//! (`tributary_sinks::conformance::ParquetSinkFixture`, behind the `conformance` feature).

pub mod cases;
pub mod fixture;
pub mod rows;
pub mod runner;

pub use cases::{
    all_sink_cases, sink_empty_batch, sink_parts_then_commit_equals_write,
    sink_replay_after_restart, sink_replay_replaces_batch, sink_secrets_hidden,
    sink_unknown_option_refused, sink_writes_every_row, SinkCase, SinkCaseFn,
};
pub use fixture::{rows_as_json, SinkFixture};
pub use runner::{run_sink_case, run_sink_case_test, run_sinks, SinkSetup};
