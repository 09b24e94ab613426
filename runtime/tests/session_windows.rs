//! Session windows through the `tributary` binary, against Spark 4.3: files (one file per
//! batch) → `GROUP BY session_window(ts, '10 seconds'), k` → sinks. The expectations are what
//! `scripts/spark/session_oracle.py` printed when Spark 4.3.0 (pyspark from PyPI, `local[2]`)
//! ran the same query in complete mode over `tests/data/spark_windows/in` (12 files, a tenth
//! of the rows up to 200 s late, so late rows merge into held sessions and bridge them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::*;

const QUERY: &str = "SELECT k, session_window(ts, '10 seconds') AS session, count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi FROM source GROUP BY session_window(ts, '10 seconds'), k";

/// Midnight of 2026-01-01, the day every event of the data falls on, in epoch seconds.
const DAY: i64 = 1_767_225_600;

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Spark's sessions: (k, start, end, n, total, lo, hi), sorted.
type Session = (String, i64, i64, i64, i64, i64, i64);

fn spark_sessions() -> Vec<Session> {
    std::fs::read_to_string(data().join("spark_sessions/expected_complete_10s_spark_4.3.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let i = |f: &str| v[f].as_i64().unwrap();
            (
                v["k"].as_str().unwrap().to_string(),
                i("start"),
                i("end"),
                i("n"),
                i("total"),
                i("lo"),
                i("hi"),
            )
        })
        .collect()
}

fn pipeline(l: &Layout, mode: &str, watermark: &str, sink: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "sessions"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "ts TIMESTAMP, k STRING, v BIGINT", "cloudFiles.maxFilesPerTrigger" = "1" }}
[transform]
sql = "{QUERY}"
outputMode = "{mode}"
{watermark}
[[sink]]
{sink}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        input = l.input().display(),
    );
    let p = l.root.path().join("sessions.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Seconds of a console timestamp (`2026-01-01T00:01:02`, every event on that day).
fn seconds(text: &str) -> i64 {
    let time = &text[11..19];
    let part = |r: std::ops::Range<usize>| time[r].parse::<i64>().unwrap();
    DAY + part(0..2) * 3600 + part(3..5) * 60 + part(6..8)
}

/// Complete mode: every batch prints every held session; the last batch's rows are Spark's.
#[test]
fn complete_mode_holds_spark_s_sessions_after_twelve_batches_of_late_and_bridging_rows() {
    let l = Layout::new();
    copy_in_name_order(&data().join("spark_windows/in"), &l.input());
    let p = pipeline(
        &l,
        "complete",
        "",
        "connector = \"console\"\noptions = { numRows = \"1000\" }",
    );
    let progress = l.root.path().join("progress.jsonl");
    let o = run_with_progress(&p, &progress);
    let events = progress_events(&progress);
    assert_eq!(events.len(), 12, "one batch per file");
    let last = events.last().unwrap()["sinks"][0]["numOutputRows"]
        .as_u64()
        .unwrap() as usize;
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .collect();
    let mut got: Vec<Session> = lines[lines.len() - last..]
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let i = |f: &str| v[f].as_i64().unwrap();
            (
                v["k"].as_str().unwrap().to_string(),
                seconds(v["session"]["start"].as_str().unwrap()),
                seconds(v["session"]["end"].as_str().unwrap()),
                i("n"),
                i("total"),
                i("lo"),
                i("hi"),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got, spark_sessions());
}

/// Append mode with a watermark longer than any row's lateness: no row is dropped, each
/// session reaches Parquet once when the watermark passes its end, and those are Spark's
/// sessions that end by the final watermark (the latest event time − 10 minutes).
#[test]
fn append_mode_writes_each_final_session_once_as_spark_computed_it() {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Int64Type, TimeUnit};
    let l = Layout::new();
    copy_in_name_order(&data().join("spark_windows/in"), &l.input());
    let p = pipeline(
        &l,
        "append",
        "watermark = { eventTime = \"ts\", delayThreshold = \"10 minutes\" }",
        &format!(
            "connector = \"parquet\"\noptions = {{ path = \"{}\" }}",
            l.output().display()
        ),
    );
    let progress = l.root.path().join("progress.jsonl");
    run_with_progress(&p, &progress);
    let events = progress_events(&progress);
    assert_eq!(events.len(), 13, "12 data batches and the no-data batch");
    let dropped: i64 = events
        .iter()
        .map(|e| {
            e["stateOperators"][0]["numRowsDroppedByWatermark"]
                .as_i64()
                .unwrap()
        })
        .sum();
    assert_eq!(dropped, 0);

    let mut got = Vec::new();
    for b in tributary_sinks::parquet::read_dir_batches(&l.output()).unwrap() {
        let s = b.column_by_name("session").unwrap().as_struct();
        let secs = |f: &str| {
            let c = arrow::compute::cast(
                s.column_by_name(f).unwrap(),
                &DataType::Timestamp(TimeUnit::Second, None),
            )
            .unwrap();
            arrow::compute::cast(&c, &DataType::Int64).unwrap()
        };
        let (start, end) = (secs("start"), secs("end"));
        let (start, end) = (
            start.as_primitive::<Int64Type>(),
            end.as_primitive::<Int64Type>(),
        );
        let k = arrow::compute::cast(b.column_by_name("k").unwrap(), &DataType::Utf8).unwrap();
        let k = k.as_string::<i32>();
        let i = |f: &str| {
            b.column_by_name(f)
                .unwrap()
                .as_primitive::<Int64Type>()
                .clone()
        };
        let (n, total, lo, hi) = (i("n"), i("total"), i("lo"), i("hi"));
        for r in 0..b.num_rows() {
            assert!(start.is_valid(r));
            got.push((
                k.value(r).to_string(),
                start.value(r),
                end.value(r),
                n.value(r),
                total.value(r),
                lo.value(r),
                hi.value(r),
            ));
        }
    }
    got.sort();
    let latest = DAY + 23 * 60 + 15;
    let want: Vec<Session> = spark_sessions()
        .into_iter()
        .filter(|s| s.2 <= latest - 600)
        .collect();
    assert!(want.len() > 50, "sessions final by then: {}", want.len());
    assert_eq!(got, want);
}
