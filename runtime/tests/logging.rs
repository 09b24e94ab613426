//! The `tributary` command's logs: `TRIBUTARY_LOG`, else `RUST_LOG`; `--log-format json` with
//! the pipeline name and batch id on each line of a batch; no ANSI colour codes when stderr is
//! not a terminal; an invalid filter is one clear error naming its variable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Output};

use common::*;

/// The binary with none of the logging variables of the test's own environment.
fn clean_env() -> Command {
    let mut c = tributary();
    for v in [
        "TRIBUTARY_LOG",
        "RUST_LOG",
        "NO_COLOR",
        "TRIBUTARY_LOG_FORMAT",
    ] {
        c.env_remove(v);
    }
    c
}

/// A files -> parquet layout with two input files, read in two batches.
fn two_batches() -> (Layout, std::path::PathBuf) {
    let l = Layout::new();
    write_json_files(&l.input(), "f", 2, 3, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 1"#, "availableNow");
    (l, p)
}

fn ok(o: &Output) -> String {
    let err = stderr(o);
    assert!(o.status.success(), "run failed: {err}");
    err
}

#[test]
fn json_lines_carry_the_pipeline_name_and_batch_id() {
    let (l, p) = two_batches();
    let o = clean_env()
        .env("TRIBUTARY_LOG", "info")
        .args(["--log-format", "json", "run"])
        .arg(&p)
        .output()
        .unwrap();
    let err = ok(&o);
    assert_eq!(output_ids(&l.output()).len(), 6);
    let lines: Vec<serde_json::Value> = err
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        })
        .collect();
    assert!(!lines.is_empty(), "no log line at info");
    for v in &lines {
        for key in ["timestamp", "level", "target", "fields"] {
            assert!(v.get(key).is_some(), "no {key}: {v}");
        }
    }
    // Every line logged in a batch has the batch span, with both fields.
    let mut batches = std::collections::BTreeSet::new();
    for v in &lines {
        let span = &v["span"];
        if span["name"] == "batch" {
            assert_eq!(span["pipeline"], "test", "{v}");
            batches.insert(span["batch_id"].as_u64().unwrap_or_else(|| panic!("{v}")));
        }
    }
    assert_eq!(batches.into_iter().collect::<Vec<_>>(), [0, 1], "{err}");
    // The commit and the progress of batch 1, in its span, as one JSON object each.
    let of_batch_1 = |needle: &str| {
        lines.iter().any(|v| {
            v["span"]["batch_id"] == 1
                && v["fields"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(needle))
        })
    };
    assert!(of_batch_1("batch 1 committed"), "{err}");
    assert!(of_batch_1("batch 1 progress"), "{err}");
    // The span list starts at the run's span.
    let spans = lines
        .iter()
        .find(|v| v["span"]["name"] == "batch")
        .map(|v| v["spans"].clone())
        .unwrap();
    assert_eq!(spans[0]["name"], "pipeline", "{spans}");
    assert_eq!(spans[0]["pipeline"], "test", "{spans}");
    // The summary is a log line too: nothing else is on stderr.
    assert!(
        lines.iter().any(|v| v["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("6 rows in 2 batches"))),
        "{err}"
    );
}

#[test]
fn rust_log_is_read_when_tributary_log_is_unset() {
    let (_l, p) = two_batches();
    let o = clean_env()
        .env("RUST_LOG", "info")
        .arg("run")
        .arg(&p)
        .output()
        .unwrap();
    let err = ok(&o);
    let info: Vec<&str> = err.lines().filter(|l| l.contains(" INFO ")).collect();
    assert!(
        info.iter().any(|l| l.contains("batch 0 committed")),
        "no info line with RUST_LOG=info: {err}"
    );
    // TRIBUTARY_LOG wins over RUST_LOG; neither means warn.
    let (_l, p) = two_batches();
    let o = clean_env()
        .env("RUST_LOG", "info")
        .env("TRIBUTARY_LOG", "warn")
        .arg("run")
        .arg(&p)
        .output()
        .unwrap();
    assert!(!ok(&o).contains(" INFO "), "{}", stderr(&o));
    let (_l, p) = two_batches();
    let o = clean_env().arg("run").arg(&p).output().unwrap();
    let err = ok(&o);
    assert!(!err.contains(" INFO "), "{err}");
    assert!(err.contains("6 rows in 2 batches"), "{err}");
}

/// A run whose commit logs a WARN: `cleanSource = MOVE` into a path under a regular file.
fn warning_run(format: &str) -> String {
    let l = Layout::new();
    write_json_files(&l.input(), "f", 1, 2, 0);
    let blocker = l.root.path().join("not-a-directory");
    std::fs::write(&blocker, "x").unwrap();
    let p = l.pipeline(
        &format!(
            r#", "cloudFiles.cleanSource" = "MOVE", "cloudFiles.cleanSource.moveDestination" = "{}", "cloudFiles.cleanSource.retentionDuration" = "0s""#,
            blocker.join("archive").display()
        ),
        "availableNow",
    );
    let o = clean_env()
        .args(["--log-format", format, "run"])
        .arg(&p)
        .output()
        .unwrap();
    ok(&o)
}

#[test]
fn no_ansi_colour_codes_when_stderr_is_not_a_terminal() {
    let err = warning_run("text");
    assert!(
        err.lines()
            .any(|l| l.contains("WARN") && l.contains("cleanSource could not clean a file")),
        "no warning: {err}"
    );
    assert!(!err.contains("\x1b["), "ANSI codes in a pipe: {err:?}");
    let err = warning_run("json");
    let warning: serde_json::Value = err
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["level"] == "WARN")
        .unwrap_or_else(|| panic!("no warning: {err}"));
    assert_eq!(warning["span"]["batch_id"], 0, "{warning}");
    assert!(!err.contains("\x1b["), "ANSI codes in a pipe: {err:?}");
}

#[test]
fn an_invalid_filter_is_one_clear_error_naming_the_variable() {
    let (_l, p) = two_batches();
    for (variable, value) in [
        ("TRIBUTARY_LOG", "info,tributary_runtime=loud"),
        ("RUST_LOG", "tributary_kafka=verbose"),
    ] {
        let o = clean_env()
            .env(variable, value)
            .arg("run")
            .arg(&p)
            .output()
            .unwrap();
        let line = assert_one_clear_error(&o);
        assert!(
            line.contains(&format!("{variable}='{value}'")),
            "{variable}: {line}"
        );
    }
    let o = clean_env()
        .args(["--log-format", "yaml", "run"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("text, json"), "{}", stderr(&o));
}
