//! Replayed shard ranges as a stream of parts, in bounded memory.
//!
//! A replay (or an input partition) reads every shard range from its start position up to its
//! end sequence number with GetRecords. Every range, ordered by stream and shard, is read by a
//! task of its own, in parallel (Databricks prefetches the shards of a task in parallel), one
//! GetRecords page at a time, and each task hands its pages on as parts (`crate::rows`, at most
//! `PART_ROWS` records or `PART_BYTES` bytes) over a channel holding one part. The stream yields
//! range 0's parts, then range 1's, ..., so the same range always yields the same parts in the
//! same order (and a child shard's after its parents'). The later ranges read ahead meanwhile:
//! their parts are taken from their channels and held until their turn, up to a read-ahead
//! budget (`fetchBufferSize`, Databricks' bound of what a task prefetches); past it, they wait
//! on their full channels. A shard's own pace stays its `maxFetchRate`, so while the budget
//! lasts the ranges take as long as the longest of them, not their sum. Memory is bounded by
//! the budget plus, per range, a page (at most 10 MiB, `maxRecordsPerFetch` records) and a part.

use std::collections::VecDeque;

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
    ranges: Vec<Ahead>,
    /// The range being yielded.
    current: usize,
    /// Bytes of the parts held for later ranges, and their bound.
    held: usize,
    budget: usize,
    done: bool,
}

/// One range's channel and what was taken from it ahead of its turn.
struct Ahead {
    rx: mpsc::Receiver<Piece>,
    held: VecDeque<Piece>,
    /// Its `RangeEnd` (or a failure) was taken: the channel is not polled again.
    ended: bool,
}

/// Starts reading `jobs` (ranges ordered by stream and shard, with their readers), every range
/// in a task of its own; later ranges are read ahead up to `read_ahead` bytes of parts.
pub(crate) fn start(
    client: &Client,
    schema: &SchemaRef,
    jobs: Vec<(ShardRange, ShardReader)>,
    read_ahead: u64,
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
        ranges: receivers
            .into_iter()
            .map(|rx| Ahead {
                rx,
                held: VecDeque::new(),
                ended: false,
            })
            .collect(),
        current: 0,
        held: 0,
        budget: usize::try_from(read_ahead).unwrap_or(usize::MAX),
        done: false,
    }
}

fn piece_bytes(p: &Piece) -> usize {
    match p {
        Piece::Part(b) => b.get_array_memory_size(),
        _ => 0,
    }
}

fn task_ended() -> Piece {
    Piece::Failed(Error::new(
        ErrorCode::Internal,
        "a Kinesis read task ended without finishing its shard range",
    ))
}

/// Reads one range page by page, until its end, a failure, or the stream is dropped.
async fn read_range(
    client: &Client,
    schema: &SchemaRef,
    range: ShardRange,
    mut reader: ShardReader,
    tx: &mpsc::Sender<Piece>,
) {
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
                return;
            }
        };
        records += fetched.records.len();
        gap = gap.or(fetched.resume_gap.take());
        let parts = match shard_parts(schema, &range.stream, &range.shard, &fetched.records) {
            Ok(p) => p,
            Err(e) => {
                let _ = tx.send(Piece::Failed(e)).await;
                return;
            }
        };
        for part in parts {
            if tx.send(Piece::Part(part)).await.is_err() {
                return;
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
    let _ = tx
        .send(Piece::RangeEnd {
            reader: Box::new(reader),
            range,
            reached,
            records,
            gap,
        })
        .await;
}

impl RangeParts {
    /// Ends the stream: later calls of [`RangeParts::next`] return `None`.
    pub(crate) fn close(&mut self) {
        self.done = true;
    }

    /// The next piece; `None` once every range ended or after a failure.
    pub(crate) async fn next(&mut self) -> Option<Piece> {
        loop {
            if self.done {
                return None;
            }
            let current = self.current;
            let ahead = self.ranges.get_mut(current)?;
            if let Some(p) = ahead.held.pop_front() {
                self.held -= piece_bytes(&p);
                return Some(self.yielded(p));
            }
            // The current range's channel always; the later ones' while the budget lasts.
            let (k, piece) = std::future::poll_fn(|cx| {
                let open = self.held < self.budget;
                for (k, a) in self.ranges.iter_mut().enumerate().skip(current) {
                    if a.ended || (k > current && !open) {
                        continue;
                    }
                    if let std::task::Poll::Ready(p) = a.rx.poll_recv(cx) {
                        return std::task::Poll::Ready((k, p.unwrap_or_else(task_ended)));
                    }
                }
                std::task::Poll::Pending
            })
            .await;
            if !matches!(piece, Piece::Part(_)) {
                self.ranges[k].ended = true;
            }
            if k == current || matches!(piece, Piece::Failed(_)) {
                return Some(self.yielded(piece));
            }
            self.held += piece_bytes(&piece);
            self.ranges[k].held.push_back(piece);
        }
    }

    /// Moves on past `piece`, the next one of the stream.
    fn yielded(&mut self, piece: Piece) -> Piece {
        match &piece {
            Piece::Part(_) => {}
            Piece::RangeEnd { .. } => self.current += 1,
            Piece::Failed(_) => self.done = true,
        }
        piece
    }
}
