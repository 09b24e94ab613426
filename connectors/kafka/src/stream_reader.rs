//! The streaming read of real-time mode: reader threads that poll their partitions and hand on
//! records as they arrive.
//!
//! By default one reader (one consumer) polls every partition, as a plain rdkafka relay does:
//! librdkafka fetches all of a consumer's partitions led by a broker in one request, so the
//! broker serves one fetch stream whatever the partition count. One consumer per partition
//! (Spark's one task per partition) multiplied the broker's work by the partition count: on
//! tansu, a 4-partition topic at 1,000 records/s took the broker to a whole core and the
//! pipeline fell behind. With `maxPartitions` (Databricks' real-time option: the number of
//! tasks reading Kafka) there are that many readers (at most one per partition), partition `k`
//! of the start going to reader `k mod maxPartitions`, for record decoding on several threads
//! when one cannot keep up. A reader
//! assigns its partitions at the batch's start offsets on its own consumer (no group
//! subscription, as for range reads), polls, and sends what it has as soon as the broker stops
//! handing records, one chunk per partition — a chunk is at most [`CHUNK_ROWS`] records (or
//! `kafka.max.poll.records`), so latency is one poll, not a batch size. A chunk's position is
//! the offset after its last record. A full queue blocks the reader (back-pressure); a closed
//! queue stops it.
//!
//! A discovery task lists the subscription's partitions every [`DISCOVERY_INTERVAL`] and starts
//! reading each partition that appeared (a new partition of a topic, a new topic matching
//! `subscribePattern`) at its earliest offset, as the micro-batch planner does: on a reader of
//! its own while fewer readers than the limit run, otherwise on the reader with the fewest
//! partitions.
//!
//! Data loss while streaming: with `failOnDataLoss=true` an offset out of range is an error
//! (`auto.offset.reset=error`); with `false` the reader continues from the earliest offset.
//! Gaps inside a partition are not checked here; a replayed range goes through the range
//! reader, which checks them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::Duration;

use arrow_schema::SchemaRef;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset as KafkaOffset, Timestamp, TopicPartitionList};
use tributary_sdk::{ChunkSender, Error, ErrorCode, Offset, Result, StreamChunk};

use crate::batch_builder::Accum;
use crate::client::{create_consumer, Admin, KafkaContext};
use crate::config::Subscription;
use crate::connection::ConnectionProfile;
use crate::offsets::PartitionOffsets;

/// Most records in one chunk (unless `kafka.max.poll.records` says otherwise).
pub(crate) const CHUNK_ROWS: usize = 4096;
/// How often the subscription's partitions are listed while streaming.
pub(crate) const DISCOVERY_INTERVAL: Duration = Duration::from_secs(5);
/// How long one poll waits for a first record.
const POLL: Duration = Duration::from_millis(50);
/// The broker's longest wait for data in a fetch, for latency (unless
/// `kafka.fetch.max.wait.ms` / `kafka.fetch.wait.max.ms` is given).
const FETCH_WAIT_MAX_MS: &str = "10";
/// librdkafka's wait before fetching again a partition whose queue passed its thresholds
/// (unless `kafka.fetch.queue.backoff.ms` is given).
const FETCH_QUEUE_BACKOFF_MS: &str = "1";

/// How the readers of one long batch read (from the source's options).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamOptions {
    pub include_headers: bool,
    pub fail_on_data_loss: bool,
    /// Most records in one chunk.
    pub chunk_rows: usize,
    /// `maxPartitions`: the most readers (consumers); `None`, one for every partition.
    pub max_readers: Option<usize>,
}

impl StreamOptions {
    /// The most readers (consumers) of one long batch.
    fn reader_limit(&self) -> usize {
        self.max_readers.unwrap_or(1).max(1)
    }
}

/// What every reader of one long batch shares.
#[derive(Clone)]
struct ReaderSettings {
    profile: Arc<ConnectionProfile>,
    schema: SchemaRef,
    options: StreamOptions,
    group_id: String,
    queue: ChunkSender,
    stop: Arc<AtomicBool>,
}

/// A running reader: where to send partitions to add, and how many it reads.
struct ReaderHandle {
    add: std_mpsc::Sender<(String, i32, i64)>,
    partitions: usize,
    thread: std::thread::JoinHandle<()>,
}

/// The partitions being read and their readers.
#[derive(Default)]
struct Readers {
    started: BTreeSet<(String, i32)>,
    handles: Vec<ReaderHandle>,
}

/// The readers of one long batch.
pub(crate) struct StreamReaders {
    settings: ReaderSettings,
    readers: Arc<Mutex<Readers>>,
    discovery: Option<tokio::task::JoinHandle<()>>,
}

/// The partition key of a chunk (`topic/partition`).
fn key(topic: &str, partition: i32) -> String {
    format!("{topic}/{partition}")
}

fn poisoned() -> Error {
    Error::new(ErrorCode::Internal, "a Kafka stream reader panicked")
}

impl StreamReaders {
    /// Starts the readers of every partition of `start` and the discovery task.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        profile: Arc<ConnectionProfile>,
        admin: Arc<Admin>,
        subscription: Subscription,
        schema: SchemaRef,
        options: StreamOptions,
        group_id: String,
        start: &PartitionOffsets,
        queue: ChunkSender,
    ) -> Result<StreamReaders> {
        let settings = ReaderSettings {
            profile,
            schema,
            options,
            group_id,
            queue,
            stop: Arc::new(AtomicBool::new(false)),
        };
        let mut readers = StreamReaders {
            settings,
            readers: Arc::new(Mutex::new(Readers::default())),
            discovery: None,
        };
        let all: Vec<(String, i32, i64)> = start
            .iter()
            .map(|(t, p, o)| (t.to_string(), p, o))
            .collect();
        let groups = options.reader_limit().min(all.len());
        let mut grouped: Vec<Vec<(String, i32, i64)>> = (0..groups).map(|_| Vec::new()).collect();
        for (k, tpo) in all.into_iter().enumerate() {
            grouped[k % groups.max(1)].push(tpo);
        }
        {
            let mut r = readers.readers.lock().map_err(|_| poisoned())?;
            for group in grouped {
                spawn_reader(&readers.settings, &mut r, group)?;
            }
        }
        let (settings, shared) = (readers.settings.clone(), readers.readers.clone());
        let discovery = tokio::spawn(async move {
            loop {
                tokio::time::sleep(DISCOVERY_INTERVAL).await;
                if settings.stop.load(Ordering::SeqCst) {
                    return;
                }
                let (admin, sub) = (admin.clone(), subscription.clone());
                let listed = tokio::task::spawn_blocking(move || {
                    let parts = admin.partitions(&sub)?;
                    admin.watermarks(&parts)
                })
                .await;
                let (low, _) = match listed {
                    Ok(Ok(w)) => w,
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "listing Kafka partitions while streaming failed; retrying");
                        continue;
                    }
                    Err(_) => return,
                };
                for (t, p, l) in low.iter() {
                    let added = match shared.lock() {
                        Ok(mut r) => add_partition(&settings, &mut r, t, p, l),
                        Err(_) => Err(poisoned()),
                    };
                    match added {
                        Ok(true) => tracing::info!(
                            topic = t,
                            partition = p,
                            offset = l,
                            "new partition: reading it from its earliest offset"
                        ),
                        Ok(false) => {}
                        Err(e) => {
                            settings.queue.send(Err(e)).await;
                            return;
                        }
                    }
                }
            }
        });
        readers.discovery = Some(discovery);
        Ok(readers)
    }

    /// The number of reader threads (consumers) running.
    #[cfg(test)]
    pub(crate) fn reader_count(&self) -> usize {
        self.readers.lock().map_or(0, |r| r.handles.len())
    }

    /// Stops every reader and waits for them (they finish the poll in hand).
    pub(crate) async fn stop(mut self) -> Result<()> {
        self.settings.stop.store(true, Ordering::SeqCst);
        if let Some(d) = self.discovery.take() {
            d.abort();
        }
        let handles = std::mem::take(&mut self.readers.lock().map_err(|_| poisoned())?.handles);
        tokio::task::spawn_blocking(move || {
            for h in handles {
                drop(h.add);
                let _ = h.thread.join();
            }
        })
        .await
        .map_err(|e| {
            Error::new(ErrorCode::Internal, "stopping Kafka stream readers failed").with_cause(e)
        })
    }
}

impl Drop for StreamReaders {
    fn drop(&mut self) {
        self.settings.stop.store(true, Ordering::SeqCst);
        if let Some(d) = self.discovery.take() {
            d.abort();
        }
    }
}

/// Starts reading a partition that appeared; false when it is read already.
fn add_partition(
    settings: &ReaderSettings,
    readers: &mut Readers,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<bool> {
    if readers.started.contains(&(topic.to_string(), partition)) {
        return Ok(false);
    }
    let full = readers.handles.len() >= settings.options.reader_limit();
    let least = readers
        .handles
        .iter_mut()
        .enumerate()
        .min_by_key(|(_, h)| h.partitions)
        .map(|(i, _)| i);
    match (full, least) {
        (true, Some(i)) => {
            let h = &mut readers.handles[i];
            if h.add.send((topic.to_string(), partition, offset)).is_err() {
                // The reader ended (it sent its error or the queue closed): nothing to add to.
                return Ok(false);
            }
            h.partitions += 1;
            readers.started.insert((topic.to_string(), partition));
        }
        _ => spawn_reader(
            settings,
            readers,
            vec![(topic.to_string(), partition, offset)],
        )?,
    }
    Ok(true)
}

/// A consumer assigned to `partitions` at their offsets, and a thread polling it.
fn spawn_reader(
    settings: &ReaderSettings,
    readers: &mut Readers,
    partitions: Vec<(String, i32, i64)>,
) -> Result<()> {
    if partitions.is_empty() {
        return Ok(());
    }
    let reset = if settings.options.fail_on_data_loss {
        "error"
    } else {
        "earliest"
    };
    let mut extra = vec![
        ("group.id", settings.group_id.as_str()),
        ("enable.auto.commit", "false"),
        ("enable.auto.offset.store", "false"),
        ("auto.offset.reset", reset),
    ];
    let config = settings.profile.client_config();
    if config.get("fetch.wait.max.ms").is_none() {
        extra.push(("fetch.wait.max.ms", FETCH_WAIT_MAX_MS));
    }
    if config.get("fetch.queue.backoff.ms").is_none() {
        extra.push(("fetch.queue.backoff.ms", FETCH_QUEUE_BACKOFF_MS));
    }
    let consumer = create_consumer(&settings.profile, &extra)?;
    let mut tpl = TopicPartitionList::new();
    for (t, p, o) in &partitions {
        tpl.add_partition_offset(t, *p, KafkaOffset::Offset(*o))
            .map_err(|e| Error::new(ErrorCode::Internal, "bad partition list").with_cause(e))?;
    }
    consumer.assign(&tpl).map_err(|e| {
        Error::new(ErrorCode::SourceRead, "cannot assign Kafka partitions").with_cause(e)
    })?;
    let (add, additions) = std_mpsc::channel();
    let s = settings.clone();
    let name = match partitions.as_slice() {
        [(t, p, _)] => format!("kafka-rt-{t}-{p}"),
        more => format!("kafka-rt-{}-partitions", more.len()),
    };
    let count = partitions.len();
    let assigned: Vec<(String, i32)> = partitions.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
    for tp in &assigned {
        readers.started.insert(tp.clone());
    }
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || read_partitions(consumer, s, additions, assigned))
        .map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot start a reader thread").with_cause(e)
        })?;
    readers.handles.push(ReaderHandle {
        add,
        partitions: count,
        thread,
    });
    Ok(())
}

/// Unix microseconds now.
fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The records of one partition polled since the last chunk.
struct Pending {
    acc: Accum,
    times: Vec<i64>,
    next: i64,
}

/// One reader's loop (a dedicated thread): polls its partitions, one chunk per partition.
fn read_partitions(
    consumer: BaseConsumer<KafkaContext>,
    s: ReaderSettings,
    additions: std_mpsc::Receiver<(String, i32, i64)>,
    mut assigned: Vec<(String, i32)>,
) {
    let o = s.options;
    while !s.stop.load(Ordering::SeqCst) && !s.queue.is_closed() {
        let mut added = TopicPartitionList::new();
        while let Ok((t, p, off)) = additions.try_recv() {
            let _ = added.add_partition_offset(&t, p, KafkaOffset::Offset(off));
            assigned.push((t, p));
        }
        if added.count() > 0 {
            if let Err(e) = consumer.incremental_assign(&added) {
                s.queue.blocking_send(Err(Error::new(
                    ErrorCode::SourceRead,
                    "cannot add a new Kafka partition to a reader",
                )
                .with_cause(e)));
                return;
            }
        }
        let first = match consumer.poll(POLL) {
            None => continue,
            Some(m) => m,
        };
        let mut pending: BTreeMap<(String, i32), Pending> = BTreeMap::new();
        let mut failure = None;
        let mut msg = Some(first);
        while let Some(m) = msg.take() {
            match m {
                Ok(m) => {
                    let entry = pending
                        .entry((m.topic().to_string(), m.partition()))
                        .or_insert_with(|| Pending {
                            acc: Accum::new(m.topic(), m.partition(), o.include_headers),
                            times: Vec::new(),
                            next: 0,
                        });
                    entry.acc.append(&m, o.include_headers);
                    entry.times.push(match m.timestamp() {
                        Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) => t,
                        Timestamp::NotAvailable => 0,
                    });
                    entry.next = m.offset() + 1;
                    if entry.acc.rows() >= o.chunk_rows {
                        break;
                    }
                }
                Err(e) => {
                    // librdkafka's consumer error does not say which partition failed: a
                    // reader of one partition names it.
                    failure = Some(match assigned.as_slice() {
                        [(topic, partition)] => Error::new(
                            ErrorCode::SourceRead,
                            format!("reading {topic}-{partition} failed: {e}"),
                        )
                        .with_context("topic", topic)
                        .with_context("partition", *partition),
                        more => Error::new(
                            ErrorCode::SourceRead,
                            format!(
                                "reading one of {} partitions ({}) failed: {e}",
                                more.len(),
                                more.iter()
                                    .map(|(t, p)| format!("{t}-{p}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ),
                    });
                    break;
                }
            }
            msg = consumer.poll(Duration::ZERO);
        }
        let read_at_us = now_us();
        for ((topic, partition), mut p) in pending {
            let chunk = p.acc.flush(&s.schema).map(|()| {
                // At most chunk_rows rows: one flush, one batch.
                let batch = p
                    .acc
                    .batches
                    .pop()
                    .unwrap_or_else(|| arrow_array::RecordBatch::new_empty(s.schema.clone()));
                StreamChunk {
                    batch,
                    partition: key(&topic, partition),
                    position: serde_json::json!({"topic": topic, "partition": partition, "next": p.next}),
                    read_at_us,
                    appended_ms: p.times.clone(),
                    created_ms: p.times,
                }
            });
            if !s.queue.blocking_send(chunk) {
                return;
            }
        }
        if let Some(e) = failure {
            s.queue.blocking_send(Err(e));
            return;
        }
    }
}

/// `start` advanced by the delivered positions (`{"topic","partition","next"}` by partition).
pub(crate) fn end_offset(
    start: &Offset,
    delivered: &BTreeMap<String, serde_json::Value>,
) -> Result<Offset> {
    let mut end = PartitionOffsets::from_offset(start)?;
    for (k, v) in delivered {
        let bad = || {
            Error::new(
                ErrorCode::Internal,
                format!("a delivered Kafka position of '{k}' is malformed: {v}"),
            )
        };
        let topic = v.get("topic").and_then(|t| t.as_str()).ok_or_else(bad)?;
        let partition = v
            .get("partition")
            .and_then(|p| p.as_i64())
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(bad)?;
        let next = v.get("next").and_then(|n| n.as_i64()).ok_or_else(bad)?;
        end.set(topic, partition, next);
    }
    end.to_offset()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_offset_advances_delivered_partitions_and_adds_new_ones() {
        let mut start = PartitionOffsets::new();
        start.set("a", 0, 5);
        start.set("a", 1, 7);
        let start = start.to_offset().unwrap();
        let mut delivered = BTreeMap::new();
        delivered.insert(
            key("a", 0),
            serde_json::json!({"topic":"a","partition":0,"next":9}),
        );
        delivered.insert(
            key("a", 2),
            serde_json::json!({"topic":"a","partition":2,"next":3}),
        );
        let end = PartitionOffsets::from_offset(&end_offset(&start, &delivered).unwrap()).unwrap();
        assert_eq!(end.get("a", 0), Some(9));
        assert_eq!(end.get("a", 1), Some(7));
        assert_eq!(end.get("a", 2), Some(3));
        let mut bad = BTreeMap::new();
        bad.insert("x".to_string(), serde_json::json!({"topic": 1}));
        assert!(end_offset(&start, &bad).is_err());
    }
}
