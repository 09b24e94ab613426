//! End-to-end runs of the `tributary` binary: files -> Parquet with available-now, incremental
//! re-runs, `files-state`, and bad input that must fail with one clear error line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

#[test]
fn available_now_in_three_batches_then_only_new_files() {
    let l = Layout::new();
    let next = write_json_files(&l.input(), "a", 9, 10, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 3"#, "availableNow");
    let progress = l.root.path().join("progress.jsonl");

    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(output_ids(&l.output()), (0..90).collect::<Vec<_>>());
    let events = progress_events(&progress);
    assert_eq!(events.len(), 3, "three batches of three files");
    assert_eq!(events[0]["numInputRows"], 30);
    assert_eq!(events[0]["sources"][0]["metrics"]["numFilesOutstanding"], 6);
    assert_eq!(events[2]["sources"][0]["metrics"]["numFilesOutstanding"], 0);
    assert_eq!(events[2]["batchId"], 2);

    // New files arrive; the second run reads only them.
    write_json_files(&l.input(), "b", 2, 10, next);
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let events = progress_events(&progress);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["batchId"], 3);
    assert_eq!(events[0]["numInputRows"], 20);
    assert_eq!(output_ids(&l.output()), (0..110).collect::<Vec<_>>());

    // files-state lists all eleven files, each committed, with its batch.
    let o = tributary()
        .args(["files-state", "--format", "json"])
        .arg(l.checkpoint())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.len(), 11);
    assert!(rows.iter().all(|r| r["committed"] == true));
    let batches: Vec<u64> = rows
        .iter()
        .map(|r| r["batchId"].as_u64().unwrap())
        .collect();
    assert_eq!(batches, vec![0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3]);
    let o = tributary()
        .arg("files-state")
        .arg(l.checkpoint())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("11 files, 11 committed"), "{table}");
}

#[test]
fn once_trigger_ignores_rate_limits() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 5, 4, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 1"#, "once");
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(output_ids(&l.output()).len(), 20);
    assert_eq!(
        std::fs::read_dir(l.checkpoint().join("commits"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn check_validates_without_running() {
    let l = Layout::new();
    let p = l.pipeline("", "availableNow");
    let o = tributary().arg("check").arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok"));
    assert!(
        !l.checkpoint().exists(),
        "check must not create the checkpoint"
    );
}

#[test]
fn invalid_pipeline_file_is_one_clear_error() {
    let l = Layout::new();
    let p = l.root.path().join("bad.toml");
    std::fs::write(&p, "checkpoint = \n[source]\n").unwrap();
    for cmd in ["run", "check"] {
        let o = tributary().arg(cmd).arg(&p).output().unwrap();
        let line = assert_one_clear_error(&o);
        assert!(
            line.contains("INVALID_PIPELINE") && line.contains("bad.toml"),
            "{line}"
        );
    }
}

#[test]
fn unknown_option_is_named_with_a_suggestion() {
    let l = Layout::new();
    let p = l.pipeline(r#", "cloudFiles.maxFilePerTrigger" = 3"#, "availableNow");
    let o = tributary().arg("run").arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains("UNKNOWN_OPTION"), "{line}");
    assert!(
        line.contains("did you mean 'cloudFiles.maxFilesPerTrigger'"),
        "{line}"
    );
}

#[test]
fn negative_max_files_per_trigger_is_refused() {
    let l = Layout::new();
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = -1"#, "availableNow");
    for cmd in ["run", "check"] {
        let o = tributary().arg(cmd).arg(&p).output().unwrap();
        let line = assert_one_clear_error(&o);
        assert!(line.contains("INVALID_OPTION"), "{line}");
        assert!(
            line.contains("'-1'") && line.contains("cloudFiles.maxFilesPerTrigger"),
            "{line}"
        );
    }
}

#[test]
fn unreadable_file_fails_naming_the_file() {
    let l = Layout::new();
    std::fs::create_dir_all(l.input()).unwrap();
    std::fs::write(
        l.input().join("broken.parquet"),
        b"PAR1 this is not parquet",
    )
    .unwrap();
    let text = format!(
        r#"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "parquet" }}
[[sink]]
connector = "console"
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        input = l.input().display()
    );
    let p = l.root.path().join("p.toml");
    std::fs::write(&p, text).unwrap();
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains("broken.parquet"), "{line}");
}

#[test]
fn checkpoint_of_another_source_is_refused() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 1, 1, 0);
    let p = l.pipeline("", "availableNow");
    assert!(tributary()
        .args(["run", "-q"])
        .arg(&p)
        .status()
        .unwrap()
        .success());
    // Same checkpoint, other input directory.
    let other = l.root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let text = std::fs::read_to_string(&p).unwrap().replace(
        &l.input().display().to_string(),
        &other.display().to_string(),
    );
    std::fs::write(&p, text).unwrap();
    let o = tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains("CHECKPOINT_INCOMPATIBLE"), "{line}");
}

#[test]
fn unknown_connector_lists_known_ones() {
    let l = Layout::new();
    let p = l.pipeline("", "availableNow");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("connector = \"parquet\"", "connector = \"parqet\"");
    std::fs::write(&p, text).unwrap();
    let o = tributary().arg("check").arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains("Did you mean 'parquet'"), "{line}");
}

/// The metrics contract of a progress event: `numInputRows` counts the rows read from the
/// source, each sink's `numOutputRows` the rows it received after the stages, and the sinks
/// hold exactly those rows.
#[test]
fn progress_counts_rows_in_and_rows_out_across_a_filtering_transform() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 4, 10, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 2"#, "availableNow");
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("[transform]\nsql = \"SELECT * FROM source WHERE id % 4 = 0\"\n");
    std::fs::write(&p, text).unwrap();
    let progress = l.root.path().join("progress.jsonl");
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&progress)
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let events = progress_events(&progress);
    assert_eq!(events.len(), 2, "two batches of two files");
    let written = output_ids(&l.output());
    assert_eq!(written, (0..40).filter(|i| i % 4 == 0).collect::<Vec<_>>());
    for e in &events {
        assert_eq!(e["numInputRows"], 20, "{e}");
        assert_eq!(e["sources"][0]["numInputRows"], 20, "{e}");
        assert_eq!(e["sinks"][0]["numOutputRows"], 5, "{e}");
    }
}

/// `check --explain` prints every option of the pipeline's connectors from their declarations.
#[test]
fn check_explain_prints_the_declared_options() {
    let l = Layout::new();
    let p = l.pipeline("", "availableNow");
    let o = tributary()
        .args(["check", "--explain"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("source files"), "{out}");
    assert!(out.contains("sink parquet"), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("cloudFiles.maxFilesPerTrigger "))
        .unwrap_or_else(|| panic!("no maxFilesPerTrigger row: {out}"));
    assert!(line.contains("1000"), "{line}");
    let o = tributary()
        .args(["check", "--explain", "--markdown"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("| `cloudFiles.maxFilesPerTrigger` |"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn a_progress_file_that_cannot_be_created_is_named() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 1, 2, 0);
    let p = l.pipeline("", "availableNow");
    let missing = l.root.path().join("no-such-dir").join("progress.jsonl");
    let o = tributary()
        .args(["run", "-q", "--progress-json"])
        .arg(&missing)
        .arg(&p)
        .output()
        .unwrap();
    let err = assert_one_clear_error(&o);
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(err.contains("--progress-json"), "{err}");
}

/// `check` refuses what `run` would refuse before reading (#22 item 7), and neither leaves a
/// checkpoint behind: a DDL typo in `schema`, two sinks on one path, an empty `checkpoint`.
#[test]
fn check_refuses_what_run_refuses() {
    let l = Layout::new();
    let base = std::fs::read_to_string(l.pipeline("", "availableNow")).unwrap();
    let out = l.output().display().to_string();
    let cases = [
        (
            base.replace("id BIGINT", "id BIGNT"),
            "unknown type 'BIGNT'",
        ),
        (
            format!(
                "{base}\n[[sink]]\nconnector = \"parquet\"\noptions = {{ path = \"{out}/\" }}\n"
            ),
            "both write to path",
        ),
        (
            base.replace(&l.checkpoint().display().to_string(), ""),
            "'checkpoint' is empty",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let p = l.root.path().join(format!("case{i}.toml"));
        std::fs::write(&p, text).unwrap();
        for cmd in ["check", "run"] {
            let o = tributary()
                .arg(cmd)
                .arg(&p)
                .current_dir(l.root.path())
                .output()
                .unwrap();
            let line = assert_one_clear_error(&o);
            assert!(line.contains(expected), "{cmd} case {i}: {line}");
        }
        assert!(!l.checkpoint().exists(), "case {i} created the checkpoint");
    }
}

/// `check` opens the `[transform]` SQL against the source's schema as `run` does (#22 item 7):
/// an unknown column is refused by both with the same line, a good query names the columns the
/// sinks receive, and a schema inferred from data is said to be left to the run.
#[test]
fn check_plans_the_sql_as_run_does() {
    let l = Layout::new();
    let base = std::fs::read_to_string(l.pipeline("", "availableNow")).unwrap();
    let write = |name: &str, text: &str| {
        let p = l.root.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let good = write(
        "good.toml",
        &format!("{base}\n[transform]\nsql = \"SELECT id, amount * 2 AS doubled FROM source\"\n"),
    );
    let o = tributary().arg("check").arg(&good).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("planned: the sinks receive 2 column(s): id Int64, doubled Float64"),
        "{stdout}"
    );

    let bad = write(
        "bad.toml",
        &format!("{base}\n[transform]\nsql = \"SELECT id, nope FROM source\"\n"),
    );
    // `run` opens the input directory before the stages: it must exist to reach the SQL.
    std::fs::create_dir_all(l.input()).unwrap();
    let mut lines = Vec::new();
    for cmd in ["check", "run"] {
        let o = tributary().arg(cmd).arg(&bad).output().unwrap();
        let line = assert_one_clear_error(&o);
        assert!(line.contains("nope"), "{cmd}: {line}");
        lines.push(line);
    }
    assert_eq!(lines[0], lines[1], "check and run refuse the query alike");

    let inferred = write(
        "inferred.toml",
        &format!(
            "{}\n[transform]\nsql = \"SELECT nope FROM source\"\n",
            base.replace(", schema = \"id BIGINT, name STRING, amount DOUBLE\"", "")
        ),
    );
    let o = tributary().arg("check").arg(&inferred).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("not planned: source 'files' infers its schema from the data"),
        "{stdout}"
    );
}
