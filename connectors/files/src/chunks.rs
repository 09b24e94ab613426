//! A listing in progress: chunks of eligible files arriving through a bounded channel.
//!
//! A local directory is walked by threads of its own ([`crate::walk`]); an object store's
//! listing runs as a tokio task when there is a runtime (so it goes on between triggers, for
//! the backfill listing and for available-now runs that start reading before discovery ends),
//! and otherwise inside [`Listing::next`]. Either way at most [`DEPTH`] chunks wait, so a
//! listing of millions of files never sits in memory whole, and dropping the [`Listing`] stops
//! it.

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::mpsc::{self, error::TryRecvError, Receiver, Sender};
use tributary_sdk::Result;

use crate::state::ListedFile;

/// One chunk of a listing, or the error that ended it.
pub(crate) type Chunk = Result<Vec<ListedFile>>;

/// Chunks waiting between the lister and the file state.
pub(crate) const DEPTH: usize = 8;

/// What [`Listing::try_next`] found without waiting.
pub(crate) enum Ready {
    /// A chunk (or the listing's error).
    Chunk(Chunk),
    /// Nothing yet; the listing goes on.
    Pending,
    /// The listing is over.
    Done,
}

/// A listing in progress.
pub(crate) struct Listing {
    rx: Receiver<Chunk>,
    /// The listing itself when no runtime runs it (polled while waiting for a chunk).
    inline: Option<BoxFuture<'static, ()>>,
}

impl std::fmt::Debug for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listing")
            .field("inline", &self.inline.is_some())
            .finish_non_exhaustive()
    }
}

/// A channel for a listing's chunks.
pub(crate) fn channel() -> (Sender<Chunk>, Receiver<Chunk>) {
    mpsc::channel(DEPTH)
}

impl Listing {
    /// A listing whose chunks some thread sends to `rx`.
    pub fn threaded(rx: Receiver<Chunk>) -> Listing {
        Listing { rx, inline: None }
    }

    /// A listing run by `task`, which sends to `rx`: spawned on the current tokio runtime, or
    /// (without one) polled by [`Listing::next`].
    pub fn task(
        rx: Receiver<Chunk>,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Listing {
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(task);
                Listing { rx, inline: None }
            }
            Err(_) => Listing {
                rx,
                inline: Some(task.boxed()),
            },
        }
    }

    /// True when the listing only moves while [`Listing::next`] is awaited.
    pub fn is_inline(&self) -> bool {
        self.inline.is_some()
    }

    /// The next chunk, waiting for it; `None` when the listing is over.
    pub async fn next(&mut self) -> Option<Chunk> {
        loop {
            let Some(task) = self.inline.as_mut() else {
                return self.rx.recv().await;
            };
            futures::select_biased! {
                chunk = self.rx.recv().fuse() => return chunk,
                () = task.fuse() => self.inline = None,
            }
        }
    }

    /// The next chunk if one is there.
    pub fn try_next(&mut self) -> Ready {
        match self.rx.try_recv() {
            Ok(chunk) => Ready::Chunk(chunk),
            Err(TryRecvError::Empty) => Ready::Pending,
            Err(TryRecvError::Disconnected) => Ready::Done,
        }
    }

    /// Every file of the listing (for the callers that need it whole: schema inference, the
    /// `setup` command).
    pub async fn collect(mut self) -> Result<Vec<ListedFile>> {
        let mut out = Vec::new();
        while let Some(chunk) = self.next().await {
            out.extend(chunk?);
        }
        Ok(out)
    }
}
