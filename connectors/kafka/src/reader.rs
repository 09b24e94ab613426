//! Deterministic range reads as a stream of parts, in bounded memory.
//!
//! A read takes the planned ranges (already split by `minPartitions` /
//! `maxRecordsPerPartition`), ordered by topic, partition and start offset, and reads them with
//! up to [`MAX_PARALLEL`] pooled consumers, each on its own thread: consumer `k` reads ranges
//! `k`, `k + n`, `k + 2n`, ... one at a time (assign + seek, see `range_poll.rs`). Every range
//! is cut into parts of at most `PART_ROWS` records or `PART_BYTES` bytes, and each thread hands
//! its parts over a channel holding one part. The stream yields range 0's parts, then range 1's,
//! and so on, so the same range always yields the same parts in the same order, while the other
//! consumers read ahead until their channel is full.
//!
//! Memory is bounded by the consumers, not by the range: per consumer, the part being built,
//! the part waiting in the channel and librdkafka's prefetch queue, which a read caps at
//! [`QUEUED_MAX_KBYTES`] unless `kafka.queued.max.messages.kbytes` is set. A million 1 KiB
//! records stream through in a few tens of MiB (`benches/range_memory.sh`).

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use rdkafka::consumer::BaseConsumer;
use tokio::sync::mpsc;
use tributary_sdk::{DataLossEvent, Error, ErrorCode, Result};

use crate::client::{create_consumer, KafkaContext};
use crate::connection::ConnectionProfile;
use crate::planner::OffsetRange;
use crate::range_poll::read_range;

/// Most consumers reading one batch in parallel.
const MAX_PARALLEL: usize = 8;
/// librdkafka (>= 2.4) waits `fetch.queue.backoff.ms` (default 1 s) before fetching a partition
/// again once its prefetch queue passed its thresholds. A range read drains its queue at once, and
/// with the default it sat idle most of the time (5x slower than a raw consumer on the in-process
/// mock cluster: benches/throughput.rs). Used unless `kafka.fetch.queue.backoff.ms` is set.
const FETCH_QUEUE_BACKOFF_MS: &str = "10";
/// The prefetch queue of one read consumer, in KiB (librdkafka's default is 64 MiB). A consumer
/// reads one partition at a time, so this bounds what it fetches ahead of the stream. Used
/// unless `kafka.queued.max.messages.kbytes` is set.
const QUEUED_MAX_KBYTES: &str = "16384";

/// How a read behaves.
#[derive(Debug, Clone)]
pub(crate) struct ReadSettings {
    pub schema: SchemaRef,
    pub include_headers: bool,
    pub fail_on_data_loss: bool,
    pub poll_timeout: std::time::Duration,
    pub request_timeout: std::time::Duration,
    pub group_id: String,
}

/// What a read thread sends.
pub(crate) enum Piece {
    /// The next part of the current range.
    Part(RecordBatch),
    /// The current range is complete.
    RangeEnd {
        records: u64,
        bytes: u64,
        /// Data-loss events let pass (failOnDataLoss=false).
        events: Vec<DataLossEvent>,
    },
    /// The read failed; nothing follows.
    Failed(Error),
}

type Pool = Arc<Mutex<Vec<BaseConsumer<KafkaContext>>>>;

/// A pool of consumers used for range reads.
pub(crate) struct RangeReader {
    profile: Arc<ConnectionProfile>,
    pool: Pool,
}

impl RangeReader {
    pub(crate) fn new(profile: Arc<ConnectionProfile>) -> Self {
        RangeReader {
            profile,
            pool: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Starts reading the ranges (already split); the parts come from [`RangeParts::next`].
    pub(crate) fn stream(&self, ranges: Vec<OffsetRange>, s: &ReadSettings) -> RangeParts {
        let ranges: Vec<OffsetRange> = ranges.into_iter().filter(|r| r.end > r.start).collect();
        let parallel = ranges.len().min(MAX_PARALLEL);
        let mut receivers = Vec::with_capacity(parallel);
        let mut buckets: Vec<Vec<OffsetRange>> = (0..parallel).map(|_| Vec::new()).collect();
        let total = ranges.len();
        for (i, r) in ranges.into_iter().enumerate() {
            buckets[i % parallel.max(1)].push(r);
        }
        for bucket in buckets {
            let (tx, rx) = mpsc::channel(1);
            receivers.push(rx);
            let profile = self.profile.clone();
            let pool = self.pool.clone();
            let settings = s.clone();
            let spawned = std::thread::Builder::new()
                .name("kafka-range-read".into())
                .spawn(move || read_bucket(&profile, &pool, bucket, &settings, &tx));
            if let Err(e) = spawned {
                return RangeParts::failed(
                    Error::new(ErrorCode::Internal, "cannot start a Kafka read thread")
                        .with_cause(e),
                );
            }
        }
        RangeParts {
            receivers,
            current: 0,
            total,
            done: false,
        }
    }
}

/// Reads the ranges of one thread in order; returns the consumer to the pool when done.
fn read_bucket(
    profile: &ConnectionProfile,
    pool: &Pool,
    bucket: Vec<OffsetRange>,
    s: &ReadSettings,
    tx: &mpsc::Sender<Piece>,
) {
    let pooled = pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
    let consumer = match pooled {
        Some(c) => c,
        None => match new_consumer(profile, s) {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.blocking_send(Piece::Failed(e));
                return;
            }
        },
    };
    for range in bucket {
        let mut emit = |part: RecordBatch| tx.blocking_send(Piece::Part(part)).is_ok();
        let piece = match read_range(&consumer, range, s, &mut emit) {
            Ok(sum) => Piece::RangeEnd {
                records: sum.records,
                bytes: sum.bytes,
                events: sum.events,
            },
            Err(e) => Piece::Failed(e),
        };
        let failed = matches!(piece, Piece::Failed(_));
        if tx.blocking_send(piece).is_err() || failed {
            // Nobody reads on (the stream was dropped) or the read failed: the consumer's
            // position is unknown, so it is not pooled.
            return;
        }
    }
    pool.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(consumer);
}

fn new_consumer(
    profile: &ConnectionProfile,
    s: &ReadSettings,
) -> Result<BaseConsumer<KafkaContext>> {
    let mut extra = vec![
        ("group.id", s.group_id.as_str()),
        ("enable.auto.commit", "false"),
        ("enable.auto.offset.store", "false"),
        ("enable.partition.eof", "true"),
        ("auto.offset.reset", "earliest"),
    ];
    let config = profile.client_config();
    if config.get("fetch.queue.backoff.ms").is_none() {
        extra.push(("fetch.queue.backoff.ms", FETCH_QUEUE_BACKOFF_MS));
    }
    if config.get("queued.max.messages.kbytes").is_none() {
        extra.push(("queued.max.messages.kbytes", QUEUED_MAX_KBYTES));
    }
    create_consumer(profile, &extra)
}

/// The parts of a read, range by range in the planned order.
pub(crate) struct RangeParts {
    receivers: Vec<mpsc::Receiver<Piece>>,
    /// The range being yielded (index into the planned ranges).
    current: usize,
    total: usize,
    done: bool,
}

impl RangeParts {
    fn failed(e: Error) -> RangeParts {
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(Piece::Failed(e));
        RangeParts {
            receivers: vec![rx],
            current: 0,
            total: 1,
            done: false,
        }
    }

    /// Ends the stream: later calls of [`RangeParts::next`] return `None`.
    pub(crate) fn close(&mut self) {
        self.done = true;
    }

    /// The next piece; `None` once every range ended or after a failure.
    pub(crate) async fn next(&mut self) -> Option<Piece> {
        if self.done || self.current >= self.total {
            return None;
        }
        let n = self.receivers.len();
        let piece = match self.receivers[self.current % n].recv().await {
            Some(p) => p,
            None => Piece::Failed(Error::new(
                ErrorCode::Internal,
                "a Kafka read thread ended without finishing its range",
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
