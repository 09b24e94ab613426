//! The Kafka source: micro-batches of offset ranges with deterministic replay.
//!
//! - [`KafkaSource::initial_offset`] resolves `startingOffsets` / `startingTimestamp` /
//!   `startingOffsetsByTimestamp` for the partitions that exist now. A restart never calls it.
//! - [`KafkaSource::latest_offset`] lists the subscription's partitions (new topics and
//!   partitions join at their earliest offset), asks for the latest offsets, caps them at
//!   `endingOffsets` or the `availableNow` snapshot, applies `minOffsetsPerTrigger` /
//!   `maxOffsetsPerTrigger`, and reports lag metrics.
//! - [`KafkaSource::read_stream`] reads exactly `[start, end)` of every partition (assign +
//!   seek, never a group subscription), in parallel pieces when `minPartitions` /
//!   `maxRecordsPerPartition` ask, and yields it in parts of bounded size (`reader.rs`).
//! - [`KafkaSource::plan_partitions`] (the driver of a scaled-out pipeline) plans the same
//!   pieces as `read_stream` — one code path, a read is "plan, then read every piece" — and returns one
//!   input partition per piece; [`KafkaSource::read_partition`] (an executor, a source built
//!   from the same options without a checkpoint) reads one piece (`partitions.rs`).
//! - [`KafkaSource::commit`] publishes the offsets to the consumer group, for monitoring only:
//!   the checkpoint is the truth (see *Consumer-group lag* below).
//!
//! # Consumer-group lag
//!
//! Existing lag tools (`kafka-consumer-groups --describe --group G`, Burrow, exporters reading
//! OffsetFetch and ListOffsets) see a query's progress in its consumer group `G`:
//!
//! - `G` is `kafka.group.id` when given, else
//!   `<groupIdPrefix>-<pipeline name>-<16 hex digits>` — the prefix defaults to Spark's
//!   `spark-kafka-source` (so ACLs granted on that group prefix cover it), and the digits are
//!   the 64-bit FNV-1a hash of the subscription's
//!   description (`subscribe=a,b` with the topics sorted, `subscribePattern=<regex>`, or
//!   `assign=<JSON>`), so `G` stays the same across restarts and builds. (Spark's own group,
//!   `spark-kafka-source-<random UUID>-<hash of the checkpoint path>`, changes with every start:
//!   Spark never commits to it. `G` holds the committed offsets lag tools read, so it must not.)
//!   [`KafkaSource::group_id`] returns it, and the source logs it at `info` when it first
//!   connects.
//! - The runtime calls [`Source::commit`] with a batch's end offsets only after the sinks
//!   published the batch and `commits/<n>` is written (and again, on restart, with the last
//!   committed end). So `G`'s committed offsets are always the end of the last committed
//!   batch: never ahead of the checkpoint (a batch planned or read but not committed does not
//!   move them), and high watermark − committed offset is the number of records not yet in a
//!   committed batch. The commit is asynchronous, then read back (OffsetFetch) until the
//!   group shows it, for at most `fetchOffset.timeoutMs`: when a batch's commit returns, the
//!   tools see it (or a warning says they do not yet).
//! - For monitoring only: a failed group commit is a warning and the query goes on; a restart
//!   resumes from the checkpoint, never from `G`. The source never joins `G` (it reads with
//!   assign and seek), so the group shows offsets but no members, and `enable.auto.commit` is
//!   refused.
//! - `commitOffsetsToGroup=false` turns this off: nothing is written to any group, and
//!   `groupIdPrefix` or `kafka.group.id`, which would be ignored, are refused. Executors of a
//!   scaled-out pipeline never commit; the driver does, after `commits/<n>`.
//!
//! Data loss (`failOnDataLoss`): a deleted partition, a recreated topic (offsets went back), a
//! new partition that does not start at 0, a start below the earliest offset, a gap inside a
//! range and an end before the start become typed [`DataLossEvent`]s: an error with a stable
//! code naming topic, partition and offsets, or (false) a warning, a count in the metrics and a
//! read from the earliest available offset.

use std::sync::Arc;
use std::time::Instant;

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use tributary_sdk::{
    fail_before_first_part, BatchStream, ChunkSender, ConnectorContext, DataLossEvent,
    DataLossKind, DataLossTracker, Error, ErrorCode, InputPartition, Offset, OptionSpec, Options,
    ReadLimit, Result, Source, SourceIdentity, SourceMetrics, StreamingSource,
};

use crate::client::{Admin, RequestPolicy};
use crate::config::{source_option_specs, Position, SourceConfig, Subscription};
use crate::connection::ConnectionProfile;
use crate::metrics::{lag_metrics, with_byte_estimate, ByteWindow};
use crate::offsets::{PartitionOffsets, EARLIEST, LATEST};
use crate::partitions::{input_partitions, range_of};
use crate::planner::{rate_limit, split_ranges, OffsetRange};
use crate::range_poll::PART_ROWS;
use crate::reader::{Piece, RangeParts, RangeReader, ReadSettings};
use crate::schema::kafka_schema;
use crate::stream_reader::{StreamOptions, StreamReaders, CHUNK_ROWS};

/// The Kafka source.
pub struct KafkaSource {
    config: SourceConfig,
    profile: Arc<ConnectionProfile>,
    group_id: String,
    schema: SchemaRef,
    admin: Option<Arc<Admin>>,
    reader: Option<RangeReader>,
    tracker: DataLossTracker,
    last_trigger: Option<Instant>,
    /// Upper bound of reading: `endingOffsets` or the `availableNow` snapshot.
    cap: Option<PartitionOffsets>,
    window: ByteWindow,
    metrics: SourceMetrics,
    /// The readers of the running real-time batch.
    streaming: Option<StreamReaders>,
}

impl std::fmt::Debug for KafkaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSource")
            .field("subscription", &self.config.subscription.describe())
            .field("profile", &self.profile)
            .field("group_id", &self.group_id)
            .finish()
    }
}

/// A stable 64-bit FNV-1a hash (group ids must not change between builds).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            "a Kafka client call panicked or was cancelled",
        )
        .with_cause(e)
    })?
}

impl KafkaSource {
    /// Validates and parses the options, then builds the source (the typed path in one call,
    /// for code that wants the concrete type). Nothing connects yet.
    pub fn new(options: &Options, context: &ConnectorContext) -> Result<KafkaSource> {
        let parsed = OptionSpec::validate_all(&source_option_specs(), options, "kafka")?;
        KafkaSource::build(SourceConfig::parse(&parsed)?, context)
    }

    /// Resolves secrets, checks key material and builds the source. Nothing connects yet.
    pub fn build(config: SourceConfig, context: &ConnectorContext) -> Result<KafkaSource> {
        let profile = Arc::new(ConnectionProfile::resolve(
            &config.connection,
            context.secrets.as_ref(),
        )?);
        let group_id = config.group_id.clone().unwrap_or_else(|| {
            format!(
                "{}-{}-{:016x}",
                config.group_id_prefix,
                context.pipeline,
                fnv1a(&config.subscription.describe())
            )
        });
        Ok(KafkaSource {
            schema: kafka_schema(config.include_headers),
            tracker: DataLossTracker::new(config.fail_on_data_loss),
            window: ByteWindow::new(config.bytes_estimate_window),
            config,
            profile,
            group_id,
            admin: None,
            reader: None,
            last_trigger: None,
            cap: None,
            metrics: SourceMetrics::new(),
            streaming: None,
        })
    }

    /// Consumers held: (range-read consumers pooled, real-time readers running).
    #[cfg(test)]
    pub(crate) fn consumers(&self) -> (usize, usize) {
        (
            self.reader.as_ref().map_or(0, RangeReader::pooled),
            self.streaming
                .as_ref()
                .map_or(0, StreamReaders::reader_count),
        )
    }

    /// The consumer group the committed batches' end offsets are published to (see the module
    /// docs); with `commitOffsetsToGroup=false`, the group that would be used.
    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    fn admin(&mut self) -> Result<Arc<Admin>> {
        if let Some(a) = &self.admin {
            return Ok(a.clone());
        }
        let a = Arc::new(Admin::new(
            &self.profile,
            &self.group_id,
            RequestPolicy {
                timeout: self.config.request_timeout,
                attempts: self.config.request_attempts,
                interval: self.config.request_retry_interval,
            },
        )?);
        if self.config.commit_offsets_to_group {
            tracing::info!(
                group = %self.group_id,
                "the end offsets of committed batches are published to consumer group '{}'",
                self.group_id
            );
        }
        self.admin = Some(a.clone());
        Ok(a)
    }

    /// Partitions now, with earliest and latest offsets.
    async fn snapshot(&mut self) -> Result<(PartitionOffsets, PartitionOffsets)> {
        let admin = self.admin()?;
        let sub = self.config.subscription.clone();
        blocking(move || {
            let parts = match &sub {
                // Assigned partitions are asked for even if missing: a clear error beats silence.
                Subscription::Assign(a) => {
                    let existing = admin.partitions(&sub)?;
                    let missing: Vec<String> = a
                        .iter()
                        .flat_map(|(t, ps)| ps.iter().map(move |p| (t, *p)))
                        .filter(|(t, p)| !existing.get(*t).is_some_and(|e| e.contains(p)))
                        .map(|(t, p)| format!("{t}-{p}"))
                        .collect();
                    if !missing.is_empty() && existing.is_empty() {
                        return Err(Error::new(
                            ErrorCode::SourceRead,
                            format!("assigned partitions do not exist: {}", missing.join(", ")),
                        )
                        .with_context("option", "assign"));
                    }
                    existing
                }
                _ => admin.partitions(&sub)?,
            };
            admin.watermarks(&parts)
        })
        .await
    }

    /// Resolves a starting or ending position against the partitions that exist now.
    async fn resolve(
        &mut self,
        position: Position,
        option: &'static str,
        starting: bool,
    ) -> Result<PartitionOffsets> {
        let (low, high) = self.snapshot().await?;
        let mut out = PartitionOffsets::new();
        match position {
            Position::Earliest => return Ok(low),
            Position::Latest => return Ok(high),
            Position::Offsets(given) => {
                for (t, p, h) in high.iter() {
                    let v = match given.get(t, p) {
                        Some(EARLIEST) => low.get(t, p).unwrap_or(0),
                        Some(LATEST) => h,
                        Some(v) => v,
                        None => {
                            return Err(Error::new(
                                ErrorCode::InvalidOption,
                                format!("option '{option}' gives no offset for partition {t}-{p}; specific offsets must cover every partition"),
                            )
                            .with_context("option", option)
                            .with_context("topic", t)
                            .with_context("partition", p))
                        }
                    };
                    out.set(t, p, v);
                }
                if let Some((t, p, _)) = given.iter().find(|(t, p, _)| high.get(t, *p).is_none()) {
                    return Err(Error::new(
                        ErrorCode::InvalidOption,
                        format!("option '{option}' names partition {t}-{p}, which the subscription does not have"),
                    )
                    .with_context("option", option));
                }
            }
            Position::Timestamp(_) | Position::Timestamps(_) => {
                let mut query = Vec::new();
                for (t, p, _) in high.iter() {
                    let ts = match &position {
                        Position::Timestamp(ts) => *ts,
                        Position::Timestamps(m) => m.get(t, p).ok_or_else(|| {
                            Error::new(
                                ErrorCode::InvalidOption,
                                format!(
                                    "option '{option}' gives no timestamp for partition {t}-{p}"
                                ),
                            )
                            .with_context("option", option)
                        })?,
                        _ => 0,
                    };
                    query.push((t.to_string(), p, ts));
                }
                let admin = self.admin()?;
                let found = blocking(move || admin.offsets_for_times(&query)).await?;
                for (t, p, h) in high.iter() {
                    match found.get(&(t.to_string(), p)).copied().flatten() {
                        Some(o) => out.set(t, p, o),
                        None if !starting || self.config.timestamp_strategy_latest => out.set(t, p, h),
                        None => {
                            return Err(Error::new(
                                ErrorCode::InvalidOption,
                                format!("no record of partition {t}-{p} has a timestamp at or after the one in '{option}'; set startingOffsetsByTimestampStrategy=latest to start at the latest offset instead"),
                            )
                            .with_context("option", option)
                            .with_context("topic", t)
                            .with_context("partition", p))
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// The pieces `[start, end)` is read in: everything a read decides before it reads, shared
    /// by [`Source::read_stream`] and [`Source::plan_partitions`]. Partitions deleted from the range,
    /// added partitions that do not start at 0, recreated partitions (offsets went back) and
    /// inverted ranges are data-loss events under `failOnDataLoss`; new and recreated
    /// partitions start at their earliest offset; the ranges are then split by `minPartitions`
    /// / `maxRecordsPerPartition`. A function of the offsets (and, for new or recreated
    /// partitions, of their earliest offset), so a replayed range gets the same pieces.
    async fn plan_ranges(&mut self, start: &Offset, end: &Offset) -> Result<Vec<OffsetRange>> {
        let start = PartitionOffsets::from_offset(start)?;
        let end = PartitionOffsets::from_offset(end)?;
        for (t, p, s) in start.iter() {
            if end.get(t, p).is_none() {
                self.report(
                    t,
                    p,
                    DataLossEvent::new(
                        DataLossKind::PartitionDeleted,
                        location(t, p),
                        format!("Partition {t}-{p} was deleted"),
                    )
                    .with_positions(s, "none"),
                )?;
            }
        }
        // Partitions that need their earliest offset: new ones and recreated ones.
        let need_low: Vec<(String, i32)> = end
            .iter()
            .filter(|(t, p, e)| start.get(t, *p).is_none_or(|s| *e < s))
            .map(|(t, p, _)| (t.to_string(), p))
            .collect();
        let (low, high) = if need_low.is_empty() {
            (PartitionOffsets::new(), PartitionOffsets::new())
        } else {
            let admin = self.admin()?;
            let mut parts = std::collections::BTreeMap::<String, Vec<i32>>::new();
            for (t, p) in need_low {
                parts.entry(t).or_default().push(p);
            }
            blocking(move || admin.watermarks(&parts)).await?
        };
        let mut ranges = Vec::new();
        for (t, p, e) in end.iter() {
            let s = match start.get(t, p) {
                None => {
                    let l = low.get(t, p).unwrap_or(0);
                    if l > 0 {
                        self.report(
                            t,
                            p,
                            DataLossEvent::new(
                                DataLossKind::AddedPartitionNotFromStart,
                                location(t, p),
                                format!("Added partition {t}-{p} starts from {l} instead of 0"),
                            )
                            .with_positions(0, l),
                        )?;
                    }
                    l
                }
                // The partition still reaches the start: the planned range itself is inverted
                // (a damaged or edited offset log); nothing is read for it.
                Some(s) if e < s && high.get(t, p).is_some_and(|h| h >= s) => {
                    self.report(
                        t,
                        p,
                        DataLossEvent::new(
                            DataLossKind::EndBeforeStart,
                            location(t, p),
                            format!("The batch's end offset {e} of partition {t}-{p} is before its start offset {s}"),
                        )
                        .with_positions(s, e),
                    )?;
                    e
                }
                Some(s) if e < s => {
                    self.report(
                        t,
                        p,
                        DataLossEvent::new(
                            DataLossKind::PartitionRecreated,
                            location(t, p),
                            format!("Partition {t}-{p}'s offset was changed from {s} to {e} (topic deleted and recreated?)"),
                        )
                        .with_positions(s, e),
                    )?;
                    low.get(t, p).unwrap_or(0).min(e)
                }
                Some(s) => s,
            };
            ranges.push(OffsetRange {
                topic: t.to_string(),
                partition: p,
                start: s,
                end: e,
            });
        }
        Ok(split_ranges(
            ranges,
            self.config.min_partitions,
            self.config.max_records_per_partition,
        ))
    }

    /// Reads planned ranges (a whole batch's, or one input partition's) with the pooled
    /// consumers, as a stream of bounded parts (see `reader.rs`). Gaps are checked by the
    /// reader; the data-loss events it let pass (failOnDataLoss=false) are logged at warn and
    /// counted here as each range ends.
    fn read_ranges(&mut self, ranges: Vec<OffsetRange>) -> BatchStream<'_> {
        let settings = ReadSettings {
            schema: self.schema.clone(),
            include_headers: self.config.include_headers,
            fail_on_data_loss: self.config.fail_on_data_loss,
            poll_timeout: self.config.poll_timeout,
            request_timeout: self.config.request_timeout,
            group_id: self.group_id.clone(),
            part_rows: self.config.max_poll_records.unwrap_or(PART_ROWS),
            max_parallel: self.config.max_partitions,
        };
        let profile = self.profile.clone();
        let reader = self.reader.get_or_insert_with(|| RangeReader::new(profile));
        let parts = reader.stream(ranges, &settings);
        let state = ReadState {
            parts,
            tracker: &mut self.tracker,
            window: &mut self.window,
            records: 0,
            bytes: 0,
        };
        Box::pin(futures::stream::unfold(state, |mut st| async move {
            loop {
                match st.parts.next().await {
                    None => {
                        st.window.record(st.records, st.bytes, Instant::now());
                        return None;
                    }
                    Some(Piece::Part(b)) => return Some((Ok(b), st)),
                    Some(Piece::RangeEnd {
                        ranges: _,
                        records,
                        bytes,
                        events,
                    }) => {
                        st.records += records;
                        st.bytes += bytes;
                        for ev in events {
                            // Only events the reader let pass (failOnDataLoss=false) arrive
                            // here: counted.
                            if let Err(e) = st.tracker.report(ev) {
                                st.parts.close();
                                return Some((Err(e), st));
                            }
                        }
                    }
                    Some(Piece::Failed(e)) => return Some((Err(e), st)),
                }
            }
        }))
    }

    /// Reports a data-loss event of `topic`-`partition`; a failing one names both in its
    /// context, as the reader's events do.
    fn report(&mut self, topic: &str, partition: i32, event: DataLossEvent) -> Result<()> {
        self.tracker.report(event).map_err(|e| {
            e.with_context("topic", topic)
                .with_context("partition", partition)
        })
    }
}

/// What the stream of [`KafkaSource::read_ranges`] carries between parts.
struct ReadState<'a> {
    parts: RangeParts,
    tracker: &'a mut DataLossTracker,
    window: &'a mut ByteWindow,
    records: u64,
    bytes: u64,
}

fn min_rows(limit: &ReadLimit) -> Option<(u64, u64)> {
    match limit {
        ReadLimit::MinRows { rows, max_delay_ms } => Some((*rows, *max_delay_ms)),
        ReadLimit::Composite(ls) => ls.iter().find_map(min_rows),
        _ => None,
    }
}

fn location(t: &str, p: i32) -> String {
    format!("{t}-{p}")
}

#[async_trait]
impl Source for KafkaSource {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn identity(&self) -> SourceIdentity {
        SourceIdentity {
            connector: "kafka".into(),
            target: self.config.subscription.describe(),
        }
    }

    fn default_read_limit(&self) -> ReadLimit {
        self.config.read_limit()
    }

    async fn initial_offset(&mut self) -> Result<Offset> {
        let start = self
            .resolve(self.config.starting.clone(), "startingOffsets", true)
            .await?;
        start.to_offset()
    }

    async fn prepare_available_now(&mut self) -> Result<()> {
        let (_, high) = self.snapshot().await?;
        let snapshot = match self.cap.take() {
            Some(cap) => {
                let mut s = PartitionOffsets::new();
                for (t, p, h) in high.iter() {
                    s.set(t, p, cap.get(t, p).map_or(h, |c| c.min(h)));
                }
                s
            }
            None => high,
        };
        self.cap = Some(snapshot);
        Ok(())
    }

    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        let start_offsets = PartitionOffsets::from_offset(start)?;
        if self.cap.is_none() {
            if let Some(ending) = self.config.ending.clone() {
                self.cap = Some(self.resolve(ending, "endingOffsets", false).await?);
            }
        }
        let (low, high) = self.snapshot().await?;
        if self.tracker.fails() {
            for (t, p, s) in start_offsets.iter() {
                match high.get(t, p) {
                    None => {
                        return Err(DataLossEvent::new(DataLossKind::PartitionDeleted, location(t, p), format!("Partition {t}-{p} was deleted"))
                            .with_positions(s, "none")
                            .into_error()
                            .with_context("topic", t)
                            .with_context("partition", p))
                    }
                    Some(h) if h < s => {
                        return Err(DataLossEvent::new(DataLossKind::PartitionRecreated, location(t, p), format!("Partition {t}-{p}'s offset was changed from {s} to {h} (topic deleted and recreated?)"))
                            .with_positions(s, h)
                            .into_error()
                            .with_context("topic", t)
                            .with_context("partition", p))
                    }
                    _ => {}
                }
            }
        }
        // Where each current partition's next batch starts (new partitions: earliest).
        let mut begin = PartitionOffsets::new();
        let mut latest = PartitionOffsets::new();
        for (t, p, h) in high.iter() {
            let l = low.get(t, p).unwrap_or(0);
            let b = match start_offsets.get(t, p) {
                Some(s) if s <= h => s,
                _ => l,
            };
            let top = match &self.cap {
                Some(cap) => cap.get(t, p).map_or(b, |c| c.min(h)),
                None => h,
            };
            begin.set(t, p, b);
            latest.set(t, p, top.max(b));
        }
        // partitions the last read caught up with their end stop fetching until read again
        if let Some(reader) = &self.reader {
            reader.pause_caught_up(&high);
        }
        let available: u64 = latest
            .iter()
            .map(|(t, p, l)| (l - begin.get(t, p).unwrap_or(l)).max(0) as u64)
            .sum();
        if let Some((rows, max_delay_ms)) = min_rows(limit) {
            let waited = self
                .last_trigger
                .map_or(u128::MAX, |t| t.elapsed().as_millis());
            if available < rows && waited < max_delay_ms as u128 {
                self.metrics = lag_metrics(&start_offsets, &high);
                return Ok(start.clone());
            }
        }
        let mut end = match limit.max_rows() {
            Some(n) => rate_limit(&begin, &latest, n),
            None => latest,
        };
        // Recreated partitions keep their (lower) end so that read() reports them.
        for (t, p, s) in start_offsets.iter() {
            if let Some(h) = high.get(t, p) {
                if h < s {
                    end.set(t, p, h);
                }
            }
        }
        self.metrics = lag_metrics(&end, &high);
        let end_offset = end.to_offset()?;
        if &end_offset != start {
            self.last_trigger = Some(Instant::now());
        }
        Ok(end_offset)
    }

    /// Plans the pieces of `[start, end)` (as [`Source::plan_partitions`] does) and streams
    /// them in order, each in parts of bounded size (see `reader.rs`).
    async fn read_stream<'a>(
        &'a mut self,
        start: &Offset,
        end: &Offset,
    ) -> Result<BatchStream<'a>> {
        let ranges = self.plan_ranges(start, end).await?;
        fail_before_first_part(self.read_ranges(ranges)).await
    }

    /// One input partition per planned offset range: the same data-loss checks and the same
    /// `minPartitions` / `maxRecordsPerPartition` split as [`Source::read_stream`] (see
    /// `partitions.rs` for the spec). `parallelism` is ignored, as Spark's Kafka source
    /// ignores `defaultParallelism`: topic-partitions are the natural pieces, and only
    /// `minPartitions` splits them further.
    async fn plan_partitions(
        &mut self,
        start: &Offset,
        end: &Offset,
        _parallelism: usize,
    ) -> Result<Option<Vec<InputPartition>>> {
        let ranges = self.plan_ranges(start, end).await?;
        Ok(Some(input_partitions(ranges)?))
    }

    /// Reads exactly one planned offset range with assign + seek: no consumer group is joined
    /// and nothing is committed, so an executor can run it anywhere. Gaps inside the range
    /// follow `failOnDataLoss` as in [`Source::read_stream`].
    async fn read_partition<'a>(
        &'a mut self,
        partition: &InputPartition,
    ) -> Result<BatchStream<'a>> {
        let range = range_of(partition, &self.config.subscription)?;
        fail_before_first_part(self.read_ranges(vec![range])).await
    }

    /// Publishes `end` (a committed batch's end) to the consumer group, unless
    /// `commitOffsetsToGroup=false`; see *Consumer-group lag* in the module docs.
    async fn commit(&mut self, end: &Offset) -> Result<()> {
        let end = PartitionOffsets::from_offset(end)?;
        if !self.config.commit_offsets_to_group {
            return Ok(());
        }
        // A restart or a replay commits before anything else needed the client.
        let admin = self.admin()?;
        blocking(move || {
            admin.commit(&end);
            Ok(())
        })
        .await
    }

    fn metrics(&self) -> SourceMetrics {
        let mut m = with_byte_estimate(self.metrics.clone(), self.window.average());
        self.tracker.write_metrics(&mut m);
        m
    }

    async fn stop(&mut self) -> Result<()> {
        if let Some(readers) = self.streaming.take() {
            readers.stop().await?;
        }
        let admin = self.admin.take();
        let reader = self.reader.take();
        blocking(move || {
            drop(admin);
            drop(reader);
            Ok(())
        })
        .await
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSource> {
        Some(self)
    }
}

#[async_trait]
impl StreamingSource for KafkaSource {
    async fn start_stream(&mut self, start: &Offset, queue: ChunkSender) -> Result<()> {
        if let Some(previous) = self.streaming.take() {
            previous.stop().await?;
        }
        let start = PartitionOffsets::from_offset(start)?;
        let readers = StreamReaders::start(
            self.profile.clone(),
            self.admin()?,
            self.config.subscription.clone(),
            self.schema.clone(),
            StreamOptions {
                include_headers: self.config.include_headers,
                fail_on_data_loss: self.config.fail_on_data_loss,
                chunk_rows: self.config.max_poll_records.unwrap_or(CHUNK_ROWS),
                max_readers: self.config.max_partitions,
            },
            self.group_id.clone(),
            &start,
            queue,
        )?;
        self.streaming = Some(readers);
        Ok(())
    }

    async fn stop_stream(&mut self) -> Result<()> {
        match self.streaming.take() {
            Some(readers) => readers.stop().await,
            None => Ok(()),
        }
    }

    fn end_offset(
        &self,
        start: &Offset,
        delivered: &std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Result<Offset> {
        crate::stream_reader::end_offset(start, delivered)
    }
}
