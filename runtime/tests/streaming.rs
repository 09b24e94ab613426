//! A long-running `processingTime` pipeline through the library API: it picks up files that
//! arrive while it runs, reports progress to listeners, and stops cleanly when asked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::progress::{ProgressEvent, ProgressListener};
use tributary_runtime::registry::Registry;

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<ProgressEvent>>>);

impl ProgressListener for Collect {
    fn on_progress(&mut self, e: &ProgressEvent) {
        self.0.lock().unwrap().push(e.clone());
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processing_time_picks_up_new_files_and_stops_on_request() {
    let l = Layout::new();
    let next = write_json_files(&l.input(), "a", 2, 5, 0);
    let path = l.pipeline("", "processingTime");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "kind = \"processingTime\"",
        "kind = \"processingTime\"\ninterval = \"50ms\"",
    );
    let spec = PipelineSpec::parse(&text, "stream.toml").unwrap();
    let mut p = Pipeline::build(
        &spec,
        &Registry::builtin(),
        Arc::new(tributary_sdk::EnvSecretStore),
    )
    .unwrap();
    let events = Collect::default();
    p.add_listener(Box::new(events.clone()));
    let stop = p.shutdown_handle();
    let task = tokio::spawn(async move { p.run().await });

    let ev = events.clone();
    tokio::task::spawn_blocking(move || {
        wait_for("first batch", || !ev.0.lock().unwrap().is_empty())
    })
    .await
    .unwrap();
    // Files arriving while it runs are picked up by a later batch.
    write_json_files(&l.input(), "b", 1, 5, next);
    let out = l.output();
    tokio::task::spawn_blocking(move || wait_for("new file", || output_ids(&out).len() == 15))
        .await
        .unwrap();

    stop.trigger();
    let summary = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("pipeline stops after shutdown")
        .unwrap()
        .unwrap();
    assert_eq!(summary.rows, 15);
    assert_eq!(output_ids(&l.output()), (0..15).collect::<Vec<_>>());
    let events = events.0.lock().unwrap();
    assert_eq!(events.len() as u64, summary.batches);
    assert!(events
        .windows(2)
        .all(|w| w[1].batch_id == w[0].batch_id + 1));
    assert!(
        events.iter().all(|e| e.num_input_rows > 0),
        "idle triggers emit no batch"
    );
}
