//! Replayed shard ranges as a stream of parts, in bounded memory.
//!
//! A replay (or an input partition) reads every shard range from its start position up to its
//! end sequence number with GetRecords. Every range, ordered by stream and shard, is read by a
//! task of its own, in parallel (Databricks prefetches the shards of a task in parallel), one
//! GetRecords page at a time, and each task hands its pages on as parts (`crate::rows`, at most
//! `PART_ROWS` records or `PART_BYTES` bytes) over a channel holding one part. The stream yields
//! range 0's parts, then range 1's, ..., so the same range always yields the same parts in the
//! same order (and a child shard's after its parents'), while the other ranges read ahead until
//! their channel is full. Memory is bounded by a page (at most 10 MiB, `maxRecordsPerFetch`
//! records) and a part per range being read, however long the range; a shard's own pace stays
//! its `maxFetchRate`, so the ranges of one input partition take as long as the longest of
//! them, not their sum.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use aws_sdk_kinesis::Client;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use tokio::sync::mpsc;
use tributary_sdk::{Error, ErrorCode};

use crate::offsets::ShardPosition;
use crate::partitions::ShardRange;
use crate::reader::{ResumeGap, ShardReader, Stop};
use crate::rows::shard_parts;

/// What a group task sends.
pub(crate) enum Piece {
    /// The next part of the current range.
    Part(RecordBatch),
    /// The current range is over; `reached` says whether it was read to its end sequence number.
    RangeEnd {
        reader: Box<ShardReader>,
        range: ShardRange,
        reached: bool,
        records: usize,
        /// The range's start was trimmed (`crate::loss`).
        gap: Option<ResumeGap>,
    },
    /// The read failed; nothing follows.
    Failed(Error),
}

/// The parts of a replay, range by range in order.
pub(crate) struct RangeParts {
    /// One per range, in order.
    receivers: Vec<mpsc::Receiver<Piece>>,
    current: usize,
    done: bool,
}

/// Starts reading `jobs` (ranges ordered by stream and shard, with their readers), every range
/// in a task of its own.
pub(crate) fn start(
    client: &Client,
    schema: &SchemaRef,
    jobs: Vec<(ShardRange, ShardReader)>,
) -> RangeParts {
    let mut receivers = Vec::with_capacity(jobs.len());
    for (range, reader) in jobs {
        let (tx, rx) = mpsc::channel(1);
        receivers.push(rx);
        let (client, schema) = (client.clone(), schema.clone());
        tokio::spawn(async move {
            read_range(&client, &schema, range, reader, &tx).await;
        });
    }
    RangeParts {
        receivers,
        current: 0,
        done: false,
    }
}

/// Reads one range page by page; false when the stream was dropped or the read failed.
async fn read_range(
    client: &Client,
    schema: &SchemaRef,
    range: ShardRange,
    mut reader: ShardReader,
    tx: &mpsc::Sender<Piece>,
) -> bool {
    let stop = Stop {
        records: Arc::new(AtomicI64::new(i64::MAX)),
        bytes: Arc::new(AtomicI64::new(i64::MAX)),
        deadline: None,
        until: Some(range.until.clone()),
        arrival_cutoff: None,
        one_page: true,
    };
    let mut position: ShardPosition = range.from.clone();
    let mut records = 0;
    let mut gap = None;
    let reached = loop {
        let mut fetched = match reader.fetch(client, &position, &stop).await {
            Ok(f) => f,
            Err(e) => {
                let _ = tx.send(Piece::Failed(e)).await;
                return false;
            }
        };
        records += fetched.records.len();
        gap = gap.or(fetched.resume_gap.take());
        let parts = match shard_parts(schema, &range.stream, &range.shard, &fetched.records) {
            Ok(p) => p,
            Err(e) => {
                let _ = tx.send(Piece::Failed(e)).await;
                return false;
            }
        };
        for part in parts {
            if tx.send(Piece::Part(part)).await.is_err() {
                return false;
            }
        }
        if fetched.reached_until {
            break true;
        }
        let caught_up = fetched.records.is_empty() && fetched.millis_behind.unwrap_or(0) == 0;
        if fetched.finished || fetched.not_found || caught_up {
            break false;
        }
        if let Some(p) = fetched.position {
            position = p;
        }
    };
    tx.send(Piece::RangeEnd {
        reader: Box::new(reader),
        range,
        reached,
        records,
        gap,
    })
    .await
    .is_ok()
}

impl RangeParts {
    /// Ends the stream: later calls of [`RangeParts::next`] return `None`.
    pub(crate) fn close(&mut self) {
        self.done = true;
    }

    /// The next piece; `None` once every range ended or after a failure.
    pub(crate) async fn next(&mut self) -> Option<Piece> {
        if self.done {
            return None;
        }
        let piece = match self.receivers.get_mut(self.current)?.recv().await {
            Some(p) => p,
            None => Piece::Failed(Error::new(
                ErrorCode::Internal,
                "a Kinesis read task ended without finishing its shard range",
            )),
        };
        match &piece {
            Piece::Part(_) => {}
            Piece::RangeEnd { .. } => self.current += 1,
            Piece::Failed(_) => self.done = true,
        }
        Some(piece)
    }
}
