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
//! The backfill listing runs as a tokio task beside the stream; its result is merged at the
//! next trigger. Whatever a listing returns goes through the file state, which queues a path
//! once: overlapping listings never yield a duplicate.

use std::time::{Duration, Instant};

use object_store::path::Path as ObjectPath;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::config::IncrementalListing;
use crate::discovery::Discovery;
use crate::state::{FileStateStore, ListedFile};

/// Incremental listings between two full ones (Auto Loader's number).
pub(crate) const FULL_EVERY: u32 = 7;

/// Listing counts, for metrics.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ListingCounts {
    pub full: u64,
    pub incremental: u64,
    pub backfill: u64,
}

/// The listing strategy of one source instance.
#[derive(Debug)]
pub(crate) struct Lister {
    mode: IncrementalListing,
    /// The store has a server-side `start_after`.
    cloud: bool,
    /// The greatest key listed so far.
    after: Option<ObjectPath>,
    /// Auto: the last full listing found file names in lexical order.
    lexical: bool,
    since_full: u32,
    backfill_interval: Option<Duration>,
    last_backfill: Instant,
    backfill: Option<tokio::task::JoinHandle<Result<Vec<ListedFile>>>>,
    pub counts: ListingCounts,
}

impl Lister {
    /// A lister; the first listing is always full.
    pub fn new(
        mode: IncrementalListing,
        cloud: bool,
        backfill_interval: Option<Duration>,
    ) -> Lister {
        Lister {
            mode,
            cloud,
            after: None,
            lexical: false,
            since_full: 0,
            backfill_interval,
            last_backfill: Instant::now(),
            backfill: None,
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

    /// Lists for one trigger: incremental or full, plus a finished backfill listing. (`state`
    /// is only read; `&mut` keeps the future `Send`, SQLite connections are not `Sync`.)
    pub async fn list(
        &mut self,
        d: &Discovery,
        state: &mut FileStateStore,
    ) -> Result<Vec<ListedFile>> {
        let mut out = Vec::new();
        if self.incremental_now() {
            d.list_into(self.after.as_ref(), &mut out).await?;
            self.since_full += 1;
            self.counts.incremental += 1;
        } else {
            d.list_into(None, &mut out).await?;
            self.since_full = 0;
            self.counts.full += 1;
            if self.mode == IncrementalListing::Auto && self.cloud {
                self.lexical = in_lexical_order(d, &out, state)?;
            }
        }
        if let Some(max) = greatest_key(d, &out)? {
            if self.after.as_ref().is_none_or(|a| max > *a) {
                self.after = Some(max);
            }
        }
        self.backfill(d, &mut out).await?;
        Ok(out)
    }

    /// One full listing now (notification mode's listing at start).
    pub async fn full(&mut self, d: &Discovery, out: &mut Vec<ListedFile>) -> Result<()> {
        d.list_into(None, out).await?;
        self.counts.full += 1;
        Ok(())
    }

    /// Starts a background full listing when one is due; merges one that finished.
    pub async fn backfill(&mut self, d: &Discovery, out: &mut Vec<ListedFile>) -> Result<()> {
        let Some(interval) = self.backfill_interval else {
            return Ok(());
        };
        if self.backfill.as_ref().is_some_and(|h| h.is_finished()) {
            if let Some(handle) = self.backfill.take() {
                let listed = handle.await.map_err(|e| {
                    Error::new(ErrorCode::Internal, "the backfill listing task failed")
                        .with_cause(e)
                })??;
                self.counts.backfill += 1;
                out.extend(listed);
            }
        }
        if self.backfill.is_none() && self.last_backfill.elapsed() >= interval {
            self.last_backfill = Instant::now();
            let d = d.clone();
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => self.backfill = Some(rt.spawn(async move { d.list().await })),
                // No runtime to run beside the stream: list now.
                Err(_) => {
                    out.extend(d.list().await?);
                    self.counts.backfill += 1;
                }
            }
        }
        Ok(())
    }
}

/// The greatest store key among `files`.
fn greatest_key(d: &Discovery, files: &[ListedFile]) -> Result<Option<ObjectPath>> {
    let mut max: Option<ObjectPath> = None;
    for f in files {
        let key = d.location(&f.path)?;
        if max.as_ref().is_none_or(|m| key > *m) {
            max = Some(key);
        }
    }
    Ok(max)
}

/// True when every file of a full listing that `state` does not know sorts after every known
/// file of the listing.
fn in_lexical_order(d: &Discovery, files: &[ListedFile], state: &FileStateStore) -> Result<bool> {
    let mut max_known: Option<ObjectPath> = None;
    let mut min_new: Option<ObjectPath> = None;
    for f in files {
        let key = d.location(&f.path)?;
        let slot = if state.is_known(&f.path) {
            &mut max_known
        } else {
            &mut min_new
        };
        let better = match slot {
            None => true,
            Some(v) if state.is_known(&f.path) => key > *v,
            Some(v) => key < *v,
        };
        if better {
            *slot = Some(key);
        }
    }
    Ok(match (max_known, min_new) {
        (Some(known), Some(new)) => new > known,
        _ => true,
    })
}
