//! One shard's SubscribeToShard loop (a tokio task): subscribes from a position, forwards each
//! pushed event into a bounded channel, renews the subscription every 5 minutes (or when the
//! server ends it) from the continuation sequence number, and survives failures:
//!
//! - the consumer deleted from outside (`ResourceNotFoundException` on the consumer): it is
//!   registered again under the same name (one task does it, the others pick up the new ARN),
//!   then the shard resubscribes from where it was — nothing lost, no restart;
//! - a subscription failing mid-stream or refused (`ResourceInUse` while another subscription
//!   winds down, `LimitExceeded`, dropped connections): retried from the last position with
//!   exponential backoff (100 ms doubling, at most 5 s); after 20 failures in a row the error is
//!   handed to the source, which fails the batch. No new consumer is ever registered for a
//!   failure that is not the consumer's disappearance.
//!
//! The SDK's own retries are off for SubscribeToShard: failures are retried here, once.
//!
//! The end of a closed shard (an event with child shards) ends the task.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_kinesis::primitives::DateTime;
use aws_sdk_kinesis::types::{ShardIteratorType, StartingPosition, SubscribeToShardEventStream};
use aws_sdk_kinesis::Client;
use tokio::sync::{mpsc, Mutex, Notify};
use tributary_sdk::{Error, ErrorCode};

use super::consumers::{self, ConsumerInfo};
use crate::error::{ApiError, ApiFailure};
use crate::offsets::ShardPosition;
use crate::reader::FetchedRecord;

/// A subscription lasts at most this long, then is renewed (Kinesis ends it after 5 minutes).
pub(crate) const RENEW_AFTER: Duration = Duration::from_secs(300);
const BASE_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
const MAX_FAILURES_IN_A_ROW: u32 = 20;

/// What a shard task sends.
#[derive(Debug)]
pub(crate) enum ShardEvent {
    /// Records (maybe none) of one pushed event.
    Records {
        /// The records.
        records: Vec<FetchedRecord>,
        /// MillisBehindLatest of the event.
        millis_behind: i64,
    },
    /// The shard is closed and every record was sent.
    End,
    /// The subscription cannot go on.
    Failed(Error),
}

/// The consumer of one stream, shared by its shard tasks (re-registered in place).
#[derive(Debug)]
pub(crate) struct SharedConsumer {
    /// The stream ARN.
    pub stream_arn: String,
    /// The consumer name.
    pub name: String,
    /// The current registration.
    pub current: Mutex<ConsumerInfo>,
    /// Registered outside the query (`registeredConsumerId`): never registered again.
    pub external: bool,
}

/// Counters shared by every task of a reader.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionStats {
    /// Consumers registered again after they disappeared.
    pub reregistrations: AtomicU64,
    /// Subscriptions opened (the first and every renewal).
    pub subscriptions: AtomicU64,
    /// Subscribe calls or streams that failed and were retried.
    pub failures: AtomicU64,
}

/// What a shard task needs.
#[derive(Debug)]
pub(crate) struct ShardTask {
    pub client: Arc<Client>,
    pub consumer: Arc<SharedConsumer>,
    pub shard: String,
    pub from: ShardPosition,
    pub tx: mpsc::Sender<ShardEvent>,
    pub notify: Arc<Notify>,
    pub stats: Arc<SubscriptionStats>,
    pub renew_after: Duration,
}

fn starting_position(p: &ShardPosition) -> Result<StartingPosition, Error> {
    let b = StartingPosition::builder();
    let b = match p {
        ShardPosition::TrimHorizon => b.r#type(ShardIteratorType::TrimHorizon),
        ShardPosition::AtTimestamp(ms) => b
            .r#type(ShardIteratorType::AtTimestamp)
            .timestamp(DateTime::from_millis(*ms)),
        ShardPosition::After(seq) => b
            .r#type(ShardIteratorType::AfterSequenceNumber)
            .sequence_number(seq),
    };
    b.build().map_err(|e| {
        Error::new(ErrorCode::Internal, "invalid SubscribeToShard position").with_cause(e)
    })
}

fn backoff(failures: u32) -> Duration {
    BASE_BACKOFF
        .saturating_mul(1u32 << failures.min(10))
        .min(MAX_BACKOFF)
}

impl ShardTask {
    async fn send(&self, e: ShardEvent) -> bool {
        let ok = self.tx.send(e).await.is_ok();
        self.notify.notify_one();
        ok
    }

    /// After a NotFound: if the consumer is gone, registers it again (once for all tasks).
    /// Returns false when the stream itself is gone.
    async fn recover_consumer(&self, failed_arn: &str) -> Result<bool, Error> {
        let mut current = self.consumer.current.lock().await;
        if current.arn != failed_arn {
            return Ok(true); // another task already registered it again
        }
        let c = &self.consumer;
        match consumers::describe(&self.client, &c.stream_arn, &c.name).await {
            Ok(Some(info)) if info.arn == failed_arn => return Ok(true), // shard-level NotFound; retry
            Ok(_) => {}
            Err(e) if e.context_value("reason") == Some("not found") => return Ok(false),
            Err(e) => return Err(e),
        }
        if c.external {
            return Err(Error::new(
                ErrorCode::SourceRead,
                format!(
                    "the EFO consumer '{}' given in 'registeredConsumerId' was deregistered from outside; the query never registers it again: register it again or change 'registeredConsumerId'",
                    c.name
                ),
            )
            .with_context("option", "registeredConsumerId")
            .with_context("consumer", c.name.as_str())
            .with_context("stream", c.stream_arn.as_str()));
        }
        tracing::warn!(consumer = %c.name, stream = %c.stream_arn, "the EFO consumer was deleted from outside; registering it again");
        let reg = consumers::register(
            &self.client,
            &c.stream_arn,
            &c.name,
            consumers::DEFAULT_WAIT,
        )
        .await?;
        self.stats.reregistrations.fetch_add(1, Ordering::Relaxed);
        *current = reg.consumer;
        Ok(true)
    }

    /// Runs until the shard ends, the reader is dropped, or failures exhaust the retries.
    pub async fn run(self) {
        let mut position = self.from.clone();
        let mut failures = 0u32;
        loop {
            if failures > 0 {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                if failures >= MAX_FAILURES_IN_A_ROW {
                    let e = Error::new(
                        ErrorCode::SourceRead,
                        format!(
                            "SubscribeToShard on shard '{}' of '{}' failed {failures} times in a row",
                            self.shard, self.consumer.stream_arn
                        ),
                    )
                    .with_context("shard", self.shard.as_str());
                    self.send(ShardEvent::Failed(e)).await;
                    return;
                }
                tokio::time::sleep(backoff(failures)).await;
            }
            if self.tx.is_closed() {
                return;
            }
            let arn = self.consumer.current.lock().await.arn.clone();
            let asked = tokio::time::Instant::now();
            let sp = match starting_position(&position) {
                Ok(sp) => sp,
                Err(e) => {
                    self.send(ShardEvent::Failed(e)).await;
                    return;
                }
            };
            let sent = self
                .client
                .subscribe_to_shard()
                .consumer_arn(&arn)
                .shard_id(&self.shard)
                .starting_position(sp)
                .customize()
                .config_override(
                    aws_sdk_kinesis::config::Builder::default()
                        .retry_config(aws_sdk_kinesis::config::retry::RetryConfig::disabled()),
                )
                .send()
                .await;
            let mut out = match sent {
                Ok(out) => out,
                Err(e) => {
                    let e = ApiError::from_sdk(e);
                    if !self.handle_failure(&e, &arn).await {
                        return;
                    }
                    failures += 1;
                    continue;
                }
            };
            self.stats.subscriptions.fetch_add(1, Ordering::Relaxed);
            let opened = tokio::time::Instant::now();
            tracing::debug!(shard = %self.shard, subscribe_ms = (opened - asked).as_millis() as u64, "EFO subscription opened");
            let mut first_event = true;
            loop {
                let left = self.renew_after.saturating_sub(opened.elapsed());
                if left.is_zero() {
                    break; // renew from the continuation sequence number
                }
                let next = match tokio::time::timeout(left, out.event_stream.recv()).await {
                    Err(_) => break,
                    Ok(n) => n,
                };
                match next {
                    Ok(Some(SubscribeToShardEventStream::SubscribeToShardEvent(ev))) => {
                        failures = 0;
                        if first_event {
                            first_event = false;
                            tracing::debug!(shard = %self.shard, records = ev.records().len(), after_open_ms = opened.elapsed().as_millis() as u64, "EFO subscription: first event");
                        }
                        let records: Vec<FetchedRecord> = ev
                            .records()
                            .iter()
                            .map(|r| FetchedRecord {
                                partition_key: r.partition_key().unwrap_or_default().to_string(),
                                data: r.data().as_ref().to_vec(),
                                sequence: r.sequence_number().to_string(),
                                arrival_ms: r
                                    .approximate_arrival_timestamp()
                                    .and_then(|t| t.to_millis().ok()),
                            })
                            .collect();
                        if let Some(last) = records.last() {
                            position = ShardPosition::After(last.sequence.clone());
                        }
                        let cont = ev.continuation_sequence_number();
                        if !cont.is_empty() {
                            position = ShardPosition::After(cont.to_string());
                        }
                        let ended = !ev.child_shards().is_empty() && cont.is_empty();
                        if (!records.is_empty() || !ended)
                            && !self
                                .send(ShardEvent::Records {
                                    records,
                                    millis_behind: ev.millis_behind_latest(),
                                })
                                .await
                        {
                            return;
                        }
                        if ended {
                            self.send(ShardEvent::End).await;
                            return;
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break, // the server ended the subscription: renew
                    Err(e) => {
                        let e = ApiError::from_sdk(e);
                        tracing::warn!(shard = %self.shard, error = %e, "the EFO subscription failed mid-stream; resubscribing");
                        if !self.handle_failure(&e, &arn).await {
                            return;
                        }
                        failures += 1;
                        break;
                    }
                }
            }
        }
    }

    /// Decides on a failed subscribe: false (after sending the error) when it cannot go on.
    async fn handle_failure(&self, e: &ApiError, arn: &str) -> bool {
        // Errors inside the event stream carry their type in the message, not in the code.
        let not_found = e.failure == ApiFailure::NotFound
            || (e.code.is_none() && e.message.contains("ResourceNotFoundException"));
        if not_found {
            return match self.recover_consumer(arn).await {
                Ok(true) => true,
                Ok(false) => {
                    let err =
                        e.clone()
                            .into_error("SubscribeToShard", &self.consumer.stream_arn, true);
                    self.send(ShardEvent::Failed(err)).await;
                    false
                }
                Err(err) if err.context_value("option") == Some("registeredConsumerId") => {
                    self.send(ShardEvent::Failed(err)).await;
                    false
                }
                Err(err) => {
                    tracing::warn!(shard = %self.shard, error = %err, "could not check the EFO consumer; retrying");
                    true
                }
            };
        }
        match e.failure {
            ApiFailure::Auth => {
                let err = e
                    .clone()
                    .into_error("SubscribeToShard", &self.consumer.stream_arn, true);
                self.send(ShardEvent::Failed(err)).await;
                false
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_capped() {
        assert_eq!(backoff(1), Duration::from_millis(200));
        assert_eq!(backoff(30), MAX_BACKOFF);
    }
}
