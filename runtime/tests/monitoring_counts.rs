//! One count, three reports: for each trigger mode, the run summary, the progress events and
//! the Prometheus metrics (`Monitor::metrics_text`, parsed with `prometheus-parse`) must agree
//! on batches, rows read, rows each sink received and bytes, and those must equal what the sink
//! really holds. Every pipeline has a SQL filter, so rows read and rows written differ and a
//! report that counts one for the other fails; the filter's time must show as a stage duration.
//!
//! - micro-batch (`availableNow`): files → SQL → Parquet, three batches;
//! - real-time: the example generator (linked statically) → SQL → its JSON-lines sink, which
//!   acknowledges as it writes;
//! - a micro-batch replay of an uncommitted batch (the recovery path counts too).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{output_ids, write_json_files, Layout};
use tributary_plugin_generator::{GeneratorSourceFactory, JsonLinesSinkFactory};
use tributary_runtime::engine::{Pipeline, RunSummary};
use tributary_runtime::monitor::{self, Monitor};
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::progress::{ProgressEvent, ProgressListener};
use tributary_runtime::registry::Registry;

/// Keeps every event.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<ProgressEvent>>>);

impl ProgressListener for Events {
    fn on_progress(&mut self, event: &ProgressEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

impl Events {
    /// The committed batches' events (interim events of a running long batch left out).
    fn committed(&self) -> Vec<ProgressEvent> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| !e.interim)
            .cloned()
            .collect()
    }
}

fn metric(text: &str, name: &str, label: Option<(&str, &str)>) -> f64 {
    common::http::labelled(&common::http::parse(text), name, label)
}

fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.add_source(Arc::new(GeneratorSourceFactory));
    r.add_sink(Arc::new(JsonLinesSinkFactory));
    r
}

/// The rows the JSON-lines sink wrote under `dir`.
fn jsonlines_rows(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count() as u64
        })
        .sum()
}

/// Checks that the summary, the events and the metrics agree, and returns (rows read, rows
/// written) as they all say.
fn agree(
    summary: &RunSummary,
    events: &[ProgressEvent],
    text: &str,
    sink: &str,
    filtered: bool,
) -> (u64, u64) {
    let batches = events.len() as u64;
    assert!(batches > 0, "no batch reported");
    assert_eq!(summary.batches, batches, "summary batches = events");
    assert_eq!(
        metric(text, "tributary_batches_total", None) as u64,
        batches,
        "{text}"
    );
    let rows_in: u64 = events.iter().map(|e| e.num_input_rows).sum();
    let source_rows: u64 = events.iter().map(|e| e.sources[0].num_input_rows).sum();
    assert_eq!(
        rows_in, source_rows,
        "numInputRows = sources[0].numInputRows"
    );
    assert_eq!(summary.rows, rows_in, "the summary counts rows read");
    assert_eq!(
        metric(text, "tributary_source_rows_total", None) as u64,
        rows_in,
        "{text}"
    );
    let rows_out: u64 = events
        .iter()
        .map(|e| {
            e.sinks
                .iter()
                .find(|s| s.description == sink)
                .unwrap()
                .num_output_rows
        })
        .sum();
    assert_eq!(
        metric(text, "tributary_sink_rows_total", Some(("sink", sink))) as u64,
        rows_out,
        "{text}"
    );
    if filtered {
        assert!(
            rows_out < rows_in,
            "the filter drops rows: {rows_out} of {rows_in}"
        );
    }
    let bytes_in: u64 = events.iter().map(|e| e.sources[0].num_input_bytes).sum();
    let bytes_out: u64 = events
        .iter()
        .map(|e| {
            e.sinks
                .iter()
                .find(|s| s.description == sink)
                .unwrap()
                .num_output_bytes
        })
        .sum();
    assert!(bytes_in > 0 && bytes_out > 0, "{bytes_in} / {bytes_out}");
    assert!(bytes_out < bytes_in, "fewer rows, fewer bytes");
    assert_eq!(
        metric(text, "tributary_source_bytes_total", None) as u64,
        bytes_in
    );
    assert_eq!(
        metric(text, "tributary_sink_bytes_total", Some(("sink", sink))) as u64,
        bytes_out
    );
    for e in events {
        assert!(
            e.duration_ms.stages.contains_key("stage.sql"),
            "{:?}",
            e.duration_ms
        );
    }
    assert_eq!(
        metric(
            text,
            "tributary_stage_duration_seconds_count",
            Some(("stage", "sql"))
        ) as u64,
        batches,
        "{text}"
    );
    (rows_in, rows_out)
}

/// Runs `p` with a monitor and an event collector attached; returns the summary, the committed
/// events and the metrics text.
async fn run_monitored(
    mut p: Pipeline,
    name: &str,
    trigger: &str,
    stop_when: Option<Box<dyn Fn() -> bool + Send>>,
) -> (RunSummary, Vec<ProgressEvent>, String) {
    let m = Monitor::new(monitor::DEFAULT_READY_WITHIN);
    p.add_listener(m.listener(name, trigger));
    let events = Events::default();
    p.add_listener(Box::new(events.clone()));
    let summary = match stop_when {
        None => p.run().await.unwrap(),
        Some(done) => {
            let stop = p.shutdown_handle();
            let task = tokio::spawn(async move { p.run().await });
            let t0 = Instant::now();
            while !done() {
                assert!(t0.elapsed() < Duration::from_secs(60), "timed out");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            stop.trigger();
            tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .expect("the pipeline stops")
                .unwrap()
                .unwrap()
        }
    };
    (summary, events.committed(), m.metrics_text().unwrap())
}

fn files_spec(l: &Layout) -> PipelineSpec {
    let text = format!(
        r#"
name = "counts"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING, amount DOUBLE", "cloudFiles.maxFilesPerTrigger" = "2" }}
[transform]
sql = "SELECT id, name FROM source WHERE id % 3 = 0"
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        input = l.input().display(),
        out = l.output().display(),
    );
    PipelineSpec::parse(&text, "counts.toml").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn micro_batch_summary_events_and_metrics_agree_with_the_sink() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 6, 10, 0);
    let spec = files_spec(&l);
    let p = Pipeline::build(&spec, &registry(), Arc::new(tributary_sdk::EnvSecretStore)).unwrap();
    let (summary, events, text) = run_monitored(p, "counts", "availableNow", None).await;
    assert_eq!(events.len(), 3, "6 files, 2 per trigger");
    let (rows_in, rows_out) = agree(&summary, &events, &text, "parquet", true);
    assert_eq!(rows_in, 60);
    assert_eq!(rows_out, output_ids(&l.output()).len() as u64);
    assert_eq!(rows_out, 20, "ids 0, 3, ..., 57");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_batch_is_counted_alike_in_the_three_reports() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 4, 10, 0);
    let spec = files_spec(&l);
    let first =
        Pipeline::build(&spec, &registry(), Arc::new(tributary_sdk::EnvSecretStore)).unwrap();
    run_monitored(first, "counts", "availableNow", None).await;
    // Batch 1 logged and never committed (a crash between offsets/1 and commits/1).
    std::fs::remove_file(l.checkpoint().join("commits").join("1")).unwrap();
    let again =
        Pipeline::build(&spec, &registry(), Arc::new(tributary_sdk::EnvSecretStore)).unwrap();
    let (summary, events, text) = run_monitored(again, "counts", "availableNow", None).await;
    assert_eq!(events.len(), 1, "only the replay runs");
    assert!(events[0].replayed);
    let (rows_in, rows_out) = agree(&summary, &events, &text, "parquet", true);
    assert_eq!(rows_in, 20, "the replayed batch's two files");
    assert!(rows_out > 0);
    assert_eq!(
        output_ids(&l.output()).len(),
        14,
        "every id % 3 = 0 of 0..40 once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_summary_events_and_metrics_agree_with_the_sink() {
    let l = Layout::new();
    let out = l.output();
    let text = format!(
        r#"
name = "counts-rt"
checkpoint = "{ck}"
[source]
connector = "generator"
options = {{ totalRows = 400, rowsPerBatch = 40 }}
[transform]
sql = "SELECT * FROM source WHERE id % 4 = 0"
[[sink]]
connector = "jsonlines"
options = {{ path = "{out}" }}
[trigger]
kind = "realTime"
interval = "1 second"
"#,
        ck = l.checkpoint().display(),
        out = out.display(),
    );
    let spec = PipelineSpec::parse(&text, "counts-rt.toml").unwrap();
    let p = Pipeline::build(&spec, &registry(), Arc::new(tributary_sdk::EnvSecretStore)).unwrap();
    let watched = out.clone();
    let (summary, events, metrics) = run_monitored(
        p,
        "counts-rt",
        "realTime",
        Some(Box::new(move || jsonlines_rows(&watched) >= 100)),
    )
    .await;
    let (rows_in, rows_out) = agree(&summary, &events, &metrics, "jsonlines", true);
    assert_eq!(rows_in, 400);
    assert_eq!(rows_out, 100);
    assert_eq!(jsonlines_rows(&out), rows_out, "what the sink holds");
}
