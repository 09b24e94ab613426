//! The data-loss events of the Kinesis source's reads: a read that resumed after a record the
//! shard no longer holds, and a logged range that could not be read to its end.
//!
//! **Where a read resumes** (#22): a position after sequence number S is read from an
//! iterator AT S (`crate::reader`); when the first record returned is not S, or the shard holds
//! nothing at or after S, S was trimmed by retention while nobody read the shard (records put,
//! pipeline stopped, retention passed), and what was written after S may be gone with it.
//! Kinesis sequence numbers are not dense, so whether anything was lost cannot be known: like
//! Spark's `failOnDataLoss` ("when it is possible that data is lost") this is a data-loss event.
//! When planning the next batch it is [`DataLossKind::OffsetOutOfRange`]
//! (`DATA_LOSS.START_OFFSET_RESET`: the start of the batch is below the trim horizon); in a
//! replay of a logged range it is [`DataLossKind::ShardExpired`]
//! (`KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET`), reported once per range. With
//! `failOnDataLoss=false` the event is logged and counted and reading goes on from the oldest
//! record held (the trim horizon). A shard that was idle for longer than the retention reports
//! it too (its last record read aged out and nothing shows whether more came after it).
//!
//! Enhanced fan-out subscribes from a position without reading it first, so on a restart
//! [`check_starts`] reads each resumed shard's first record by polling before subscribing
//! (after the restart checks, so a recreated stream already starts at its trim horizon). There a
//! server that refuses the sequence number outright (kinesis-mock: "Unable to find record with
//! provided SequenceNumber") counts as not holding it. Elsewhere that answer stays what it was
//! before, a shard no longer available (`KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET`), which
//! also lets the planner notice a recreated stream at once.

use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_kinesis::Client;
use futures::future::join_all;
use tributary_sdk::{DataLossEvent, DataLossKind, DataLossTracker, Result};

use crate::offsets::{KinesisOffsets, ShardPosition};
use crate::partitions::ShardRange;
use crate::reader::{ResumeGap, ShardReader, Stop};

/// How long [`check_starts`] reads a shard to find the first record after a position.
const CHECK_WAIT: Duration = Duration::from_secs(10);

/// The event of a batch planned from a position whose record is no longer held.
pub(crate) fn resume_event(stream: &str, shard: &str, gap: &ResumeGap) -> DataLossEvent {
    DataLossEvent::new(
        DataLossKind::OffsetOutOfRange,
        format!("{stream}/{shard}"),
        format!(
            "shard '{shard}' of stream '{stream}' resumes after sequence number {}, which the shard no longer holds (older than its trim horizon: {}); records written after it and not read yet may have been trimmed by retention",
            gap.after,
            gap.first_held_text()
        ),
    )
    .with_positions(format!("after {}", gap.after), gap.first_held_text())
}

/// The event of a logged range not read to its end, or whose start was trimmed; `None` when
/// the range was read completely from a held start.
pub(crate) fn range_event(
    range: &ShardRange,
    reached: bool,
    records: usize,
    gap: Option<&ResumeGap>,
) -> Option<DataLossEvent> {
    let (stream, shard) = (&range.stream, &range.shard);
    let location = format!("{stream}/{shard}");
    let until = format!("{:?}", ShardPosition::After(range.until.clone()));
    match gap {
        Some(g) => Some(
            DataLossEvent::new(
                DataLossKind::ShardExpired,
                location,
                format!(
                    "Could not read shard '{shard}' of stream '{stream}' until its end offset: the range starts after sequence number {}, which the shard no longer holds (trimmed; oldest held: {})",
                    g.after,
                    g.first_held_text()
                ),
            )
            .with_positions(format!("after {} up to {until}", g.after), g.first_held_text()),
        ),
        None if reached => None,
        None => Some(
            DataLossEvent::new(
                DataLossKind::ShardExpired,
                location,
                format!(
                    "Could not read shard '{shard}' of stream '{stream}' until its end offset: the records were trimmed or the shard expired"
                ),
            )
            .with_positions(until, format!("{records} records from {:?}", range.from)),
        ),
    }
}

/// The oldest record the shard holds (its trim horizon), `None` when it holds none.
async fn oldest_held(client: &Client, reader: &mut ShardReader) -> Result<Option<String>> {
    let stop = Stop {
        records: Arc::new(AtomicI64::new(1)),
        bytes: Arc::new(AtomicI64::new(i64::MAX)),
        deadline: Some(Instant::now() + CHECK_WAIT),
        until: None,
        arrival_cutoff: None,
        one_page: false,
    };
    let f = reader
        .fetch(client, &ShardPosition::TrimHorizon, &stop)
        .await?;
    Ok(f.records.first().map(|r| r.sequence.clone()))
}

/// Before subscribing (enhanced fan-out) on a restart: reads by polling where each shard of
/// `next` resumes after a record (`readers`: one per such shard, by stream and shard) and
/// reports each trimmed one ([`resume_event`]); under `failOnDataLoss=false` that shard then
/// starts at its trim horizon.
pub(crate) async fn check_starts(
    client: &Client,
    next: &mut KinesisOffsets,
    readers: Vec<(String, String, ShardReader)>,
    tracker: &mut DataLossTracker,
) -> Result<()> {
    let checks = readers
        .into_iter()
        .filter_map(|(stream, shard, mut reader)| {
            let from = next.shard(&stream, &shard)?.position.clone();
            if !matches!(from, ShardPosition::After(_)) {
                return None;
            }
            Some(async move {
                let stop = Stop {
                    records: Arc::new(AtomicI64::new(1)),
                    bytes: Arc::new(AtomicI64::new(i64::MAX)),
                    deadline: Some(Instant::now() + CHECK_WAIT),
                    until: None,
                    arrival_cutoff: None,
                    one_page: false,
                };
                let gap = match reader.fetch(client, &from, &stop).await {
                    Ok(f) => match (f.resume_gap, f.record_not_held) {
                        (Some(g), _) => Ok(Some(g)),
                        (None, Some(after)) => oldest_held(client, &mut reader)
                            .await
                            .map(|first_held| Some(ResumeGap { after, first_held })),
                        (None, None) => Ok(None),
                    },
                    Err(e) => Err(e),
                };
                (stream, shard, gap)
            })
        });
    for (stream, shard, gap) in join_all(checks).await {
        let Some(gap) = gap? else { continue };
        tracker.report(resume_event(&stream, &shard, &gap))?;
        if let Some(entry) = next
            .streams
            .get_mut(&stream)
            .and_then(|s| s.shards.get_mut(&shard))
        {
            entry.position = ShardPosition::TrimHorizon;
        }
    }
    Ok(())
}
