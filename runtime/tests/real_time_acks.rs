//! The real-time driver's acknowledged frontier, through the library API: chunks A, B, C, D of
//! the example generator (linked statically) go to a streaming sink whose acknowledgements are
//! scripted — fault injection, not a stand-in for a real sink: D's resolves at once, C's fails
//! after a delay, and C's rows are not kept. The long batch fails with C's error; a restart must
//! deliver C and never skip it:
//!
//! - with only streaming sinks, the driver commits the failed batch at its acknowledged frontier
//!   (after B), so the restart begins exactly at C;
//! - with a staged sink beside it (Parquet), nothing is committed and the restart replays the
//!   whole batch, which Parquet then holds exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use common::{output_ids, Layout};
use tributary_plugin_generator::GeneratorSourceFactory;
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;
use tributary_sdk::{
    Ack, ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, Options, PreparedSink, Result,
    Sink, SinkFactory, StreamingSink,
};

/// Ids each scripted sink received and kept, by its `run` option.
static RECEIVED: Mutex<BTreeMap<String, Vec<i64>>> = Mutex::new(BTreeMap::new());

fn received(run: &str) -> Vec<i64> {
    RECEIVED
        .lock()
        .unwrap()
        .get(run)
        .cloned()
        .unwrap_or_default()
}

#[derive(Debug)]
struct Scripted;

impl SinkFactory for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn options(&self) -> Vec<OptionSpec> {
        vec![
            OptionSpec::string("run", "Where the kept ids are recorded.").required(),
            OptionSpec::int(
                "failChunk",
                0,
                1000,
                "The chunk (0-based) whose acknowledgement fails.",
            ),
        ]
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSink>> {
        OptionSpec::validate_all(&self.options(), options, self.name())?;
        Ok(Box::new(ScriptedSink {
            run: options.get("run").unwrap_or_default().to_string(),
            fail: options.get("failChunk").and_then(|v| v.parse().ok()),
            chunk: 0,
        }))
    }
}

#[derive(Debug)]
struct ScriptedSink {
    run: String,
    fail: Option<usize>,
    chunk: usize,
}

impl PreparedSink for ScriptedSink {
    fn build(self: Box<Self>, _context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        Ok(self)
    }
}

#[async_trait]
impl Sink for ScriptedSink {
    fn delivery(&self) -> Delivery {
        Delivery::AtLeastOnce
    }

    async fn open(&mut self, _schema: SchemaRef) -> Result<()> {
        Ok(())
    }

    async fn write(&mut self, _batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        for b in batches {
            self.keep(b);
        }
        Ok(())
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSink> {
        Some(self)
    }
}

impl ScriptedSink {
    fn keep(&self, batch: &RecordBatch) {
        let ids = batch
            .column_by_name("id")
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let mut all = RECEIVED.lock().unwrap();
        let kept = all.entry(self.run.clone()).or_default();
        kept.extend((0..ids.len()).map(|i| ids.value(i)));
    }
}

#[async_trait]
impl StreamingSink for ScriptedSink {
    async fn write_records(&mut self, _batch_id: u64, batch: &RecordBatch) -> Result<Ack> {
        let chunk = self.chunk;
        self.chunk += 1;
        if Some(chunk) == self.fail {
            // C: not kept; its acknowledgement fails after the later ones resolved.
            return Ok(Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Err(Error::new(
                    ErrorCode::SinkWrite,
                    format!("injected: chunk {chunk} was not delivered"),
                ))
            }));
        }
        self.keep(batch);
        Ok(Box::pin(async { Ok(()) }))
    }

    async fn end_batch(&mut self, _batch_id: u64) -> Result<()> {
        Ok(())
    }
}

fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.add_source(Arc::new(GeneratorSourceFactory));
    r.add_sink(Arc::new(Scripted));
    r
}

/// A real-time pipeline: the generator's 40 rows in chunks of 10 into the scripted sink (and
/// Parquet when `with_parquet`).
fn spec(l: &Layout, run: &str, fail: Option<usize>, with_parquet: bool) -> PipelineSpec {
    let fail = fail.map_or(String::new(), |c| format!(", failChunk = {c}"));
    let parquet = if with_parquet {
        format!(
            "[[sink]]\nconnector = \"parquet\"\noptions = {{ path = \"{}\" }}\n",
            l.output().display()
        )
    } else {
        String::new()
    };
    let text = format!(
        r#"
name = "acks"
checkpoint = "{ck}"
[source]
connector = "generator"
options = {{ totalRows = 40, rowsPerBatch = 10 }}
[[sink]]
connector = "scripted"
options = {{ run = "{run}"{fail} }}
{parquet}
[trigger]
kind = "realTime"
interval = "1 minute"
"#,
        ck = l.checkpoint().display(),
    );
    PipelineSpec::parse(&text, "acks.toml").unwrap()
}

/// Runs the first attempt, which must fail with the injected error.
async fn fail_once(l: &Layout, run: &str, with_parquet: bool) {
    let mut p = Pipeline::build(
        &spec(l, run, Some(2), with_parquet),
        &registry(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(30), p.run())
        .await
        .expect("the failed acknowledgement ends the run")
        .expect_err("the run fails with the acknowledgement's error");
    assert!(err.to_string().contains("injected"), "{err}");
}

/// Restarts without the fault, stops once `want` rows arrived; returns the run's row count.
async fn restart(l: &Layout, run: &str, with_parquet: bool, want: usize) -> u64 {
    let mut p = Pipeline::build(
        &spec(l, run, None, with_parquet),
        &registry(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    let stop = p.shutdown_handle();
    let task = tokio::spawn(async move { p.run().await });
    let t0 = Instant::now();
    while received(run).len() < want && t0.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the restarted pipeline stops")
        .unwrap()
        .unwrap()
        .rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_acknowledgement_commits_the_frontier_and_the_restart_begins_at_it() {
    let l = Layout::new();
    let (first, second) = ("frontier-1", "frontier-2");
    fail_once(&l, first, false).await;
    let mut before = received(first);
    before.sort_unstable();
    // A, B and D were kept, C (20..30) was not.
    let expected: Vec<i64> = (0..20).chain(30..40).collect();
    assert_eq!(before, expected);
    assert!(l.checkpoint().join("commits").join("0").exists());

    let rows = restart(&l, second, false, 20).await;
    let after = received(second);
    assert_eq!(
        rows,
        after.len() as u64,
        "the run summary counts the rows delivered"
    );
    assert_eq!(
        after.first(),
        Some(&20),
        "the restart begins at C, the first unacknowledged record"
    );
    let mut all: Vec<i64> = before.iter().chain(&after).copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all, (0..40).collect::<Vec<_>>(), "no record skipped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_staged_sink_nothing_is_committed_and_the_whole_batch_replays() {
    let l = Layout::new();
    let (first, second) = ("staged-1", "staged-2");
    fail_once(&l, first, true).await;
    assert!(!l.checkpoint().join("commits").join("0").exists());
    assert!(
        !l.output().exists() || output_ids(&l.output()).is_empty(),
        "Parquet publishes nothing"
    );

    let rows = restart(&l, second, true, 40).await;
    let after = received(second);
    assert_eq!(rows, 40, "the run summary counts the rows delivered");
    assert_eq!(after.first(), Some(&0), "the whole long batch replays");
    assert_eq!(
        output_ids(&l.output()),
        (0..40).collect::<Vec<_>>(),
        "Parquet holds every row exactly once"
    );
}
