//! Where a read resumes is checked (#22 item 5) — on kinesis-mock, by fault injection.
//!
//! kinesis-mock keeps every record (DecreaseStreamRetentionPeriod is accepted, nothing is ever
//! trimmed), so it cannot age a committed position out; the real trimming is tested against
//! kinesalite (`tests/resume_check.rs`). What kinesis-mock does report, distinctly:
//! GetShardIterator AT_ or AFTER_SEQUENCE_NUMBER with a sequence number it never wrote (one
//! below the shard's first record) is `ResourceNotFoundException` "Unable to find record with
//! provided SequenceNumber" — which polling takes, as before, for a shard no longer available
//! (it is also what a recreated stream answers); the enhanced fan-out restart check takes it
//! as "the record is not held" and names the trim horizon's first record. **Fault injection:** a checkpoint whose position is after such a
//! sequence number stands for "the record the checkpoint resumes after was trimmed". It
//! exercises the enhanced fan-out path, which kinesalite lacks: before subscribing, a restart
//! reads where each shard resumes by polling.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use aws_sdk_kinesis::types::ShardIteratorType;
use common::*;
use tributary_kinesis::offsets::{KinesisOffsets, ShardPosition};
use tributary_sdk::{ConnectorContext, Offset, ReadLimit, Source, SourceFactoryExt};

/// `n - 1` for a decimal string above 0.
fn minus_one(n: &str) -> String {
    let mut digits: Vec<u8> = n.bytes().map(|b| b - b'0').collect();
    for d in digits.iter_mut().rev() {
        if *d > 0 {
            *d -= 1;
            break;
        }
        *d = 9;
    }
    let s: String = digits.iter().map(|d| (d + b'0') as char).collect();
    s.trim_start_matches('0').to_string()
}

async fn first_sequence(client: &aws_sdk_kinesis::Client, stream: &str) -> String {
    let it = client
        .get_shard_iterator()
        .stream_name(stream)
        .shard_id("shardId-000000000000")
        .shard_iterator_type(ShardIteratorType::TrimHorizon)
        .send()
        .await
        .unwrap();
    let page = client
        .get_records()
        .shard_iterator(it.shard_iterator().unwrap())
        .send()
        .await
        .unwrap();
    page.records()[0].sequence_number().to_string()
}

fn efo_source(options: &tributary_sdk::Options, checkpoint: &str) -> Box<dyn Source> {
    let ctx = ConnectorContext {
        checkpoint_id: Some(checkpoint.to_string()),
        ..ConnectorContext::default()
    };
    tributary_kinesis::KinesisSourceFactory
        .create(options, &ctx)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_efo_restart_after_a_record_the_shard_does_not_hold_is_data_loss() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "resumeefo", 1).await;
    // kinesis-mock accepts a shorter retention, and trims nothing.
    client
        .decrease_stream_retention_period()
        .stream_name(&stream)
        .retention_period_hours(24)
        .send()
        .await
        .unwrap();
    let sent = values("e", 4);
    put(&client, &stream, "k", &sent).await;
    let first = first_sequence(&client, &stream).await;
    let before = minus_one(&first);
    // What kinesis-mock does with a sequence number it never wrote: a distinct error (Kinesis
    // itself answers a trimmed one with an iterator at the next record held).
    for kind in [
        ShardIteratorType::AtSequenceNumber,
        ShardIteratorType::AfterSequenceNumber,
    ] {
        let e = client
            .get_shard_iterator()
            .stream_name(&stream)
            .shard_id("shardId-000000000000")
            .shard_iterator_type(kind.clone())
            .starting_sequence_number(&before)
            .send()
            .await
            .expect_err("kinesis-mock refuses an unwritten sequence number");
        let text = format!("{}", aws_sdk_kinesis::error::DisplayErrorContext(&e));
        println!("kinesis-mock GetShardIterator {kind:?} of an unwritten sequence number: {text}");
        assert!(
            text.contains("ResourceNotFoundException")
                && text.contains("Unable to find record with provided SequenceNumber"),
            "{text}"
        );
    }
    // The injected checkpoint: resumes after `before`.
    let options = |extra: &[(&str, &str)]| {
        let mut o = source_options(
            Server::Mock,
            &stream,
            &[
                ("consumerMode", "efo"),
                ("consumerName", "resume-check"),
                ("requireConsumerDeregistration", "true"),
                ("minFetchPeriod", "300ms"),
            ],
        );
        for (k, v) in extra {
            o.set(*k, *v);
        }
        o
    };
    let mut fresh = efo_source(&options(&[]), "resume-fresh");
    let mut committed =
        KinesisOffsets::from_offset(&fresh.initial_offset().await.unwrap()).unwrap();
    fresh.stop().await.unwrap();
    committed
        .streams
        .get_mut(&stream)
        .unwrap()
        .shards
        .get_mut("shardId-000000000000")
        .unwrap()
        .position = ShardPosition::After(before.clone());
    let committed: Offset = committed.to_offset().unwrap();

    let mut strict = efo_source(&options(&[]), "resume-strict");
    let e = strict
        .latest_offset(&committed, &ReadLimit::All)
        .await
        .unwrap_err();
    println!("efo restart, failOnDataLoss=true: {e}");
    assert_eq!(e.code().as_str(), "DATA_LOSS.START_OFFSET_RESET", "{e}");
    assert!(e.to_string().contains(&before), "{e}");
    assert_eq!(
        e.context_value("actual"),
        Some(format!("sequence number {first}").as_str()),
        "{e:?}"
    );
    strict.stop().await.unwrap();

    let mut lenient = efo_source(&options(&[("failOnDataLoss", "false")]), "resume-lenient");
    let (got, _) = drain(lenient.as_mut(), committed, 4, Duration::from_secs(30)).await;
    assert_eq!(data(&got), sent, "read on from the trim horizon");
    assert_eq!(
        lenient.metrics()["dataLoss.DATA_LOSS.START_OFFSET_RESET"],
        1
    );
    lenient.stop().await.unwrap();

    // Polling from a held record: no event, the next record follows exactly.
    let mut polling = source(&source_options(Server::Mock, &stream, &[]));
    let mut at_first =
        KinesisOffsets::from_offset(&polling.initial_offset().await.unwrap()).unwrap();
    at_first
        .streams
        .get_mut(&stream)
        .unwrap()
        .shards
        .get_mut("shardId-000000000000")
        .unwrap()
        .position = ShardPosition::After(first);
    let mut restarted = source(&source_options(Server::Mock, &stream, &[]));
    let (rest, _) = drain(
        restarted.as_mut(),
        at_first.to_offset().unwrap(),
        3,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(
        data(&rest),
        sent[1..],
        "a held record: read on right after it"
    );
    assert_eq!(restarted.metrics()["dataLoss.total"], 0);
    let _ = client
        .delete_stream()
        .stream_name(&stream)
        .enforce_consumer_deletion(true)
        .send()
        .await;
}
