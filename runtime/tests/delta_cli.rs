//! `tributary delta optimize|vacuum|checkpoint` on a table a files → Delta pipeline wrote (one
//! data file per batch): the reports, Delta's retention check, and that ingestion resumes on
//! the compacted table with the batch ids it recorded.

#![cfg(feature = "delta")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

fn delta_pipeline(l: &Layout) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "to-delta"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING, amount DOUBLE", "cloudFiles.maxFilesPerTrigger" = "1" }}
[[sink]]
connector = "delta"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        input = l.input().display(),
        out = l.output().display(),
    );
    let p = l.root.path().join("delta.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn ok(args: &[&str]) -> String {
    let o = tributary().args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn optimize_vacuum_and_checkpoint_by_hand_keep_the_table_and_its_batches() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 6, 10, 0);
    let p = delta_pipeline(&l);
    ok(&["run", p.to_str().unwrap()]);
    let table = l.output();
    let t = table.to_str().unwrap();

    let out = ok(&["delta", "optimize", t, "--target-size", "64mb"]);
    assert!(
        out.contains("6 files") && out.contains("compacted into 1"),
        "{out}"
    );

    // Delta's safety check: a retention under 7 days is refused unless overridden
    let o = tributary()
        .args(["delta", "vacuum", t, "--retention", "interval 1 hours"])
        .output()
        .unwrap();
    let err = assert_one_clear_error(&o);
    assert!(err.contains("retentionDurationCheck"), "{err}");
    let out = ok(&[
        "delta",
        "vacuum",
        t,
        "--retention",
        "interval 0 hours",
        "--no-retention-check",
        "--dry-run",
    ]);
    assert!(out.contains("would delete 6 files"), "{out}");
    let out = ok(&[
        "delta",
        "vacuum",
        t,
        "--retention",
        "0 seconds",
        "--no-retention-check",
    ]);
    assert!(out.contains("deleted 6 files"), "{out}");
    let data_files = std::fs::read_dir(&table)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "parquet")
        })
        .count();
    assert_eq!(data_files, 1, "only the compacted file is left");

    let out = ok(&["delta", "checkpoint", t]);
    assert!(out.contains("checkpoint at version "), "{out}");
    let checkpoints = std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".checkpoint.parquet")
        })
        .count();
    assert!(checkpoints >= 1, "a log checkpoint is written");

    // ingestion resumes on the maintained table: the checkpoint and the table's txn agree
    write_json_files(&l.input(), "b", 2, 10, 60);
    let out = ok(&["run", p.to_str().unwrap()]);
    assert!(out.is_empty() || !out.contains("error"), "{out}");
    let o = tributary()
        .args([
            "checkpoint",
            "verify",
            l.checkpoint().to_str().unwrap(),
            "--pipeline",
            p.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let o = tributary()
        .args(["delta", "optimize", t, "--storage", "novalue"])
        .output()
        .unwrap();
    let err = assert_one_clear_error(&o);
    assert!(
        err.contains("--storage takes key=value") && !err.contains("novalue"),
        "{err}"
    );
}
