//! Shared helpers of the runtime's integration tests: the `tributary` binary, test layouts
//! (input, checkpoint, output directories and a pipeline file), JSON input files and Parquet
//! output ids, and the one-clear-error assertion.
#![allow(
    dead_code,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::new_without_default
)]
//! Helpers shared by the runtime's end-to-end tests: pipeline files, input files, the binary.

pub mod http;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn tributary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tributary"))
}

/// Writes `files` JSON-lines files of `rows` rows each, ids starting at `first_id`.
pub fn write_json_files(dir: &Path, prefix: &str, files: usize, rows: usize, first_id: u64) -> u64 {
    std::fs::create_dir_all(dir).unwrap();
    let mut id = first_id;
    for f in 0..files {
        let mut text = String::new();
        for _ in 0..rows {
            text.push_str(&format!(
                "{{\"id\":{id},\"name\":\"row-{id}\",\"amount\":{}.5}}\n",
                id % 97
            ));
            id += 1;
        }
        // Write then rename, as producers of landing directories should.
        let tmp = dir.join(format!(".{prefix}-{f:05}.json.tmp"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join(format!("{prefix}-{f:05}.json"))).unwrap();
    }
    id
}

pub struct Layout {
    pub root: tempfile::TempDir,
}

impl Layout {
    pub fn new() -> Self {
        Layout {
            root: tempfile::tempdir().unwrap(),
        }
    }
    pub fn input(&self) -> PathBuf {
        self.root.path().join("in")
    }
    pub fn output(&self) -> PathBuf {
        self.root.path().join("out")
    }
    pub fn checkpoint(&self) -> PathBuf {
        self.root.path().join("ck")
    }
    /// Writes a files -> parquet pipeline and returns its path.
    pub fn pipeline(&self, extra_source_options: &str, trigger: &str) -> PathBuf {
        let text = format!(
            r#"
name = "test"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING, amount DOUBLE" {extra} }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "{trigger}"
"#,
            ck = self.checkpoint().display(),
            input = self.input().display(),
            out = self.output().display(),
            extra = extra_source_options,
        );
        let p = self.root.path().join("pipeline.toml");
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// The ids in the Parquet output, sorted (none while the sink has not made its directory: a
/// test polling a pipeline it just started may look before the first batch).
pub fn output_ids(dir: &Path) -> Vec<i64> {
    use arrow::array::{AsArray, Int64Array};
    let mut ids = Vec::new();
    if !dir.exists() {
        return ids;
    }
    for b in tributary_sinks::parquet::read_dir_batches(dir).unwrap() {
        let col = b.column_by_name("id").unwrap();
        let arr: &Int64Array = col.as_primitive();
        ids.extend(arr.iter().flatten());
    }
    ids.sort_unstable();
    ids
}

/// The progress events a run wrote with `--progress-json` (the file must exist).
pub fn progress_events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stateful operators of `checkpoint` as `tributary state --operators --format json`
/// shows them (the command must succeed).
pub fn state_operators(checkpoint: &Path) -> serde_json::Value {
    let o = tributary()
        .args([
            "state",
            checkpoint.to_str().unwrap(),
            "--operators",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Asserts a failed run: non-zero exit, exactly one `error:` line, no panic.
pub fn assert_one_clear_error(o: &Output) -> String {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "expected one error line, got: {err}");
    lines[0].to_string()
}

/// `tributary run PIPELINE --progress-json PROGRESS`, asserted to succeed.
pub fn run_with_progress(pipeline: &Path, progress: &Path) -> Output {
    let o = tributary()
        .args([
            "run",
            pipeline.to_str().unwrap(),
            "--progress-json",
            progress.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// Copies the files of `from` into `to` with modification times in name order, 10 s apart, as
/// a Spark oracle run had them (one file per batch with `maxFilesPerTrigger = 1`).
pub fn copy_in_name_order(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    for (i, name) in names.iter().enumerate() {
        let dst = to.join(name);
        std::fs::copy(from.join(name), &dst).unwrap();
        let t =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + 10 * i as u64);
        std::fs::File::options()
            .write(true)
            .open(&dst)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
}
