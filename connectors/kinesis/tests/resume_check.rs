//! Where a read resumes is checked (#22 item 5), against kinesalite under libfaketime — the one
//! test server that trims records by retention (kinesis-mock keeps every record; kinesalite's
//! DecreaseStreamRetentionPeriod refuses less than 24 h, so the clock is moved instead).
//!
//! kinesalite, like Kinesis, answers GetShardIterator AFTER_SEQUENCE_NUMBER for a trimmed
//! sequence number without an error and GetRecords then silently starts at the oldest record
//! held: before this check a committed position older than the trim horizon read on as if
//! nothing happened. Now:
//!
//! 1. records read and committed, more put, the pipeline stopped, retention passed, two more
//!    put: the restart from the committed position fails with `failOnDataLoss=true`
//!    (`DATA_LOSS.START_OFFSET_RESET`, naming the shard and both positions), and with `false`
//!    counts the event and reads on from the trim horizon (the two records put after);
//! 2. a logged range whose start was trimmed but whose end is still held (a replay after a
//!    restart) is `KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET`, or with `false` counted once.
//!
//! One test function: the fake clock is shared by the whole kinesalite process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use tributary_sdk::ReadLimit;

fn set_clock(offset: &str) {
    let file = std::env::var("TRIBUTARY_KINESALITE_FAKETIME_FILE").unwrap();
    std::fs::write(file, format!("{offset}\n")).unwrap();
}

fn count(s: &dyn tributary_sdk::Source, code: &str) -> u64 {
    s.metrics()
        .get(&format!("dataLoss.{code}"))
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_position_older_than_the_trim_horizon_is_data_loss() {
    if !available(Server::Lite) {
        return;
    }
    set_clock("+0");
    let client = raw_client(Server::Lite).await;
    let lenient = [("failOnDataLoss", "false")];

    // 1. Committed position trimmed while stopped.
    let stream = create_stream(&client, "resume", 1).await;
    put(&client, &stream, "k", &values("read", 4)).await;
    let mut first = source(&source_options(Server::Lite, &stream, &[]));
    let start = first.initial_offset().await.unwrap();
    let (got, committed) = drain(first.as_mut(), start, 4, Duration::from_secs(20)).await;
    assert_eq!(data(&got), values("read", 4));
    first.stop().await.unwrap();
    drop(first);
    // A restart before retention passed reads on exactly (the check does not misfire).
    put(&client, &stream, "k", &values("unread", 3)).await;
    let mut early = source(&source_options(Server::Lite, &stream, &[]));
    let (again, _) = drain(
        early.as_mut(),
        committed.clone(),
        3,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(data(&again), values("unread", 3), "nothing trimmed yet");
    assert_eq!(count(early.as_ref(), "DATA_LOSS.START_OFFSET_RESET"), 0);
    drop(early);
    set_clock("+25h");
    put(&client, &stream, "k", &values("after", 2)).await;
    let mut strict = source(&source_options(Server::Lite, &stream, &[]));
    let e = strict
        .latest_offset(&committed, &ReadLimit::All)
        .await
        .unwrap_err();
    println!("failOnDataLoss=true: {e}");
    assert_eq!(e.code().as_str(), "DATA_LOSS.START_OFFSET_RESET", "{e}");
    assert!(e.is_data_loss());
    let text = e.to_string();
    assert!(
        text.contains("shardId-000000000000") && text.contains(&stream),
        "{text}"
    );
    assert!(
        e.context_value("expected")
            .is_some_and(|p| p.starts_with("after ")),
        "the committed position is named: {e:?}"
    );
    assert!(
        e.context_value("actual")
            .is_some_and(|p| p.contains("sequence number")),
        "the oldest held position is named: {e:?}"
    );
    let mut skip = source(&source_options(Server::Lite, &stream, &lenient));
    let (later, _) = drain(skip.as_mut(), committed, 2, Duration::from_secs(20)).await;
    assert_eq!(
        data(&later),
        values("after", 2),
        "continues from the trim horizon; the 3 unread records are gone"
    );
    assert_eq!(count(skip.as_ref(), "DATA_LOSS.START_OFFSET_RESET"), 1);
    set_clock("+0");

    // 2. A logged range whose start was trimmed, its end still held.
    let stream = create_stream(&client, "replay", 1).await;
    put(&client, &stream, "k", &values("old", 2)).await;
    set_clock("+23h");
    put(&client, &stream, "k", &values("new", 2)).await;
    let mut planner = source(&source_options(Server::Lite, &stream, &[]));
    let begin = planner.initial_offset().await.unwrap();
    let one = ReadLimit::MaxRows(1);
    let mut after_first = begin.clone();
    for _ in 0..50 {
        after_first = planner.latest_offset(&begin, &one).await.unwrap();
        if after_first != begin {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        data(&planner.read(&begin, &after_first).await.unwrap()),
        ["old-0"]
    );
    let mut logged_end = after_first.clone();
    for _ in 0..50 {
        logged_end = planner
            .latest_offset(&after_first, &ReadLimit::All)
            .await
            .unwrap();
        if logged_end != after_first {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(planner);
    set_clock("+25h"); // old-0, old-1 are 25 h old, new-* 2 h
    let mut replay = source(&source_options(Server::Lite, &stream, &[]));
    let e = replay.read(&after_first, &logged_end).await.unwrap_err();
    println!("replay, failOnDataLoss=true: {e}");
    assert_eq!(
        e.code().as_str(),
        "KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET",
        "{e}"
    );
    assert!(e.to_string().contains("no longer holds"), "{e}");
    let mut replay = source(&source_options(Server::Lite, &stream, &lenient));
    let got = replay.read(&after_first, &logged_end).await.unwrap();
    assert_eq!(data(&got), values("new", 2), "old-1 is gone");
    assert_eq!(
        count(
            replay.as_ref(),
            "KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET"
        ),
        1,
        "one event for the range"
    );
    set_clock("+0");
}
