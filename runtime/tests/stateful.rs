//! Aggregations with state in the checkpoint, through the `tributary` binary: files → a
//! `GROUP BY` in `update` mode → console (JSON lines). Every group's last emitted value equals
//! the ground truth of every row read; a crash after the state was saved but before
//! `commits/<n>` (the commit removed) replays batch `n` from version `n - 1` and the values stay
//! exact; a later run continues from the saved state. Spark's refusals are checked at `check`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;

/// The pipeline: files (one file per batch) → SQL aggregation → console JSON lines.
fn pipeline(l: &Layout, sink: &str, trigger: &str, mode: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "agg"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING, amount DOUBLE", "cloudFiles.maxFilesPerTrigger" = "1" }}
[transform]
sql = "SELECT id % 5 AS bucket, count(*) AS n, sum(amount) AS total, max(id) AS hi FROM source GROUP BY id % 5"
outputMode = "{mode}"
[[sink]]
connector = "{sink}"
options = {{ {opts} }}
[trigger]
kind = "{trigger}"
"#,
        ck = l.checkpoint().display(),
        input = l.input().display(),
        opts = if sink == "parquet" {
            format!("path = \"{}\"", l.output().display())
        } else {
            String::new()
        },
    );
    let p = l.root.path().join("agg.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// bucket → (n, total, hi) over ids `0..end` (amount = id % 97 + 0.5, as `write_json_files`).
fn truth(end: u64) -> BTreeMap<i64, (i64, f64, i64)> {
    let mut m: BTreeMap<i64, (i64, f64, i64)> = BTreeMap::new();
    for id in 0..end {
        let e = m.entry((id % 5) as i64).or_insert((0, 0.0, 0));
        e.0 += 1;
        e.1 += (id % 97) as f64 + 0.5;
        e.2 = e.2.max(id as i64);
    }
    m
}

/// The console's JSON lines, in order: (bucket, n, total, hi).
fn emitted(stdout: &[u8]) -> Vec<(i64, i64, f64, i64)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["bucket"].as_i64().unwrap(),
                v["n"].as_i64().unwrap(),
                v["total"].as_f64().unwrap(),
                v["hi"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn last_values(rows: &[(i64, i64, f64, i64)], into: &mut BTreeMap<i64, (i64, f64, i64)>) {
    for &(b, n, t, hi) in rows {
        into.insert(b, (n, t, hi));
    }
}

fn run(p: &Path, progress: &Path) -> std::process::Output {
    run_with_progress(p, progress)
}

#[test]
fn a_group_by_in_update_mode_stays_exact_across_a_crash_and_a_restart() {
    let l = Layout::new();
    let end = write_json_files(&l.input(), "a", 3, 40, 0);
    let p = pipeline(&l, "console", "availableNow", "update");
    let progress = l.root.path().join("progress.jsonl");
    let first = run(&p, &progress);
    let rows = emitted(&first.stdout);
    let mut values = BTreeMap::new();
    last_values(&rows, &mut values);
    assert_eq!(values, truth(end), "after the first run");
    // one batch per file, each touching every bucket: update mode emits 5 groups per batch
    assert_eq!(rows.len(), 15);
    let events = progress_events(&progress);
    assert_eq!(events.len(), 3);
    let op = &events[2]["stateOperators"][0];
    assert_eq!(op["operatorName"], "stateStoreSave");
    assert_eq!(op["numRowsTotal"], 5);
    assert_eq!(op["numRowsUpdated"], 5);
    let stored = tributary_transform::stored_versions(&l.checkpoint().join("state/0")).unwrap();
    assert_eq!(
        stored.last().map(|v| v.version),
        Some(2),
        "state version 2 saved: {stored:?}"
    );

    // The process died after saving state version 2 but before commits/2: batch 2 replays
    // from version 1 and emits what it emitted the first time.
    std::fs::remove_file(l.checkpoint().join("commits/2")).unwrap();
    let replay = run(&p, &progress);
    let replayed = emitted(&replay.stdout);
    assert_eq!(replayed.len(), 5);
    for row in &replayed {
        assert!(
            rows[10..].contains(row),
            "the replay emitted {row:?}, not in the first attempt's {:?}",
            &rows[10..]
        );
    }

    // More files: the next run continues from the saved state.
    let end = write_json_files(&l.input(), "b", 2, 25, end);
    let more = run(&p, &progress);
    last_values(&emitted(&more.stdout), &mut values);
    assert_eq!(values, truth(end), "after the restart");
}

#[test]
fn a_sink_or_trigger_that_cannot_take_the_mode_is_refused_at_check() {
    let l = Layout::new();
    write_json_files(&l.input(), "a", 1, 10, 0);
    let check = |p: &Path| {
        let o = tributary()
            .args(["check", p.to_str().unwrap()])
            .output()
            .unwrap();
        assert_one_clear_error(&o)
    };
    let err = check(&pipeline(&l, "parquet", "availableNow", "update"));
    assert!(
        err.contains("sink 'parquet' does not support outputMode 'update' (it supports: append)"),
        "{err}"
    );
    let err = check(&pipeline(&l, "console", "availableNow", "upsert"));
    assert!(err.contains("upsert") && err.contains("append"), "{err}");

    // Spark's default (append) on an aggregation without a watermark fails at the run's start.
    let p = pipeline(&l, "console", "availableNow", "append");
    let o = tributary()
        .args(["run", p.to_str().unwrap()])
        .output()
        .unwrap();
    let err = assert_one_clear_error(&o);
    assert!(
        err.contains("Append output mode not supported when there are streaming aggregations"),
        "{err}"
    );
}

/// JSON lines at these seconds after 2026-01-01T00:00:00Z (`v` = the second).
fn write_events(dir: &Path, name: &str, seconds: &[u64]) {
    std::fs::create_dir_all(dir).unwrap();
    let text: String = seconds
        .iter()
        .map(|s| {
            format!(
                "{{\"ts\":\"2026-01-01T00:{:02}:{:02}Z\",\"v\":{s}}}\n",
                s / 60,
                s % 60
            )
        })
        .collect();
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// A files → windowed aggregation (append mode, watermark 30 s on `ts`) → Parquet pipeline, one
/// file per batch; `schema` is the files' DDL and `sql` the query.
fn window_pipeline(l: &Layout, schema: &str, sql: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "windows"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "{schema}", "cloudFiles.maxFilesPerTrigger" = "1" }}
[transform]
sql = "{sql}"
outputMode = "append"
watermark = {{ eventTime = "ts", delayThreshold = "30 seconds" }}
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
    let p = l.root.path().join("windows.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Each row's window start, in seconds since the epoch.
fn window_starts(b: &arrow::array::RecordBatch) -> Vec<i64> {
    use arrow::array::{AsArray, StructArray};
    use arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
    let w: &StructArray = b.column_by_name("window").unwrap().as_struct();
    let start = arrow::compute::cast(
        w.column_by_name("start").unwrap(),
        &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
    )
    .unwrap();
    let start = start.as_primitive::<TimestampMicrosecondType>();
    (0..b.num_rows())
        .map(|i| start.value(i) / 1_000_000)
        .collect()
}

/// (window start second of the hour, n, total) of every row in the Parquet output, sorted.
fn windows_written(dir: &Path) -> Vec<(i64, i64, i64)> {
    use arrow::array::AsArray;
    use arrow::datatypes::Int64Type;
    let mut out = Vec::new();
    for b in tributary_sinks::parquet::read_dir_batches(dir).unwrap() {
        let n = b.column_by_name("n").unwrap().as_primitive::<Int64Type>();
        let total = b
            .column_by_name("total")
            .unwrap()
            .as_primitive::<Int64Type>();
        for (i, start) in window_starts(&b).into_iter().enumerate() {
            out.push((start % 3600, n.value(i), total.value(i)));
        }
    }
    out.sort();
    out
}

#[test]
fn windowed_counts_in_append_mode_reach_parquet_once_per_window_across_a_replay() {
    let l = Layout::new();
    let input = l.input();
    // One file per batch. Spark's rules: 30 (third file) is older than the watermark but its
    // window is still open under the late-rows watermark (40), so it counts; 100 (last file)
    // falls in [60,120), final under 170 by then: dropped and counted.
    for (i, seconds) in [&[10u64, 20, 70][..], &[50, 130], &[30, 200], &[400], &[100]]
        .iter()
        .enumerate()
    {
        write_events(&input, &format!("e{i}.json"), seconds);
    }
    let p = window_pipeline(
        &l,
        "ts TIMESTAMP, v BIGINT",
        "SELECT window(ts, '1 minute') AS window, count(*) AS n, sum(v) AS total FROM source GROUP BY window(ts, '1 minute')",
    );
    let progress = l.root.path().join("progress.jsonl");
    run(&p, &progress);
    // watermark after the last batch: 400 - 30 = 370; [360,420) is still open
    let want = vec![(0, 4, 110), (60, 1, 70), (120, 1, 130), (180, 1, 200)];
    assert_eq!(windows_written(&l.output()), want);
    let events = progress_events(&progress);
    let dropped: i64 = events
        .iter()
        .map(|e| {
            e["stateOperators"][0]["numRowsDroppedByWatermark"]
                .as_i64()
                .unwrap()
        })
        .sum();
    assert_eq!(dropped, 1);
    assert_eq!(
        events.len(),
        5,
        "five data batches, no no-data batch needed at the end"
    );
    assert_eq!(
        events[3]["stateOperators"][0]["watermark"],
        "2026-01-01T00:06:10.000Z"
    );

    // a crash before commits/4: the replay decides from state version 3 and the Parquet sink
    // keeps batch 4 once
    std::fs::remove_file(l.checkpoint().join("commits/4")).unwrap();
    run(&p, &progress);
    assert_eq!(windows_written(&l.output()), want);

    // the operator's state as `tributary state --operators` shows it: [360,420) is left
    let ops = state_operators(&l.checkpoint());
    assert_eq!(ops[0]["stage"], "0");
    assert_eq!(ops[0]["version"], 4);
    assert_eq!(ops[0]["rows"], 1);
    assert_eq!(ops[0]["watermark"], "2026-01-01T00:06:10.000Z");
    assert!(
        ops[0]["query"]
            .as_str()
            .unwrap()
            .contains("AGGREGATE [count(1), sum(source.v)]"),
        "{ops}"
    );

    // without commits/4 a restart resumes from version 3, and that is what it shows, though
    // version 4 is on disk
    std::fs::remove_file(l.checkpoint().join("commits/4")).unwrap();
    let ops = state_operators(&l.checkpoint());
    assert_eq!(ops[0]["version"], 3, "{ops}");
}

/// The rows `scripts/spark/window_oracle.py` printed when Spark 4.3.0 (pyspark from PyPI,
/// `local[2]`) ran the same query over `tests/data/spark_windows/in` (12 files, one per batch,
/// a tenth of the rows up to 200 s late): `withWatermark("ts", "30 seconds")`,
/// `groupBy(window("ts", "1 minute"), "k").agg(count, sum, min, max, avg)`, append mode.
#[test]
fn a_windowed_aggregation_with_late_rows_gives_spark_s_rows() {
    same_rows_as_spark("window(ts, '1 minute')", "expected_spark_4.3.jsonl");
}

/// The same stream with `window("ts", "1 minute", "20 seconds")` (sliding windows): Spark's
/// 204 windows.
#[test]
fn a_sliding_window_aggregation_with_late_rows_gives_spark_s_rows() {
    same_rows_as_spark(
        "window(ts, '1 minute', '20 seconds')",
        "expected_sliding_20s_spark_4.3.jsonl",
    );
}

/// Runs the oracle query with `window` as its window key over the checked-in input and
/// compares every row with Spark's in `expected`.
fn same_rows_as_spark(window: &str, expected: &str) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/spark_windows");
    let l = Layout::new();
    copy_in_name_order(&data.join("in"), &l.input());
    let p = window_pipeline(
        &l,
        "ts TIMESTAMP, k STRING, v BIGINT",
        &format!("SELECT {window} AS window, k, count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean FROM source GROUP BY {window}, k"),
    );
    let progress = l.root.path().join("progress.jsonl");
    run(&p, &progress);
    // Spark ran 12 data batches and one no-data batch; so does this
    let events = progress_events(&progress);
    assert_eq!(events.len(), 13);
    // Spark's eventTime block: the first batch (e00.json, 00:00:00 to 00:01:38) runs with the
    // epoch as its watermark, the second with the first's latest event time - 30 s; the
    // no-data batch has no event times
    let e = &events[0]["eventTime"];
    assert_eq!(e["min"], "2026-01-01T00:00:00.000Z", "{e}");
    assert_eq!(e["max"], "2026-01-01T00:01:38.000Z", "{e}");
    assert_eq!(e["watermark"], "1970-01-01T00:00:00.000Z", "{e}");
    assert!(
        e["avg"].as_str().unwrap().starts_with("2026-01-01T00:0"),
        "{e}"
    );
    // batch 1 as Spark 4.3 reported it (recentProgress[1].eventTime of the oracle's query)
    assert_eq!(
        events[1]["eventTime"],
        serde_json::json!({"avg": "2026-01-01T00:02:08.750Z", "max": "2026-01-01T00:03:17.000Z",
            "min": "2026-01-01T00:00:00.000Z", "watermark": "2026-01-01T00:01:08.000Z"})
    );
    let last = &events[12]["eventTime"];
    assert_eq!(
        last,
        &serde_json::json!({"watermark": "2026-01-01T00:22:45.000Z"})
    );

    use arrow::array::AsArray;
    use arrow::datatypes::{Float64Type, Int64Type};
    let mut got = Vec::new();
    for b in tributary_sinks::parquet::read_dir_batches(&l.output()).unwrap() {
        let starts = window_starts(&b);
        let k = arrow::compute::cast(
            b.column_by_name("k").unwrap(),
            &arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        let k = k.as_string::<i32>();
        let int = |c: &str| {
            b.column_by_name(c)
                .unwrap()
                .as_primitive::<Int64Type>()
                .clone()
        };
        let (n, total, lo, hi) = (int("n"), int("total"), int("lo"), int("hi"));
        let mean = b
            .column_by_name("mean")
            .unwrap()
            .as_primitive::<Float64Type>()
            .clone();
        for (i, start) in starts.iter().enumerate() {
            got.push(serde_json::json!({
                "start": start, "k": k.value(i), "n": n.value(i),
                "total": total.value(i), "lo": lo.value(i), "hi": hi.value(i), "mean": mean.value(i),
            }));
        }
    }
    let key = |v: &serde_json::Value| {
        (
            v["start"].as_i64().unwrap(),
            v["k"].as_str().unwrap().to_string(),
        )
    };
    got.sort_by_key(key);
    let want: Vec<serde_json::Value> = std::fs::read_to_string(data.join(expected))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), want.len(), "windows emitted");
    for (g, w) in got.iter().zip(&want) {
        for f in ["start", "k", "n", "total", "lo", "hi"] {
            assert_eq!(g[f], w[f], "{f} of {w}");
        }
        let (gm, wm) = (g["mean"].as_f64().unwrap(), w["mean"].as_f64().unwrap());
        assert!((gm - wm).abs() < 1e-9, "mean of {w}: {gm}");
    }
}
