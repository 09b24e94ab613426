//! A stateful real-time pipeline takes the chunks queued behind the one it received as one
//! input (`drivers::real_time`'s `COALESCE_CHUNKS`): the example generator (linked statically)
//! queues 2,000 chunks of 10 rows far faster than a count by key runs its plans, so the
//! aggregation must run fewer times than there are chunks, every count must still be exact, and
//! the long batch must commit the position after the last chunk (a restart reads nothing again).
//! The sink records what it is given; it is a test double for observing the runtime, not a
//! stand-in for a real sink.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use common::Layout;
use tributary_plugin_generator::GeneratorSourceFactory;
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;
use tributary_sdk::{
    Ack, ConnectorContext, Delivery, OptionSpec, Options, OutputMode, PreparedSink, Result, Sink,
    SinkFactory, StreamingSink,
};

const ROWS: i64 = 20_000;
const PER_CHUNK: i64 = 10;
const KEYS: i64 = 4;

/// Every write the sink received: the last count per key, and how many writes there were.
#[derive(Default)]
struct Seen {
    last: BTreeMap<i64, i64>,
    writes: usize,
}

static SEEN: Mutex<Option<Seen>> = Mutex::new(None);

#[derive(Debug)]
struct Recording;

impl SinkFactory for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn options(&self) -> Vec<OptionSpec> {
        Vec::new()
    }

    fn prepare(&self, _options: &Options) -> Result<Box<dyn PreparedSink>> {
        Ok(Box::new(Recording))
    }

    fn output_modes(&self) -> &'static [OutputMode] {
        &[OutputMode::Update]
    }
}

impl PreparedSink for Recording {
    fn build(self: Box<Self>, _context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        Ok(Box::new(RecordingSink))
    }
}

#[derive(Debug)]
struct RecordingSink;

impl RecordingSink {
    fn keep(batch: &RecordBatch) {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone()
        };
        let (k, n) = (column("k"), column("n"));
        let mut seen = SEEN.lock().unwrap();
        let seen = seen.get_or_insert_with(Seen::default);
        seen.writes += 1;
        for i in 0..batch.num_rows() {
            seen.last.insert(k.value(i), n.value(i));
        }
    }
}

#[async_trait]
impl Sink for RecordingSink {
    fn delivery(&self) -> Delivery {
        Delivery::AtLeastOnce
    }

    async fn open(&mut self, _schema: SchemaRef) -> Result<()> {
        Ok(())
    }

    async fn write(&mut self, _batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        batches.iter().for_each(Self::keep);
        Ok(())
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSink> {
        Some(self)
    }
}

#[async_trait]
impl StreamingSink for RecordingSink {
    async fn write_records(&mut self, _batch_id: u64, batch: &RecordBatch) -> Result<Ack> {
        Self::keep(batch);
        Ok(Box::pin(async { Ok(()) }))
    }

    async fn end_batch(&mut self, _batch_id: u64) -> Result<()> {
        Ok(())
    }
}

fn pipeline(l: &Layout) -> Pipeline {
    let text = format!(
        r#"
name = "coalesce"
checkpoint = "{ck}"
[source]
connector = "generator"
options = {{ totalRows = {ROWS}, rowsPerBatch = {PER_CHUNK} }}
[transform]
sql = "SELECT id % {KEYS} AS k, count(*) AS n FROM source GROUP BY id % {KEYS}"
outputMode = "update"
[[sink]]
connector = "recording"
[trigger]
kind = "realTime"
interval = "1 minute"
"#,
        ck = l.checkpoint().display(),
    );
    let mut r = Registry::builtin();
    r.add_source(Arc::new(GeneratorSourceFactory));
    r.add_sink(Arc::new(Recording));
    Pipeline::build(
        &PipelineSpec::parse(&text, "coalesce.toml").unwrap(),
        &r,
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap()
}

/// Runs until every key's count is `ROWS / KEYS` (or 60 s), then stops; returns the run's rows.
async fn run(l: &Layout) -> u64 {
    let mut p = pipeline(l);
    let stop = p.shutdown_handle();
    let task = tokio::spawn(async move { p.run().await });
    let want = ROWS / KEYS;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        let done =
            SEEN.lock().unwrap().as_ref().is_some_and(|s| {
                s.last.len() == KEYS as usize && s.last.values().all(|&n| n == want)
            });
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the pipeline stops")
        .unwrap()
        .unwrap()
        .rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_chunks_go_through_the_aggregation_together_and_every_count_stays_exact() {
    let l = Layout::new();
    let rows = run(&l).await;
    let seen = SEEN.lock().unwrap().take().unwrap();
    let chunks = (ROWS / PER_CHUNK) as usize;
    let want: BTreeMap<i64, i64> = (0..KEYS).map(|k| (k, ROWS / KEYS)).collect();
    assert_eq!(seen.last, want, "every key's last count is exact");
    assert_eq!(rows, ROWS as u64, "the long batch read every row once");
    println!("{chunks} chunks reached the sink in {} writes", seen.writes);
    assert!(
        seen.writes < chunks,
        "queued chunks went through the aggregation together: {} writes for {chunks} chunks",
        seen.writes
    );
    assert!(l.checkpoint().join("commits/0").exists());

    // the committed end is after the last chunk: a restart has nothing left to read
    let rows = {
        let mut p = pipeline(&l);
        let stop = p.shutdown_handle();
        let task = tokio::spawn(async move { p.run().await });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        stop.trigger();
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("the restarted pipeline stops")
            .unwrap()
            .unwrap()
            .rows
    };
    assert_eq!(rows, 0, "nothing is read twice after the commit");
    assert!(
        SEEN.lock().unwrap().as_ref().is_none_or(|s| s.writes == 0),
        "the restart emitted nothing"
    );
}
