//! Polling offset ranges of distinct partitions together on one consumer: exactly the records
//! in `[start, end)` of each, handed on in parts of bounded size.
//!
//! A part of a range closes at [`PART_ROWS`] records (or `kafka.max.poll.records`) or at its byte limit of keys and values,
//! whichever comes first. The byte limit is [`PART_BYTES`] shared by the ranges read together
//! (never under [`MIN_PART_BYTES`]), so a consumer holds about `PART_BYTES` of open parts
//! however many partitions it reads. Both limits are functions of the plan and the records
//! alone, so the same range always closes its parts at the same offsets.
//!
//! Gaps are checked, not trusted: a record past the expected offset is compared with the
//! partition's earliest offset. Earliest above the expected offset means records were lost
//! (retention; tansu does not answer OFFSET_OUT_OF_RANGE but silently returns the next record)
//! — `START_OFFSET_RESET` at the start of a range, `COULD_NOT_READ_OFFSET_RANGE` inside it.
//! Otherwise the skipped offsets were invisible (transaction markers, aborted transactions,
//! compaction) and are skipped as Spark does. A range that cannot reach its end because the
//! partition now ends earlier (deleted and recreated topic) is `PARTITION_OFFSET_CHANGED`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::Offset;
use tributary_sdk::{DataLossEvent, DataLossKind, Error, ErrorCode, Result};

use crate::batch_builder::Accum;
use crate::client::KafkaContext;
use crate::planner::OffsetRange;
use crate::read_consumer::{PartitionQueue, ReadConsumer, Wake};
use crate::reader::ReadSettings;

/// Most records in one part.
pub(crate) const PART_ROWS: usize = 16 * 1024;
/// Most key and value bytes in one part (a record larger than this is a part of its own).
pub(crate) const PART_BYTES: u64 = 4 * 1024 * 1024;
/// The least byte limit of a part when several ranges are read together.
pub(crate) const MIN_PART_BYTES: u64 = 1024 * 1024;
/// Without records for this long, unfinished ranges are checked against the broker.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// What reading one range amounted to, besides its parts.
#[derive(Debug, Default)]
pub(crate) struct RangeSummary {
    pub records: u64,
    pub bytes: u64,
    /// Data-loss events let pass (failOnDataLoss=false).
    pub events: Vec<DataLossEvent>,
}

/// Reads `ranges` (of distinct partitions) together with `rc`, handing every closed part to
/// `emit`, each range's parts in offset order. `emit` returning `false` (nobody reads the parts
/// any more) stops the read early. The partitions stay assigned afterwards, each range that
/// ended cleanly noted as continuing at its end ([`ReadConsumer`]).
pub(crate) fn read_ranges(
    rc: &mut ReadConsumer,
    ranges: Vec<OffsetRange>,
    s: &ReadSettings,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<RangeSummary> {
    let part_bytes_limit = (PART_BYTES / ranges.len().max(1) as u64).max(MIN_PART_BYTES);
    let mut queues = rc.position(&ranges, s.request_timeout)?;
    let wake = Arc::new(Wake::default());
    for q in &mut queues {
        wake.watch(q);
    }
    let mut states: Vec<RangeState> = ranges
        .into_iter()
        .map(|range| RangeState {
            acc: Accum::new(&range.topic, range.partition, s.include_headers),
            next: range.start,
            first: true,
            done: false,
            clean: false,
            part_bytes: 0,
            part_bytes_limit,
            range,
        })
        .collect();
    let mut sink = PartSink { emit, open: true };
    let result = poll_ranges(rc.consumer(), &queues, &wake, &mut states, s, &mut sink);
    // the queues' callbacks end here; what they hold stays in the consumer
    drop(queues);
    let events = result?;
    let mut summary = RangeSummary {
        events,
        ..Default::default()
    };
    for st in &mut states {
        sink.close_part(st, s)?;
        summary.records += st.acc.records;
        summary.bytes += st.acc.bytes;
        if st.clean {
            rc.ended_at(&st.range);
        }
    }
    Ok(summary)
}

/// Where closed parts go.
struct PartSink<'e> {
    emit: &'e mut dyn FnMut(RecordBatch) -> bool,
    /// False once `emit` said nobody listens.
    open: bool,
}

impl PartSink<'_> {
    fn close_part(&mut self, st: &mut RangeState, s: &ReadSettings) -> Result<()> {
        st.acc.flush(&s.schema)?;
        st.part_bytes = 0;
        for part in std::mem::take(&mut st.acc.batches) {
            if self.open {
                self.open = (self.emit)(part);
            }
        }
        Ok(())
    }
}

struct RangeState {
    range: OffsetRange,
    next: i64,
    first: bool,
    done: bool,
    /// Done, and the partition's queue continues at the range's end.
    clean: bool,
    /// Key and value bytes of the part being built.
    part_bytes: u64,
    /// Where the part being built closes, in key and value bytes.
    part_bytes_limit: u64,
    acc: Accum,
}

fn location(r: &OffsetRange) -> String {
    format!("{}-{}", r.topic, r.partition)
}

fn loss(s: &ReadSettings, events: &mut Vec<DataLossEvent>, event: DataLossEvent) -> Result<()> {
    if s.fail_on_data_loss {
        let (topic, partition) = match event.location.rsplit_once('-') {
            Some((t, p)) => (t.to_string(), p.to_string()),
            None => (event.location.clone(), String::new()),
        };
        return Err(event
            .into_error()
            .with_context("topic", topic)
            .with_context("partition", partition));
    }
    events.push(event);
    Ok(())
}

/// The range is done: nothing more is taken from its partition's queue in this read. `clean`:
/// the queue continues at the range's end.
fn finish(st: &mut RangeState, pending: &mut usize, clean: bool) {
    if st.done {
        return;
    }
    st.done = true;
    st.clean = clean;
    *pending -= 1;
}

/// Most records taken from one partition's queue before the next partition's turn.
const BURST: usize = 1024;

/// What reading a batch's ranges shares: the consumer, the settings, where parts go, the
/// data-loss events let pass and the ranges not done yet.
struct Read<'a, 'e> {
    consumer: &'a BaseConsumer<KafkaContext>,
    s: &'a ReadSettings,
    sink: &'a mut PartSink<'e>,
    events: Vec<DataLossEvent>,
    pending: usize,
}

fn poll_ranges(
    consumer: &BaseConsumer<KafkaContext>,
    queues: &[PartitionQueue],
    wake: &Wake,
    states: &mut [RangeState],
    s: &ReadSettings,
    sink: &mut PartSink<'_>,
) -> Result<Vec<DataLossEvent>> {
    let mut read = Read {
        consumer,
        s,
        sink,
        events: Vec::new(),
        pending: states.len(),
    };
    // Idle time is measured from the first poll without progress: reading the clock for every
    // record cost a tenth of this thread's CPU (two clock reads per record).
    let mut quiet_since: Option<Instant> = None;
    let mut last_check = Instant::now();
    while read.pending > 0 {
        let seen = wake.seen();
        let mut progressed = false;
        for (st, queue) in states.iter_mut().zip(queues) {
            let mut taken = 0;
            while !st.done && taken < BURST {
                let Some(polled) = queue.poll(Duration::ZERO) else {
                    break;
                };
                taken += 1;
                match polled {
                    Ok(msg) => {
                        progressed |= read.take(st, &msg)?;
                        if !read.sink.open {
                            return Ok(read.events);
                        }
                    }
                    Err(KafkaError::PartitionEOF(_)) => read.at_eof(st),
                    Err(e) => read.client_error(e)?,
                }
            }
        }
        // The main queue carries the client's errors (no record of a split partition).
        while let Some(polled) = consumer.poll(Duration::ZERO) {
            match polled {
                Ok(msg) => tracing::debug!(
                    "a record of {}-{} arrived outside its partition's queue; ignored",
                    msg.topic(),
                    msg.partition()
                ),
                Err(KafkaError::PartitionEOF(_)) => {}
                Err(e) => read.client_error(e)?,
            }
        }
        if progressed {
            quiet_since = None;
            continue;
        }
        let now = Instant::now();
        let idle = now - *quiet_since.get_or_insert(now);
        if idle >= IDLE_CHECK && now - last_check >= IDLE_CHECK {
            last_check = now;
            check_stalled(consumer, states, s, &mut read.pending, &mut read.events)?;
            if read.pending > 0 && idle >= s.poll_timeout {
                let st = states.iter().find(|st| !st.done);
                let (loc, next, end) = st
                    .map(|st| (location(&st.range), st.next, st.range.end))
                    .unwrap_or_default();
                return Err(Error::new(
                    ErrorCode::Timeout,
                    format!(
                        "no record of {loc} arrived for {} ms while reading offsets [{next}, {end}) (kafkaConsumer.pollTimeoutMs)",
                        s.poll_timeout.as_millis()
                    ),
                )
                .with_context("location", loc)
                .with_context("offset", next));
            }
        }
        if read.pending > 0 {
            wake.wait(seen, Duration::from_millis(100));
        }
    }
    Ok(read.events)
}

impl Read<'_, '_> {
    /// Takes one record of `st`'s partition; true when it moved the range on.
    fn take(&mut self, st: &mut RangeState, msg: &BorrowedMessage<'_>) -> Result<bool> {
        let (consumer, s) = (self.consumer, self.s);
        if st.done || msg.offset() < st.next {
            return Ok(false);
        }
        let off = msg.offset();
        if off > st.next {
            let (low, _) = consumer
                .fetch_watermarks(&st.range.topic, st.range.partition, s.request_timeout)
                .map_err(|e| read_error(&st.range, "fetching the earliest offset", e))?;
            if low > st.next {
                let kind = if st.first {
                    DataLossKind::OffsetOutOfRange
                } else {
                    DataLossKind::OffsetGap
                };
                let detail = if st.first {
                    format!(
                        "Cannot read from offset {}: the earliest available offset is {low} (records were deleted, e.g. by retention)",
                        st.next
                    )
                } else {
                    format!(
                        "Cannot fetch records in [{}, {off}): they are no longer available",
                        st.next
                    )
                };
                loss(
                    s,
                    &mut self.events,
                    DataLossEvent::new(kind, location(&st.range), detail)
                        .with_positions(st.next, low),
                )?;
            } else {
                tracing::debug!(
                    "{}: offsets [{}, {off}) are invisible (transaction markers or compaction)",
                    location(&st.range),
                    st.next
                );
            }
        }
        st.first = false;
        if off >= st.range.end {
            // a record of the next range, taken across a gap: the queue is past the end
            finish(st, &mut self.pending, false);
            return Ok(true);
        }
        let before = st.acc.bytes;
        st.acc.append(msg, s.include_headers);
        st.part_bytes += st.acc.bytes - before;
        st.next = off + 1;
        if st.acc.rows() >= s.part_rows || st.part_bytes >= st.part_bytes_limit {
            self.sink.close_part(st, s)?;
            if !self.sink.open {
                return Ok(true);
            }
        }
        if st.next >= st.range.end {
            finish(st, &mut self.pending, true);
        }
        Ok(true)
    }

    /// The fetcher reached the end of `st`'s partition: the range is done when the position
    /// already passed its end (trailing invisible offsets).
    fn at_eof(&mut self, st: &mut RangeState) {
        if st.done {
            return;
        }
        if let Ok(pos) = self.consumer.position() {
            if let Some(Offset::Offset(o)) = pos
                .find_partition(&st.range.topic, st.range.partition)
                .map(|e| e.offset())
            {
                if o >= st.range.end {
                    finish(st, &mut self.pending, true);
                }
            }
        }
    }

    /// A client error: authentication failures end the read, the rest are retried by
    /// librdkafka.
    fn client_error(&mut self, e: KafkaError) -> Result<()> {
        let consumer = self.consumer;
        consumer
            .context()
            .record(e.rdkafka_error_code(), e.to_string());
        if let Some(f) = consumer
            .context()
            .last_failure()
            .filter(|f| f.is_authentication())
        {
            return Err(Error::new(
                ErrorCode::Authentication,
                format!("reading from Kafka failed: {}", f.message),
            ));
        }
        tracing::debug!("consumer error while reading (retrying): {e}");
        Ok(())
    }
}

/// Explains ranges that stopped progressing: the partition ends before the range end
/// (recreated), its earliest offset passed the range (retention), or nothing is left to read.
/// Whether a partition still exists according to fresh metadata: `Some(false)` when the topic is
/// gone or lacks the partition, `None` when the metadata itself cannot be fetched (the broker may
/// just be unreachable: no conclusion).
fn partition_exists(
    consumer: &BaseConsumer<KafkaContext>,
    topic: &str,
    partition: i32,
    s: &ReadSettings,
) -> Option<bool> {
    let md = consumer
        .fetch_metadata(Some(topic), s.request_timeout)
        .ok()?;
    let Some(t) = md.topics().iter().find(|t| t.name() == topic) else {
        return Some(false);
    };
    if let Some(code) = t.error() {
        return (code == rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
            .then_some(false);
    }
    Some(t.partitions().iter().any(|p| p.id() == partition))
}

fn check_stalled(
    consumer: &BaseConsumer<KafkaContext>,
    states: &mut [RangeState],
    s: &ReadSettings,
    pending: &mut usize,
    events: &mut Vec<DataLossEvent>,
) -> Result<()> {
    let position = consumer.position().ok();
    for st in states.iter_mut().filter(|st| !st.done) {
        let (low, high) =
            match consumer.fetch_watermarks(&st.range.topic, st.range.partition, s.request_timeout)
            {
                Ok(w) => w,
                Err(e) => {
                    tracing::debug!("{}: watermarks unavailable: {e}", location(&st.range));
                    if partition_exists(consumer, &st.range.topic, st.range.partition, s)
                        == Some(false)
                    {
                        let detail = format!(
                            "Partition {} was deleted while offsets [{}, {}) were being read",
                            location(&st.range),
                            st.next,
                            st.range.end
                        );
                        loss(
                            s,
                            events,
                            DataLossEvent::new(
                                DataLossKind::PartitionDeleted,
                                location(&st.range),
                                detail,
                            )
                            .with_positions(st.next, "none"),
                        )?;
                        finish(st, pending, false);
                    }
                    continue;
                }
            };
        if high < st.range.end {
            let detail = format!(
                "Partition {}'s offset was changed: the planned range ends at {} but the partition now ends at {high} (topic deleted and recreated?)",
                location(&st.range),
                st.range.end
            );
            loss(
                s,
                events,
                DataLossEvent::new(
                    DataLossKind::PartitionRecreated,
                    location(&st.range),
                    detail,
                )
                .with_positions(st.range.end, high),
            )?;
            finish(st, pending, false);
        } else if low >= st.range.end {
            let kind = if st.first {
                DataLossKind::OffsetOutOfRange
            } else {
                DataLossKind::OffsetGap
            };
            let detail = format!(
                "Cannot fetch records in [{}, {}): the earliest available offset is {low}",
                st.next, st.range.end
            );
            loss(
                s,
                events,
                DataLossEvent::new(kind, location(&st.range), detail).with_positions(st.next, low),
            )?;
            finish(st, pending, false);
        } else if let Some(Offset::Offset(o)) = position
            .as_ref()
            .and_then(|p| p.find_partition(&st.range.topic, st.range.partition))
            .map(|e| e.offset())
        {
            if o >= st.range.end {
                finish(st, pending, true);
            }
        }
    }
    Ok(())
}

fn read_error(r: &OffsetRange, what: &str, e: KafkaError) -> Error {
    Error::new(
        ErrorCode::SourceRead,
        format!("{what} of {} failed: {e}", location(r)),
    )
    .with_context("topic", &r.topic)
    .with_context("partition", r.partition)
}
