//! The Kinesis sink against kinesis-mock (HTTPS with the test CA): every row written once with
//! its partition key (column or option), batches larger than one PutRecords call, a record over
//! 1 MiB refused naming its row, a missing stream failing with the stream named. Written records
//! are read back with a raw aws-sdk-kinesis GetRecords loop.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use arrow_array::{BinaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use aws_sdk_kinesis::types::ShardIteratorType;
use aws_sdk_kinesis::Client;
use common::*;
use tributary_kinesis::KinesisSinkFactory;
use tributary_sdk::{ConnectorContext, Delivery, ErrorCode, Options, Sink, SinkFactory};

fn sink(options: &Options) -> Box<dyn Sink> {
    KinesisSinkFactory
        .prepare(options)
        .unwrap()
        .build(&ConnectorContext::default())
        .unwrap()
}

fn rows(keys: &[String], data: &[Vec<u8>]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("partitionKey", DataType::Utf8, false),
        Field::new("data", DataType::Binary, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(keys.to_vec())),
            Arc::new(BinaryArray::from_iter_values(data.iter())),
        ],
    )
    .unwrap()
}

/// Every (partitionKey, data) of every shard, read with GetRecords from TRIM_HORIZON.
async fn read_back(client: &Client, stream: &str) -> Vec<(String, Vec<u8>)> {
    let shards = client
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .unwrap();
    let mut out = Vec::new();
    for s in shards.shards() {
        let mut it = client
            .get_shard_iterator()
            .stream_name(stream)
            .shard_id(s.shard_id())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .unwrap()
            .shard_iterator()
            .map(str::to_string);
        while let Some(i) = it {
            let page = client
                .get_records()
                .shard_iterator(&i)
                .send()
                .await
                .unwrap();
            for r in page.records() {
                out.push((
                    r.partition_key().unwrap_or_default().to_string(),
                    r.data().as_ref().to_vec(),
                ));
            }
            if page.records().is_empty() && page.millis_behind_latest().unwrap_or(0) == 0 {
                break;
            }
            it = page.next_shard_iterator().map(str::to_string);
        }
    }
    out
}

/// Deletes a test stream (kinesis-mock allows 50 shards in all).
async fn gone(client: &aws_sdk_kinesis::Client, stream: &str) {
    let _ = client
        .delete_stream()
        .stream_name(stream)
        .enforce_consumer_deletion(true)
        .send()
        .await;
}

#[tokio::test]
async fn every_row_is_written_once_over_several_calls_with_its_key() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "sink", 2).await;
    let mut s = sink(&connection_options(Server::Mock).with("streamName", &stream));
    assert_eq!(s.delivery(), Delivery::AtLeastOnce);
    let n = 1_234;
    let keys: Vec<String> = (0..n).map(|i| format!("k{}", i % 7)).collect();
    let data: Vec<Vec<u8>> = (0..n).map(|i| format!("row-{i}").into_bytes()).collect();
    let batch = rows(&keys, &data);
    s.open(batch.schema()).await.unwrap();
    // Two input batches in one write: 1 234 rows = three PutRecords calls.
    s.write(0, &[batch.slice(0, 600), batch.slice(600, n - 600)])
        .await
        .unwrap();
    s.stop().await.unwrap();
    let mut got = read_back(&client, &stream).await;
    let mut want: Vec<(String, Vec<u8>)> = keys.into_iter().zip(data).collect();
    // Per key, the order is kept (one key = one shard).
    for k in 0..7 {
        let key = format!("k{k}");
        let g: Vec<_> = got.iter().filter(|r| r.0 == key).cloned().collect();
        let w: Vec<_> = want.iter().filter(|r| r.0 == key).cloned().collect();
        assert_eq!(g, w, "order of key {key}");
    }
    got.sort();
    want.sort();
    assert_eq!(got.len(), n);
    assert_eq!(got, want);
    gone(&client, &stream).await;
}

#[tokio::test]
async fn large_records_split_calls_by_bytes_and_an_oversized_one_names_its_row() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "sinkbig", 1).await;
    let opts = connection_options(Server::Mock)
        .with("streamName", &stream)
        .with("partitionKey", "fixed");
    let mut s = sink(&opts);
    // Six records of ~900 KiB: over 5 MiB together, so at least two calls.
    let keys: Vec<String> = (0..6).map(|_| "ignored".to_string()).collect();
    let data: Vec<Vec<u8>> = (0..6u8).map(|i| vec![b'a' + i; 900 * 1024]).collect();
    let batch = rows(&keys, &data);
    s.open(batch.schema()).await.unwrap();
    s.write(1, &[batch]).await.unwrap();
    let got = read_back(&client, &stream).await;
    assert_eq!(got.len(), 6);
    assert!(
        got.iter().all(|(k, _)| k == "fixed"),
        "the partitionKey option wins"
    );
    assert_eq!(got.iter().map(|r| r.1.clone()).collect::<Vec<_>>(), data);
    // A record over 1 MiB: a clear error naming the row, nothing of the batch sent.
    let over = rows(
        &["a".to_string(), "b".to_string()],
        &[b"small".to_vec(), vec![0u8; (1 << 20) + 1]],
    );
    let e = s.write(2, &[over]).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::SinkWrite);
    assert!(
        e.to_string().contains("row 1") && e.to_string().contains("1 MiB"),
        "{e}"
    );
    assert_eq!(
        read_back(&client, &stream).await.len(),
        6,
        "nothing of the refused batch was written"
    );
    gone(&client, &stream).await;
}

#[tokio::test]
async fn a_missing_stream_fails_naming_it_without_endless_retries() {
    if !available(Server::Mock) {
        return;
    }
    let mut s = sink(&connection_options(Server::Mock).with("streamName", "no-such-stream-sink"));
    let batch = rows(&["k".to_string()], &[b"x".to_vec()]);
    s.open(batch.schema()).await.unwrap();
    let started = std::time::Instant::now();
    let e = s.write(0, &[batch]).await.unwrap_err();
    assert!(e.to_string().contains("no-such-stream-sink"), "{e}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "not retried like throttling"
    );
}

#[tokio::test]
async fn a_utf8_data_column_chosen_by_option_is_written() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "sinktext", 1).await;
    let opts = connection_options(Server::Mock)
        .with("streamName", &stream)
        .with("dataColumn", "body")
        .with("partitionKeyColumn", "user");
    let mut s = sink(&opts);
    let schema = Arc::new(Schema::new(vec![
        Field::new("user", DataType::Utf8, false),
        Field::new("body", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["u1", "u2"])),
            Arc::new(StringArray::from(vec!["hello", "world"])),
        ],
    )
    .unwrap();
    s.open(schema).await.unwrap();
    s.write(0, &[batch]).await.unwrap();
    let got = read_back(&client, &stream).await;
    assert_eq!(
        got,
        vec![
            ("u1".to_string(), b"hello".to_vec()),
            ("u2".to_string(), b"world".to_vec())
        ]
    );
    gone(&client, &stream).await;
}
