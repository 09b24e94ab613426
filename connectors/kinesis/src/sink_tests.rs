//! Unit tests of the sink: call splitting, row checks, and the retry of failed entries (the
//! PutRecords call is replaced by a closure here: that is fault injection, the real calls are
//! in tests/sink.rs against kinesis-mock).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use arrow_array::{BinaryArray, StringArray};
use arrow_schema::{Field, Schema};
use tributary_sdk::EnvSecretStore;

use super::*;
use crate::config::{BaseCredentials, ConnectionSettings};

fn config(key: PartitionKeySource) -> SinkConfig {
    SinkConfig {
        connection: ConnectionSettings {
            region: Some("us-east-1".into()),
            endpoint: None,
            credentials: BaseCredentials::DefaultChain,
            assume_role: None,
            ca_file: None,
        },
        stream: "s".into(),
        keying: StreamKeying::Names,
        partition_key: key,
        data_column: "data".into(),
        max_retries: 3,
    }
}

fn sink(key: PartitionKeySource) -> KinesisSink {
    KinesisSink::new(config(key), Arc::new(EnvSecretStore))
}

fn batch(keys: Vec<Option<&str>>, data: Vec<Option<&[u8]>>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("partitionKey", DataType::Utf8, true),
        Field::new("data", DataType::Binary, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(keys)),
            Arc::new(BinaryArray::from_opt_vec(data)),
        ],
    )
    .unwrap()
}

fn entry(row: usize, size: usize) -> Entry {
    Entry {
        row,
        key: "k".into(),
        data: vec![0; size - 1],
    }
}

#[test]
fn calls_hold_at_most_500_records_and_5_mib() {
    let calls = split_calls((0..1201).map(|i| entry(i, 10)).collect());
    assert_eq!(
        calls.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![500, 500, 201]
    );
    // 6 records of 1 MiB: 5 fit in one call (5 MiB), the sixth goes to the next.
    let calls = split_calls((0..6).map(|i| entry(i, MAX_RECORD_BYTES)).collect());
    assert_eq!(calls.iter().map(Vec::len).collect::<Vec<_>>(), vec![5, 1]);
    for c in &calls {
        assert!(c.iter().map(Entry::size).sum::<usize>() <= MAX_BYTES_PER_CALL);
    }
    let order: Vec<usize> = calls.into_iter().flatten().map(|e| e.row).collect();
    assert_eq!(order, (0..6).collect::<Vec<_>>());
}

#[test]
fn a_record_over_1_mib_is_an_error_naming_its_row() {
    let big = vec![7u8; MAX_RECORD_BYTES];
    let b = batch(vec![Some("a"), Some("b")], vec![Some(b"ok"), Some(&big)]);
    let s = sink(PartitionKeySource::Column("partitionKey".into()));
    let e = s.entries(4, &[b.clone(), b]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::SinkWrite);
    assert_eq!(e.context_value("row"), Some("1"));
    assert!(
        e.to_string().contains("row 1") && e.to_string().contains("1 MiB"),
        "{e}"
    );
    // Exactly 1 MiB with the key is fine.
    let fits = vec![7u8; MAX_RECORD_BYTES - 1];
    let b = batch(vec![Some("a")], vec![Some(&fits)]);
    assert_eq!(s.entries(1, &[b]).unwrap().len(), 1);
}

#[test]
fn keys_come_from_the_column_or_the_option_and_bad_rows_are_named() {
    let b = batch(vec![Some("a"), None], vec![Some(b"1"), Some(b"2")]);
    let by_col = sink(PartitionKeySource::Column("partitionKey".into()));
    let e = by_col.entries(0, std::slice::from_ref(&b)).unwrap_err();
    assert!(
        e.to_string().contains("row 1 has a null partition key"),
        "{e}"
    );
    let fixed = sink(PartitionKeySource::Fixed("fixed".into()));
    let entries = fixed.entries(0, &[b]).unwrap();
    assert!(entries.iter().all(|e| e.key == "fixed"));
    let b = batch(
        vec![Some("a"), Some("b"), Some("c")],
        vec![Some(b"1"), Some(b"2"), None],
    );
    let e = by_col.entries(0, &[b]).unwrap_err();
    assert!(e.to_string().contains("row 2 has a null 'data'"), "{e}");
    let wrong = Arc::new(Schema::new(vec![Field::new(
        "data",
        DataType::Int32,
        false,
    )]));
    let e = by_col.check_schema(&wrong).unwrap_err();
    assert!(e.to_string().contains("binary or string"), "{e}");
    let no_key = Arc::new(Schema::new(vec![Field::new(
        "data",
        DataType::Binary,
        false,
    )]));
    let e = by_col.check_schema(&no_key).unwrap_err();
    assert_eq!(e.context_value("option"), Some("partitionKeyColumn"));
}

fn policy(max: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries: max,
        base: Duration::from_millis(1),
    }
}

#[tokio::test]
async fn only_failed_entries_are_sent_again() {
    // Fault injection: the first call fails rows 1 and 3, the second fails row 3 again.
    let calls: Arc<Mutex<Vec<Vec<usize>>>> = Arc::default();
    let log = Arc::clone(&calls);
    let send = move |batch: Vec<Entry>| {
        let log = Arc::clone(&log);
        async move {
            let rows: Vec<usize> = batch.iter().map(|e| e.row).collect();
            let n = {
                let mut l = log.lock().unwrap();
                l.push(rows.clone());
                l.len()
            };
            let fail = |r: usize| match n {
                1 => r == 1 || r == 3,
                2 => r == 3,
                _ => false,
            };
            Ok(rows
                .iter()
                .map(|r| {
                    fail(*r).then(|| {
                        (
                            "ProvisionedThroughputExceededException".to_string(),
                            "slow down".to_string(),
                        )
                    })
                })
                .collect())
        }
    };
    let retried = put_with_retries((0..5).map(|i| entry(i, 4)).collect(), &policy(5), send)
        .await
        .unwrap();
    assert_eq!(
        *calls.lock().unwrap(),
        vec![vec![0, 1, 2, 3, 4], vec![1, 3], vec![3]]
    );
    assert_eq!(retried, 3);
}

#[tokio::test]
async fn entries_failing_past_max_retries_fail_the_batch_naming_the_row() {
    let send = |batch: Vec<Entry>| async move {
        Ok(batch
            .iter()
            .map(|e| (e.row == 2).then(|| ("InternalFailure".to_string(), "boom".to_string())))
            .collect())
    };
    let err = put_with_retries((0..4).map(|i| entry(i, 4)).collect(), &policy(2), send)
        .await
        .unwrap_err();
    let e = err.into_error(9, "s");
    assert_eq!(e.code(), ErrorCode::SinkWrite);
    assert_eq!(e.context_value("row"), Some("2"));
    assert!(
        e.to_string().contains("after 3 attempt(s)") && e.to_string().contains("InternalFailure"),
        "{e}"
    );
}

#[tokio::test]
async fn a_throttled_call_is_retried_whole_and_a_refused_one_is_not() {
    let n = Arc::new(Mutex::new(0));
    let count = Arc::clone(&n);
    let send = move |batch: Vec<Entry>| {
        let count = Arc::clone(&count);
        async move {
            *count.lock().unwrap() += 1;
            if *count.lock().unwrap() == 1 {
                Err(ApiError {
                    failure: ApiFailure::Throttled,
                    code: Some("LimitExceededException".into()),
                    message: "x".into(),
                })
            } else {
                Ok(vec![None; batch.len()])
            }
        }
    };
    put_with_retries(vec![entry(0, 4)], &policy(3), send)
        .await
        .unwrap();
    assert_eq!(*n.lock().unwrap(), 2);
    let refused = |_: Vec<Entry>| async {
        Err(ApiError {
            failure: ApiFailure::NotFound,
            code: Some("ResourceNotFoundException".into()),
            message: "no stream".into(),
        })
    };
    let e = put_with_retries(vec![entry(0, 4)], &policy(3), refused)
        .await
        .unwrap_err();
    assert!(matches!(e, PutFailure::Call(_)));
}

#[test]
fn backoff_doubles_and_is_capped() {
    let p = RetryPolicy {
        max_retries: 10,
        base: BASE_BACKOFF,
    };
    assert_eq!(p.backoff(0), Duration::from_millis(100));
    assert_eq!(p.backoff(3), Duration::from_millis(800));
    assert_eq!(p.backoff(9), MAX_BACKOFF);
}
