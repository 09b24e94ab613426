//! librdkafka clients: the client context and the metadata/offsets client ([`Admin`]).
//!
//! [`KafkaContext`] keeps the last error librdkafka reported on its own threads (to explain a
//! timeout as an authentication or TLS failure) and supplies MSK IAM tokens. [`Admin`] is a
//! consumer that never subscribes: it lists topics, asks for earliest/latest offsets and offsets
//! by timestamp in one batched request each, and commits the committed batches' end offsets to
//! the consumer group for monitoring (waiting, bounded, until the group shows them).
//! Every call is blocking, bounded by `fetchOffset.timeoutMs` and retried
//! `fetchOffset.numRetries` times, so unreachable brokers are reported in bounded time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};
use tributary_sdk::{Error, Result};

use crate::connection::ConnectionProfile;
pub(crate) use crate::context::KafkaContext;
use crate::error::{config_error, request_error, ClientFailure};
use crate::offsets::PartitionOffsets;
use crate::subscription::Subscription;

/// Creates a consumer with the profile's configuration plus `extra` properties.
pub(crate) fn create_consumer(
    profile: &ConnectionProfile,
    extra: &[(&str, &str)],
) -> Result<BaseConsumer<KafkaContext>> {
    let mut cfg = profile.client_config();
    for (k, v) in extra {
        cfg.set(*k, *v);
    }
    let consumer: BaseConsumer<KafkaContext> = cfg
        .create_with_context(profile.context())
        .map_err(|e| config_error(e, "kafka."))?;
    if profile.needs_token() {
        // Serve the OAUTHBEARER token refresh event before the first request needs it.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let _ = consumer.poll(Duration::from_millis(100));
        }
    }
    Ok(consumer)
}

/// Serves queued events: logs and errors reach the context (which keeps authentication and TLS
/// failures to explain a timeout).
pub(crate) fn drain_events(consumer: &BaseConsumer<KafkaContext>) {
    for _ in 0..10_000 {
        match consumer.poll(Duration::ZERO) {
            Some(Err(e)) => consumer
                .context()
                .record(e.rdkafka_error_code(), e.to_string()),
            Some(Ok(_)) => {}
            None => break,
        }
    }
}

/// Timeouts and retries of metadata and offset requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestPolicy {
    pub timeout: Duration,
    pub attempts: u32,
    pub interval: Duration,
}

/// The metadata and offsets client.
pub(crate) struct Admin {
    consumer: BaseConsumer<KafkaContext>,
    bootstrap: String,
    policy: RequestPolicy,
}

impl Admin {
    pub(crate) fn new(
        profile: &ConnectionProfile,
        group_id: &str,
        policy: RequestPolicy,
    ) -> Result<Admin> {
        let consumer = create_consumer(
            profile,
            &[
                ("group.id", group_id),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
            ],
        )?;
        Ok(Admin {
            consumer,
            bootstrap: profile.bootstrap_servers().to_string(),
            policy,
        })
    }

    fn retry<T>(
        &self,
        what: &str,
        mut f: impl FnMut(Duration) -> std::result::Result<T, KafkaError>,
    ) -> Result<T> {
        let mut last = None;
        for attempt in 0..self.policy.attempts {
            if attempt > 0 {
                std::thread::sleep(self.policy.interval);
            }
            // Serve queued events (token refresh, commit results) between requests.
            let _ = self.consumer.poll(Duration::ZERO);
            match f(self.policy.timeout) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    tracing::debug!("{what} failed (attempt {}): {e}", attempt + 1);
                    drain_events(&self.consumer);
                    let auth = self
                        .consumer
                        .context()
                        .last_failure()
                        .filter(ClientFailure::is_authentication);
                    last = Some(e);
                    if auth.is_some() {
                        break;
                    }
                }
            }
        }
        let err = last.unwrap_or(KafkaError::Canceled);
        Err(request_error(
            &format!(
                "{what} ({} attempt(s) of {} ms)",
                self.policy.attempts,
                self.policy.timeout.as_millis()
            ),
            &self.bootstrap,
            &err,
            self.consumer.context().last_failure(),
        ))
    }

    /// The partitions of every topic the subscription covers, as it stands now.
    pub(crate) fn partitions(&self, sub: &Subscription) -> Result<BTreeMap<String, Vec<i32>>> {
        let md = self.retry("fetching topic metadata", |t| {
            self.consumer.fetch_metadata(None, t)
        })?;
        let mut out = BTreeMap::new();
        for topic in md.topics() {
            if topic.error().is_some() || !sub.matches_topic(topic.name()) {
                continue;
            }
            let mut parts: Vec<i32> = topic.partitions().iter().map(|p| p.id()).collect();
            parts.sort_unstable();
            if let Subscription::Assign(a) = sub {
                let wanted = a.get(topic.name()).cloned().unwrap_or_default();
                parts.retain(|p| wanted.contains(p));
            }
            if !parts.is_empty() {
                out.insert(topic.name().to_string(), parts);
            }
        }
        Ok(out)
    }

    /// One ListOffsets request for all partitions: `Offset::Beginning` (earliest),
    /// `Offset::End` (latest) or `Offset::Offset(ts)` (first offset at or after a timestamp).
    /// `None` for a timestamp means no record is at or after it.
    fn list_offsets(
        &self,
        what: &str,
        query: &[(String, i32, Offset)],
    ) -> Result<BTreeMap<(String, i32), Option<i64>>> {
        if query.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut tpl = TopicPartitionList::new();
        for (t, p, o) in query {
            tpl.add_partition_offset(t, *p, *o).map_err(|e| {
                Error::new(tributary_sdk::ErrorCode::Internal, "bad partition list").with_cause(e)
            })?;
        }
        let res = self.retry(what, |timeout| {
            self.consumer.offsets_for_times(tpl.clone(), timeout)
        })?;
        let mut out = BTreeMap::new();
        for e in res.elements() {
            if let Err(err) = e.error() {
                return Err(request_error(what, &self.bootstrap, &err, None)
                    .with_context("topic", e.topic())
                    .with_context("partition", e.partition()));
            }
            let v = match e.offset() {
                Offset::Offset(o) => Some(o),
                _ => None,
            };
            out.insert((e.topic().to_string(), e.partition()), v);
        }
        Ok(out)
    }

    /// Earliest and latest offsets of every partition.
    pub(crate) fn watermarks(
        &self,
        parts: &BTreeMap<String, Vec<i32>>,
    ) -> Result<(PartitionOffsets, PartitionOffsets)> {
        let tps: Vec<(String, i32)> = parts
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
            .collect();
        let q = |o: Offset| {
            tps.iter()
                .map(|(t, p)| (t.clone(), *p, o))
                .collect::<Vec<_>>()
        };
        let low = self.list_offsets("fetching earliest offsets", &q(Offset::Beginning))?;
        let high = self.list_offsets("fetching latest offsets", &q(Offset::End))?;
        let mut lo = PartitionOffsets::new();
        let mut hi = PartitionOffsets::new();
        for (t, p) in &tps {
            let key = (t.clone(), *p);
            let l = low.get(&key).copied().flatten().unwrap_or(0);
            let h = high.get(&key).copied().flatten().unwrap_or(l);
            lo.set(t, *p, l);
            hi.set(t, *p, h.max(l));
        }
        Ok((lo, hi))
    }

    /// The first offset at or after each timestamp (ms); `None` when no record is that late.
    pub(crate) fn offsets_for_times(
        &self,
        query: &[(String, i32, i64)],
    ) -> Result<BTreeMap<(String, i32), Option<i64>>> {
        let q: Vec<(String, i32, Offset)> = query
            .iter()
            .map(|(t, p, ts)| (t.clone(), *p, Offset::Offset(*ts)))
            .collect();
        let mut res = self.list_offsets("fetching offsets by timestamp", &q)?;
        // librdkafka reports "no such record" as offset -1 (End).
        for v in res.values_mut() {
            if matches!(v, Some(o) if *o < 0) {
                *v = None;
            }
        }
        Ok(res)
    }

    /// Commits offsets to the consumer group and waits, at most `fetchOffset.timeoutMs`, until
    /// the group shows them (read back with OffsetFetch, as lag tools read them): when this
    /// returns, the tools see these offsets, or a warning was logged. For monitoring only: a
    /// failure is logged, never returned (the checkpoint is the truth).
    pub(crate) fn commit(&self, offsets: &PartitionOffsets) {
        let mut tpl = TopicPartitionList::new();
        for (t, p, o) in offsets.iter() {
            if o >= 0 && tpl.add_partition_offset(t, p, Offset::Offset(o)).is_err() {
                return;
            }
        }
        if tpl.count() == 0 {
            return;
        }
        let _ = self.consumer.poll(Duration::ZERO);
        if let Err(e) = self.consumer.commit(&tpl, CommitMode::Async) {
            tracing::warn!(
                "committing offsets to the consumer group failed (monitoring only; the checkpoint is unaffected): {e}"
            );
            return;
        }
        // An asynchronous commit, then OffsetFetch until the group shows it: a synchronous
        // commit would wait without bound for an unreachable group coordinator.
        let deadline = Instant::now() + self.policy.timeout;
        loop {
            let _ = self.consumer.poll(Duration::ZERO);
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    timeout_ms = self.policy.timeout.as_millis() as u64,
                    "the consumer group does not show the committed offsets yet (monitoring only; the commit may still arrive)"
                );
                return;
            }
            if let Ok(seen) = self.consumer.committed_offsets(tpl.clone(), left) {
                let shown = tpl.elements().iter().all(|e| {
                    seen.find_partition(e.topic(), e.partition())
                        .is_some_and(|s| s.offset() == e.offset())
                });
                if shown {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(10).min(left));
        }
    }
}
