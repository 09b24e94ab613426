//! The Delta sink: replay after a crash, schema evolution, partitioning, file size, log
//! checkpoints and two pipelines writing one table.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::{ConnectorContext, ErrorCode, Options, Sink, SinkFactoryExt};
use tributary_sinks::delta::{DeltaConfig, DeltaSink};
use tributary_sinks::DeltaSinkFactory;

use crate::reader::{column, columns, python, read};

pub fn schema(extra: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("id", DataType::Int64, false),
        Field::new("country", DataType::Utf8, true),
    ];
    if extra {
        fields.push(Field::new("note", DataType::Utf8, true));
    }
    Arc::new(Schema::new(fields))
}

/// Rows `first..first + n`, countries cycling through three values.
pub fn batch(first: i64, n: i64, extra: bool) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n).collect();
    let countries: Vec<&str> = ids
        .iter()
        .map(|i| ["de", "fr", "nl"][(*i % 3) as usize])
        .collect();
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(StringArray::from(countries)),
    ];
    if extra {
        columns.push(Arc::new(StringArray::from(
            ids.iter().map(|i| format!("note-{i}")).collect::<Vec<_>>(),
        )));
    }
    RecordBatch::try_new(schema(extra), columns).unwrap()
}

fn sink(options: &[(&str, &str)], path: &std::path::Path, checkpoint: &str) -> Box<dyn Sink> {
    let mut o = Options::new().with("path", path.display().to_string());
    for (k, v) in options {
        o.set(*k, *v);
    }
    let context = ConnectorContext {
        checkpoint_id: Some(checkpoint.to_string()),
        ..ConnectorContext::default()
    };
    DeltaSinkFactory.create(&o, &context).unwrap()
}

#[tokio::test]
async fn replay_after_crash_writes_each_batch_once() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut first = sink(&[], &path, "ckpt-a");
    first.open(schema(false)).await.unwrap();
    first.write(0, &[batch(0, 5, false)]).await.unwrap();
    first.write(1, &[batch(5, 5, false)]).await.unwrap();
    // Crash: no stop, the runtime never committed batch 1, so it replays it.
    drop(first);
    let mut second = sink(&[], &path, "ckpt-a");
    second.open(schema(false)).await.unwrap();
    second.write(1, &[batch(5, 5, false)]).await.unwrap();
    second.write(2, &[batch(10, 5, false)]).await.unwrap();
    // Same batch id again in the same instance: still once.
    second.write(2, &[batch(10, 5, false)]).await.unwrap();
    second.stop().await.unwrap();

    let table = read(&py, &path, &["ckpt-a", "other"]);
    assert_eq!(column::<i64>(&table, "id"), (0..15).collect::<Vec<_>>());
    assert_eq!(table["txn"]["ckpt-a"], 2);
    assert!(table["txn"]["other"].is_null());
    assert_eq!(table["version"], 2, "three commits: {table}");

    // A batch that was never committed before the crash is written on replay.
    let mut third = sink(&[], &path, "ckpt-a");
    third.open(schema(false)).await.unwrap();
    third.write(3, &[batch(15, 2, false)]).await.unwrap();
    let table = read(&py, &path, &["ckpt-a"]);
    assert_eq!(column::<i64>(&table, "id"), (0..17).collect::<Vec<_>>());
    assert_eq!(table["txn"]["ckpt-a"], 3);
}

#[tokio::test]
async fn schema_evolution_adds_columns_and_refuses_type_changes() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");

    // Without mergeSchema a new column is refused, naming the column and the option.
    let mut strict = sink(&[], &path, "ckpt-s");
    strict.open(schema(false)).await.unwrap();
    strict.write(0, &[batch(0, 3, false)]).await.unwrap();
    let e = strict.write(1, &[batch(3, 3, true)]).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Schema, "{e}");
    assert!(
        e.to_string().contains("'note'") && e.to_string().contains("mergeSchema"),
        "{e}"
    );

    let mut evolving = sink(&[("mergeSchema", "true")], &path, "ckpt-s");
    evolving.open(schema(true)).await.unwrap();
    evolving.write(1, &[batch(3, 3, true)]).await.unwrap();
    // A type change is an error naming the column and both types, even with mergeSchema.
    let changed = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("country", DataType::Utf8, true),
    ]));
    let bad = RecordBatch::try_new(
        changed,
        vec![
            Arc::new(StringArray::from(vec!["x"])),
            Arc::new(StringArray::from(vec!["de"])),
        ],
    )
    .unwrap();
    let e = evolving.write(2, &[bad]).await.unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("'id'") && msg.contains("long") && msg.contains("string"),
        "{msg}"
    );
    // Older batches keep working after the failure (rows without the new column).
    evolving.write(3, &[batch(6, 2, false)]).await.unwrap();

    let table = read(&py, &path, &["ckpt-s"]);
    let cols: Vec<String> = columns(&table).into_iter().map(|(n, _)| n).collect();
    assert_eq!(cols, ["id", "country", "note"]);
    assert_eq!(column::<i64>(&table, "id"), (0..8).collect::<Vec<_>>());
    let mut notes: Vec<Option<String>> = column(&table, "note");
    notes.retain(Option::is_some);
    assert_eq!(notes.len(), 3, "only batch 1 had notes: {table}");
    assert_eq!(table["txn"]["ckpt-s"], 3);
}

#[tokio::test]
async fn partitioned_table_with_target_file_size_and_checkpoints() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let options = [
        ("partitionBy", "country"),
        ("checkpointInterval", "2"),
        ("targetFileSize", "4k"),
        ("compression", "none"),
    ];
    let mut s = sink(&options, &path, "ckpt-p");
    s.open(schema(true)).await.unwrap();
    for b in 0..4u64 {
        let first = i64::try_from(b).unwrap() * 15_000;
        s.write(b, &[batch(first, 15_000, true)]).await.unwrap();
    }
    let table = read(&py, &path, &["ckpt-p"]);
    assert_eq!(table["partition_columns"], serde_json::json!(["country"]));
    assert_eq!(table["configuration"]["delta.checkpointInterval"], "2");
    assert_eq!(column::<i64>(&table, "id"), (0..60_000).collect::<Vec<_>>());
    let files: Vec<String> = serde_json::from_value(table["files"].clone()).unwrap();
    assert!(files.iter().all(|f| f.contains("/country=")), "{files:?}");
    // 4 batches x 3 partitions of 5000 rows each, cut at about 4 KiB (checked every 1024
    // rows): several files per partition and batch.
    assert!(files.len() > 12, "{} files", files.len());
    // A checkpoint after commits 1 and 3 (every 2nd version).
    let log = path.join("_delta_log");
    assert!(log.join("_last_checkpoint").exists());
    assert!(log.join(format!("{:020}.checkpoint.parquet", 3)).exists());

    // An existing table with other partition columns is refused naming the option.
    let mut other = sink(&[("partitionBy", "id")], &path, "ckpt-p");
    let e = other.open(schema(true)).await.unwrap_err();
    assert_eq!(e.context_value("option"), Some("partitionBy"), "{e}");
}

#[tokio::test]
async fn checkpoint_interval_differing_from_an_existing_table_is_written_by_the_sink() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = DeltaSink::new(
        DeltaConfig::new(path.display().to_string()),
        Default::default(),
        Some("c".into()),
    );
    s.open(schema(false)).await.unwrap();
    s.write(0, &[batch(0, 1, false)]).await.unwrap();
    let mut config = DeltaConfig::new(path.display().to_string());
    config.checkpoint_interval = Some(3);
    let mut s = DeltaSink::new(config, Default::default(), Some("c".into()));
    s.open(schema(false)).await.unwrap();
    for b in 1..6 {
        s.write(b, &[batch(i64::try_from(b).unwrap(), 1, false)])
            .await
            .unwrap();
    }
    assert_eq!(s.stats().checkpoints, 2, "{:?}", s.stats());
    assert!(path
        .join("_delta_log/00000000000000000005.checkpoint.parquet")
        .exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pipelines_write_one_table_concurrently() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let config = |p: &std::path::Path| {
        let mut c = DeltaConfig::new(p.display().to_string());
        c.merge_schema = true;
        c
    };
    let run = |app: &'static str, offset: i64, extra: bool| {
        let mut s = DeltaSink::new(config(&path), Default::default(), Some(app.into()));
        async move {
            s.open(schema(extra)).await.unwrap();
            for b in 0..12u64 {
                let first = offset + i64::try_from(b).unwrap() * 10;
                s.write(b, &[batch(first, 10, extra)]).await.unwrap();
            }
            s.stats()
        }
    };
    // Both start on a location without a table: they race to create it, then append side by
    // side; the second also evolves the schema (a metadata change that conflicts).
    let (a, b) = tokio::join!(
        tokio::spawn(run("pipeline-a", 0, false)),
        tokio::spawn(run("pipeline-b", 1000, true))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.commits + b.commits, 24, "{a:?} {b:?}");
    let table = read(&py, &path, &["pipeline-a", "pipeline-b"]);
    let mut expected: Vec<i64> = (0..120).chain(1000..1120).collect();
    expected.sort();
    assert_eq!(column::<i64>(&table, "id"), expected);
    assert_eq!(table["txn"]["pipeline-a"], 11);
    assert_eq!(table["txn"]["pipeline-b"], 11);
    assert_eq!(table["version"], 23, "one commit per batch: {table}");
    println!(
        "conflict retries: a={} b={}",
        a.conflict_retries, b.conflict_retries
    );
}
