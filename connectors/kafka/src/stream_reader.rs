//! The streaming read of real-time mode: one reader thread per partition, all at once.
//!
//! Each reader assigns its one partition at the batch's start offset on its own consumer (no
//! group subscription, as for range reads), polls, and sends what it has as soon as the broker
//! stops handing records — a chunk is at most [`CHUNK_ROWS`] records, so latency is one poll,
//! not a batch size. The chunk's position is the offset after its last record. A full queue
//! blocks the reader (back-pressure); a closed queue stops it.
//!
//! A discovery task lists the subscription's partitions every [`DISCOVERY_INTERVAL`] and starts
//! a reader at the earliest offset of each partition that appeared (a new partition of a topic,
//! a new topic matching `subscribePattern`), as the micro-batch planner does.
//!
//! Data loss while streaming: with `failOnDataLoss=true` an offset out of range is an error
//! (`auto.offset.reset=error`); with `false` the reader continues from the earliest offset.
//! Gaps inside a partition are not checked here; a replayed range goes through the range
//! reader, which checks them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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

/// Most records in one chunk.
pub(crate) const CHUNK_ROWS: usize = 4096;
/// How often the subscription's partitions are listed while streaming.
pub(crate) const DISCOVERY_INTERVAL: Duration = Duration::from_secs(5);
/// How long one poll waits for a first record.
const POLL: Duration = Duration::from_millis(50);

/// What every reader of one long batch shares.
#[derive(Clone)]
struct ReaderSettings {
    profile: Arc<ConnectionProfile>,
    schema: SchemaRef,
    include_headers: bool,
    fail_on_data_loss: bool,
    group_id: String,
    queue: ChunkSender,
    stop: Arc<AtomicBool>,
}

/// The readers of one long batch.
pub(crate) struct StreamReaders {
    settings: ReaderSettings,
    started: Arc<Mutex<BTreeSet<(String, i32)>>>,
    threads: Arc<Mutex<Vec<std::thread::JoinHandle<()>>>>,
    discovery: Option<tokio::task::JoinHandle<()>>,
}

/// The partition key of a chunk (`topic/partition`).
fn key(topic: &str, partition: i32) -> String {
    format!("{topic}/{partition}")
}

impl StreamReaders {
    /// Starts a reader for every partition of `start` and the discovery task.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        profile: Arc<ConnectionProfile>,
        admin: Arc<Admin>,
        subscription: Subscription,
        schema: SchemaRef,
        include_headers: bool,
        fail_on_data_loss: bool,
        group_id: String,
        start: &PartitionOffsets,
        queue: ChunkSender,
    ) -> Result<StreamReaders> {
        let settings = ReaderSettings {
            profile,
            schema,
            include_headers,
            fail_on_data_loss,
            group_id,
            queue,
            stop: Arc::new(AtomicBool::new(false)),
        };
        let mut readers = StreamReaders {
            settings,
            started: Arc::new(Mutex::new(BTreeSet::new())),
            threads: Arc::new(Mutex::new(Vec::new())),
            discovery: None,
        };
        for (t, p, o) in start.iter() {
            spawn_reader(
                &readers.settings,
                &readers.started,
                &readers.threads,
                t,
                p,
                o,
            )?;
        }
        let (settings, started, threads) = (
            readers.settings.clone(),
            readers.started.clone(),
            readers.threads.clone(),
        );
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
                    let known = started
                        .lock()
                        .map(|s| s.contains(&(t.to_string(), p)))
                        .unwrap_or(true);
                    if !known {
                        tracing::info!(
                            topic = t,
                            partition = p,
                            offset = l,
                            "new partition: reading it from its earliest offset"
                        );
                        if let Err(e) = spawn_reader(&settings, &started, &threads, t, p, l) {
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

    /// Stops every reader and waits for them (they finish the poll in hand).
    pub(crate) async fn stop(mut self) -> Result<()> {
        self.settings.stop.store(true, Ordering::SeqCst);
        if let Some(d) = self.discovery.take() {
            d.abort();
        }
        let threads = std::mem::take(
            &mut *self
                .threads
                .lock()
                .map_err(|_| Error::new(ErrorCode::Internal, "a Kafka stream reader panicked"))?,
        );
        tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
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

fn spawn_reader(
    settings: &ReaderSettings,
    started: &Mutex<BTreeSet<(String, i32)>>,
    threads: &Mutex<Vec<std::thread::JoinHandle<()>>>,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<()> {
    let poisoned = || Error::new(ErrorCode::Internal, "a Kafka stream reader panicked");
    if !started
        .lock()
        .map_err(|_| poisoned())?
        .insert((topic.to_string(), partition))
    {
        return Ok(());
    }
    let reset = if settings.fail_on_data_loss {
        "error"
    } else {
        "earliest"
    };
    let consumer = create_consumer(
        &settings.profile,
        &[
            ("group.id", settings.group_id.as_str()),
            ("enable.auto.commit", "false"),
            ("enable.auto.offset.store", "false"),
            ("auto.offset.reset", reset),
            ("fetch.wait.max.ms", "10"),
            ("fetch.queue.backoff.ms", "1"),
        ],
    )?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, KafkaOffset::Offset(offset))
        .map_err(|e| Error::new(ErrorCode::Internal, "bad partition list").with_cause(e))?;
    consumer.assign(&tpl).map_err(|e| {
        Error::new(ErrorCode::SourceRead, "cannot assign a Kafka partition").with_cause(e)
    })?;
    let settings = settings.clone();
    let (t, p) = (topic.to_string(), partition);
    let handle = std::thread::Builder::new()
        .name(format!("kafka-rt-{t}-{p}"))
        .spawn(move || read_partition(consumer, settings, t, p))
        .map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot start a reader thread").with_cause(e)
        })?;
    threads.lock().map_err(|_| poisoned())?.push(handle);
    Ok(())
}

/// Unix microseconds now.
fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// One partition's reader loop (a dedicated thread).
fn read_partition(
    consumer: BaseConsumer<KafkaContext>,
    s: ReaderSettings,
    topic: String,
    partition: i32,
) {
    let partition_key = key(&topic, partition);
    while !s.stop.load(Ordering::SeqCst) && !s.queue.is_closed() {
        let first = match consumer.poll(POLL) {
            None => continue,
            Some(m) => m,
        };
        let mut acc = Accum::new(&topic, partition, s.include_headers);
        let mut times = Vec::new();
        let mut next = 0i64;
        let mut failure = None;
        let mut msg = Some(first);
        while let Some(m) = msg.take() {
            match m {
                Ok(m) => {
                    acc.append(&m, s.include_headers);
                    times.push(match m.timestamp() {
                        Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) => t,
                        Timestamp::NotAvailable => 0,
                    });
                    next = m.offset() + 1;
                }
                Err(e) => {
                    failure = Some(
                        Error::new(
                            ErrorCode::SourceRead,
                            format!("reading {topic}-{partition} failed: {e}"),
                        )
                        .with_context("topic", &topic)
                        .with_context("partition", partition),
                    );
                    break;
                }
            }
            if acc.rows() >= CHUNK_ROWS {
                break;
            }
            msg = consumer.poll(Duration::ZERO);
        }
        let read_at_us = now_us();
        if acc.rows() > 0 {
            let chunk = acc.flush(&s.schema).map(|()| {
                // At most CHUNK_ROWS rows: one flush, one batch.
                let batch = acc
                    .batches
                    .pop()
                    .unwrap_or_else(|| arrow_array::RecordBatch::new_empty(s.schema.clone()));
                StreamChunk {
                    batch,
                    partition: partition_key.clone(),
                    position: serde_json::json!({"topic": topic, "partition": partition, "next": next}),
                    read_at_us,
                    appended_ms: times.clone(),
                    created_ms: times,
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
