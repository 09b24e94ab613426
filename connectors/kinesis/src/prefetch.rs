//! Background read-ahead of the polling source, bounded by `fetchBufferSize`.
//!
//! As in the Databricks connector, shards are fetched in the background: one task per readable
//! shard keeps calling GetRecords (paced by `minFetchPeriod`, throttling handled by the
//! [`ShardReader`]) and appends the records to the shard's buffer while the runtime writes the
//! previous batch. Planning (`latest_offset`) takes the buffered records instead of fetching
//! them then.
//!
//! **What `fetchBufferSize` bounds.** One [`Budget`] per source counts the record bytes
//! (data + partition key) the source holds: records fetched ahead in every shard's buffer plus
//! the planned batch until `read` hands it out. A task starts a GetRecords call only while the
//! count is below `fetchBufferSize` and stops fetching pages once the room left is used, so the
//! count exceeds the bound by at most one GetRecords page per shard (at most
//! `maxRecordsPerFetch` records, 10 MiB on Kinesis). `prefetch.peakHeldBytes` in the source
//! metrics is the highest count seen, `prefetch.heldBytes` the count now.
//!
//! A buffer is keyed by the position it starts at: planning from another position (a replay,
//! a recreated stream) drops it and starts again there. The available-now trigger (records up
//! to a cut-off time) and enhanced fan-out do not read ahead this way.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use aws_sdk_kinesis::Client;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tributary_sdk::{Error, Result};

use crate::offsets::ShardPosition;
use crate::reader::{Fetched, FetchedRecord, ResumeGap, ShardReader, Stop};

/// Pause of a caught-up shard task when `minFetchPeriod` is shorter (no busy loop on an idle shard).
const IDLE_PAUSE: Duration = Duration::from_millis(50);

/// The bytes a record holds in memory, as the budget counts them.
pub(crate) fn record_bytes(r: &FetchedRecord) -> i64 {
    (r.data.len() + r.partition_key.len()) as i64
}

/// The memory bound shared by every shard task of a source.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: i64,
    held: AtomicI64,
    peak: AtomicI64,
    /// Signalled when bytes are released (tasks wait for room) and when a shard task
    /// buffered something or changed state (planning waits for data).
    changed: Notify,
}

impl Budget {
    fn new(limit: u64) -> Self {
        Budget {
            limit: limit.min(i64::MAX as u64) as i64,
            held: AtomicI64::new(0),
            peak: AtomicI64::new(0),
            changed: Notify::new(),
        }
    }

    fn add(&self, bytes: i64) {
        let now = self.held.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn release(&self, bytes: i64) {
        if bytes != 0 {
            self.held.fetch_sub(bytes, Ordering::SeqCst);
            self.changed.notify_waiters();
        }
    }

    fn room(&self) -> i64 {
        self.limit - self.held.load(Ordering::SeqCst)
    }

    async fn wait_for_room(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.room() > 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Bytes of a planned batch, released when the batch is handed out or dropped.
#[derive(Debug)]
pub(crate) struct Held {
    budget: Arc<Budget>,
    bytes: i64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// What a shard task left for the planner.
#[derive(Debug, Default)]
struct Buffered {
    records: VecDeque<FetchedRecord>,
    bytes: i64,
    /// The last call reported the shard's tip (MillisBehindLatest 0).
    caught_up: bool,
    finished: bool,
    not_found: bool,
    /// The resume check found the record the task started after trimmed.
    gap: Option<ResumeGap>,
    millis_behind: Option<i64>,
    throttled: u64,
    error: Option<Error>,
    /// The planner dropped this buffer: the task must not add to it.
    closed: bool,
}

impl Buffered {
    /// Planning need not wait longer for this shard.
    fn settled(&self) -> bool {
        !self.records.is_empty()
            || self.caught_up
            || self.finished
            || self.not_found
            || self.error.is_some()
    }
}

fn lock(m: &Mutex<Buffered>) -> MutexGuard<'_, Buffered> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One shard's read-ahead.
#[derive(Debug)]
struct ShardPrefetch {
    /// The position the buffer starts at (after the last record taken).
    next: ShardPosition,
    state: Arc<Mutex<Buffered>>,
    task: JoinHandle<()>,
    budget: Arc<Budget>,
}

impl Drop for ShardPrefetch {
    fn drop(&mut self) {
        self.task.abort();
        let mut st = lock(&self.state);
        st.closed = true;
        st.records.clear();
        self.budget.release(std::mem::take(&mut st.bytes));
    }
}

/// What one shard task needs.
struct Task {
    reader: ShardReader,
    client: Arc<Client>,
    from: ShardPosition,
    state: Arc<Mutex<Buffered>>,
    budget: Arc<Budget>,
    idle: Duration,
}

/// What a shard task does after storing a fetch.
enum Next {
    Again,
    Idle,
    Done,
}

impl Task {
    async fn run(mut self) {
        loop {
            self.budget.wait_for_room().await;
            let stop = Stop {
                records: Arc::new(AtomicI64::new(i64::MAX)),
                bytes: Arc::new(AtomicI64::new(self.budget.room())),
                deadline: None,
                until: None,
                arrival_cutoff: None,
                one_page: true,
            };
            let result = self.reader.fetch(&self.client, &self.from, &stop).await;
            match self.store(result) {
                Next::Again => {}
                Next::Idle => tokio::time::sleep(self.idle).await,
                Next::Done => return,
            }
        }
    }

    /// Appends a fetch to the buffer (no await while the buffer is locked).
    fn store(&mut self, result: Result<Fetched>) -> Next {
        let mut st = lock(&self.state);
        if st.closed {
            return Next::Done;
        }
        st.throttled = self.reader.throttled;
        let fetched = match result {
            Ok(f) => f,
            Err(e) => {
                st.error = Some(e);
                self.budget.changed.notify_waiters();
                return Next::Done;
            }
        };
        let got = fetched.records.len();
        let bytes: i64 = fetched.records.iter().map(record_bytes).sum();
        st.bytes += bytes;
        st.records.extend(fetched.records);
        if let Some(p) = fetched.position {
            self.from = p;
        }
        st.millis_behind = fetched.millis_behind.or(st.millis_behind);
        st.caught_up = fetched.millis_behind == Some(0);
        st.finished = fetched.finished;
        st.not_found = fetched.not_found;
        if let Some(g) = fetched.resume_gap {
            st.gap.get_or_insert(g);
        }
        // Counted under the lock: a buffer dropped meanwhile (closed) released what it held.
        self.budget.add(bytes);
        if fetched.finished || fetched.not_found {
            Next::Done
        } else if got == 0 {
            Next::Idle
        } else {
            Next::Again
        }
    }
}

/// The read-ahead of every shard of a polling source.
#[derive(Debug)]
pub(crate) struct Prefetch {
    budget: Arc<Budget>,
    shards: BTreeMap<(String, String), ShardPrefetch>,
    idle: Duration,
}

impl Prefetch {
    /// Read-ahead bounded by `fetch_buffer_size` bytes (each task hands over one GetRecords
    /// page at a time, of the reader's fetch size).
    pub fn new(fetch_buffer_size: u64, min_fetch_period: Duration) -> Self {
        Prefetch {
            budget: Arc::new(Budget::new(fetch_buffer_size)),
            shards: BTreeMap::new(),
            idle: if min_fetch_period < IDLE_PAUSE {
                IDLE_PAUSE
            } else {
                Duration::ZERO
            },
        }
    }

    /// Bytes held now (buffers and the planned batch).
    pub fn held_bytes(&self) -> i64 {
        self.budget.held.load(Ordering::SeqCst)
    }

    /// The most bytes held at once since the source started.
    pub fn peak_bytes(&self) -> i64 {
        self.budget.peak.load(Ordering::SeqCst)
    }

    /// Drops every buffer of `stream` (recreated).
    pub fn forget_stream(&mut self, stream: &str) {
        self.shards.retain(|(s, _), _| s != stream);
    }

    /// Stops every task and drops every buffer.
    pub fn clear(&mut self) {
        self.shards.clear();
    }

    /// Plans from the buffers: starts (or restarts at `from`) a task per job, waits until
    /// every shard has records, is caught up, ended or failed — or `records` records are
    /// buffered, the budget is full, or `deadline` — then takes up to `records` records in
    /// shard order. Returns per shard what [`ShardReader::fetch`] would have, plus the guard of
    /// the taken bytes. Shards not in `jobs` lose their buffers.
    pub async fn plan(
        &mut self,
        client: &Arc<Client>,
        jobs: Vec<(ShardReader, ShardPosition)>,
        records: i64,
        deadline: Instant,
    ) -> (Vec<(ShardReader, ShardPosition, Result<Fetched>)>, Held) {
        let keys: Vec<(String, String)> = jobs
            .iter()
            .map(|(r, _)| (r.stream.id.clone(), r.shard.clone()))
            .collect();
        self.shards.retain(|k, _| keys.contains(k));
        let mut returned = Vec::with_capacity(jobs.len());
        for (reader, from) in jobs {
            let key = (reader.stream.id.clone(), reader.shard.clone());
            if self.shards.get(&key).is_some_and(|p| p.next == from) {
                returned.push((reader, from));
                continue;
            }
            self.shards.remove(&key);
            let twin = reader.twin();
            let state = Arc::new(Mutex::new(Buffered::default()));
            let task = Task {
                reader,
                client: Arc::clone(client),
                from: from.clone(),
                state: Arc::clone(&state),
                budget: Arc::clone(&self.budget),
                idle: self.idle,
            };
            let task = tokio::spawn(task.run());
            let prefetch = ShardPrefetch {
                next: from.clone(),
                state,
                task,
                budget: Arc::clone(&self.budget),
            };
            self.shards.insert(key, prefetch);
            returned.push((twin, from));
        }
        self.wait(records, deadline).await;
        let mut left = records;
        let mut taken_bytes = 0;
        let mut out = Vec::with_capacity(returned.len());
        for (mut reader, from) in returned {
            let key = (reader.stream.id.clone(), reader.shard.clone());
            let Some(p) = self.shards.get_mut(&key) else {
                continue;
            };
            let mut st = lock(&p.state);
            reader.throttled = st.throttled;
            if let Some(e) = st.error.take() {
                drop(st);
                self.shards.remove(&key);
                out.push((reader, from, Err(e)));
                continue;
            }
            let n = (left.max(0) as usize).min(st.records.len());
            let taken: Vec<FetchedRecord> = st.records.drain(..n).collect();
            left -= n as i64;
            let bytes: i64 = taken.iter().map(record_bytes).sum();
            st.bytes -= bytes;
            taken_bytes += bytes;
            let drained = st.records.is_empty();
            let fetched = Fetched {
                position: taken
                    .last()
                    .map(|r| ShardPosition::After(r.sequence.clone())),
                records: taken,
                finished: drained && st.finished,
                not_found: drained && st.not_found,
                millis_behind: st.millis_behind,
                reached_until: false,
                resume_gap: st.gap.take(),
                record_not_held: None,
            };
            drop(st);
            if let Some(pos) = &fetched.position {
                p.next = pos.clone();
            }
            if fetched.finished || fetched.not_found {
                self.shards.remove(&key);
            }
            out.push((reader, from, Ok(fetched)));
        }
        let held = Held {
            budget: Arc::clone(&self.budget),
            bytes: taken_bytes,
        };
        (out, held)
    }

    async fn wait(&self, records: i64, deadline: Instant) {
        loop {
            let notified = self.budget.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let mut buffered = 0i64;
            let mut settled = true;
            for p in self.shards.values() {
                let st = lock(&p.state);
                buffered += st.records.len() as i64;
                settled &= st.settled();
            }
            if settled || buffered >= records || self.budget.room() <= 0 {
                return;
            }
            if tokio::time::timeout_at(deadline.into(), notified)
                .await
                .is_err()
            {
                return;
            }
        }
    }
}
