//! How the source lists its input at each trigger: a full listing, an incremental one
//! (`cloudFiles.useIncrementalListing`: only keys after the greatest key seen, the object
//! store's `start_after`), and the background full listing of `cloudFiles.backfillInterval`.
//!
//! As in Auto Loader, incremental listing relies on file names arriving in lexical order, so a
//! full listing runs after every [`FULL_EVERY`] incremental ones as the safety net. Under
//! `auto` each full listing decides whether the order holds: it does when every file it finds
//! that the file state does not know sorts after every known file it lists. Local directories
//! have no server-side `start_after`, so `auto` lists them in full.
//!
//! The backfill listing runs beside the stream; the chunks it found so far are queued at each
//! trigger. Whatever a listing returns goes through the file state, which queues a path once:
//! overlapping listings never yield a duplicate.
//!
//! A listing is checked against the file state chunk by chunk as it arrives ([`Recording`]),
//! and its new files are queued in flushes of at most [`FLUSH`], each in modification-time
//! order (so a listing of fewer new files is queued in that order as a whole). An
//! available-now run can start reading the first flush while the listing goes on
//! ([`Lister::start`], [`Lister::advance`]).

use std::time::{Duration, Instant};

use object_store::path::Path as ObjectPath;
use tributary_sdk::Result;

use crate::chunks::{Listing, Ready};
use crate::config::IncrementalListing;
use crate::discovery::{now_ms, Discovery};
use crate::state::{FileStateStore, ListedFile};

/// Incremental listings between two full ones (Auto Loader's number).
pub(crate) const FULL_EVERY: u32 = 7;

/// New files held before they are queued: the memory bound of a listing's new files.
pub(crate) const FLUSH: usize = 65_536;

/// Listing counts, for metrics.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ListingCounts {
    pub full: u64,
    pub incremental: u64,
    pub backfill: u64,
}

/// A listing's new files on their way into the file state, and what it saw of the key order.
#[derive(Debug)]
pub(crate) struct Recording {
    allow_overwrites: bool,
    pending: Vec<ListedFile>,
    queued: usize,
    max_known: Option<String>,
    min_new: Option<String>,
    /// The greatest path listed.
    max_path: Option<String>,
}

impl Recording {
    fn new(allow_overwrites: bool) -> Recording {
        Recording {
            allow_overwrites,
            pending: Vec::new(),
            queued: 0,
            max_known: None,
            min_new: None,
            max_path: None,
        }
    }

    /// Checks one chunk against the state; queues when [`FLUSH`] new files wait.
    fn add(&mut self, state: &mut FileStateStore, chunk: Vec<ListedFile>) -> Result<()> {
        if let Some(max) = chunk.iter().map(|f| &f.path).max() {
            if self.max_path.as_ref().is_none_or(|m| max > m) {
                self.max_path = Some(max.clone());
            }
        }
        let sifted = state.sift(chunk, self.allow_overwrites)?;
        if let Some(k) = sifted.max_known {
            if self.max_known.as_ref().is_none_or(|m| k > *m) {
                self.max_known = Some(k);
            }
        }
        if let Some(n) = sifted.min_new {
            if self.min_new.as_ref().is_none_or(|m| n < *m) {
                self.min_new = Some(n);
            }
        }
        self.pending.extend(sifted.fresh);
        if self.pending.len() >= FLUSH {
            self.flush(state)?;
        }
        Ok(())
    }

    /// Queues the waiting new files now.
    fn flush(&mut self, state: &mut FileStateStore) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        self.queued += state.queue(pending, now_ms())?;
        Ok(())
    }

    /// True when every new file sorts after every known file listed.
    fn lexical(&self) -> bool {
        match (&self.max_known, &self.min_new) {
            (Some(known), Some(new)) => new > known,
            _ => true,
        }
    }
}

/// A listing under way and what it has found.
#[derive(Debug)]
struct Running {
    listing: Listing,
    recording: Recording,
    incremental: bool,
}

/// The listing strategy of one source instance.
#[derive(Debug)]
pub(crate) struct Lister {
    mode: IncrementalListing,
    /// The store has a server-side `start_after`.
    cloud: bool,
    allow_overwrites: bool,
    /// The greatest key listed so far.
    after: Option<ObjectPath>,
    /// Auto: the last full listing found file names in lexical order.
    lexical: bool,
    since_full: u32,
    backfill_interval: Option<Duration>,
    last_backfill: Instant,
    backfill: Option<Running>,
    /// The trigger's listing, while an available-now run reads what it found so far.
    running: Option<Running>,
    pub counts: ListingCounts,
}

impl Lister {
    /// A lister; the first listing is always full.
    pub fn new(
        mode: IncrementalListing,
        cloud: bool,
        allow_overwrites: bool,
        backfill_interval: Option<Duration>,
    ) -> Lister {
        Lister {
            mode,
            cloud,
            allow_overwrites,
            after: None,
            lexical: false,
            since_full: 0,
            backfill_interval,
            last_backfill: Instant::now(),
            backfill: None,
            running: None,
            counts: ListingCounts::default(),
        }
    }

    fn incremental_now(&self) -> bool {
        let wanted = match self.mode {
            IncrementalListing::Off => false,
            IncrementalListing::On => true,
            IncrementalListing::Auto => self.cloud && self.lexical,
        };
        wanted && self.after.is_some() && self.since_full < FULL_EVERY
    }

    /// Lists for one trigger, incremental or full, and queues what is new (plus what a
    /// backfill listing found). Returns how many files were queued.
    pub async fn list(&mut self, d: &Discovery, state: &mut FileStateStore) -> Result<usize> {
        self.start(d, None);
        let mut queued = 0;
        while let Some(n) = self.advance(d, state, true).await? {
            queued += n;
        }
        Ok(queued + self.backfill(d, state).await?)
    }

    /// Starts the trigger's listing (incremental or full), leaving out local files modified
    /// after `newest_ms`; [`Lister::advance`] takes it on.
    pub fn start(&mut self, d: &Discovery, newest_ms: Option<i64>) {
        let incremental = self.incremental_now();
        let after = if incremental {
            self.after.as_ref()
        } else {
            None
        };
        self.running = Some(Running {
            listing: d.listing(after, newest_ms),
            recording: Recording::new(self.allow_overwrites),
            incremental,
        });
    }

    /// True while the trigger's listing runs.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Takes the running listing on: checks the chunks that arrived (with `wait`, at least
    /// one, waiting for it) and queues the new files found so far. Returns how many were
    /// queued, or `None` once the listing is over (its last files queued before).
    pub async fn advance(
        &mut self,
        d: &Discovery,
        state: &mut FileStateStore,
        wait: bool,
    ) -> Result<Option<usize>> {
        let Some(run) = self.running.as_mut() else {
            return Ok(None);
        };
        let before = run.recording.queued;
        let mut done = false;
        let mut first = wait || run.listing.is_inline();
        loop {
            let chunk = if first {
                first = false;
                match run.listing.next().await {
                    Some(chunk) => chunk,
                    None => {
                        done = true;
                        break;
                    }
                }
            } else {
                match run.listing.try_next() {
                    Ready::Chunk(chunk) => chunk,
                    Ready::Pending => break,
                    Ready::Done => {
                        done = true;
                        break;
                    }
                }
            };
            if let Err(e) = chunk.and_then(|c| run.recording.add(state, c)) {
                self.running = None;
                return Err(e);
            }
        }
        run.recording.flush(state)?;
        let queued = run.recording.queued - before;
        if !done {
            return Ok(Some(queued));
        }
        let Some(run) = self.running.take() else {
            return Ok(None);
        };
        if run.incremental {
            self.since_full += 1;
            self.counts.incremental += 1;
        } else {
            self.since_full = 0;
            self.counts.full += 1;
            if self.mode == IncrementalListing::Auto && self.cloud {
                self.lexical = run.recording.lexical();
            }
        }
        self.note_greatest(d, &run.recording)?;
        Ok(if queued > 0 { Some(queued) } else { None })
    }

    fn note_greatest(&mut self, d: &Discovery, recording: &Recording) -> Result<()> {
        if let Some(max) = &recording.max_path {
            let key = d.location(max)?;
            if self.after.as_ref().is_none_or(|a| key > *a) {
                self.after = Some(key);
            }
        }
        Ok(())
    }

    /// One full listing now, queued (notification mode's listing at start).
    pub async fn full(&mut self, d: &Discovery, state: &mut FileStateStore) -> Result<usize> {
        let mut listing = d.listing(None, None);
        let mut recording = Recording::new(self.allow_overwrites);
        while let Some(chunk) = listing.next().await {
            recording.add(state, chunk?)?;
        }
        recording.flush(state)?;
        self.counts.full += 1;
        Ok(recording.queued)
    }

    /// Queues what a background full listing found since the last trigger; starts one when
    /// it is due. Returns how many files were queued.
    pub async fn backfill(&mut self, d: &Discovery, state: &mut FileStateStore) -> Result<usize> {
        let Some(interval) = self.backfill_interval else {
            return Ok(0);
        };
        let mut queued = 0;
        if let Some(run) = self.backfill.as_mut() {
            let mut done = false;
            loop {
                match run.listing.try_next() {
                    Ready::Chunk(chunk) => {
                        if let Err(e) = chunk.and_then(|c| run.recording.add(state, c)) {
                            self.backfill = None;
                            return Err(e);
                        }
                    }
                    Ready::Pending => break,
                    Ready::Done => {
                        done = true;
                        break;
                    }
                }
            }
            let before = run.recording.queued;
            run.recording.flush(state)?;
            queued += run.recording.queued - before;
            if done {
                self.backfill = None;
                self.counts.backfill += 1;
            }
        }
        if self.backfill.is_none() && self.last_backfill.elapsed() >= interval {
            self.last_backfill = Instant::now();
            let mut run = Running {
                listing: d.listing(None, None),
                recording: Recording::new(self.allow_overwrites),
                incremental: false,
            };
            if run.listing.is_inline() {
                // No runtime to run beside the stream: list now.
                while let Some(chunk) = run.listing.next().await {
                    run.recording.add(state, chunk?)?;
                }
                run.recording.flush(state)?;
                queued += run.recording.queued;
                self.counts.backfill += 1;
            } else {
                self.backfill = Some(run);
            }
        }
        Ok(queued)
    }
}
