//! Notification mode (`cloudFiles.useNotifications=true`): new files are learned from change
//! events instead of listing the input at every trigger. S3 event notifications are read from
//! an SQS queue ([`sqs`]); Azure Blob events from a Storage queue ([`azure_queue`]); local directories are watched through inotify ([`local`], the
//! `notify` crate). Without `cloudFiles.queueUrl` the source sets the queue and the bucket's
//! notification up itself ([`s3_setup`]), named from the checkpoint's id.
//!
//! Events become [`ListedFile`]s through the same filters as a listing
//! ([`Discovery::eligible`]: prefix, globs, hidden names, `cloudFiles.maxFileAge` on the event
//! time), then go through the file state like a listing, which queues a path once. Queue
//! messages are deleted only after the files they name are recorded durably, so a crash
//! re-delivers them and the state drops the repeats: no loss, no duplicate.

pub(crate) mod azure_queue;
pub(crate) mod local;
pub(crate) mod s3_setup;
pub(crate) mod sqs;

use tributary_sdk::Result;

use crate::config::{Notifications, QueueSettings};
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
    /// An Azure Storage queue of Blob events (Event Grid).
    Azure(azure_queue::AzureQueueNotifier),
}

impl Notifier {
    /// Starts watching (local) or connects to the queue (S3), setting the queue up first when
    /// no `cloudFiles.queueUrl` was given (named from `checkpoint_id`).
    pub async fn open(
        kind: &Notifications,
        settings: &QueueSettings,
        d: &Discovery,
        checkpoint_id: Option<&str>,
    ) -> Result<Notifier> {
        match kind {
            Notifications::Local => local::LocalNotifier::open(d).map(Notifier::Local),
            Notifications::Sqs(url) => sqs::SqsNotifier::open(url, d, settings.receive_requests())
                .await
                .map(Notifier::Sqs),
            Notifications::SqsAuto => {
                let url = s3_setup::auto(d, checkpoint_id, &settings.tags).await?;
                sqs::SqsNotifier::open(&url, d, settings.receive_requests())
                    .await
                    .map(Notifier::Sqs)
            }
            Notifications::AzureQueue(name) => {
                azure_queue::AzureQueueNotifier::open(name, d).map(Notifier::Azure)
            }
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
            Notifier::Azure(n) => n.poll(d).await,
        }
    }

    /// Acknowledges events whose files are recorded.
    pub async fn ack(&mut self, receipts: Vec<String>) -> Result<()> {
        match self {
            Notifier::Local(_) => Ok(()),
            Notifier::Sqs(n) => n.ack(receipts).await,
            Notifier::Azure(n) => n.ack(receipts).await,
        }
    }

    /// Events waiting (the queue's approximate size; pending inotify events).
    pub fn approximate_queue_size(&self) -> u64 {
        match self {
            Notifier::Local(n) => n.pending(),
            Notifier::Sqs(n) => n.approximate_size(),
            Notifier::Azure(n) => n.approximate_size(),
        }
    }
}
