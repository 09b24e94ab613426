//! The Kinesis source (polling): plans a batch by reading ahead with GetRecords, bounded by
//! `fetchBufferSize`, `maxFetchDuration` and the read limit, and reads `[start, end)` exactly.
//!
//! Shards are fetched ahead in the background (`crate::prefetch`, one task per readable shard,
//! parents before children, memory bounded by `fetchBufferSize`); `latest_offset` takes the
//! buffered records (waiting up to `maxFetchDuration` for shards that are neither caught up nor
//! buffered) and keeps that one planned batch; `read_stream` of the same range yields them after checking
//! the streams were not recreated, and any other range (a replay after a restart) is fetched
//! again from the start positions up to the end sequence numbers. A range that cannot be read
//! to its end (trimmed records, expired shards, a recreated stream) is
//! `KINESIS_COULD_NOT_READ_SHARD_UNTIL_END_OFFSET`.
//!
//! Scale-out: `plan_partitions` splits a range into per-shard ranges (`crate::partitions`) and
//! `read_partition` reads one of them; a replay `read_stream` is "plan the shard ranges, read them",
//! the same `read_ranges` path.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use aws_sdk_kinesis::Client;
use futures::future::join_all;
use tributary_sdk::{
    batch_stream, fail_before_first_part, BatchStream, ConnectorContext, DataLossEvent,
    DataLossKind, DataLossTracker, Error, ErrorCode, InputPartition, Offset, ReadLimit, Result,
    SecretStore, Source, SourceIdentity, SourceMetrics,
};

use crate::client::LazyClient;
use crate::config::SourceConfig;
use crate::metrics::KinesisMetrics;
use crate::offsets::{KinesisOffsets, ShardPosition};
use crate::partitions::{input_partitions, ranges_of, shard_ranges, ShardRange};
use crate::planner::{self, StreamRef};
use crate::position::InitialPosition;
use crate::prefetch::{Held, Prefetch};
use crate::range_stream::{self, Piece, RangeParts};
use crate::reader::{ShardReader, Stop};
use crate::rows::ShardRecords;
use crate::schema::kinesis_schema;

#[derive(Debug)]
struct Planned {
    start: KinesisOffsets,
    end: KinesisOffsets,
    records: Vec<ShardRecords>,
    /// The planned bytes in the `fetchBufferSize` budget, released when handed out.
    _held: Option<Held>,
}

/// The Kinesis source.
#[derive(Debug)]
pub struct KinesisSource {
    config: SourceConfig,
    identity: SourceIdentity,
    secrets: Arc<dyn SecretStore>,
    client: LazyClient,
    readers: BTreeMap<(String, String), ShardReader>,
    planned: Option<Planned>,
    tracker: DataLossTracker,
    metrics: KinesisMetrics,
    cutoff: Option<i64>,
    restart_checked: bool,
    last_refresh: BTreeMap<String, Instant>,
    recreations_reported: BTreeSet<(String, i64)>,
    schema: SchemaRef,
    throttle_pause: Duration,
    /// consumerMode = efo: plans batches from SubscribeToShard (kinesis-efo helper's hook).
    efo: Option<crate::efo::EfoReader>,
    /// Polling: the background read-ahead, bounded by fetchBufferSize.
    prefetch: Prefetch,
    /// Real-time: the start offset of the running long batch as the runtime gave it, and as
    /// the restart checks left it (streams added or removed); `end_offset` continues the latter.
    stream_start: Option<(Offset, Offset)>,
}

impl KinesisSource {
    /// A source for a parsed config (nothing is contacted yet).
    pub fn new(
        config: SourceConfig,
        identity: SourceIdentity,
        secrets: Arc<dyn SecretStore>,
        context: &ConnectorContext,
    ) -> Self {
        let tracker = DataLossTracker::new(config.fail_on_data_loss);
        let efo = crate::efo::EfoReader::for_config(&config, context);
        let prefetch = Prefetch::new(config.fetch_buffer_size, config.min_fetch_period);
        KinesisSource {
            config,
            identity,
            secrets,
            client: LazyClient::default(),
            readers: BTreeMap::new(),
            planned: None,
            tracker,
            metrics: KinesisMetrics::default(),
            cutoff: None,
            restart_checked: false,
            last_refresh: BTreeMap::new(),
            recreations_reported: BTreeSet::new(),
            schema: kinesis_schema(),
            throttle_pause: Duration::from_secs(5),
            efo,
            prefetch,
            stream_start: None,
        }
    }

    /// Uses this client instead of building one from the connection options (a client with
    /// its own interceptors, HTTP settings or credentials).
    pub fn with_client(mut self, client: Client) -> Self {
        self.client = LazyClient::ready(client);
        self
    }

    /// Shortens the pause after throttling (tests only; the real pause is 5 s).
    #[doc(hidden)]
    pub fn set_throttle_pause(&mut self, pause: Duration) {
        self.throttle_pause = pause;
    }

    async fn client(&mut self) -> Result<Arc<Client>> {
        self.client
            .get(&self.config.connection, self.secrets.as_ref())
            .await
    }

    fn stream_ref(&self, id: &str) -> StreamRef {
        StreamRef {
            keying: self.config.streams.keying,
            id: id.to_string(),
        }
    }

    async fn stream_info(&self, client: &Client, id: &str) -> Result<planner::StreamInfo> {
        planner::describe_stream(client, &self.stream_ref(id))
            .await?
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::SourceRead,
                    format!("Kinesis stream '{id}' does not exist"),
                )
                .with_context("stream", id)
                .with_context("option", self.config.streams.keying.option())
            })
    }

    /// Applies the restart rules once: same keying, removed streams are data loss, added
    /// streams start at their oldest record.
    async fn check_restart(&mut self, client: &Client, next: &mut KinesisOffsets) -> Result<()> {
        next.check_keying(self.config.streams.keying)?;
        let wanted: Vec<String> = self.config.streams.ids.clone();
        let removed: Vec<String> = next
            .streams
            .keys()
            .filter(|s| !wanted.contains(s))
            .cloned()
            .collect();
        for s in removed {
            self.tracker.report(DataLossEvent::new(
                DataLossKind::StreamRemoved,
                &s,
                format!("stream '{s}' is in the checkpoint but no longer in the query"),
            ))?;
            next.streams.remove(&s);
        }
        for s in wanted {
            if !next.streams.contains_key(&s) {
                let info = self.stream_info(client, &s).await?;
                let shards = planner::list_shards(client, &self.stream_ref(&s)).await?;
                tracing::info!(stream = %s, "stream added to the query; reading it from its oldest record");
                next.streams.insert(
                    s.clone(),
                    planner::initial_stream(&info, &shards, &ShardPosition::TrimHorizon),
                );
                self.last_refresh.insert(s, Instant::now());
            }
        }
        Ok(())
    }

    /// EFO on a restart: where each shard resumes is read by polling before subscribing
    /// (`crate::loss::check_starts`).
    async fn check_subscription_starts(
        &mut self,
        client: &Client,
        next: &mut KinesisOffsets,
    ) -> Result<()> {
        let mut readers = Vec::new();
        for (stream, s) in &next.streams {
            for shard in s.shards.keys() {
                if next.readable(stream, shard) {
                    readers.push((stream.clone(), shard.clone(), self.reader(stream, shard)));
                }
            }
        }
        crate::loss::check_starts(client, next, readers, &mut self.tracker).await
    }

    /// Reports a recreated or deleted stream once per creation time.
    fn report_recreated(&mut self, stream: &str, was: Option<i64>, now: Option<i64>) -> Result<()> {
        let key = (stream.to_string(), now.unwrap_or(-1));
        if !self.recreations_reported.insert(key) {
            return Ok(());
        }
        let detail = match now {
            Some(_) => format!("stream '{stream}' was deleted and recreated; the records after the checkpoint are gone"),
            None => format!("stream '{stream}' was deleted; the records after the checkpoint are gone"),
        };
        let mut event = DataLossEvent::new(DataLossKind::ShardExpired, stream, detail);
        if let (Some(w), Some(n)) = (was, now) {
            event = event.with_positions(format!("created {w}"), format!("created {n}"));
        }
        self.tracker.report(event)
    }

    /// Refreshes stream identities and shard lists (at most every second per stream).
    async fn refresh(
        &mut self,
        client: &Client,
        next: &mut KinesisOffsets,
        force: bool,
    ) -> Result<()> {
        let ids: Vec<String> = next.streams.keys().cloned().collect();
        for id in ids {
            let due = force
                || self
                    .last_refresh
                    .get(&id)
                    .is_none_or(|t| t.elapsed() >= self.config.shard_fetch_interval)
                || next
                    .streams
                    .get(&id)
                    .is_some_and(|s| s.shards.values().any(|e| e.finished));
            if !due {
                continue;
            }
            let stream = self.stream_ref(&id);
            self.metrics.shard_list_refreshes += 1;
            let info = planner::describe_stream(client, &stream).await?;
            let was = next.streams.get(&id).and_then(|s| s.created_ms);
            match info {
                None => {
                    self.report_recreated(&id, was, None)?;
                    continue;
                }
                Some(info) if was.is_some_and(|w| w != info.created_ms) => {
                    self.report_recreated(&id, was, Some(info.created_ms))?;
                    let shards = match planner::list_shards(client, &stream).await {
                        Ok(s) => s,
                        Err(_) => continue, // still being created
                    };
                    next.streams.insert(
                        id.clone(),
                        planner::initial_stream(&info, &shards, &ShardPosition::TrimHorizon),
                    );
                    self.readers.retain(|(s, _), _| s != &id);
                    self.prefetch.forget_stream(&id);
                }
                Some(info) => {
                    let shards = planner::list_shards(client, &stream).await?;
                    if let Some(s) = next.streams.get_mut(&id) {
                        s.created_ms = Some(info.created_ms);
                        let added = planner::discover_shards(s, &shards);
                        if !added.is_empty() {
                            tracing::info!(stream = %id, shards = ?added, "new shards (resharding); read after their parents");
                        }
                    }
                }
            }
            self.last_refresh.insert(id, Instant::now());
        }
        next.drop_consumed_parents();
        Ok(())
    }

    fn reader(&mut self, stream: &str, shard: &str) -> ShardReader {
        let key = (stream.to_string(), shard.to_string());
        self.readers.remove(&key).unwrap_or_else(|| {
            let mut r = ShardReader::new(
                self.stream_ref(stream),
                shard.to_string(),
                self.config.max_records_per_fetch,
                self.config.min_fetch_period,
            );
            r.throttle_pause = self.throttle_pause;
            r.max_fetch_rate = self.config.max_fetch_rate;
            r
        })
    }

    /// Fetches `jobs` (reader, from, stop), every shard in parallel (Databricks prefetches the
    /// shards of a task in parallel, and here every task runs at once).
    async fn fetch_all(
        &mut self,
        client: &Client,
        jobs: Vec<(ShardReader, ShardPosition, Stop)>,
    ) -> Vec<(ShardReader, ShardPosition, Result<crate::reader::Fetched>)> {
        let futures = jobs.into_iter().map(|(mut reader, from, stop)| async move {
            let r = reader.fetch(client, &from, &stop).await;
            (reader, from, r)
        });
        join_all(futures).await
    }

    /// Checks that every stream of `end` still has the creation time it was planned with.
    /// Returns the streams whose records are gone (failOnDataLoss=false).
    async fn verify_streams(
        &mut self,
        client: &Client,
        end: &KinesisOffsets,
    ) -> Result<BTreeSet<String>> {
        let mut lost = BTreeSet::new();
        for (id, s) in &end.streams {
            let info = planner::describe_stream(client, &self.stream_ref(id)).await?;
            let now = info.as_ref().map(|i| i.created_ms);
            if now.is_none() || (s.created_ms.is_some() && s.created_ms != now) {
                self.report_recreated(id, s.created_ms, now)?;
                lost.insert(id.clone());
            }
        }
        Ok(lost)
    }

    /// Reads shard ranges from their start positions up to their end sequence numbers (every
    /// shard in parallel, yielded in order) as a stream of bounded parts
    /// (`crate::range_stream`); a range that cannot be read to its end (trimmed records, an
    /// expired shard) is data loss under `failOnDataLoss`, reported when the stream reaches
    /// it. The rows are ordered by stream and shard, each shard in sequence order. The one
    /// read path of replays and input partitions.
    fn read_ranges(&mut self, client: &Client, mut ranges: Vec<ShardRange>) -> BatchStream<'_> {
        ranges.sort_by(|a, b| (&a.stream, &a.shard).cmp(&(&b.stream, &b.shard)));
        let jobs: Vec<_> = ranges
            .into_iter()
            .map(|r| {
                let reader = self.reader(&r.stream, &r.shard);
                (r, reader)
            })
            .collect();
        let parts = range_stream::start(client, &self.schema, jobs, self.config.fetch_buffer_size);
        let state = ReplayState {
            parts,
            readers: &mut self.readers,
            tracker: &mut self.tracker,
        };
        Box::pin(futures::stream::unfold(state, |mut st| async move {
            loop {
                match st.parts.next().await? {
                    Piece::Part(b) => return Some((Ok(b), st)),
                    Piece::Failed(e) => return Some((Err(e), st)),
                    Piece::RangeEnd {
                        reader,
                        range,
                        reached,
                        records,
                        gap,
                    } => {
                        st.readers
                            .insert((range.stream.clone(), range.shard.clone()), *reader);
                        let Some(event) =
                            crate::loss::range_event(&range, reached, records, gap.as_ref())
                        else {
                            continue;
                        };
                        if let Err(e) = st.tracker.report(event) {
                            st.parts.close();
                            return Some((Err(e), st));
                        }
                    }
                }
            }
        }))
    }
}

/// What the stream of [`KinesisSource::read_ranges`] carries between parts.
struct ReplayState<'a> {
    parts: RangeParts,
    readers: &'a mut BTreeMap<(String, String), ShardReader>,
    tracker: &'a mut DataLossTracker,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[async_trait]
impl Source for KinesisSource {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn identity(&self) -> SourceIdentity {
        self.identity.clone()
    }

    async fn initial_offset(&mut self) -> Result<Offset> {
        let t0 = Instant::now();
        let client = self.client().await?;
        let client_ms = t0.elapsed().as_millis() as u64;
        let position = match self.config.initial_position {
            InitialPosition::TrimHorizon => ShardPosition::TrimHorizon,
            InitialPosition::Latest => ShardPosition::AtTimestamp(now_ms()),
            InitialPosition::AtTimestamp(ms) => ShardPosition::AtTimestamp(ms),
        };
        let mut offsets = KinesisOffsets::new(self.config.streams.keying);
        // Every stream at once, and per stream its description and shard list at once; the
        // EFO consumers are then looked up (or registered) with the ARNs just described.
        let ids = self.config.streams.ids.clone();
        let described = {
            let (this, client) = (&*self, &client);
            join_all(ids.iter().map(|id| async move {
                let stream = this.stream_ref(id);
                let (info, shards) = futures::join!(
                    this.stream_info(client, id),
                    planner::list_shards(client, &stream)
                );
                Ok::<_, Error>((id.clone(), info?, shards?))
            }))
            .await
        };
        let described_ms = t0.elapsed().as_millis() as u64 - client_ms;
        let mut arns = BTreeMap::new();
        for d in described {
            let (id, info, shards) = d?;
            arns.insert(id.clone(), info.arn.clone());
            offsets.streams.insert(
                id.clone(),
                planner::initial_stream(&info, &shards, &position),
            );
            self.last_refresh.insert(id, Instant::now());
        }
        crate::efo::start_hook(
            &mut self.efo,
            &client,
            self.config.streams.keying,
            ids.iter(),
            &arns,
        )
        .await?;
        self.restart_checked = true;
        tracing::debug!(
            client_ms,
            streams_and_shards_ms = described_ms,
            total_ms = t0.elapsed().as_millis() as u64,
            "initial offset"
        );
        offsets.to_offset()
    }

    async fn prepare_available_now(&mut self) -> Result<()> {
        // Records after the cut-off are not read: no read-ahead past it.
        self.prefetch.clear();
        self.cutoff = Some(now_ms());
        Ok(())
    }

    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        let client = self.client().await?;
        let start_offsets = KinesisOffsets::from_offset(start)?;
        let mut next = start_offsets.clone();
        let restarting = !self.restart_checked;
        if restarting {
            self.check_restart(&client, &mut next).await?;
            self.restart_checked = true;
        }
        self.refresh(&client, &mut next, false).await?;
        if restarting && self.efo.is_some() {
            self.check_subscription_starts(&client, &mut next).await?;
        }
        crate::efo::start_hook(
            &mut self.efo,
            &client,
            self.config.streams.keying,
            next.streams.keys(),
            &BTreeMap::new(),
        )
        .await?;
        let records_budget = Arc::new(AtomicI64::new(
            limit
                .max_rows()
                .map(|n| n.min(i64::MAX as u64) as i64)
                .unwrap_or(i64::MAX),
        ));
        let bytes_budget = Arc::new(AtomicI64::new(
            self.config.fetch_buffer_size.min(i64::MAX as u64) as i64,
        ));
        let stop = Stop {
            records: records_budget,
            bytes: bytes_budget,
            deadline: Some(Instant::now() + self.config.max_fetch_duration),
            until: None,
            arrival_cutoff: self.cutoff,
            one_page: false,
        };
        let mut jobs = Vec::new();
        for (stream, s) in &next.streams {
            for (shard, e) in &s.shards {
                if next.readable(stream, shard) {
                    jobs.push((stream.clone(), shard.clone(), e.position.clone()));
                }
            }
        }
        let jobs: Vec<_> = jobs
            .into_iter()
            .map(|(stream, shard, from)| (self.reader(&stream, &shard), from, stop.clone()))
            .collect();
        self.metrics.active_shards = jobs.len() as u64;
        let mut held = None;
        let results = match (self.efo.as_mut(), self.cutoff) {
            (Some(efo), _) => efo.fetch_all(&client, jobs).await,
            (None, Some(_)) => self.fetch_all(&client, jobs).await,
            (None, None) => {
                let jobs = jobs.into_iter().map(|(r, from, _)| (r, from)).collect();
                let budget = stop.records.load(std::sync::atomic::Ordering::Relaxed);
                let deadline = stop.deadline.unwrap_or_else(Instant::now);
                let (results, h) = self.prefetch.plan(&client, jobs, budget, deadline).await;
                held = Some(h);
                results
            }
        };
        let mut planned = Vec::new();
        let mut first_error = None;
        for (reader, _from, result) in results {
            let (stream, shard) = (reader.stream.id.clone(), reader.shard.clone());
            self.metrics.throttled = self.metrics.throttled.max(reader.throttled);
            self.readers.insert((stream.clone(), shard.clone()), reader);
            let fetched = match result {
                Ok(f) => f,
                Err(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            if let Some(gap) = &fetched.resume_gap {
                // Resumed after a record the shard no longer holds (`crate::loss`).
                self.tracker
                    .report(crate::loss::resume_event(&stream, &shard, gap))?;
            }
            if let Some(ms) = fetched.millis_behind {
                self.metrics
                    .behind
                    .insert((stream.clone(), shard.clone()), ms);
            }
            if fetched.not_found {
                self.tracker.report(DataLossEvent::new(
                    DataLossKind::ShardExpired,
                    format!("{stream}/{shard}"),
                    format!("shard '{shard}' of stream '{stream}' is no longer available (expired or deleted) before it was read to its end"),
                ))?;
            }
            let Some(entry) = next
                .streams
                .get_mut(&stream)
                .and_then(|s| s.shards.get_mut(&shard))
            else {
                continue;
            };
            if let Some(p) = fetched.position {
                entry.position = p;
            }
            if fetched.finished || fetched.not_found {
                entry.finished = true;
                self.metrics.behind.remove(&(stream.clone(), shard.clone()));
            }
            if !fetched.records.is_empty() {
                planned.push(ShardRecords {
                    stream,
                    shard,
                    records: fetched.records,
                });
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        self.metrics.planned_records = planned.iter().map(|s| s.records.len() as u64).sum();
        self.metrics.planned_bytes = planned
            .iter()
            .flat_map(|s| s.records.iter())
            .map(|r| r.data.len() as u64)
            .sum();
        if next == start_offsets {
            self.planned = None;
            return Ok(start.clone());
        }
        let end = next.to_offset()?;
        self.planned = Some(Planned {
            start: start_offsets,
            end: next,
            records: planned,
            _held: held,
        });
        Ok(end)
    }

    /// The batch planned by `latest_offset` when the range is that batch (its records are
    /// held, at most `fetchBufferSize` bytes), cut into parts; any other range (a replay after
    /// a restart) is fetched again, part by part, from the start positions up to the end
    /// sequence numbers.
    async fn read_stream<'a>(
        &'a mut self,
        start: &Offset,
        end: &Offset,
    ) -> Result<BatchStream<'a>> {
        let client = self.client().await?;
        let start_o = KinesisOffsets::from_offset(start)?;
        let end_o = KinesisOffsets::from_offset(end)?;
        let lost = self.verify_streams(&client, &end_o).await?;
        if let Some(p) = self.planned.take() {
            if p.start == start_o && p.end == end_o {
                let kept: Vec<ShardRecords> = p
                    .records
                    .into_iter()
                    .filter(|s| !lost.contains(&s.stream))
                    .collect();
                return Ok(batch_stream(crate::coalesce::planned_batches(
                    &self.schema,
                    &kept,
                    self.config.coalesce,
                )?));
            }
        }
        // A replay: fetch every shard from its start position up to its end sequence number.
        let ranges = shard_ranges(&start_o, &end_o, &lost);
        fail_before_first_part(self.read_ranges(&client, ranges)).await
    }

    /// Splits `[start, end)` into per-shard sequence-number ranges after the same checks as
    /// [`Source::read_stream`] (recreated or deleted streams are data loss under `failOnDataLoss`);
    /// a shard read in the range together with its parent shares the parent's partition, so
    /// the lineage order holds (`partitions.rs`). The executors read the range by polling
    /// (under `consumerMode = efo` too: a logged range is always replayed by polling), so the
    /// batch planned by `latest_offset`, and its `fetchBufferSize` bytes, are released here.
    /// `parallelism` is ignored: shards are the natural pieces of a Kinesis range (as
    /// Spark's Kinesis source makes one partition per shard range), and a shard cannot be
    /// split further without reading it, since its sequence numbers are not dense.
    async fn plan_partitions(
        &mut self,
        start: &Offset,
        end: &Offset,
        _parallelism: usize,
    ) -> Result<Option<Vec<InputPartition>>> {
        let client = self.client().await?;
        let start_o = KinesisOffsets::from_offset(start)?;
        let end_o = KinesisOffsets::from_offset(end)?;
        let lost = self.verify_streams(&client, &end_o).await?;
        self.planned = None;
        let ranges = shard_ranges(&start_o, &end_o, &lost);
        Ok(Some(input_partitions(
            ranges,
            &end_o,
            self.config.shards_per_task,
        )?))
    }

    /// Reads exactly one planned partition with GetRecords (the replay path of
    /// [`Source::read_stream`]): no EFO consumer is registered and nothing is written, so an executor
    /// built without a checkpoint state directory can run it anywhere. Ranges that cannot be
    /// read to their end follow `failOnDataLoss` as in [`Source::read_stream`].
    async fn read_partition<'a>(
        &'a mut self,
        partition: &InputPartition,
    ) -> Result<BatchStream<'a>> {
        let ranges = ranges_of(partition, &self.config.streams.ids)?;
        let client = self.client().await?;
        fail_before_first_part(self.read_ranges(&client, ranges)).await
    }

    async fn commit(&mut self, _end: &Offset) -> Result<()> {
        Ok(())
    }

    fn metrics(&self) -> SourceMetrics {
        let mut m = self.metrics.to_metrics(&self.tracker);
        m.insert(
            "prefetch.heldBytes".into(),
            self.prefetch.held_bytes().into(),
        );
        m.insert(
            "prefetch.peakHeldBytes".into(),
            self.prefetch.peak_bytes().into(),
        );
        if let Some(efo) = &self.efo {
            efo.write_metrics(&mut m);
        }
        m
    }

    /// consumerMode = efo streams records as they arrive (kinesis-efo helper's hook).
    fn as_streaming(&mut self) -> Option<&mut dyn tributary_sdk::StreamingSource> {
        if self.efo.is_some() {
            Some(self)
        } else {
            None
        }
    }

    async fn stop(&mut self) -> Result<()> {
        self.planned = None;
        self.readers.clear();
        self.prefetch.clear();
        if let Some(efo) = self.efo.as_mut() {
            let client = self
                .client
                .get(&self.config.connection, self.secrets.as_ref())
                .await
                .ok();
            efo.stop(client.as_deref()).await?;
        }
        Ok(())
    }
}

/// The real-time read of `consumerMode = efo` (kinesis-efo helper's hook; see `crate::efo::streaming`).
#[async_trait]
impl tributary_sdk::StreamingSource for KinesisSource {
    async fn start_stream(
        &mut self,
        start: &Offset,
        queue: tributary_sdk::ChunkSender,
    ) -> Result<()> {
        let client = self.client().await?;
        let mut offsets = KinesisOffsets::from_offset(start)?;
        if !self.restart_checked {
            // A restart straight into real-time mode: the same rules as a micro-batch restart.
            self.check_restart(&client, &mut offsets).await?;
            self.refresh(&client, &mut offsets, true).await?;
            self.check_subscription_starts(&client, &mut offsets)
                .await?;
            self.restart_checked = true;
        }
        self.stream_start = Some((start.clone(), offsets.to_offset()?));
        crate::efo::start_hook(
            &mut self.efo,
            &client,
            self.config.streams.keying,
            offsets.streams.keys(),
            &BTreeMap::new(),
        )
        .await?;
        let schema = self.schema.clone();
        match self.efo.as_mut() {
            Some(efo) => efo.start_stream(&client, &offsets, queue, schema).await,
            None => Err(Error::new(
                ErrorCode::Internal,
                "real-time read needs consumerMode = efo",
            )),
        }
    }

    async fn stop_stream(&mut self) -> Result<()> {
        if let Some(efo) = self.efo.as_mut() {
            efo.stop_stream().await;
        }
        Ok(())
    }

    fn end_offset(
        &self,
        start: &Offset,
        delivered: &std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Result<Offset> {
        match &self.stream_start {
            Some((given, checked)) if given == start => {
                crate::efo::streaming::end_offset(checked, delivered)
            }
            _ => crate::efo::streaming::end_offset(start, delivered),
        }
    }
}
