//! Enhanced fan-out (`consumerMode = efo`): the consumer manager ([`consumers`]) and the
//! [`EfoReader`] the source plans batches with instead of GetRecords.
//!
//! At start the reader registers (or reuses) the consumer `consumerName`, else
//! `consumerNamePrefix` + the pipeline id (`ConnectorContext::checkpoint_id`, else the pipeline
//! name), on every stream, waits until it is ACTIVE, and logs the leak report: the consumers
//! under the prefix that this pipeline does not own (see [`consumers`] for "owned"). Each
//! readable shard gets a SubscribeToShard task ([`subscription`]) started at the shard's
//! position in the batch's start offset; planning a batch takes the records the tasks pushed,
//! within the same budgets as polling (`fetchBufferSize`, the read limit, `maxFetchDuration`),
//! waiting at most `minFetchPeriod` when nothing arrived yet. A shard asked for from another
//! position than where its task is (a replay, a restart) gets a new task there. Children are
//! subscribed only once the source marks their parents finished (an event with child shards
//! ends a parent). Replaying a logged range stays with polling (`Source::read`, exact range).
//! `requireConsumerDeregistration` deregisters the consumers on a clean stop, waiting until
//! they are gone. With `registeredConsumerId` the consumers were registered outside the query
//! (`crate::registered`): they are only looked up (waiting while CREATING), never registered,
//! registered again when deleted (the read fails, naming the option) nor deregistered, and no
//! leak report is made.

pub mod consumers;
pub(crate) mod streaming;
pub(crate) mod subscription;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_kinesis::Client;
use tokio::sync::{mpsc, Mutex, Notify};
use tokio::task::JoinHandle;
use tributary_sdk::{ConnectorContext, Result, SourceMetrics};

use crate::config::{ConsumerMode, ConsumerNaming, EfoSettings, SourceConfig, StreamKeying};
use crate::offsets::ShardPosition;
use crate::planner::StreamRef;
use crate::reader::{Fetched, FetchedRecord, ShardReader, Stop};
use consumers::ConsumerInfo;
use subscription::{ShardEvent, ShardTask, SharedConsumer, SubscriptionStats, RENEW_AFTER};

/// Test knob: renew subscriptions after this many ms instead of 5 minutes.
#[doc(hidden)]
pub const RENEW_ENV: &str = "TRIBUTARY_KINESIS_EFO_RENEW_MS";

/// How long a new subscription may take to deliver its first event when the plan has no deadline.
const FIRST_EVENT_WAIT: Duration = Duration::from_secs(10);

/// Events buffered per shard (back-pressure on the subscription beyond that).
const EVENTS_PER_SHARD: usize = 8;

/// Whether the source can run in real-time mode (`SourceDescription::real_time`).
pub fn real_time_support(mode: &ConsumerMode) -> tributary_sdk::RealTimeSupport {
    let reason = match mode {
        ConsumerMode::Polling => {
            "consumerMode = polling cannot stream records as they arrive: set consumerMode = efo"
        }
        ConsumerMode::Efo(_) => return tributary_sdk::RealTimeSupport::Supported,
    };
    tributary_sdk::RealTimeSupport::Unsupported {
        reason: reason.to_string(),
    }
}

/// The consumer name a source with these settings uses in this context.
pub fn consumer_name(settings: &EfoSettings, context: &ConnectorContext) -> String {
    match &settings.naming {
        ConsumerNaming::Explicit(name) => name.clone(),
        ConsumerNaming::Prefix(prefix) => consumers::owned_name(prefix, &pipeline_id(context)),
        ConsumerNaming::Registered(r) => r.describe(),
    }
}

/// The pipeline id consumers are named after: the checkpoint id, else the pipeline name.
pub fn pipeline_id(context: &ConnectorContext) -> String {
    context
        .checkpoint_id
        .clone()
        .unwrap_or_else(|| context.pipeline.clone())
}

struct ShardSub {
    task: JoinHandle<()>,
    rx: mpsc::Receiver<ShardEvent>,
    /// Where the next fetch must start for this task to be reused.
    next: ShardPosition,
    pending: VecDeque<FetchedRecord>,
    millis_behind: Option<i64>,
    ended: bool,
    /// The last event was empty with MillisBehindLatest 0: at the tip (of a closed shard, its end).
    caught_up: bool,
    /// The subscription delivered at least one event.
    seen_event: bool,
}

impl Drop for ShardSub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The EFO side of the source.
pub struct EfoReader {
    settings: EfoSettings,
    name: String,
    pipeline_id: String,
    consumers: BTreeMap<String, Arc<SharedConsumer>>,
    shards: BTreeMap<(String, String), ShardSub>,
    leaked: Vec<String>,
    notify: Arc<Notify>,
    stats: Arc<SubscriptionStats>,
    wait: Duration,
    renew_after: Duration,
    closed_checked: BTreeMap<String, Instant>,
    /// shardFetchInterval: how often ListShards checks caught-up shards for their end.
    shard_fetch_interval: Duration,
    streaming: streaming::Streaming,
}

impl std::fmt::Debug for EfoReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EfoReader")
            .field("consumer", &self.name)
            .field("streams", &self.consumers.keys().collect::<Vec<_>>())
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

/// The source's hook at start and at each plan: registers the consumers of `streams` (once).
/// `known_arns` are stream ARNs the source already described (no second DescribeStreamSummary).
pub(crate) async fn start_hook<'a>(
    efo: &mut Option<EfoReader>,
    client: &Client,
    keying: StreamKeying,
    streams: impl Iterator<Item = &'a String>,
    known_arns: &BTreeMap<String, String>,
) -> Result<()> {
    let Some(efo) = efo.as_mut() else {
        return Ok(());
    };
    let refs: Vec<(StreamRef, Option<String>)> = streams
        .filter(|id| !efo.consumers.contains_key(*id))
        .map(|id| {
            (
                StreamRef {
                    keying,
                    id: id.clone(),
                },
                known_arns.get(id).cloned(),
            )
        })
        .collect();
    if refs.is_empty() {
        return Ok(());
    }
    efo.start_known(client, &refs).await
}

/// What starting the consumer of one stream found.
struct StreamStart {
    stream: String,
    arn: String,
    consumer: consumers::Registered,
    leaked: Vec<String>,
}

impl EfoReader {
    /// The reader of a source config: `None` for `consumerMode = polling`.
    pub fn for_config(config: &SourceConfig, context: &ConnectorContext) -> Option<EfoReader> {
        match &config.consumer_mode {
            ConsumerMode::Efo(settings) => {
                let mut r = EfoReader::new(settings.clone(), context, config.min_fetch_period);
                r.shard_fetch_interval = config.shard_fetch_interval;
                Some(r)
            }
            ConsumerMode::Polling => None,
        }
    }

    /// A reader (nothing contacted yet). `wait` is the longest a plan waits for pushed records.
    pub fn new(settings: EfoSettings, context: &ConnectorContext, wait: Duration) -> Self {
        EfoReader {
            name: consumer_name(&settings, context),
            pipeline_id: pipeline_id(context),
            settings,
            consumers: BTreeMap::new(),
            shards: BTreeMap::new(),
            leaked: Vec::new(),
            notify: Arc::new(Notify::new()),
            stats: Arc::new(SubscriptionStats::default()),
            wait,
            renew_after: std::env::var(RENEW_ENV)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(RENEW_AFTER, Duration::from_millis),
            closed_checked: BTreeMap::new(),
            shard_fetch_interval: Duration::from_secs(1),
            streaming: streaming::Streaming::default(),
        }
    }

    /// Renews subscriptions after `d` instead of 5 minutes (tests only).
    #[doc(hidden)]
    pub fn set_renew_after(&mut self, d: Duration) {
        self.renew_after = d;
    }

    /// The consumer name.
    pub fn consumer_name(&self) -> &str {
        &self.name
    }

    /// The registered consumer of a stream (by the id the source uses).
    pub async fn consumer(&self, stream: &str) -> Option<ConsumerInfo> {
        match self.consumers.get(stream) {
            Some(c) => Some(c.current.lock().await.clone()),
            None => None,
        }
    }

    /// Registers or reuses the consumer on every stream not done yet, waits until ACTIVE, and
    /// logs the leak report. Idempotent.
    pub async fn start(&mut self, client: &Client, streams: &[StreamRef]) -> Result<()> {
        let refs: Vec<(StreamRef, Option<String>)> = streams
            .iter()
            .filter(|s| !self.consumers.contains_key(&s.id))
            .map(|s| (s.clone(), None))
            .collect();
        self.start_known(client, &refs).await
    }

    /// [`EfoReader::start`] with the stream ARNs the caller may already know. The streams are
    /// started at once, and per stream the consumer lookup (or registration) and the leak
    /// report's listing run at once.
    async fn start_known(
        &mut self,
        client: &Client,
        streams: &[(StreamRef, Option<String>)],
    ) -> Result<()> {
        if let ConsumerNaming::Registered(r) = &self.settings.naming {
            let r = r.clone();
            return self.start_registered(client, streams, &r).await;
        }
        let (name, prefix, owner) = (
            self.name.as_str(),
            self.settings.prefix.as_str(),
            self.pipeline_id.clone(),
        );
        let starts = streams.iter().map(|(stream, known)| {
            let owners = [owner.clone()];
            async move {
                let t0 = Instant::now();
                let arn = match known {
                    Some(arn) => arn.clone(),
                    None => consumers::stream_arn(client, stream).await?,
                };
                let described_ms = t0.elapsed().as_millis() as u64;
                let (reg, orphans) = futures::join!(
                    consumers::register(client, &arn, name, consumers::DEFAULT_WAIT),
                    consumers::orphaned(client, &arn, prefix, &owners)
                );
                let reg = reg?;
                tracing::debug!(
                    stream = %stream.id,
                    created = reg.created,
                    describe_stream_ms = described_ms,
                    consumer_and_leak_report_ms = t0.elapsed().as_millis() as u64 - described_ms,
                    "EFO start: stream ARN, consumer and leak report"
                );
                let leaked: Vec<String> = orphans?
                    .into_iter()
                    .map(|c| c.name)
                    .filter(|n| n != name)
                    .collect();
                Ok::<_, tributary_sdk::Error>(StreamStart {
                    stream: stream.id.clone(),
                    arn,
                    consumer: reg,
                    leaked,
                })
            }
        });
        let started = futures::future::join_all(starts).await;
        for s in started {
            let s = s?;
            let (stream, reg) = (s.stream, s.consumer);
            if !reg.created {
                tracing::info!(consumer = %self.name, stream = %stream, arn = %reg.consumer.arn, "reusing the existing EFO consumer");
            }
            if !s.leaked.is_empty() {
                tracing::warn!(
                    stream = %stream,
                    prefix = %self.settings.prefix,
                    leaked = ?s.leaked,
                    "EFO consumers under the prefix that this pipeline does not own (leaked unless another running pipeline uses them); each costs money: `tributary kinesis consumers deregister --stream {} --name NAME`",
                    stream
                );
                for n in s.leaked {
                    if !self.leaked.contains(&n) {
                        self.leaked.push(n);
                    }
                }
            }
            self.consumers.insert(
                stream,
                Arc::new(SharedConsumer {
                    stream_arn: s.arn,
                    name: self.name.clone(),
                    current: Mutex::new(reg.consumer),
                    external: false,
                }),
            );
        }
        Ok(())
    }

    /// `registeredConsumerId`: looks up (never registers) the consumer of every stream, waits
    /// while it is being created; no leak report (the query owns no consumer).
    async fn start_registered(
        &mut self,
        client: &Client,
        streams: &[(StreamRef, Option<String>)],
        registered: &crate::registered::RegisteredConsumers,
    ) -> Result<()> {
        let lookups = streams.iter().map(|(stream, known)| async move {
            let arn = match known {
                Some(arn) => arn.clone(),
                None => consumers::stream_arn(client, stream).await?,
            };
            let id = registered.by_stream.get(&stream.id).ok_or_else(|| {
                tributary_sdk::Error::new(
                    tributary_sdk::ErrorCode::InvalidOption,
                    format!(
                        "no consumer in 'registeredConsumerId' for stream '{}'",
                        stream.id
                    ),
                )
                .with_context("option", "registeredConsumerId")
            })?;
            let c = consumers::lookup_registered(
                client,
                &arn,
                registered.id_type,
                id,
                consumers::DEFAULT_WAIT,
            )
            .await?;
            Ok::<_, tributary_sdk::Error>((stream.id.clone(), arn, c))
        });
        for found in futures::future::join_all(lookups).await {
            let (stream, arn, c) = found?;
            tracing::info!(consumer = %c.name, stream = %stream, arn = %c.arn, "using the EFO consumer registered outside the query (registeredConsumerId)");
            self.consumers.insert(
                stream,
                Arc::new(SharedConsumer {
                    stream_arn: arn,
                    name: c.name.clone(),
                    current: Mutex::new(c),
                    external: true,
                }),
            );
        }
        Ok(())
    }

    fn ensure_task(
        &mut self,
        client: &Arc<Client>,
        stream: &str,
        shard: &str,
        from: &ShardPosition,
    ) -> Result<()> {
        let key = (stream.to_string(), shard.to_string());
        if self.shards.get(&key).is_some_and(|s| &s.next == from) {
            return Ok(());
        }
        let consumer = self.consumers.get(stream).cloned().ok_or_else(|| {
            tributary_sdk::Error::new(
                tributary_sdk::ErrorCode::Internal,
                format!("no EFO consumer for stream '{stream}'"),
            )
        })?;
        let (tx, rx) = mpsc::channel(EVENTS_PER_SHARD);
        let task = ShardTask {
            client: Arc::clone(client),
            consumer,
            shard: shard.to_string(),
            from: from.clone(),
            tx,
            notify: Arc::clone(&self.notify),
            stats: Arc::clone(&self.stats),
            renew_after: self.renew_after,
        };
        let handle = tokio::spawn(task.run());
        // Replacing drops (aborts) a task at another position.
        self.shards.insert(
            key,
            ShardSub {
                task: handle,
                rx,
                next: from.clone(),
                pending: VecDeque::new(),
                millis_behind: None,
                ended: false,
                caught_up: false,
                seen_event: false,
            },
        );
        Ok(())
    }

    /// Takes what the shard's task pushed so far, within the budgets.
    fn take(&mut self, stream: &str, shard: &str, stop: &Stop) -> Result<Fetched> {
        let mut out = Fetched::default();
        let Some(sub) = self
            .shards
            .get_mut(&(stream.to_string(), shard.to_string()))
        else {
            return Ok(out);
        };
        let mut failed = None;
        loop {
            match sub.rx.try_recv() {
                Ok(ShardEvent::Records {
                    records,
                    millis_behind,
                }) => {
                    sub.seen_event = true;
                    sub.caught_up = records.is_empty() && millis_behind == 0;
                    sub.pending.extend(records);
                    sub.millis_behind = Some(millis_behind);
                }
                Ok(ShardEvent::End) => {
                    sub.seen_event = true;
                    sub.ended = true;
                }
                Ok(ShardEvent::Failed(e)) => {
                    failed = Some(e);
                    break;
                }
                Err(_) => break,
            }
        }
        if let Some(e) = failed {
            self.shards.remove(&(stream.to_string(), shard.to_string()));
            return Err(e);
        }
        while let Some(r) = sub.pending.front() {
            if stop.records.load(Ordering::Relaxed) <= 0 || stop.bytes.load(Ordering::Relaxed) <= 0
            {
                break;
            }
            if let (Some(cut), Some(at)) = (stop.arrival_cutoff, r.arrival_ms) {
                if at > cut {
                    break;
                }
            }
            let Some(r) = sub.pending.pop_front() else {
                break;
            };
            stop.records.fetch_sub(1, Ordering::Relaxed);
            stop.bytes.fetch_sub(
                (r.data.len() + r.partition_key.len()) as i64,
                Ordering::Relaxed,
            );
            out.records.push(r);
        }
        if let Some(last) = out.records.last() {
            sub.next = ShardPosition::After(last.sequence.clone());
            out.position = Some(sub.next.clone());
        }
        out.millis_behind = sub.millis_behind;
        out.finished = sub.ended && sub.pending.is_empty();
        Ok(out)
    }

    /// Plans one batch for `jobs` (the polling readers are handed back untouched): starts or
    /// reuses each shard's subscription at its position, then takes the pushed records.
    pub(crate) async fn fetch_all(
        &mut self,
        client: &Arc<Client>,
        jobs: Vec<(ShardReader, ShardPosition, Stop)>,
    ) -> Vec<(ShardReader, ShardPosition, Result<Fetched>)> {
        let mut started = Vec::with_capacity(jobs.len());
        for (reader, from, stop) in jobs {
            let r = self.ensure_task(client, &reader.stream.id, &reader.shard, &from);
            started.push((reader, from, stop, r));
        }
        let now = Instant::now();
        // A new subscription gets until the plan's deadline (maxFetchDuration) for its first
        // event; otherwise a plan waits at most `wait` (minFetchPeriod) for pushed records.
        let plan_deadline = started
            .iter()
            .filter_map(|(_, _, s, _)| s.deadline)
            .min()
            .unwrap_or(now + FIRST_EVENT_WAIT);
        let deadline = plan_deadline.min(now + self.wait);
        let mut out: Vec<(ShardReader, ShardPosition, Result<Fetched>)> =
            Vec::with_capacity(started.len());
        let mut waiting = Vec::new();
        for (reader, from, stop, r) in started {
            match r {
                Err(e) => out.push((reader, from, Err(e))),
                Ok(()) => waiting.push((reader, from, stop)),
            }
        }
        let mut results: Vec<Option<Result<Fetched>>> = (0..waiting.len()).map(|_| None).collect();
        let notify = Arc::clone(&self.notify);
        loop {
            let notified = notify.notified();
            let mut any = false;
            for (i, (reader, _, stop)) in waiting.iter().enumerate() {
                let got = self.take(&reader.stream.id, &reader.shard, stop);
                let merged = match (results[i].take(), got) {
                    (Some(Ok(mut acc)), Ok(more)) => {
                        any |= !more.records.is_empty() || more.finished;
                        acc.records.extend(more.records);
                        acc.position = more.position.or(acc.position);
                        acc.millis_behind = more.millis_behind.or(acc.millis_behind);
                        acc.finished = more.finished;
                        Ok(acc)
                    }
                    (Some(Err(e)), _) => Err(e),
                    (None, got) => {
                        any |= got
                            .as_ref()
                            .map_or(true, |f| !f.records.is_empty() || f.finished);
                        got
                    }
                    (Some(Ok(_)), Err(e)) => Err(e),
                };
                results[i] = Some(merged);
            }
            let fresh = waiting.iter().any(|(r, _, _)| {
                self.shards
                    .get(&(r.stream.id.clone(), r.shard.clone()))
                    .is_some_and(|s| !s.seen_event)
            });
            let until = if fresh { plan_deadline } else { deadline };
            if (any && !fresh) || Instant::now() >= until {
                break;
            }
            let left = until.saturating_duration_since(Instant::now());
            let _ = tokio::time::timeout(left, notified).await;
        }
        let mut results: Vec<Result<Fetched>> = results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Ok(Fetched::default())))
            .collect();
        self.mark_closed_ends(client, &waiting, &mut results).await;
        for ((reader, from, _), r) in waiting.into_iter().zip(results) {
            out.push((reader, from, r));
        }
        out
    }

    /// A closed shard whose subscription is caught up is at its end. Kinesis says so with
    /// child shards in the last event; servers that do not (kinesis-mock) are covered by
    /// checking ListShards (at most once per shardFetchInterval per stream) for caught-up shards.
    async fn mark_closed_ends(
        &mut self,
        client: &Client,
        jobs: &[(ShardReader, ShardPosition, Stop)],
        results: &mut [Result<Fetched>],
    ) {
        let mut listings: BTreeMap<String, Vec<crate::planner::ShardInfo>> = BTreeMap::new();
        for ((reader, _, _), result) in jobs.iter().zip(results.iter_mut()) {
            let Ok(fetched) = result else { continue };
            let key = (reader.stream.id.clone(), reader.shard.clone());
            let Some(sub) = self.shards.get_mut(&key) else {
                continue;
            };
            if fetched.finished || !sub.caught_up || !sub.pending.is_empty() {
                continue;
            }
            if !listings.contains_key(&key.0) {
                if self
                    .closed_checked
                    .get(&key.0)
                    .is_some_and(|t| t.elapsed() < self.shard_fetch_interval)
                {
                    continue;
                }
                self.closed_checked.insert(key.0.clone(), Instant::now());
                match crate::planner::list_shards(client, &reader.stream).await {
                    Ok(l) => {
                        listings.insert(key.0.clone(), l);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "ListShards for the EFO end-of-shard check failed");
                        continue;
                    }
                }
            }
            if listings
                .get(&key.0)
                .is_some_and(|l| l.iter().any(|s| s.id == key.1 && s.closed))
            {
                sub.ended = true;
                fetched.finished = true;
            }
        }
    }

    /// Real-time mode: starts one supervisor per stream of `start` pushing chunks into `queue`
    /// (the consumers must be started). The micro-batch subscriptions are stopped first.
    pub(crate) async fn start_stream(
        &mut self,
        client: &Arc<Client>,
        start: &crate::offsets::KinesisOffsets,
        queue: tributary_sdk::ChunkSender,
        schema: arrow_schema::SchemaRef,
    ) -> Result<()> {
        self.shards.clear();
        self.streaming.stop().await;
        let mut supervisors = Vec::new();
        for (id, offsets) in &start.streams {
            let consumer = self.consumers.get(id).cloned().ok_or_else(|| {
                tributary_sdk::Error::new(
                    tributary_sdk::ErrorCode::Internal,
                    format!("no EFO consumer for stream '{id}'"),
                )
            })?;
            supervisors.push(streaming::Supervisor {
                client: Arc::clone(client),
                consumer,
                stream: StreamRef {
                    keying: start.keying,
                    id: id.clone(),
                },
                offsets: offsets.clone(),
                queue: queue.clone(),
                schema: schema.clone(),
                stats: Arc::clone(&self.stats),
                renew_after: self.renew_after,
            });
        }
        self.streaming = streaming::Streaming::start(supervisors);
        Ok(())
    }

    /// Real-time mode: stops the supervisors and their pumps.
    pub(crate) async fn stop_stream(&mut self) {
        self.streaming.stop().await;
    }

    /// Stops every subscription; deregisters the consumers when `requireConsumerDeregistration`.
    pub async fn stop(&mut self, client: Option<&Client>) -> Result<()> {
        self.shards.clear();
        self.streaming.stop().await;
        if self.settings.require_deregistration {
            if let Some(client) = client {
                // A consumer registered outside the query is never deregistered by it.
                for c in self.consumers.values().filter(|c| !c.external) {
                    consumers::deregister(client, &c.stream_arn, &c.name, consumers::DEFAULT_WAIT)
                        .await?;
                }
            }
        }
        self.consumers.clear();
        Ok(())
    }

    /// `efo.*` metrics: the consumer, the leak report, re-registrations and subscriptions.
    pub fn write_metrics(&self, m: &mut SourceMetrics) {
        m.insert("efo.consumerName".into(), self.name.clone().into());
        let arns: Vec<serde_json::Value> = self
            .consumers
            .values()
            .filter_map(|c| {
                c.current
                    .try_lock()
                    .ok()
                    .map(|i| serde_json::json!({"arn": i.arn, "createdMs": i.created_ms}))
            })
            .collect();
        m.insert("efo.consumers".into(), arns.into());
        m.insert("efo.leakedConsumers".into(), self.leaked.clone().into());
        m.insert(
            "efo.reRegistrations".into(),
            self.stats.reregistrations.load(Ordering::Relaxed).into(),
        );
        m.insert(
            "efo.subscriptions".into(),
            self.stats.subscriptions.load(Ordering::Relaxed).into(),
        );
        m.insert(
            "efo.subscribeFailures".into(),
            self.stats.failures.load(Ordering::Relaxed).into(),
        );
        m.insert(
            "efo.activeSubscriptions".into(),
            (self
                .shards
                .values()
                .filter(|s| !s.task.is_finished())
                .count() as u64)
                .into(),
        );
    }
}
