//! Notification mode (`cloudFiles.useNotifications=true`): new files are learned from change
//! events instead of listing the input at every trigger. S3 event notifications are read from
//! an SQS queue ([`sqs`]); local directories are watched through inotify ([`local`], the
//! `notify` crate).
//!
//! Events become [`ListedFile`]s through the same filters as a listing
//! ([`Discovery::eligible`]: prefix, globs, hidden names, `cloudFiles.maxFileAge` on the event
//! time), then go through the file state like a listing, which queues a path once. Queue
//! messages are deleted only after the files they name are recorded durably, so a crash
//! re-delivers them and the state drops the repeats: no loss, no duplicate.

pub(crate) mod local;
pub(crate) mod sqs;

use tributary_sdk::Result;

use crate::config::Notifications;
use crate::discovery::Discovery;
use crate::state::ListedFile;

/// One poll's files and what acknowledges them.
#[derive(Debug, Default)]
pub(crate) struct Polled {
    /// Eligible files the events name.
    pub files: Vec<ListedFile>,
    /// Queue receipts to delete once the files are recorded.
    pub receipts: Vec<String>,
}

/// A source of change events.
#[derive(Debug)]
pub(crate) enum Notifier {
    /// inotify on a local directory.
    Local(local::LocalNotifier),
    /// An SQS queue of S3 event notifications.
    Sqs(sqs::SqsNotifier),
}

impl Notifier {
    /// Starts watching (local) or connects to the queue (S3).
    pub async fn open(kind: &Notifications, d: &Discovery) -> Result<Notifier> {
        match kind {
            Notifications::Local => local::LocalNotifier::open(d).map(Notifier::Local),
            Notifications::Sqs(url) => sqs::SqsNotifier::open(url, d).await.map(Notifier::Sqs),
        }
    }

    /// True when the input must be listed at every start: inotify events are lost while the
    /// stream is down, queue messages are not.
    pub fn lists_at_every_start(&self) -> bool {
        matches!(self, Notifier::Local(_))
    }

    /// The events that arrived since the last poll.
    pub async fn poll(&mut self, d: &Discovery) -> Result<Polled> {
        match self {
            Notifier::Local(n) => n.poll(d),
            Notifier::Sqs(n) => n.poll(d).await,
        }
    }

    /// Acknowledges events whose files are recorded.
    pub async fn ack(&mut self, receipts: Vec<String>) -> Result<()> {
        match self {
            Notifier::Local(_) => Ok(()),
            Notifier::Sqs(n) => n.ack(receipts).await,
        }
    }

    /// Events waiting (the queue's approximate size; pending inotify events).
    pub fn approximate_queue_size(&self) -> u64 {
        match self {
            Notifier::Local(n) => n.pending(),
            Notifier::Sqs(n) => n.approximate_size(),
        }
    }
}
