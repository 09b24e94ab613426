//! The Delta sink's staged write (distributed batches): partitions staged by separate sink
//! objects (executors, built without a checkpoint id), committed by another (the driver) in
//! one Delta commit with the batch's `txn`; retried tasks, repeated commits and replays never
//! duplicate a row (read back with Python deltalake).

use std::collections::BTreeSet;
use std::path::Path;

use tributary_sdk::{PartitionStager, Sink, StagedOutput};
use tributary_sinks::delta::{DeltaConfig, DeltaSink};

use crate::reader::{column, columns, python, read};
use crate::sink::{batch, schema};

const APP: &str = "ckpt-staged";

fn sink(path: &Path, app: Option<&str>, merge_schema: bool) -> DeltaSink {
    let mut config = DeltaConfig::new(path.display().to_string());
    config.merge_schema = merge_schema;
    DeltaSink::new(config, Default::default(), app.map(str::to_string))
}

fn stager(s: &mut DeltaSink) -> &mut dyn PartitionStager {
    s.as_stager().expect("delta sink is a stager")
}

/// One task on an executor: a fresh sink object stages rows `first..first + n` in `parts`
/// parts. Executors have no checkpoint id unless `app` says so.
async fn stage(
    path: &Path,
    app: Option<&str>,
    batch_id: u64,
    partition: usize,
    (first, n, parts): (i64, i64, i64),
    extra: bool,
) -> StagedOutput {
    let mut s = sink(path, app, true);
    let st = stager(&mut s);
    st.begin_partition(batch_id, partition, schema(extra))
        .await
        .unwrap();
    st.stage_part(&batch(0, 0, extra)).await.unwrap();
    let per = n / parts;
    for p in 0..parts {
        st.stage_part(&batch(first + p * per, per, extra))
            .await
            .unwrap();
    }
    st.finish_partition().await.unwrap()
}

fn data_files(path: &Path) -> usize {
    std::fs::read_dir(path)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".parquet")
        })
        .count()
}

fn adds(output: &StagedOutput) -> usize {
    output.manifest["adds"].as_array().unwrap().len()
}

#[tokio::test]
async fn partitions_staged_by_two_executors_are_one_transaction() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");

    // Batch 0 creates the table. Executor A stages partition 0, executor B partition 1; a first
    // attempt of partition 1 finished but lost (not in the manifests), another was killed
    // mid-write (its writer dropped, never closed).
    let p0 = stage(&path, None, 0, 0, (0, 400, 4), false).await;
    let lost = stage(&path, None, 0, 1, (400, 600, 2), false).await;
    {
        let mut killed = sink(&path, None, true);
        let st = stager(&mut killed);
        st.begin_partition(0, 1, schema(false)).await.unwrap();
        st.stage_part(&batch(400, 100, false)).await.unwrap();
    }
    let p1 = stage(&path, None, 0, 1, (400, 600, 3), false).await;
    assert_eq!((p0.rows, p1.rows), (400, 600));
    assert!(p1.bytes > 0);
    assert!(!path.join("_delta_log").exists(), "staging commits nothing");
    let serialised = serde_json::to_string(&p1).unwrap();
    let p1: StagedOutput = serde_json::from_str(&serialised).unwrap();

    let mut driver = sink(&path, Some(APP), true);
    stager(&mut driver)
        .commit_staged(0, vec![p0.clone(), p1.clone()])
        .await
        .unwrap();
    let table = read(&py, &path, &[APP]);
    assert_eq!(table["version"], 0, "one commit: {table}");
    assert_eq!(table["txn"][APP], 0);
    assert_eq!(column::<i64>(&table, "id"), (0..1000).collect::<Vec<_>>());
    let referenced: BTreeSet<String> = table["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert_eq!(referenced.len(), adds(&p0) + adds(&p1));
    // The lost attempt's file is on disk, unreferenced (left to VACUUM).
    assert_eq!(data_files(&path), referenced.len() + adds(&lost));
    let lost_file = lost.manifest["adds"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(referenced.iter().all(|f| !f.ends_with(&lost_file)));

    // Commit twice = once (the same manifests, by the same and by a fresh driver object).
    stager(&mut driver)
        .commit_staged(0, vec![p0.clone(), p1.clone()])
        .await
        .unwrap();
    let mut restarted = sink(&path, Some(APP), true);
    stager(&mut restarted)
        .commit_staged(0, vec![p0, p1])
        .await
        .unwrap();
    assert_eq!(driver.stats().commits, 1);
    assert_eq!(driver.stats().skipped_replays, 1);
    assert_eq!(restarted.stats().skipped_replays, 1);
    let table = read(&py, &path, &[APP]);
    assert_eq!(table["version"], 0);
    assert_eq!(column::<i64>(&table, "id").len(), 1000);
    // Nothing deleted: the files of a repeated commit are the table's.
    assert_eq!(data_files(&path), referenced.len() + adds(&lost));

    // Batch 1 on the existing table, committed by a driver object that never opened.
    let staged = vec![
        stage(&path, None, 1, 0, (1000, 100, 1), false).await,
        stage(&path, None, 1, 1, (1100, 100, 2), false).await,
    ];
    let mut fresh = sink(&path, Some(APP), true);
    stager(&mut fresh).commit_staged(1, staged).await.unwrap();
    let table = read(&py, &path, &[APP]);
    assert_eq!(table["version"], 1);
    assert_eq!(table["txn"][APP], 1);
    assert_eq!(column::<i64>(&table, "id"), (0..1200).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_replayed_batch_is_skipped_and_schemas_of_partitions_merge() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut driver = sink(&path, Some(APP), true);
    driver.open(schema(false)).await.unwrap();
    driver.write(0, &[batch(0, 10, false)]).await.unwrap();

    // Batch 1: under mergeSchema one partition carries a new column, the other does not.
    let staged = vec![
        stage(&path, None, 1, 0, (10, 10, 1), true).await,
        stage(&path, None, 1, 1, (20, 10, 1), false).await,
    ];
    stager(&mut driver)
        .commit_staged(1, staged.clone())
        .await
        .unwrap();
    let table = read(&py, &path, &[APP]);
    assert_eq!(table["version"], 1);
    assert_eq!(column::<i64>(&table, "id"), (0..30).collect::<Vec<_>>());
    assert!(columns(&table).iter().any(|(name, _)| name == "note"));
    let files = data_files(&path);

    // The driver died before `commits/1`: the batch is replayed. Executors that know the
    // checkpoint id stage nothing; those that do not stage files the commit then skips.
    let replay = vec![
        stage(&path, Some(APP), 1, 0, (10, 10, 1), true).await,
        stage(&path, None, 1, 1, (20, 10, 1), false).await,
    ];
    assert_eq!(adds(&replay[0]), 0);
    assert_eq!(replay[0].rows, 0);
    assert_eq!(adds(&replay[1]), 1);
    let mut restarted = sink(&path, Some(APP), true);
    stager(&mut restarted)
        .commit_staged(1, replay)
        .await
        .unwrap();
    assert_eq!(restarted.stats().skipped_replays, 1);
    let table = read(&py, &path, &[APP]);
    assert_eq!(table["version"], 1);
    assert_eq!(table["txn"][APP], 1);
    assert_eq!(column::<i64>(&table, "id"), (0..30).collect::<Vec<_>>());
    assert_eq!(
        data_files(&path),
        files + 1,
        "the replay's file is unreferenced"
    );

    // An empty batch commits nothing.
    let empty = vec![stage(&path, None, 2, 0, (0, 0, 1), false).await];
    stager(&mut restarted)
        .commit_staged(2, empty)
        .await
        .unwrap();
    assert_eq!(read(&py, &path, &[APP])["version"], 1);
}
