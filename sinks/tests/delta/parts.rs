//! The Delta sink's part writer (the runtime streams a batch's parts into it): one commit per
//! batch whatever the number of parts, exactly once across a crash between staging and commit,
//! schema evolution and concurrent writers as with `write`.

use std::sync::Arc;

use tributary_sdk::Sink;
use tributary_sinks::delta::{DeltaConfig, DeltaSink};

use crate::reader::{column, columns, python, read};
use crate::sink::{batch, schema};

fn sink(path: &std::path::Path, app: &str, configure: impl FnOnce(&mut DeltaConfig)) -> DeltaSink {
    let mut config = DeltaConfig::new(path.display().to_string());
    configure(&mut config);
    DeltaSink::new(config, Default::default(), Some(app.to_string()))
}

/// Streams rows `first..first + n` as `parts` parts (plus an empty one) and commits.
async fn stream(s: &mut DeltaSink, batch_id: u64, first: i64, n: i64, parts: i64, extra: bool) {
    let w = s.as_part_writer().expect("delta sink is a part writer");
    w.begin_batch(batch_id, schema(extra)).await.unwrap();
    let per = n / parts;
    for p in 0..parts {
        w.write_part(&batch(first + p * per, per, extra))
            .await
            .unwrap();
        if p == 0 {
            w.write_part(&batch(0, 0, extra)).await.unwrap();
        }
    }
    w.commit_batch().await.unwrap();
}

fn data_files(path: &std::path::Path) -> usize {
    std::fs::read_dir(path)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".parquet")
        })
        .count()
}

#[tokio::test]
async fn parts_of_a_batch_are_one_commit() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = sink(&path, "ckpt-parts", |c| {
        c.target_file_size = std::num::NonZeroU64::new(16 * 1024);
    });
    s.open(schema(false)).await.unwrap();
    // A new table: protocol, metadata, files and txn in version 0.
    stream(&mut s, 0, 0, 40_000, 8, false).await;
    // An existing table: version 1.
    stream(&mut s, 1, 40_000, 10_000, 5, false).await;
    assert_eq!(s.stats().commits, 2);
    let table = read(&py, &path, &["ckpt-parts"]);
    assert_eq!(table["version"], 1, "one version per batch: {table}");
    assert_eq!(table["txn"]["ckpt-parts"], 1);
    assert_eq!(column::<i64>(&table, "id"), (0..50_000).collect::<Vec<_>>());
    // targetFileSize cut the batches into several files, all in the two commits.
    let files = table["files"].as_array().unwrap().len();
    assert!(files > 2, "{files} files");
    assert_eq!(files, data_files(&path));
}

#[tokio::test]
async fn replay_after_a_crash_between_staging_and_commit_is_exactly_once() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut first = sink(&path, "ckpt-r", |_| {});
    first.open(schema(false)).await.unwrap();
    stream(&mut first, 0, 0, 100, 4, false).await;
    // Batch 1 is staged, then the process dies before commit_batch.
    let w = first.as_part_writer().unwrap();
    w.begin_batch(1, schema(false)).await.unwrap();
    w.write_part(&batch(100, 50, false)).await.unwrap();
    w.write_part(&batch(150, 50, false)).await.unwrap();
    std::mem::forget(first);

    let mut second = sink(&path, "ckpt-r", |_| {});
    second.open(schema(false)).await.unwrap();
    // The replay of batch 1, started twice in this process (a failed first attempt).
    let w = second.as_part_writer().unwrap();
    w.begin_batch(1, schema(false)).await.unwrap();
    w.write_part(&batch(100, 50, false)).await.unwrap();
    stream(&mut second, 1, 100, 100, 2, false).await;
    // Batch 1 again after its commit (the runtime crashed before recording it): skipped.
    stream(&mut second, 1, 100, 100, 2, false).await;
    stream(&mut second, 2, 200, 10, 1, false).await;
    assert_eq!(second.stats().commits, 2, "{:?}", second.stats());
    assert_eq!(second.stats().skipped_replays, 1, "{:?}", second.stats());

    let table = read(&py, &path, &["ckpt-r"]);
    assert_eq!(column::<i64>(&table, "id"), (0..210).collect::<Vec<_>>());
    assert_eq!(table["version"], 2, "{table}");
    assert_eq!(table["txn"]["ckpt-r"], 2);
    // The unfinished attempts' files are on disk but never in the log (left to VACUUM).
    let referenced = table["files"].as_array().unwrap().len();
    assert_eq!(referenced, 3);
    assert!(data_files(&path) >= referenced);
}

#[tokio::test]
async fn parts_evolve_the_schema_in_the_batch_commit() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = sink(&path, "ckpt-e", |c| c.merge_schema = true);
    s.open(schema(false)).await.unwrap();
    stream(&mut s, 0, 0, 10, 2, false).await;
    stream(&mut s, 1, 10, 10, 2, true).await;
    stream(&mut s, 2, 20, 10, 2, false).await;
    let table = read(&py, &path, &["ckpt-e"]);
    let cols: Vec<String> = columns(&table).into_iter().map(|(n, _)| n).collect();
    assert_eq!(cols, ["id", "country", "note"]);
    assert_eq!(table["version"], 2);
    let mut notes: Vec<Option<String>> = column(&table, "note");
    notes.retain(Option::is_some);
    assert_eq!(notes.len(), 10);

    // Without mergeSchema the new column is refused at begin_batch, naming it.
    let mut strict = sink(&dir.path().join("u"), "ckpt-e", |_| {});
    strict.open(schema(false)).await.unwrap();
    stream(&mut strict, 0, 0, 4, 1, false).await;
    let e = strict
        .as_part_writer()
        .unwrap()
        .begin_batch(1, schema(true))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("'note'"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_part_writers_race_on_one_table() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = Arc::new(dir.path().join("t"));
    let run = |app: &'static str, offset: i64| {
        let path = path.clone();
        async move {
            let mut s = sink(&path, app, |c| c.merge_schema = true);
            s.open(schema(false)).await.unwrap();
            for b in 0..10u64 {
                let first = offset + i64::try_from(b).unwrap() * 10;
                stream(&mut s, b, first, 10, 2, false).await;
            }
            s.stats()
        }
    };
    let (a, b) = tokio::join!(
        tokio::spawn(run("writer-a", 0)),
        tokio::spawn(run("writer-b", 1000))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.commits + b.commits, 20, "{a:?} {b:?}");
    let table = read(&py, &path, &["writer-a", "writer-b"]);
    let mut expected: Vec<i64> = (0..100).chain(1000..1100).collect();
    expected.sort();
    assert_eq!(column::<i64>(&table, "id"), expected);
    assert_eq!(table["version"], 19, "{table}");
}
