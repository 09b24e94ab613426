//! Deduplication through the `tributary` binary against Spark 4.3 as the oracle: the same file
//! stream (`tests/data/spark_dedup/in`, 10 files, one per batch: new events, exact duplicates,
//! events re-sent with a new time, late events; written by `scripts/spark/dedup_data.py`)
//! deduplicated four ways, into Parquet in append mode. The rows written, the number of
//! batches and the rows dropped as late and as duplicates equal what
//! `scripts/spark/dedup_oracle.py` printed when Spark ran the same query (checked in as
//! `expected_<query>_spark_4.3.jsonl`). A crash before the last commit replays that batch from
//! the saved keys and the Parquet output stays the same.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::*;

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/spark_dedup")
}

/// A files → `[transform]` → Parquet pipeline over a copy of the checked-in stream.
fn pipeline(l: &Layout, transform: &str) -> std::path::PathBuf {
    copy_in_name_order(&data().join("in"), &l.input());
    let text = format!(
        r#"
name = "dedup"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id STRING, ts TIMESTAMP, v BIGINT", "cloudFiles.maxFilesPerTrigger" = "1" }}
[transform]
{transform}
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
    let p = l.root.path().join("dedup.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Spark's rows and its totals line, from the checked-in expectation.
fn expected(query: &str) -> (Vec<serde_json::Value>, serde_json::Value) {
    let text =
        std::fs::read_to_string(data().join(format!("expected_{query}_spark_4.3.jsonl"))).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let totals = lines.pop().unwrap();
    assert!(
        totals.get("batches").is_some(),
        "the last line holds the totals"
    );
    (lines, totals)
}

/// Every column of the Parquet output as JSON rows, timestamps as epoch seconds, sorted.
fn written(dir: &Path) -> Vec<serde_json::Value> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Int64Type, TimeUnit, TimestampMicrosecondType};
    let seconds = |a: &dyn Array| {
        let c = arrow::compute::cast(
            a,
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        )
        .unwrap();
        let c = c.as_primitive::<TimestampMicrosecondType>().clone();
        move |i: usize| c.value(i) / 1_000_000
    };
    let mut out = Vec::new();
    for b in tributary_sinks::parquet::read_dir_batches(dir).unwrap() {
        for i in 0..b.num_rows() {
            let mut row = serde_json::Map::new();
            for (f, c) in b.schema().fields().iter().zip(b.columns()) {
                // the columns Spark's rows have (the files source may add its own)
                if !["id", "ts", "v", "window", "n", "total"].contains(&f.name().as_str()) {
                    continue;
                }
                let v = match c.data_type() {
                    DataType::Utf8 => c.as_string::<i32>().value(i).into(),
                    DataType::Int64 => c.as_primitive::<Int64Type>().value(i).into(),
                    DataType::Timestamp(_, _) => seconds(c.as_ref())(i).into(),
                    DataType::Struct(_) => {
                        let start = c.as_struct().column_by_name("start").unwrap();
                        row.insert("start".into(), seconds(start.as_ref())(i).into());
                        continue;
                    }
                    other => panic!("unexpected column type {other}"),
                };
                row.insert(f.name().clone(), v);
            }
            out.push(serde_json::Value::Object(row));
        }
    }
    out.sort_by_key(order);
    out
}

/// A row's place in the comparison, whatever the order of its fields.
fn order(v: &serde_json::Value) -> String {
    format!("{}|{}|{}|{}", v["id"], v["ts"], v["v"], v["start"])
}

/// Runs `transform` over the stream and compares with Spark's run of `query`; returns the
/// layout (checkpoint and output) for more checks.
fn same_as_spark(query: &str, transform: &str) -> Layout {
    let l = Layout::new();
    let p = pipeline(&l, transform);
    let progress = l.root.path().join("progress.jsonl");
    run_with_progress(&p, &progress);
    let (mut want, totals) = expected(query);
    want.sort_by_key(order);
    let got = written(&l.output());
    assert_eq!(got.len(), want.len(), "rows written");
    assert_eq!(got, want);

    let events = progress_events(&progress);
    let dedup: Vec<&serde_json::Value> = events
        .iter()
        .flat_map(|e| e["stateOperators"].as_array().unwrap())
        .filter(|o| o["operatorName"].as_str().unwrap().starts_with("dedupe"))
        .collect();
    let sum = |f: &dyn Fn(&serde_json::Value) -> i64| dedup.iter().map(|o| f(o)).sum::<i64>();
    let mine = serde_json::json!({
        "batches": events.len(),
        "droppedByWatermark": sum(&|o| o["numRowsDroppedByWatermark"].as_i64().unwrap()),
        "droppedDuplicates": sum(&|o| o["customMetrics"]["numDroppedDuplicateRows"].as_i64().unwrap()),
    });
    assert_eq!(
        mine, totals,
        "batches and dropped rows, against Spark's progress"
    );

    // a crash before the last commit: the replay decides from the previous version
    let last = events.len() - 1;
    std::fs::remove_file(l.checkpoint().join(format!("commits/{last}"))).unwrap();
    run_with_progress(&p, &progress);
    assert_eq!(written(&l.output()), want, "after the replay");
    l
}

#[test]
fn drop_duplicates_without_a_watermark_gives_spark_s_rows() {
    same_as_spark(
        "forever",
        r#"sql = "SELECT * FROM source"
dropDuplicates = ["id"]"#,
    );
}

#[test]
fn drop_duplicates_with_the_event_time_as_a_key_gives_spark_s_rows() {
    same_as_spark(
        "eventtime",
        r#"sql = "SELECT * FROM source"
dropDuplicates = ["id", "ts"]
watermark = { eventTime = "ts", delayThreshold = "30 seconds" }"#,
    );
}

#[test]
fn drop_duplicates_within_the_watermark_gives_spark_s_rows() {
    same_as_spark(
        "within",
        r#"sql = "SELECT * FROM source"
dropDuplicatesWithinWatermark = ["id"]
watermark = { eventTime = "ts", delayThreshold = "30 seconds" }"#,
    );
}

#[test]
fn a_windowed_count_of_deduplicated_events_gives_spark_s_rows() {
    let l = same_as_spark(
        "count",
        r#"sql = "SELECT window(ts, '1 minute') AS window, count(*) AS n, sum(v) AS total FROM source GROUP BY window(ts, '1 minute')"
outputMode = "append"
dropDuplicatesWithinWatermark = ["id"]
watermark = { eventTime = "ts", delayThreshold = "30 seconds" }"#,
    );
    // both operators of the stage, as `tributary state --operators` shows them
    let ops = state_operators(&l.checkpoint());
    let names: Vec<&str> = ops
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["operator"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["dedupeWithinWatermark", "stateStoreSave"], "{ops}");
    assert_eq!(ops[0]["stage"], ops[1]["stage"]);
    assert!(ops[0]["rows"].as_u64().unwrap() > 0, "{ops}");
}
