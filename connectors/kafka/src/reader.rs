//! Deterministic range reads as a stream of parts, in bounded memory.
//!
//! A read takes the planned ranges (already split by `minPartitions` /
//! `maxRecordsPerPartition`), ordered by topic, partition and start offset, and reads them with
//! up to [`MAX_PARALLEL`] pooled consumers, each on its own thread. Every partition belongs to
//! one consumer (partition `k` of the plan to consumer `k mod n`), which reads its partitions
//! together, in waves: wave `j` holds the `j`-th range of each of its partitions (so the ranges
//! of a split partition are read one after the other, in offset order). A consumer fetching
//! several partitions at once is what keeps a read near a raw consumer's speed: librdkafka
//! fetches at most `max.partition.fetch.bytes` (1 MiB) per partition and round trip, and a
//! consumer reading one partition at a time waited on a round trip per MiB (0.6x a raw
//! consumer on the in-process mock cluster, `benches/throughput.rs`).
//!
//! Every range is cut into parts (`range_poll.rs`: `PART_ROWS` records, or a byte limit shared
//! by the ranges of a wave), and each thread hands its parts over a channel holding one part.
//! The stream yields parts as the threads deliver them: the same range always yields the same
//! parts in the same order, and so does a partition, as the source contract asks; how the
//! partitions interleave may differ from one read to the next.
//!
//! Consumers are kept between reads, positioned (`read_consumer.rs`): a partition read up to a
//! range's end stays assigned, what librdkafka fetched beyond it waits in the partition's queue,
//! and the next read gives a bucket the pooled consumer whose queues continue the most of its
//! ranges. Small batches no longer fetch each range's tail twice (`benches/throughput.rs`).
//!
//! Memory is bounded by the consumers, not by the range: per consumer, the parts being built
//! (about `PART_BYTES` together), the part waiting in the channel and librdkafka's prefetch
//! queues, one per partition held, which share [`QUEUE_BUDGET_KBYTES`] unless
//! `kafka.queued.max.messages.kbytes` sets each; a consumer holds at most [`WAVE_PARTITIONS`]
//! partitions at once. The read's memory does not grow with the range
//! (`benches/range_memory.sh`).

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tokio::sync::mpsc;
use tributary_sdk::{DataLossEvent, Error, ErrorCode, Result};

use crate::client::create_consumer;
use crate::connection::ConnectionProfile;
use crate::offsets::PartitionOffsets;
use crate::planner::{group_into_tasks, OffsetRange};
use crate::range_poll::read_ranges;
use crate::read_consumer::ReadConsumer;

/// Most consumers reading one batch in parallel.
const MAX_PARALLEL: usize = 8;
/// librdkafka (>= 2.4) waits `fetch.queue.backoff.ms` (default 1 s) before fetching a partition
/// again once its prefetch queue passed its thresholds. A range read drains its queue at once, and
/// with the default it sat idle most of the time (5x slower than a raw consumer on the in-process
/// mock cluster: benches/throughput.rs). Used unless `kafka.fetch.queue.backoff.ms` is set.
const FETCH_QUEUE_BACKOFF_MS: &str = "10";
/// What a read consumer may hold fetched ahead, in KiB, over all its partitions (a consumer's
/// shared queue before partitions had queues of their own; librdkafka's default is 64 MiB).
/// Each partition's queue gets its share ([`queue_kbytes`]): with separate partition queues,
/// librdkafka's `queued.max.messages.kbytes` is a limit per partition. A fetch can overshoot a
/// queue by `max.partition.fetch.bytes` (1 MiB).
const QUEUE_BUDGET_KBYTES: usize = 16 * 1024;
/// The least queue of a partition, in KiB: two fetches' worth. With 1 MiB a queue ran dry while
/// its next fetch was under way (one batch of 1 M records took 2.4x as long on the mock
/// cluster, `benches/throughput.rs`, at the same CPU); a single partition's read from tansu
/// took 25 % longer with 2 MiB than with 16 MiB (`benches/range_memory.sh`).
const MIN_QUEUE_KBYTES: usize = 2 * 1024;
/// Most partitions a consumer reads (and holds queues of) at once, so that each queue gets at
/// least [`MIN_QUEUE_KBYTES`] of [`QUEUE_BUDGET_KBYTES`].
const WAVE_PARTITIONS: usize = QUEUE_BUDGET_KBYTES / MIN_QUEUE_KBYTES;

/// The queue of each partition of a consumer reading `partitions` at once, in KiB.
fn queue_kbytes(partitions: usize) -> usize {
    (QUEUE_BUDGET_KBYTES / partitions.clamp(1, WAVE_PARTITIONS)).max(MIN_QUEUE_KBYTES)
}

/// Distinct partitions in `ranges` (ordered by topic and partition).
fn distinct_partitions(ranges: &[OffsetRange]) -> usize {
    ranges
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            *i == 0 || ranges[i - 1].topic != r.topic || ranges[i - 1].partition != r.partition
        })
        .count()
}

/// How a read behaves.
#[derive(Debug, Clone)]
pub(crate) struct ReadSettings {
    pub schema: SchemaRef,
    pub include_headers: bool,
    pub fail_on_data_loss: bool,
    pub poll_timeout: std::time::Duration,
    pub request_timeout: std::time::Duration,
    pub group_id: String,
    /// Most records in one part (`kafka.max.poll.records`, default [`PART_ROWS`]).
    ///
    /// [`PART_ROWS`]: crate::range_poll::PART_ROWS
    pub part_rows: usize,
    /// `maxPartitions`: the most consumers reading at once (never above [`MAX_PARALLEL`]).
    pub max_parallel: Option<usize>,
}

/// What a read thread sends.
pub(crate) enum Piece {
    /// The next part of the current range.
    Part(RecordBatch),
    /// `ranges` more ranges are complete.
    RangeEnd {
        ranges: usize,
        records: u64,
        bytes: u64,
        /// Data-loss events let pass (failOnDataLoss=false).
        events: Vec<DataLossEvent>,
    },
    /// The read failed; nothing follows.
    Failed(Error),
}

type Pool = Arc<Mutex<Vec<ReadConsumer>>>;

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

    /// Consumers in the pool (between reads: every consumer a read used).
    #[cfg(test)]
    pub(crate) fn pooled(&self) -> usize {
        self.pool.lock().map_or(0, |p| p.len())
    }

    /// Starts reading the ranges (already split); the parts come from [`RangeParts::next`].
    pub(crate) fn stream(&self, ranges: Vec<OffsetRange>, s: &ReadSettings) -> RangeParts {
        let mut ranges: Vec<OffsetRange> = ranges.into_iter().filter(|r| r.end > r.start).collect();
        ranges.sort_by(|a, b| {
            (a.topic.as_str(), a.partition, a.start).cmp(&(b.topic.as_str(), b.partition, b.start))
        });
        // The plan's partition of each range (ranges come ordered by topic and partition).
        let mut partition_of = Vec::with_capacity(ranges.len());
        for (i, r) in ranges.iter().enumerate() {
            let same =
                i > 0 && ranges[i - 1].topic == r.topic && ranges[i - 1].partition == r.partition;
            let last = partition_of.last().copied().unwrap_or(0);
            partition_of.push(if i == 0 || same { last } else { last + 1 });
        }
        let partitions = partition_of.last().map_or(0, |p| p + 1);
        let parallel = parallelism(partitions, s.max_parallel);
        let mut buckets: Vec<Vec<OffsetRange>> = (0..parallel).map(|_| Vec::new()).collect();
        for (r, p) in ranges.into_iter().zip(partition_of) {
            buckets[p % parallel].push(r);
        }
        let mut readers = Vec::with_capacity(parallel);
        let buckets: Vec<Vec<OffsetRange>> =
            buckets.into_iter().filter(|b| !b.is_empty()).collect();
        let user_queue = self
            .profile
            .client_config()
            .get("queued.max.messages.kbytes")
            .is_some();
        let queues: Vec<Option<usize>> = buckets
            .iter()
            .map(|b| (!user_queue).then(|| queue_kbytes(distinct_partitions(b))))
            .collect();
        let mut consumers = self.pick(&buckets, &queues);
        for ((bucket, consumer), queue) in buckets.into_iter().zip(consumers.drain(..)).zip(queues)
        {
            let (tx, rx) = mpsc::channel(1);
            readers.push(Reader {
                rx,
                expected: bucket.len(),
                ended: 0,
            });
            let profile = self.profile.clone();
            let pool = self.pool.clone();
            let settings = s.clone();
            let spawned = std::thread::Builder::new()
                .name("kafka-range-read".into())
                .spawn(move || {
                    let consumer = match consumer {
                        Some(c) => Ok(c),
                        None => new_consumer(&profile, &settings, queue),
                    };
                    read_bucket(&pool, consumer, bucket, &settings, &tx)
                });
            if let Err(e) = spawned {
                return RangeParts::failed(
                    Error::new(ErrorCode::Internal, "cannot start a Kafka read thread")
                        .with_cause(e),
                );
            }
        }
        RangeParts {
            readers,
            turn: 0,
            done: false,
        }
    }
}

impl RangeReader {
    /// Pauses the pooled consumers' partitions caught up with `high` (each partition's end):
    /// see [`ReadConsumer::pause_caught_up`].
    pub(crate) fn pause_caught_up(&self, high: &PartitionOffsets) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        for c in pool.iter_mut() {
            c.pause_caught_up(|t, p| high.get(t, p));
        }
    }

    /// The pooled consumer each bucket reads with: of those whose partition queues fit the
    /// bucket's (`queues`, in KiB; `None`: any), the one whose queues continue the most of its
    /// ranges (`None`: a new consumer). Pooled consumers left over beyond [`MAX_PARALLEL`]
    /// with the read's own are closed.
    fn pick(
        &self,
        buckets: &[Vec<OffsetRange>],
        queues: &[Option<usize>],
    ) -> Vec<Option<ReadConsumer>> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let picked = buckets
            .iter()
            .zip(queues)
            .map(|(bucket, queue)| {
                let best = pool
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| queue.is_none_or(|q| c.queue_kbytes().is_none_or(|k| k <= q)))
                    .max_by_key(|(_, c)| c.continues(bucket))
                    .map(|(i, _)| i)?;
                Some(pool.swap_remove(best))
            })
            .collect();
        pool.truncate(MAX_PARALLEL.saturating_sub(buckets.len()));
        picked
    }
}

/// The read threads (consumers) of a read of `partitions` partitions: one per partition, at
/// most `maxPartitions` and [`MAX_PARALLEL`].
fn parallelism(partitions: usize, max_partitions: Option<usize>) -> usize {
    partitions.clamp(
        1,
        max_partitions
            .unwrap_or(MAX_PARALLEL)
            .clamp(1, MAX_PARALLEL),
    )
}

/// Reads the ranges of one thread, wave by wave (at most [`WAVE_PARTITIONS`] partitions at
/// once); returns the consumer to the pool when done.
fn read_bucket(
    pool: &Pool,
    consumer: Result<ReadConsumer>,
    bucket: Vec<OffsetRange>,
    s: &ReadSettings,
    tx: &mpsc::Sender<Piece>,
) {
    let mut consumer = match consumer {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.blocking_send(Piece::Failed(e));
            return;
        }
    };
    let waves = group_into_tasks(bucket)
        .into_iter()
        .flat_map(|wave| {
            let mut wave = wave.into_iter().peekable();
            std::iter::from_fn(move || {
                wave.peek()?;
                Some(wave.by_ref().take(WAVE_PARTITIONS).collect::<Vec<_>>())
            })
        })
        .collect::<Vec<_>>();
    for wave in waves {
        let ranges = wave.len();
        let mut emit = |part: RecordBatch| tx.blocking_send(Piece::Part(part)).is_ok();
        let piece = match read_ranges(&mut consumer, wave, s, &mut emit) {
            Ok(sum) => Piece::RangeEnd {
                ranges,
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

/// A new read consumer whose partition queues hold `queue` KiB each (`None`: as configured).
fn new_consumer(
    profile: &ConnectionProfile,
    s: &ReadSettings,
    queue: Option<usize>,
) -> Result<ReadConsumer> {
    let queue_text = queue.map(|q| q.to_string());
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
    if let Some(q) = &queue_text {
        extra.push(("queued.max.messages.kbytes", q));
    }
    Ok(ReadConsumer::new(create_consumer(profile, &extra)?, queue))
}

/// One read thread's channel.
struct Reader {
    rx: mpsc::Receiver<Piece>,
    /// Ranges the thread reads.
    expected: usize,
    /// Ranges it said are complete.
    ended: usize,
}

/// The parts of a read, in the order the read threads deliver them (see the module docs).
pub(crate) struct RangeParts {
    readers: Vec<Reader>,
    /// Where the next poll starts looking, so that no thread starves.
    turn: usize,
    done: bool,
}

impl RangeParts {
    fn failed(e: Error) -> RangeParts {
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(Piece::Failed(e));
        RangeParts {
            readers: vec![Reader {
                rx,
                expected: 1,
                ended: 0,
            }],
            turn: 0,
            done: false,
        }
    }

    /// Ends the stream: later calls of [`RangeParts::next`] return `None`.
    pub(crate) fn close(&mut self) {
        self.done = true;
    }

    /// The next piece; `None` once every range ended or after a failure.
    pub(crate) async fn next(&mut self) -> Option<Piece> {
        if self.done || self.readers.iter().all(|r| r.ended >= r.expected) {
            return None;
        }
        let n = self.readers.len();
        let (k, piece) = std::future::poll_fn(|cx| {
            for i in 0..n {
                let k = (self.turn + i) % n;
                let reader = &mut self.readers[k];
                if reader.ended >= reader.expected {
                    continue;
                }
                if let std::task::Poll::Ready(p) = reader.rx.poll_recv(cx) {
                    return std::task::Poll::Ready((k, p));
                }
            }
            std::task::Poll::Pending
        })
        .await;
        self.turn = (k + 1) % n;
        let piece = piece.unwrap_or_else(|| {
            Piece::Failed(Error::new(
                ErrorCode::Internal,
                "a Kafka read thread ended without finishing its ranges",
            ))
        });
        match &piece {
            Piece::Part(_) => {}
            Piece::RangeEnd { ranges, .. } => self.readers[k].ended += ranges,
            Piece::Failed(_) => self.done = true,
        }
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_queues_share_the_budget_down_to_two_fetches_each() {
        assert_eq!(queue_kbytes(1), 16 * 1024);
        assert_eq!(queue_kbytes(4), 4 * 1024);
        assert_eq!(queue_kbytes(WAVE_PARTITIONS), MIN_QUEUE_KBYTES);
        // more partitions than a consumer holds at once are read in waves of WAVE_PARTITIONS
        assert_eq!(queue_kbytes(100), MIN_QUEUE_KBYTES);
        let r = |p: i32, start: i64| OffsetRange {
            topic: "t".into(),
            partition: p,
            start,
            end: start + 10,
        };
        // a split partition's ranges count once
        assert_eq!(
            distinct_partitions(&[r(0, 0), r(0, 10), r(1, 0), r(3, 0)]),
            3
        );
    }

    #[test]
    fn max_partitions_caps_the_read_threads() {
        assert_eq!(parallelism(4, None), 4);
        assert_eq!(parallelism(20, None), MAX_PARALLEL);
        assert_eq!(parallelism(4, Some(2)), 2);
        assert_eq!(parallelism(1, Some(2)), 1);
        assert_eq!(parallelism(20, Some(100)), MAX_PARALLEL);
        assert_eq!(parallelism(0, Some(2)), 1);
    }
}
