//! Data loss against kinesalite under libfaketime (kinesis-mock does not trim): records trimmed
//! by retention before a logged range was read fail with
//! `KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET`, or with `failOnDataLoss=false` are counted and
//! skipped; an expired shard iterator is re-acquired from the last sequence number. One test
//! function, because the fake clock is shared by the whole kinesalite process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use tributary_sdk::ReadLimit;

fn set_clock(offset: &str) {
    let file = std::env::var("TRIBUTARY_KINESALITE_FAKETIME_FILE").unwrap();
    std::fs::write(file, format!("{offset}\n")).unwrap();
}

#[tokio::test]
async fn trimmed_records_and_expired_iterators_on_kinesalite() {
    if !available(Server::Lite) {
        return;
    }
    let (_log, _guard) = capture_logs(tracing::Level::INFO);
    set_clock("+0");
    let client = raw_client(Server::Lite).await;

    // 1. An expired iterator (kinesalite: 5 minutes) is re-acquired from the last sequence number.
    let stream = create_stream(&client, "expire", 1).await;
    put(&client, &stream, "k", &values("a", 3)).await;
    let mut s = source(&source_options(Server::Lite, &stream, &[]));
    let start = s.initial_offset().await.unwrap();
    let (_, at) = drain(s.as_mut(), start, 3, Duration::from_secs(20)).await;
    set_clock("+400");
    put(&client, &stream, "k", &values("b", 2)).await;
    let (b, _) = drain(s.as_mut(), at, 2, Duration::from_secs(20)).await;
    assert_eq!(
        data(&b),
        values("b", 2),
        "continued after the iterator expired"
    );
    set_clock("+0");

    // 2. Trimmed before the logged range was read: fail, or count and continue.
    let stream = create_stream(&client, "trim", 1).await;
    put(&client, &stream, "k", &values("t", 4)).await;
    let mut planner = source(&source_options(Server::Lite, &stream, &[]));
    let start = planner.initial_offset().await.unwrap();
    let end = planner
        .latest_offset(&start, &ReadLimit::All)
        .await
        .unwrap();
    assert_ne!(end, start);
    set_clock("+25h");
    // A restart replays the logged range: the records are gone.
    let mut replay = source(&source_options(Server::Lite, &stream, &[]));
    let e = replay.read(&start, &end).await.unwrap_err();
    assert_eq!(
        e.code().as_str(),
        "KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET",
        "{e}"
    );
    assert!(e.is_data_loss());
    let mut lenient = source(&source_options(
        Server::Lite,
        &stream,
        &[("failOnDataLoss", "false")],
    ));
    let got = lenient.read(&start, &end).await.unwrap();
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    assert_eq!(
        lenient.metrics()["dataLoss.KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET"],
        1
    );
    put(&client, &stream, "k", &values("after", 2)).await;
    let (later, _) = drain(lenient.as_mut(), end, 2, Duration::from_secs(20)).await;
    assert_eq!(
        data(&later),
        values("after", 2),
        "continues from the earliest available record"
    );
    set_clock("+0");
}
