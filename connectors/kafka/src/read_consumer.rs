//! [`ReadConsumer`]: a pooled range-read consumer that stays positioned between reads, so what
//! librdkafka fetched beyond one batch's end is the next batch's start instead of being dropped
//! and fetched again (Spark's `KafkaDataConsumer` keeps its fetched data for the same reason).
//!
//! Every partition it reads has its own queue (`split_partition_queue`, made before the
//! partition is assigned, so no message of it ever reaches the consumer's main queue). A range
//! read stops taking from a partition's queue at the range's end and leaves the partition
//! assigned and fetching: librdkafka keeps up to `queued.max.messages.kbytes` of it (per
//! partition with separate queues). The next read of a range starting where the last one ended
//! continues from the queue; a range starting anywhere else is sought to, and a partition the
//! read does not name is unassigned, dropping what was fetched of it.
//!
//! A partition caught up with its end when the source plans the next batch is paused
//! ([`ReadConsumer::pause_caught_up`]): its queue is empty, and an idle stream's consumers would
//! otherwise keep polling the broker. Its next read resumes it.
//!
//! A partition's queue continues at a known offset only when its last range ended cleanly: its
//! last record taken was the range's last offset, or the fetcher's position passed the range's
//! end (trailing transaction markers). A range that ended any other way (a record past the end
//! taken across a gap, a data-loss event) is sought to again.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use tributary_sdk::{Error, ErrorCode, Result};

use crate::client::KafkaContext;
use crate::planner::OffsetRange;

/// One partition's queue of a [`ReadConsumer`].
pub(crate) type PartitionQueue = rdkafka::consumer::base_consumer::PartitionQueue<KafkaContext>;

/// A consumer (assign and seek, no group membership) and the partitions it holds.
pub(crate) struct ReadConsumer {
    consumer: Arc<BaseConsumer<KafkaContext>>,
    /// The assigned partitions.
    assigned: HashMap<(String, i32), Held>,
    /// Each partition queue's limit in KiB it was made with (`None`: as configured).
    queue_kbytes: Option<usize>,
}

/// An assigned partition.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    /// The offset its queue continues at (`None`: unknown, a read seeks it).
    at: Option<i64>,
    /// Paused: caught up with the partition's end, so nothing is queued and nothing fetched.
    paused: bool,
}

fn assignment_error(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(
        ErrorCode::SourceRead,
        format!("cannot {what} Kafka partitions"),
    )
    .with_cause(e)
}

impl ReadConsumer {
    pub(crate) fn new(consumer: BaseConsumer<KafkaContext>, queue_kbytes: Option<usize>) -> Self {
        ReadConsumer {
            consumer: Arc::new(consumer),
            assigned: HashMap::new(),
            queue_kbytes,
        }
    }

    /// Each partition queue's limit in KiB (`None`: as configured).
    pub(crate) fn queue_kbytes(&self) -> Option<usize> {
        self.queue_kbytes
    }

    pub(crate) fn consumer(&self) -> &BaseConsumer<KafkaContext> {
        &self.consumer
    }

    /// How many of `ranges` would continue from this consumer's queues.
    pub(crate) fn continues(&self, ranges: &[OffsetRange]) -> usize {
        ranges
            .iter()
            .filter(|r| {
                self.assigned
                    .get(&(r.topic.clone(), r.partition))
                    .is_some_and(|h| h.at == Some(r.start))
            })
            .count()
    }

    /// Makes the consumer hold exactly the partitions of `ranges` (distinct partitions), each
    /// positioned at its range's start, and returns their queues in the order of `ranges`.
    /// Partitions already there continue from their queues; the rest are sought or assigned;
    /// the partitions `ranges` does not name are unassigned.
    pub(crate) fn position(
        &mut self,
        ranges: &[OffsetRange],
        timeout: Duration,
    ) -> Result<Vec<PartitionQueue>> {
        let key = |r: &OffsetRange| (r.topic.clone(), r.partition);
        let (mut gone, mut gone_paused) = (TopicPartitionList::new(), TopicPartitionList::new());
        for ((t, p), h) in &self.assigned {
            if !ranges.iter().any(|r| r.topic == *t && r.partition == *p) {
                gone.add_partition(t, *p);
                if h.paused {
                    gone_paused.add_partition(t, *p);
                }
            }
        }
        // A pause outlives the assignment in librdkafka (the partition's application-pause
        // flag): resumed first, or a later assignment of the partition would never fetch.
        if gone_paused.count() > 0 {
            self.consumer
                .resume(&gone_paused)
                .map_err(|e| assignment_error("resume", e))?;
        }
        if gone.count() > 0 {
            self.consumer
                .incremental_unassign(&gone)
                .map_err(|e| assignment_error("unassign", e))?;
            self.assigned
                .retain(|(t, p), _| ranges.iter().any(|r| r.topic == *t && r.partition == *p));
        }
        // Queues first: a partition split before it is assigned never forwards a message to
        // the main queue (librdkafka keeps an application-set forward at fetch start).
        let queues = ranges
            .iter()
            .map(|r| {
                self.consumer
                    .split_partition_queue(&r.topic, r.partition)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorCode::SourceRead,
                            format!(
                                "cannot open the queue of Kafka partition {}-{}",
                                r.topic, r.partition
                            ),
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        // paused partitions fetch again from where they stopped (the application's position)
        let mut paused = TopicPartitionList::new();
        for r in ranges {
            if let Some(h) = self.assigned.get_mut(&key(r)).filter(|h| h.paused) {
                paused.add_partition(&r.topic, r.partition);
                h.paused = false;
            }
        }
        if paused.count() > 0 {
            self.consumer
                .resume(&paused)
                .map_err(|e| assignment_error("resume", e))?;
        }
        let mut new = TopicPartitionList::new();
        for r in ranges {
            match self.assigned.get(&key(r)) {
                Some(h) if h.at == Some(r.start) => {}
                Some(_) => {
                    self.consumer
                        .seek(&r.topic, r.partition, Offset::Offset(r.start), timeout)
                        .map_err(|e| assignment_error("seek", e))?;
                }
                None => {
                    new.add_partition_offset(&r.topic, r.partition, Offset::Offset(r.start))
                        .map_err(|e| {
                            Error::new(ErrorCode::Internal, "bad partition list").with_cause(e)
                        })?;
                }
            }
        }
        if new.count() > 0 {
            self.consumer
                .incremental_assign(&new)
                .map_err(|e| assignment_error("assign", e))?;
        }
        // unknown until each range ends cleanly
        for r in ranges {
            self.assigned.insert(key(r), Held::default());
        }
        Ok(queues)
    }

    /// `range` ended cleanly: its partition's queue continues at the range's end.
    pub(crate) fn ended_at(&mut self, range: &OffsetRange) {
        self.assigned.insert(
            (range.topic.clone(), range.partition),
            Held {
                at: Some(range.end),
                paused: false,
            },
        );
    }

    /// Pauses the partitions whose queue continues at `end` (the partition's end offset): they
    /// have nothing queued, and fetching on would only poll the broker while the stream idles.
    /// A paused partition's next read resumes it where it stopped.
    pub(crate) fn pause_caught_up(&mut self, end: impl Fn(&str, i32) -> Option<i64>) {
        let mut caught_up = TopicPartitionList::new();
        for ((t, p), h) in &self.assigned {
            if !h.paused && h.at.is_some() && h.at == end(t, *p) {
                caught_up.add_partition(t, *p);
            }
        }
        if caught_up.count() == 0 {
            return;
        }
        match self.consumer.pause(&caught_up) {
            Ok(()) => {
                for e in caught_up.elements() {
                    if let Some(h) = self
                        .assigned
                        .get_mut(&(e.topic().to_string(), e.partition()))
                    {
                        h.paused = true;
                    }
                }
            }
            Err(e) => tracing::debug!("pausing caught-up Kafka partitions failed: {e}"),
        }
    }
}

/// Wakes a read waiting on several partition queues: each queue's non-empty callback bumps a
/// generation, and the reader sleeps only while the generation is the one it saw before it last
/// found every queue empty (so no wake-up is lost between the check and the wait).
#[derive(Default)]
pub(crate) struct Wake {
    generation: Mutex<u64>,
    changed: Condvar,
}

impl Wake {
    /// Calls [`Wake::bump`] whenever `queue` becomes non-empty.
    pub(crate) fn watch(self: &Arc<Self>, queue: &mut PartitionQueue) {
        let wake = Arc::clone(self);
        queue.set_nonempty_callback(move || wake.bump());
    }

    fn bump(&self) {
        let mut g = self.generation.lock().unwrap_or_else(|p| p.into_inner());
        *g = g.wrapping_add(1);
        self.changed.notify_all();
    }

    /// The current generation.
    pub(crate) fn seen(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the generation differs from `seen`, or `timeout`.
    pub(crate) fn wait(&self, seen: u64, timeout: Duration) {
        let g = self.generation.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self
            .changed
            .wait_timeout_while(g, timeout, |g| *g == seen)
            .map_err(|p| p.into_inner());
    }
}
