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

use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tributary_sdk::{DataLossEvent, DataLossKind, Error, ErrorCode, Result};

use crate::batch_builder::Accum;
use crate::client::KafkaContext;
use crate::planner::OffsetRange;
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

/// Reads `ranges` (of distinct partitions) together with `consumer` (assign + seek, no
/// group), handing every closed part to `emit`, each range's parts in offset order. `emit`
/// returning `false` (nobody reads the parts any more) stops the read early.
pub(crate) fn read_ranges(
    consumer: &BaseConsumer<KafkaContext>,
    ranges: Vec<OffsetRange>,
    s: &ReadSettings,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<RangeSummary> {
    let part_bytes_limit = (PART_BYTES / ranges.len().max(1) as u64).max(MIN_PART_BYTES);
    let mut states: Vec<RangeState> = ranges
        .into_iter()
        .map(|range| RangeState {
            acc: Accum::new(&range.topic, range.partition, s.include_headers),
            next: range.start,
            first: true,
            done: false,
            part_bytes: 0,
            part_bytes_limit,
            range,
        })
        .collect();
    let mut tpl = TopicPartitionList::new();
    for st in &states {
        tpl.add_partition_offset(
            &st.range.topic,
            st.range.partition,
            Offset::Offset(st.range.start),
        )
        .map_err(|e| Error::new(ErrorCode::Internal, "bad partition list").with_cause(e))?;
    }
    consumer.assign(&tpl).map_err(|e| {
        Error::new(ErrorCode::SourceRead, "cannot assign Kafka partitions").with_cause(e)
    })?;
    let mut sink = PartSink { emit, open: true };
    let result = poll_ranges(consumer, &mut states, s, &mut sink);
    let _ = consumer.resume(&tpl);
    let _ = consumer.unassign();
    let events = result?;
    let mut summary = RangeSummary {
        events,
        ..Default::default()
    };
    for st in &mut states {
        sink.close_part(st, s)?;
        summary.records += st.acc.records;
        summary.bytes += st.acc.bytes;
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

fn finish(consumer: &BaseConsumer<KafkaContext>, st: &mut RangeState, pending: &mut usize) {
    if st.done {
        return;
    }
    st.done = true;
    *pending -= 1;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(&st.range.topic, st.range.partition);
    let _ = consumer.pause(&tpl);
}

fn poll_ranges(
    consumer: &BaseConsumer<KafkaContext>,
    states: &mut [RangeState],
    s: &ReadSettings,
    sink: &mut PartSink<'_>,
) -> Result<Vec<DataLossEvent>> {
    let mut events = Vec::new();
    let mut pending = states.len();
    // Idle time is measured from the first poll without progress: reading the clock for every
    // record cost a tenth of this thread's CPU (two clock reads per record).
    let mut quiet_since: Option<Instant> = None;
    let mut last_check = Instant::now();
    while pending > 0 {
        let mut progressed = false;
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(msg)) => {
                let Some(st) = states.iter_mut().find(|st| {
                    st.range.partition == msg.partition() && st.range.topic == msg.topic()
                }) else {
                    continue;
                };
                if st.done || msg.offset() < st.next {
                    continue;
                }
                progressed = true;
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
                            &mut events,
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
                    finish(consumer, st, &mut pending);
                    continue;
                }
                let before = st.acc.bytes;
                st.acc.append(&msg, s.include_headers);
                st.part_bytes += st.acc.bytes - before;
                st.next = off + 1;
                if st.acc.rows() >= s.part_rows || st.part_bytes >= st.part_bytes_limit {
                    sink.close_part(st, s)?;
                    if !sink.open {
                        return Ok(events);
                    }
                }
                if st.next >= st.range.end {
                    finish(consumer, st, &mut pending);
                }
            }
            Some(Err(KafkaError::PartitionEOF(p)))
                if states.iter().any(|st| !st.done && st.range.partition == p) =>
            {
                // The fetcher reached the end of partition p (of some topic): ranges whose
                // position already passed their end (trailing invisible offsets) are done.
                if let Ok(pos) = consumer.position() {
                    for st in states
                        .iter_mut()
                        .filter(|st| !st.done && st.range.partition == p)
                    {
                        if let Some(Offset::Offset(o)) =
                            pos.find_partition(&st.range.topic, p).map(|e| e.offset())
                        {
                            if o >= st.range.end {
                                finish(consumer, st, &mut pending);
                            }
                        }
                    }
                }
            }
            Some(Err(KafkaError::PartitionEOF(_))) => {}
            Some(Err(e)) => {
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
            }
            None => {}
        }
        if progressed {
            quiet_since = None;
            continue;
        }
        let now = Instant::now();
        let idle = now - *quiet_since.get_or_insert(now);
        if pending > 0 && idle >= IDLE_CHECK && now - last_check >= IDLE_CHECK {
            last_check = now;
            check_stalled(consumer, states, s, &mut pending, &mut events)?;
            if pending > 0 && idle >= s.poll_timeout {
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
    }
    Ok(events)
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
                        finish(consumer, st, pending);
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
            finish(consumer, st, pending);
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
            finish(consumer, st, pending);
        } else if let Some(Offset::Offset(o)) = position
            .as_ref()
            .and_then(|p| p.find_partition(&st.range.topic, st.range.partition))
            .map(|e| e.offset())
        {
            if o >= st.range.end {
                finish(consumer, st, pending);
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
