//! A pipeline whose source and sink come from a plugin (the example generator plugin, built as a
//! real cdylib), run by the `tributary` binary: `plugin_path` discovery, `plugins list`, and an
//! exactly-once run through the C ABI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn build_plugin_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let target = root.join("target").join("plugins");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args(["build", "--lib", "--manifest-path"])
        .arg(root.join("examples/plugin-generator/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .unwrap();
    assert!(status.success(), "building the example plugin failed");
    // A directory holding only this library (the target dir also holds build leftovers).
    let dir = tempfile::Builder::new()
        .prefix("plugins")
        .tempdir()
        .unwrap()
        .keep();
    let name = format!(
        "{}tributary_plugin_generator.{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_EXTENSION
    );
    std::fs::copy(target.join("debug").join(&name), dir.join(&name)).unwrap();
    dir
}

#[test]
fn plugin_source_and_sink_run_like_builtin_ones() {
    let plugins = build_plugin_dir();
    let l = Layout::new();
    let jsonl = l.root.path().join("jsonl");
    let text = format!(
        r#"
name = "generated"
checkpoint = "{ck}"
plugin_path = ["{plugins}"]
[source]
connector = "generator"
options = {{ totalRows = 2500, maxRowsPerTrigger = 1000 }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[[sink]]
connector = "jsonlines"
options = {{ path = "{jsonl}" }}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        plugins = plugins.display(),
        out = l.output().display(),
        jsonl = jsonl.display(),
    );
    let p = l.root.path().join("p.toml");
    std::fs::write(&p, text).unwrap();

    let o = tributary().arg("check").arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = tributary_sinks::parquet::read_dir_rows(&l.output()).unwrap();
    assert_eq!(rows, 2500);
    let commits = std::fs::read_dir(l.checkpoint().join("commits"))
        .unwrap()
        .count();
    assert_eq!(
        commits, 3,
        "maxRowsPerTrigger splits 2500 rows into 3 batches"
    );
    let lines: usize = std::fs::read_dir(&jsonl)
        .unwrap()
        .map(|e| {
            std::fs::read_to_string(e.unwrap().path())
                .unwrap()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(lines, 2500);

    // The same connectors through TRIBUTARY_PLUGIN_PATH and `plugins list`.
    let o = tributary()
        .args(["plugins", "list"])
        .env("TRIBUTARY_PLUGIN_PATH", &plugins)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.contains("source:generator") && out.contains("sink:jsonlines"),
        "{out}"
    );

    // Without the plugin path the connector is unknown, and the error says where plugins come from.
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace(&format!("plugin_path = [\"{}\"]", plugins.display()), "");
    std::fs::write(&p, text).unwrap();
    let o = tributary().arg("check").arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("UNKNOWN_CONNECTOR") && line.contains("plugin_path"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&plugins);
}
