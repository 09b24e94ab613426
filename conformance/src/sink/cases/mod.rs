//! The sink conformance cases: public async functions, one per behaviour.
//!
//! Every case takes the sink under test (as a [`SinkFactory`], so a built-in sink and a plugin run
//! the same code) and a [`SinkFixture`], and returns an [`crate::Outcome`] or a [`Failure`] like the
//! source cases. One table (`__sink_cases!`) lists them; [`all_sink_cases`] and
//! [`crate::sink_conformance_tests!`] (one test per case) are generated from it.

mod acks;
mod options;
mod protocol;
mod replay;
mod staged;
mod writing;

use arrow::array::RecordBatch;
use futures::future::BoxFuture;
use tributary_sdk::{ConnectorContext, Options, Sink, SinkFactory, SinkFactoryExt};

use crate::cases::{CaseResult, Failure};
use crate::sink::fixture::SinkFixture;
use crate::sink::rows::{check_rows, test_schema};

pub use acks::sink_streaming_acks_out_of_order;
pub use options::{sink_secrets_hidden, sink_unknown_option_refused};
pub use protocol::sink_parts_then_commit_equals_write;
pub use replay::{sink_replay_after_restart, sink_replay_replaces_batch};
pub use staged::sink_staged_commit_exactly_once;
pub use writing::{sink_empty_batch, sink_writes_every_row};

/// The signature of every sink case.
pub type SinkCaseFn =
    for<'a> fn(&'a dyn SinkFactory, &'a mut dyn SinkFixture) -> BoxFuture<'a, CaseResult>;

/// A sink case with its name and description.
#[derive(Clone, Copy)]
pub struct SinkCase {
    /// The case name (also the generated test's name).
    pub name: &'static str,
    /// What the case checks.
    pub description: &'static str,
    /// The case itself.
    pub run: SinkCaseFn,
}

impl std::fmt::Debug for SinkCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkCase")
            .field("name", &self.name)
            .finish()
    }
}

/// The sink suite's case table — the one place a sink case is listed: its name (the public
/// async function in this module and the generated test) and what it checks. Expands to
/// `$crate::$callback! { ($($args)*) name: "what", .. }`; [`all_sink_cases`] and
/// [`crate::sink_conformance_tests!`] are both generated from it.
#[doc(hidden)]
#[macro_export]
macro_rules! __sink_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            sink_writes_every_row:
                "every row of every micro-batch (several record batches, nulls) is written once",
            sink_replay_replaces_batch:
                "an exactly-once sink replaces a replayed batch id: no duplicate",
            sink_replay_after_restart:
                "after a crash (no stop) a new instance replays the last batch without duplicating it",
            sink_parts_then_commit_equals_write:
                "a batch written through the host's protocol (begin, parts, finish, commit; the part writer when the sink has one) equals the batch written whole, and its replay adds no duplicate",
            sink_streaming_acks_out_of_order:
                "real-time acknowledgements A, B, D resolved out of order with C failed: the frontier stays at B, A, B and D are readable before any end of batch, and a restart from the frontier delivers C",
            sink_staged_commit_exactly_once:
                "partitions staged by separate instances and committed by a third are published once, across a retried task, a repeated commit and a replayed batch",
            sink_empty_batch:
                "an empty slice and a zero-row batch are written without error and add no row",
            sink_unknown_option_refused:
                "an unknown option is refused with UNKNOWN_OPTION and a near miss is suggested",
            sink_secrets_hidden:
                "sensitive option values never appear in Debug output or errors",
        }
    };
}

/// `__sink_cases!` callback: the table as a `Vec<SinkCase>`.
#[doc(hidden)]
#[macro_export]
macro_rules! __sink_case_list {
    (() $($name:ident: $description:literal,)*) => {
        vec![$(
            $crate::sink::cases::SinkCase {
                name: stringify!($name),
                description: $description,
                run: |c, f| ::std::boxed::Box::pin($crate::sink::cases::$name(c, f)),
            },
        )*]
    };
}

/// Every sink case, in report order.
pub fn all_sink_cases() -> Vec<SinkCase> {
    crate::__sink_cases!(__sink_case_list!())
}

/// A fresh target and the sink options that write to it.
pub(crate) async fn new_target(
    fixture: &mut dyn SinkFixture,
    hint: &str,
) -> Result<(String, Options), Failure> {
    let target = fixture
        .create_target(hint)
        .await
        .map_err(|e| Failure(format!("the fixture cannot create a target: {e}")))?;
    let options = fixture
        .sink_options(&target)
        .map_err(|e| Failure(format!("the fixture has no options for '{target}': {e}")))?;
    Ok((target, options))
}

/// Builds a sink and opens it with the test schema.
pub(crate) async fn open_sink(
    fixture: &dyn SinkFixture,
    connector: &dyn SinkFactory,
    options: &Options,
    context: &ConnectorContext,
) -> Result<Box<dyn Sink>, Failure> {
    let mut sink = connector
        .create(options, context)
        .map_err(|e| Failure(format!("create failed with the fixture's options: {e}")))?;
    sink.open(fixture.input_schema(test_schema()))
        .await
        .map_err(|e| Failure(format!("open failed: {e}")))?;
    Ok(sink)
}

/// Writes one micro-batch; an error names the batch.
pub(crate) async fn write(
    fixture: &dyn SinkFixture,
    sink: &mut dyn Sink,
    batch_id: u64,
    rows: &[RecordBatch],
) -> Result<(), Failure> {
    let batches = fixture.input(rows).map_err(|e| {
        Failure(format!(
            "the fixture cannot shape the rows for the sink: {e}"
        ))
    })?;
    let batches = batches.as_slice();
    sink.write(batch_id, batches).await.map_err(|e| {
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        Failure(format!(
            "write of batch {batch_id} ({} record batches, {rows} rows) failed: {e}",
            batches.len()
        ))
    })
}

/// Stops a sink; an error fails the case.
pub(crate) async fn stop(sink: &mut dyn Sink) -> Result<(), Failure> {
    sink.stop()
        .await
        .map_err(|e| Failure(format!("stop failed: {e}")))
}

/// Reads `target` back and checks it holds every row of `written` (exactly once when
/// `exactly_once`, at least once otherwise) and nothing else.
pub(crate) async fn expect_rows(
    fixture: &dyn SinkFixture,
    target: &str,
    written: &[RecordBatch],
    exactly_once: bool,
    after: &str,
) -> Result<(), Failure> {
    let expected = fixture
        .render(written)
        .map_err(|e| Failure(format!("the fixture cannot render the written rows: {e}")))?;
    let found = fixture
        .read_back(target)
        .await
        .map_err(|e| Failure(format!("reading '{target}' back after {after} failed: {e}")))?;
    check_rows(&expected, &found, exactly_once, after)
}
