//! Auto Loader's schema evolution through the command: a new JSON column stops the run with one
//! UNKNOWN_FIELD_EXCEPTION line after evolving the stored schema; the next run replays the
//! interrupted batch with the column, and the Parquet output holds every row once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use arrow::array::{Array, AsArray};
use common::*;

fn pipeline(l: &Layout) -> std::path::PathBuf {
    let text = format!(
        r#"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", "cloudFiles.inferColumnTypes" = true }}
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
    let p = l.root.path().join("evolve.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_new_column_stops_the_run_once_and_the_next_run_reads_it() {
    let l = Layout::new();
    std::fs::create_dir_all(l.input()).unwrap();
    std::fs::write(l.input().join("a.json"), "{\"id\": 1, \"name\": \"ann\"}\n").unwrap();
    let p = pipeline(&l);
    let run = || tributary().args(["run", "-q"]).arg(&p).output().unwrap();
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));

    std::fs::write(
        l.input().join("b.json"),
        "{\"id\": 2, \"name\": \"bo\", \"vip\": true}\n",
    )
    .unwrap();
    let o = run();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("UNKNOWN_FIELD_EXCEPTION") && line.contains("vip"),
        "{line}"
    );

    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(output_ids(&l.output()), [1, 2]);
    let batches = tributary_sinks::parquet::read_dir_batches(&l.output()).unwrap();
    let last = batches.last().unwrap();
    let vip = last
        .column_by_name("vip")
        .expect("the replayed batch has the new column");
    assert!(vip.as_boolean().value(0));
    assert_eq!(vip.len(), 1);
}
