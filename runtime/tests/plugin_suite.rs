//! A pipeline whose source and sink both come from the example plugin, run by the runtime's
//! engine: the pipeline file names them like built-in connectors (`plugin_path` finds them).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod plugin_common;

use std::sync::Arc;

use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_runs_plugin_connectors_exactly_once() {
    let lib = tokio::task::spawn_blocking(|| plugin_common::build_plugin("", "debug"))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        plugin_common::workspace_root().join("examples/plugin-generator/pipeline.toml"),
    )
    .unwrap()
    .replace(
        "target/plugins/release",
        &lib.parent().unwrap().display().to_string(),
    )
    .replace("examples/out/generator", &dir.path().display().to_string());
    let spec = PipelineSpec::parse(&text, "pipeline.toml").unwrap();
    let registry = Registry::with_plugins(&spec.plugin_path).unwrap();
    let secrets = Arc::new(tributary_sdk::EnvSecretStore);
    let mut pipeline = Pipeline::build(&spec, &registry, secrets.clone()).unwrap();
    let summary = pipeline.run().await.unwrap();
    assert_eq!(summary.rows, 10_000);
    assert_eq!(summary.batches, 4);
    let mut ids = Vec::new();
    for b in 0..4 {
        let text =
            std::fs::read_to_string(dir.path().join(format!("jsonl/batch-{b}.jsonl"))).unwrap();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["value"], format!("row-{}", v["id"]));
            ids.push(v["id"].as_u64().unwrap());
        }
    }
    assert_eq!(ids, (0..10_000).collect::<Vec<u64>>());
    // A second run resumes from the checkpoint: nothing new, nothing written twice.
    drop(pipeline);
    let mut again = Pipeline::build(&spec, &registry, secrets).unwrap();
    let summary = again.run().await.unwrap();
    assert_eq!(summary.rows, 0);
}
