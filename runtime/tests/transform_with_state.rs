//! A Rust `StatefulProcessor` (Spark's `transformWithState`) embedded in a pipeline through the
//! library: files → the processor, keyed by `user` → Parquet. Its value, list and map state
//! survive a restart from the checkpoint (a later run continues each user's count), and its
//! processing-time timers fire at a batch's end once due, emitting and clearing the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::{PipelineSpec, StageSpec};
use tributary_runtime::registry::Registry;
use tributary_sdk::{EnvSecretStore, Error, ErrorCode, Options, Result};
use tributary_transform::processor::{KeyState, ProcessorStageFactory, StatefulProcessor};

/// Each user's events counted (value state), the last two actions (list state) and a count per
/// action (map state); a row per user per batch; idle for 10 s (processing time) it emits
/// `expired` with its final count and forgets the user.
struct Activity;

const IDLE_MS: i64 = 10_000;

fn out_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("user", DataType::Utf8, true),
        Field::new("events", DataType::UInt64, false),
        Field::new("detail", DataType::Utf8, false),
    ]))
}

fn row(user: &RecordBatch, events: u64, detail: String) -> Result<Option<RecordBatch>> {
    let user = arrow::compute::cast(user.column(0), &DataType::Utf8)
        .map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?;
    RecordBatch::try_new(
        out_schema(),
        vec![
            user,
            Arc::new(UInt64Array::from(vec![events])),
            Arc::new(StringArray::from(vec![detail])),
        ],
    )
    .map(Some)
    .map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))
}

/// The clock the test moves.
static NOW: AtomicI64 = AtomicI64::new(0);

impl StatefulProcessor for Activity {
    fn output_schema(&self, _input: &SchemaRef) -> Result<SchemaRef> {
        Ok(out_schema())
    }

    fn handle_input_rows(
        &mut self,
        key: &RecordBatch,
        rows: &RecordBatch,
        state: &mut KeyState,
    ) -> Result<Option<RecordBatch>> {
        let actions = arrow::compute::cast(rows.column_by_name("action").unwrap(), &DataType::Utf8)
            .map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?;
        let actions = actions.as_string::<i32>();
        let mut recent: Vec<String> = state.get_list("recent")?;
        for a in actions.iter().flatten() {
            let n: u64 = state.get_map("per_action", &a)?.unwrap_or(0);
            state.put_map("per_action", &a, &(n + 1))?;
            recent.push(a.to_string());
        }
        let keep = recent.len().saturating_sub(2);
        state.put_list("recent", &recent[keep..])?;
        let events = state.get_value::<u64>("events")?.unwrap_or(0) + rows.num_rows() as u64;
        state.set_value("events", &events)?;
        for t in state.list_timers() {
            state.delete_timer(t);
        }
        state.register_timer(NOW.load(Ordering::SeqCst) + IDLE_MS);
        let per_action: Vec<(String, u64)> = state.map_entries("per_action")?;
        let per_action: Vec<String> = per_action.iter().map(|(a, n)| format!("{a}={n}")).collect();
        row(
            key,
            events,
            format!(
                "recent={} {}",
                recent[keep..].join(","),
                per_action.join(" ")
            ),
        )
    }

    fn handle_expired_timer(
        &mut self,
        key: &RecordBatch,
        _expiry_ms: i64,
        state: &mut KeyState,
    ) -> Result<Option<RecordBatch>> {
        let events = state.get_value::<u64>("events")?.unwrap_or(0);
        state.clear();
        row(key, events, "expired".into())
    }
}

fn write(dir: &Path, name: &str, events: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    let text: String = events
        .iter()
        .map(|(u, a)| format!("{{\"user\":\"{u}\",\"action\":\"{a}\"}}\n"))
        .collect();
    let tmp = dir.join(format!(".{name}"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// One run of the pipeline, availableNow, the processor registered as stage `activity`;
/// returns the rows it wrote (user, events, detail), sorted.
async fn run(root: &Path, now_ms: i64) -> Vec<(String, u64, String)> {
    NOW.store(now_ms, Ordering::SeqCst);
    let text = format!(
        r#"
name = "activity"
checkpoint = "{root}/ck"
[source]
connector = "files"
options = {{ path = "{root}/in", "cloudFiles.format" = "json", schema = "user STRING, action STRING", "cloudFiles.maxFilesPerTrigger" = "1" }}
[[sink]]
connector = "parquet"
options = {{ path = "{root}/out/{now_ms}" }}
[trigger]
kind = "availableNow"
"#,
        root = root.display()
    );
    let mut spec = PipelineSpec::parse(&text, "activity.toml").unwrap();
    spec.stages
        .push(StageSpec::registered("activity", Options::new()));
    let mut registry = Registry::builtin();
    registry.add_stage(Arc::new(
        ProcessorStageFactory::new("activity", vec!["user".into()], || Box::new(Activity))
            .with_clock(Arc::new(|| NOW.load(Ordering::SeqCst))),
    ));
    let mut p = Pipeline::build(&spec, &registry, Arc::new(EnvSecretStore)).unwrap();
    p.run().await.unwrap();
    let out = root.join(format!("out/{now_ms}"));
    let mut rows = Vec::new();
    if out.exists() {
        for b in tributary_sinks::parquet::read_dir_batches(&out).unwrap() {
            let user = b.column(0).as_string::<i32>();
            let events = b.column(1).as_primitive::<UInt64Type>();
            let detail = b.column(2).as_string::<i32>();
            for i in 0..b.num_rows() {
                assert!(user.is_valid(i));
                rows.push((
                    user.value(i).to_string(),
                    events.value(i),
                    detail.value(i).to_string(),
                ));
            }
        }
    }
    rows.sort();
    rows
}

fn r(user: &str, events: u64, detail: &str) -> (String, u64, String) {
    (user.to_string(), events, detail.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn value_list_and_map_state_survive_a_restart_and_idle_timers_fire_and_clear() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let input = root.join("in");
    write(
        &input,
        "a.json",
        &[("alice", "view"), ("bob", "view"), ("alice", "buy")],
    );
    write(&input, "b.json", &[("alice", "view")]);
    // run 1 at t = 1 s: two batches, nothing idle yet
    assert_eq!(
        run(root, 1_000).await,
        vec![
            r("alice", 2, "recent=view,buy buy=1 view=1"),
            r("alice", 3, "recent=buy,view buy=1 view=2"),
            r("bob", 1, "recent=view view=1"),
        ]
    );
    // run 2 at t = 5 s, from the checkpoint: bob's count, list and map continue
    write(&input, "c.json", &[("bob", "buy")]);
    assert_eq!(
        run(root, 5_000).await,
        vec![r("bob", 2, "recent=view,buy buy=1 view=1")]
    );
    // run 3 at t = 100 s: carol's first event, then alice's timer (11 s) and bob's (15 s) fire
    write(&input, "d.json", &[("carol", "view")]);
    assert_eq!(
        run(root, 100_000).await,
        vec![
            r("alice", 3, "expired"),
            r("bob", 2, "expired"),
            r("carol", 1, "recent=view view=1"),
        ]
    );
    // run 4 at t = 200 s: alice was forgotten, so she starts again; carol's timer fires
    write(&input, "e.json", &[("alice", "view")]);
    assert_eq!(
        run(root, 200_000).await,
        vec![
            r("alice", 1, "recent=view view=1"),
            r("carol", 1, "expired"),
        ],
        "alice starts again from nothing; carol expires"
    );
}
