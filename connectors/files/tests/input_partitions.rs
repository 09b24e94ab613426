//! Input partitions (scale-out): a driver source with a checkpoint plans a range into groups of
//! files, and sources built from the same options with no state directory (executors) read them.
//! Everything runs on a local landing directory of files of varied sizes; the S3 case is in
//! `tests/object_store.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use common::*;
use futures::TryStreamExt;
use tributary_sdk::{ErrorCode, InputPartition, Offset, ReadLimit, Source};

/// Rows per file of the landing directory: one file larger than a part (8192 rows).
const ROWS: [i64; 10] = [1, 5, 50, 200, 1000, 3, 20_000, 7, 400, 60];

/// Writes the landing files (`f00.json` ...), ids unique across files.
fn landing(dir: &Path) {
    let mut base = 0;
    for (i, rows) in ROWS.iter().enumerate() {
        write_json(dir, &format!("f{i:02}.json"), base, *rows);
        base += rows;
    }
}

/// Every row as text, every column (the `_metadata` struct with its path, name, size and
/// modification time).
fn values(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let options = FormatOptions::default().with_null("null");
    for b in batches {
        let formatters: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for i in 0..b.num_rows() {
            out.push(formatters.iter().map(|f| f.value(i).to_string()).collect());
        }
    }
    out
}

/// A driver over `input` with its checkpoint state in `state`: the range of every file.
async fn driver(
    input: &Path,
    state: &Path,
    extra: &[(&str, &str)],
) -> (Box<dyn Source>, Offset, Offset) {
    let mut src = source(input, Some(state), extra);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    (src, start, end)
}

/// Reads one partition with `executor`, checking the part size.
async fn read_partition(executor: &mut Box<dyn Source>, p: &InputPartition) -> Vec<RecordBatch> {
    let parts: Vec<RecordBatch> = executor
        .read_partition(p)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(parts
        .iter()
        .all(|b| b.num_rows() <= 8192 && b.num_rows() > 0));
    parts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_cover_the_range_exactly() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    landing(input.path());
    let typed = [("cloudFiles.inferColumnTypes", "true")];
    let (mut drv, start, end) = driver(input.path(), state.path(), &typed).await;
    assert_eq!(seq(&end) - seq(&start), ROWS.len() as u64);
    let read = drv.read(&start, &end).await.unwrap();
    let partitions = drv.plan_partitions(&start, &end, 4).await.unwrap().unwrap();
    assert_eq!(partitions.len(), 4, "{partitions:?}");

    // An executor: same options, no state directory.
    let mut executor = source(input.path(), None, &typed);
    let mut union = Vec::new();
    for (i, p) in partitions.iter().enumerate() {
        assert_eq!(p.index, i);
        assert_eq!(p.expected_records, None);
        let parts = read_partition(&mut executor, p).await;
        for b in &parts {
            assert_eq!(b.schema(), drv.schema());
        }
        union.extend(parts);
    }
    // The 20 000-row file came in parts of at most 8192 rows, as from read_stream.
    assert!(union.len() > ROWS.len());
    let (mut got, mut want) = (values(&union), values(&read));
    // In index order the partitions give read's rows in read's order...
    assert_eq!(got, want);
    // ...and, the contract, the same multiset of rows: every id once, with its file's metadata.
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(want.len() as i64, ROWS.iter().sum::<i64>());
    let first = &values(&read)[0];
    let f00 = input.path().canonicalize().unwrap().join("f00.json");
    assert_eq!(first[0], "0");
    assert_eq!(first[1], "n0");
    assert!(first[3].contains(&f00.display().to_string()), "{first:?}");
    let size = std::fs::metadata(&f00).unwrap().len();
    assert!(
        first[3].contains(&format!("file_size: {size}")),
        "{first:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planning_is_deterministic_and_follows_parallelism() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    landing(input.path());
    let (mut drv, start, end) = driver(input.path(), state.path(), &[]).await;

    let one = drv.plan_partitions(&start, &end, 1).await.unwrap().unwrap();
    assert_eq!(one.len(), 1, "small files on one slot: one group");
    assert!(one[0].label.starts_with("10 files, "), "{}", one[0].label);
    assert!(one[0].label.ends_with("f00.json)"), "{}", one[0].label);

    let four = drv.plan_partitions(&start, &end, 4).await.unwrap().unwrap();
    // 10 files of 4 MiB open cost each plus < 1 MiB of data over 4 slots: groups of 3.
    let counts: Vec<usize> = four
        .iter()
        .map(|p| p.spec["files"].as_array().unwrap().len())
        .collect();
    assert_eq!(counts, [3, 3, 3, 1]);
    assert!(four[0].label.starts_with("3 files, "), "{}", four[0].label);
    assert!(four[3].label.starts_with("1 file, "), "{}", four[3].label);

    // The same plan again, from this driver and from a restarted one on the same checkpoint.
    assert_eq!(
        drv.plan_partitions(&start, &end, 4).await.unwrap().unwrap(),
        four
    );
    drop(drv);
    let mut restarted = source(input.path(), Some(state.path()), &[]);
    assert_eq!(
        restarted
            .plan_partitions(&start, &end, 4)
            .await
            .unwrap()
            .unwrap(),
        four
    );
    // Groups of a sub-range, and an empty range.
    let mid = Offset::from_json(serde_json::json!({"seq": 4}));
    let tail = restarted
        .plan_partitions(&mid, &end, 1)
        .await
        .unwrap()
        .unwrap();
    assert!(tail[0].label.starts_with("6 files, "), "{}", tail[0].label);
    assert_eq!(
        restarted.plan_partitions(&end, &end, 4).await.unwrap(),
        Some(vec![])
    );
    // A range the checkpoint does not know, or backwards, is refused as read refuses it.
    let beyond = Offset::from_json(serde_json::json!({"seq": 99}));
    let e = restarted
        .plan_partitions(&start, &beyond, 2)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Checkpoint);
    assert!(restarted.plan_partitions(&end, &start, 2).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_without_state_reads_a_partition_and_leaves_no_trace() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    landing(input.path());
    let (mut drv, start, end) = driver(input.path(), state.path(), &[]).await;
    let read = values(&drv.read(&start, &end).await.unwrap());
    let partitions = drv.plan_partitions(&start, &end, 4).await.unwrap().unwrap();
    let listing = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing(input.path());

    // Options that only matter to the driver (clean-up, notifications) do nothing here.
    let driver_only = [
        ("cloudFiles.cleanSource", "DELETE"),
        ("cloudFiles.cleanSource.retentionDuration", "0s"),
        ("cloudFiles.useNotifications", "true"),
    ];
    let mut executor = source(input.path(), None, &driver_only);
    // Partition 2 alone (another executor reads the others).
    let got = values(&read_partition(&mut executor, &partitions[2]).await);
    // Partitions 0 and 1 hold three files each: partition 2 is files 6, 7 and 8.
    assert_eq!(partitions[2].spec["files"].as_array().unwrap().len(), 3);
    let skip: i64 = ROWS[..6].iter().sum();
    let take: i64 = ROWS[6..9].iter().sum();
    assert_eq!(got, read[skip as usize..(skip + take) as usize]);
    executor.stop().await.unwrap();
    drop(executor);
    assert_eq!(
        listing(input.path()),
        before,
        "the executor wrote or removed files"
    );
    let metrics = {
        let mut e = source(input.path(), None, &driver_only);
        read_partition(&mut e, &partitions[0]).await;
        e.metrics()
    };
    assert!(!metrics.contains_key("approximateQueueSize"), "{metrics:?}");
    assert_eq!(metrics["numFullListings"], 0);
    assert_eq!(metrics["numFilesCleaned"], 0);
    assert_eq!(metrics["numFilesRead"], 3);

    // A file gone since planning: the error names the file and the partition.
    std::fs::remove_file(input.path().join("f09.json")).unwrap();
    let mut e3 = source(input.path(), None, &[]);
    let e = e3
        .read_partition(&partitions[3])
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert_eq!(e.code().as_str(), "CLOUD_FILES_FILE_NOT_FOUND");
    assert!(e.context_value("file").unwrap().ends_with("f09.json"));
    assert!(e
        .context_value("partition")
        .unwrap()
        .starts_with("3 (1 file, "));

    // A partition planned for another directory is refused by name.
    let other = tempfile::tempdir().unwrap();
    let mut wrong = source(other.path(), None, &[("schema", "id BIGINT, name STRING")]);
    let e = wrong.read_partition(&partitions[0]).await.err().unwrap();
    assert_eq!(e.code(), ErrorCode::InvalidPipeline);
    assert!(e.message().contains("options differ"), "{}", e.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_partition_carries_the_drivers_evolved_schema() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    // Inference samples one file, so a source without the checkpoint infers {id, name} only.
    let opts = [
        ("cloudFiles.inferColumnTypes", "true"),
        ("cloudFiles.schemaInference.sampleSize.numFiles", "1"),
    ];
    write_json(input.path(), "a.json", 0, 2);
    let (mut drv, start, end_a) = driver(input.path(), state.path(), &opts).await;
    drv.read(&start, &end_a).await.unwrap();
    drv.commit(&end_a).await.unwrap();
    std::fs::write(
        input.path().join("b.json"),
        "{\"id\": 10, \"name\": \"x\", \"vip\": true}\n",
    )
    .unwrap();
    let end_b = drv.latest_offset(&end_a, &ReadLimit::All).await.unwrap();
    // addNewColumns: the driver evolves its stored schema and restarts.
    let e = drv.read(&end_a, &end_b).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownField);
    let mut drv = source(input.path(), Some(state.path()), &opts);
    let read = drv.read(&end_a, &end_b).await.unwrap();
    let partitions = drv
        .plan_partitions(&end_a, &end_b, 2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(partitions.len(), 1);

    let mut executor = source(input.path(), None, &opts);
    assert!(executor.schema().field_with_name("vip").is_err());
    let got = read_partition(&mut executor, &partitions[0]).await;
    assert_eq!(got[0].schema(), drv.schema());
    assert_eq!(executor.schema(), drv.schema());
    assert_eq!(values(&got), values(&read));
    assert_eq!(strings(&got, "vip"), [Some("true".into())]);
}
