//! Real-time mode across the plugin boundary, with the example plugin built as a real cdylib:
//!
//! - a `realTime` pipeline whose source (`generator`) and streaming sink (`jsonlines`) live in
//!   the plugin, next to the built-in Parquet sink (staged): rows appended while it runs reach
//!   the plugin sink through `write_records` before the checkpoint, and a clean stop commits
//!   them all (Parquet included);
//! - the plugin's source and sink used directly through the streaming extension: chunks with
//!   positions, the end offset, back-pressure and stop, acknowledgements;
//! - the same plugin built without the extension (feature `no-streaming`, what a plugin built
//!   before it existed exports) is refused for `realTime` with the reason, and still runs
//!   micro-batch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod plugin_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Layout;
use tributary_plugin_generator::Control;
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::plugin;
use tributary_runtime::progress::{ProgressEvent, ProgressListener};
use tributary_runtime::registry::Registry;
use tributary_sdk::{
    chunk_queue, ConnectorContext, ErrorCode, Offset, Options, RealTimeSupport, SinkFactoryExt,
    SourceFactoryExt,
};

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<ProgressEvent>>>);

impl ProgressListener for Collect {
    fn on_progress(&mut self, e: &ProgressEvent) {
        self.0.lock().unwrap().push(e.clone());
    }
}

async fn library(variant: &'static str) -> PathBuf {
    tokio::task::spawn_blocking(move || plugin_common::build_plugin(variant, "debug"))
        .await
        .unwrap()
}

fn registry(lib: &Path) -> Registry {
    let mut registry = Registry::builtin();
    plugin::load(lib)
        .unwrap()
        .register_into(&mut registry)
        .unwrap();
    registry
}

fn set_rows(control: &Path, latest: u64) {
    Control {
        latest,
        ..Default::default()
    }
    .write(control)
    .unwrap();
}

/// The ids in a JSON-lines file (missing file: none).
fn jsonl_ids(path: &Path) -> Vec<i64> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["id"].as_i64().unwrap())
        .collect()
}

async fn wait_for_ids(path: &Path, want: usize, limit: Duration) -> Vec<i64> {
    let t0 = Instant::now();
    loop {
        let ids = jsonl_ids(path);
        if ids.len() >= want || t0.elapsed() > limit {
            return ids;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn pipeline_text(l: &Layout, control: &Path, jsonl: &Path, kind: &str) -> String {
    format!(
        r#"
name = "plugin-rt"
checkpoint = "{ck}"
[source]
connector = "generator"
options = {{ controlFile = "{control}", rowsPerBatch = 50 }}
[[sink]]
connector = "jsonlines"
options = {{ path = "{jsonl}" }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "{kind}"
interval = "1 minute"
progressInterval = "200ms"
"#,
        ck = l.checkpoint().display(),
        control = control.display(),
        jsonl = jsonl.display(),
        out = l.output().display(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_source_streams_to_a_plugin_sink_before_the_checkpoint() {
    let lib = library("").await;
    let l = Layout::new();
    let control = l.root.path().join("control.json");
    let jsonl = l.root.path().join("jsonl");
    set_rows(&control, 0);
    let text = pipeline_text(&l, &control, &jsonl, "realTime");
    let spec = PipelineSpec::parse(&text, "plugin-rt.toml").unwrap();
    let mut p = Pipeline::build(
        &spec,
        &registry(&lib),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    let events = Collect::default();
    p.add_listener(Box::new(events.clone()));
    let stop = p.shutdown_handle();
    let run = tokio::spawn(async move { p.run().await });

    // Rows that appear while the pipeline runs reach the plugin sink (written through
    // write_records and acknowledged) long before the one-minute checkpoint.
    let file = jsonl.join("batch-0.jsonl");
    tokio::time::sleep(Duration::from_millis(300)).await;
    set_rows(&control, 300);
    let ids = wait_for_ids(&file, 300, Duration::from_secs(20)).await;
    assert_eq!(ids, (0..300).collect::<Vec<_>>(), "streamed in order, once");
    assert!(
        !l.checkpoint().join("commits").join("0").exists(),
        "rows arrived before the first checkpoint"
    );
    set_rows(&control, 420);
    let ids = wait_for_ids(&file, 420, Duration::from_secs(20)).await;
    assert_eq!(ids, (0..420).collect::<Vec<_>>());
    if run.is_finished() {
        panic!("the pipeline stopped: {:?}", run.await.unwrap());
    }
    // Interim progress reports the rows and the position delivered so far.
    let t0 = Instant::now();
    let interim = loop {
        let found = events
            .0
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|e| e.interim && e.num_input_rows == 420)
            .cloned();
        if let Some(e) = found {
            break e;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "no interim event");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        interim.sources[0].end_offset.to_json_string(),
        r#"{"rows":420}"#
    );

    // A clean stop ends the long batch and commits what was delivered: the staged Parquet sink
    // publishes every row, the plugin sink's file is synced, the offsets end at row 420.
    stop.trigger();
    let summary = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(summary.batches, 1);
    assert!(l.checkpoint().join("commits").join("0").exists());
    assert_eq!(
        common::output_ids(&l.output()),
        (0..420).collect::<Vec<_>>()
    );
    assert_eq!(jsonl_ids(&file), (0..420).collect::<Vec<_>>());
    let last = events.0.lock().unwrap().last().cloned().unwrap();
    assert!(!last.interim);
    assert_eq!(last.num_input_rows, 420);
    assert_eq!(
        last.sources[0].end_offset.to_json_string(),
        r#"{"rows":420}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_streaming_extension_carries_chunks_positions_and_acknowledgements() {
    let lib = library("").await;
    let loaded = plugin::load(&lib).unwrap();
    let source = loaded
        .source_factories()
        .into_iter()
        .find(|f| f.name() == "generator")
        .unwrap();
    let options: Options = [("totalRows", "1000"), ("rowsPerBatch", "10")]
        .into_iter()
        .collect();
    // The plugin's own answer holds: the generator streams.
    assert_eq!(
        source.describe(&options).unwrap().real_time,
        RealTimeSupport::Supported
    );
    let mut s = source
        .create(&options, &ConnectorContext::default())
        .unwrap();
    let start = Offset::parse(r#"{"rows":200}"#).unwrap();
    // A queue of two chunks nobody reads for a while: the plugin's reader waits (back-pressure)
    // instead of reading all 800 rows (80 chunks). In flight at most: the host's queue, the
    // chunk the pump holds, the plugin's queue and the chunk the reader holds.
    let (tx, mut rx) = chunk_queue(2);
    s.as_streaming()
        .unwrap()
        .start_stream(&start, tx)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let metrics = s.metrics();
    let read_early = metrics["rowsRead"].as_u64().unwrap();
    let bound = 10 * (2 + 1 + tributary_sdk::plugin::export_streaming::PLUGIN_QUEUE_CHUNKS + 1);
    assert!(
        read_early > 0 && read_early <= bound as u64,
        "back-pressure: {read_early} rows read before any was taken (bound {bound})"
    );
    let mut delivered = BTreeMap::new();
    let mut ids = Vec::new();
    while ids.len() < 800 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(chunk.partition, "rows");
        assert!(chunk.read_at_us > 0);
        let col = chunk.batch.column(0);
        let arr = col
            .as_any()
            .downcast_ref::<arrow::array::Int64Array>()
            .unwrap();
        ids.extend(arr.values().iter().copied());
        delivered.insert(chunk.partition.clone(), chunk.position.clone());
    }
    assert_eq!(ids, (200..1000).collect::<Vec<_>>());
    let end = s
        .as_streaming()
        .unwrap()
        .end_offset(&start, &delivered)
        .unwrap();
    assert_eq!(end.to_json_string(), r#"{"rows":1000}"#);
    assert_eq!(
        s.as_streaming()
            .unwrap()
            .end_offset(&start, &BTreeMap::new())
            .unwrap(),
        start
    );
    // Stopping returns promptly; the readers drop their queue.
    rx.close();
    let t0 = Instant::now();
    s.as_streaming().unwrap().stop_stream().await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    s.stop().await.unwrap();

    // The sink acknowledges records written through write_records.
    let dir = tempfile::tempdir().unwrap();
    let sink_factory = loaded
        .sink_factories()
        .into_iter()
        .find(|f| f.name() == "jsonlines")
        .unwrap();
    let sink_options: Options = [("path", dir.path().to_str().unwrap())]
        .into_iter()
        .collect();
    let mut sink = sink_factory
        .create(&sink_options, &ConnectorContext::default())
        .unwrap();
    let schema = tributary_plugin_generator::row_schema();
    sink.open(schema.clone()).await.unwrap();
    let batch = |from: i64| {
        arrow::array::RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(arrow::array::Int64Array::from(vec![from, from + 1])),
                Arc::new(arrow::array::StringArray::from(vec!["a", "b"])),
                Arc::new(arrow::array::Int32Array::from(vec![0, 0])),
            ],
        )
        .unwrap()
    };
    let streaming = sink.as_streaming().unwrap();
    let first = streaming.write_records(7, &batch(0)).await.unwrap();
    let second = streaming.write_records(7, &batch(2)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        jsonl_ids(&dir.path().join("batch-7.jsonl")),
        vec![0, 1, 2, 3]
    );
    streaming.end_batch(7).await.unwrap();
    // A failure inside the plugin comes back as the call's error, with the plugin named.
    let ack = streaming.write_records(9, &batch(4)).await.unwrap();
    ack.await.unwrap();
    let e = streaming.end_batch(8).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::SinkWrite);
    assert_eq!(e.context_value("plugin"), Some("generator"), "{e}");
    sink.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_without_the_extension_is_refused_for_real_time_and_runs_micro_batch() {
    let lib = library("no-streaming").await;
    let registry = registry(&lib);
    let l = Layout::new();
    let control = l.root.path().join("control.json");
    let jsonl = l.root.path().join("jsonl");
    set_rows(&control, 120);

    let text = pipeline_text(&l, &control, &jsonl, "realTime");
    let spec = PipelineSpec::parse(&text, "plugin-rt.toml").unwrap();
    let e = Pipeline::build(&spec, &registry, Arc::new(tributary_sdk::EnvSecretStore))
        .map(|_| ())
        .unwrap_err();
    let message = e.to_string();
    assert_eq!(e.code(), ErrorCode::InvalidPipeline, "{message}");
    for part in [
        "source 'generator' cannot run with trigger kind realTime",
        "without the streaming extension",
        "tributary_plugin_streaming_v1",
        "processingTime or availableNow",
    ] {
        assert!(message.contains(part), "'{part}' missing from: {message}");
    }
    // Its sink is not streaming either.
    let sink = registry.sink("jsonlines").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o: Options = [("path", dir.path().to_str().unwrap())]
        .into_iter()
        .collect();
    let mut built = sink
        .prepare(&o)
        .unwrap()
        .build(&ConnectorContext::default())
        .unwrap();
    assert!(built.as_streaming().is_none());

    // The same plugin still runs micro-batch.
    let text = pipeline_text(&l, &control, &jsonl, "availableNow")
        .replace("interval = \"1 minute\"\n", "")
        .replace("progressInterval = \"200ms\"\n", "");
    let spec = PipelineSpec::parse(&text, "plugin-mb.toml").unwrap();
    let mut p = Pipeline::build(&spec, &registry, Arc::new(tributary_sdk::EnvSecretStore)).unwrap();
    let summary = p.run().await.unwrap();
    assert_eq!(summary.batches, 1);
    assert_eq!(
        common::output_ids(&l.output()),
        (0..120).collect::<Vec<_>>()
    );
    assert_eq!(
        jsonl_ids(&jsonl.join("batch-0.jsonl")),
        (0..120).collect::<Vec<_>>()
    );
}
