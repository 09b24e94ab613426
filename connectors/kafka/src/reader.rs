//! Deterministic range reads: exactly the records in `[start, end)` of each partition, as Arrow.
//!
//! A read assigns each partition at its start offset (no group subscription) on a pooled
//! consumer, polls until every range reached its end, and builds one Arrow batch per 64 Ki
//! records of a range. Ranges split by `minPartitions` / `maxRecordsPerPartition` are read by
//! several consumers in parallel. Batches come back ordered by topic, partition and offset, so
//! the same range always yields the same batches.
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
use arrow_schema::SchemaRef;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tributary_sdk::{DataLossEvent, DataLossKind, Error, ErrorCode, Result};

use crate::batch_builder::Accum;
use crate::client::{create_consumer, KafkaContext};
use crate::connection::ConnectionProfile;
use crate::planner::{group_into_tasks, OffsetRange};

/// Rows per Arrow batch.
const BATCH_ROWS: usize = 64 * 1024;
/// Most consumers reading one batch in parallel.
const MAX_PARALLEL: usize = 8;
/// Without records for this long, unfinished ranges are checked against the broker.
const IDLE_CHECK: Duration = Duration::from_secs(1);
/// librdkafka (>= 2.4) waits `fetch.queue.backoff.ms` (default 1 s) before fetching a partition
/// again once its prefetch queue passed its thresholds. A range read drains its queue at once, and
/// with the default it sat idle most of the time (5x slower than a raw consumer on the in-process
/// mock cluster: benches/throughput.rs). Used unless `kafka.fetch.queue.backoff.ms` is set.
const FETCH_QUEUE_BACKOFF_MS: &str = "10";

/// How a read behaves.
#[derive(Debug, Clone)]
pub(crate) struct ReadSettings {
    pub schema: SchemaRef,
    pub include_headers: bool,
    pub fail_on_data_loss: bool,
    pub poll_timeout: Duration,
    pub request_timeout: Duration,
    pub group_id: String,
}

/// What a read returns.
#[derive(Debug, Default)]
pub(crate) struct ReadOutput {
    pub batches: Vec<RecordBatch>,
    pub records: u64,
    pub bytes: u64,
    /// Data-loss events let pass (failOnDataLoss=false).
    pub events: Vec<DataLossEvent>,
}

/// The pieces one consumer read and the data-loss events it let pass.
type TaskOutput = (Vec<(OffsetRange, Accum)>, Vec<DataLossEvent>);

/// A pool of consumers used for range reads.
pub(crate) struct RangeReader {
    profile: Arc<ConnectionProfile>,
    consumers: Vec<BaseConsumer<KafkaContext>>,
}

impl RangeReader {
    pub(crate) fn new(profile: Arc<ConnectionProfile>) -> Self {
        RangeReader {
            profile,
            consumers: Vec::new(),
        }
    }

    /// Reads the ranges (already split); blocking.
    pub(crate) fn read(
        &mut self,
        ranges: Vec<OffsetRange>,
        s: &ReadSettings,
    ) -> Result<ReadOutput> {
        let tasks = group_into_tasks(ranges.into_iter().filter(|r| r.end > r.start).collect());
        if tasks.is_empty() {
            return Ok(ReadOutput::default());
        }
        let parallel = tasks.len().min(MAX_PARALLEL);
        let mut extra = vec![
            ("group.id", s.group_id.as_str()),
            ("enable.auto.commit", "false"),
            ("enable.auto.offset.store", "false"),
            ("enable.partition.eof", "true"),
            ("auto.offset.reset", "earliest"),
        ];
        if self.consumers.len() < parallel
            && self
                .profile
                .client_config()
                .get("fetch.queue.backoff.ms")
                .is_none()
        {
            extra.push(("fetch.queue.backoff.ms", FETCH_QUEUE_BACKOFF_MS));
        }
        while self.consumers.len() < parallel {
            let c = create_consumer(&self.profile, &extra)?;
            self.consumers.push(c);
        }
        let mut pieces: Vec<(OffsetRange, Accum)> = Vec::new();
        let mut events = Vec::new();
        if parallel == 1 {
            for task in tasks {
                let (p, e) = read_task(&self.consumers[0], task, s)?;
                pieces.extend(p);
                events.extend(e);
            }
        } else {
            let mut buckets: Vec<Vec<Vec<OffsetRange>>> =
                (0..parallel).map(|_| Vec::new()).collect();
            for (i, t) in tasks.into_iter().enumerate() {
                buckets[i % parallel].push(t);
            }
            let results: Vec<Result<TaskOutput>> = std::thread::scope(|scope| {
                let handles: Vec<_> = buckets
                    .into_iter()
                    .zip(self.consumers.iter())
                    .map(|(bucket, consumer)| {
                        scope.spawn(move || {
                            let mut out = (Vec::new(), Vec::new());
                            for task in bucket {
                                let (p, e) = read_task(consumer, task, s)?;
                                out.0.extend(p);
                                out.1.extend(e);
                            }
                            Ok(out)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::new(
                                ErrorCode::Internal,
                                "a Kafka read thread panicked",
                            ))
                        })
                    })
                    .collect()
            });
            for r in results {
                let (p, e) = r?;
                pieces.extend(p);
                events.extend(e);
            }
        }
        pieces.sort_by(|a, b| {
            (a.0.topic.as_str(), a.0.partition, a.0.start).cmp(&(
                b.0.topic.as_str(),
                b.0.partition,
                b.0.start,
            ))
        });
        let mut out = ReadOutput {
            events,
            ..Default::default()
        };
        for (_, acc) in pieces {
            out.records += acc.records;
            out.bytes += acc.bytes;
            out.batches.extend(acc.batches);
        }
        Ok(out)
    }
}

struct RangeState {
    range: OffsetRange,
    next: i64,
    first: bool,
    done: bool,
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

fn read_task(
    consumer: &BaseConsumer<KafkaContext>,
    task: Vec<OffsetRange>,
    s: &ReadSettings,
) -> Result<TaskOutput> {
    let mut states: Vec<RangeState> = task
        .into_iter()
        .map(|r| RangeState {
            acc: Accum::new(&r.topic, r.partition, s.include_headers),
            next: r.start,
            first: true,
            done: false,
            range: r,
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
    let result = poll_ranges(consumer, &mut states, s);
    let _ = consumer.resume(&tpl);
    let _ = consumer.unassign();
    let events = result?;
    let mut out = Vec::with_capacity(states.len());
    for mut st in states {
        st.acc.flush(&s.schema)?;
        out.push((st.range, st.acc));
    }
    Ok((out, events))
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
) -> Result<Vec<DataLossEvent>> {
    let mut events = Vec::new();
    let mut pending = states.len();
    let mut last_progress = Instant::now();
    let mut last_check = Instant::now();
    while pending > 0 {
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
                last_progress = Instant::now();
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
                st.acc.append(&msg, s.include_headers);
                st.next = off + 1;
                if st.acc.rows() >= BATCH_ROWS {
                    st.acc.flush(&s.schema)?;
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
        let idle = last_progress.elapsed();
        if pending > 0 && idle >= IDLE_CHECK && last_check.elapsed() >= IDLE_CHECK {
            last_check = Instant::now();
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
