//! The source suite catches broken connectors: the example generator wrapped with one injected
//! fault at a time fails exactly the cases that check that behaviour — the table below states
//! the full set per fault, compared with the run's report — while the same generator without a
//! fault (bare, and inside the wrapper) passes every case that applies to it. (The wrapper is
//! fault injection around a real connector, not a stand-in for one; it forwards every method,
//! which `clippy::missing_trait_methods` enforces.)
//!
//! The generator does not plan input partitions, so bare it skips `input_partitions_cover_range`
//! as not applicable. The wrapper plans them on top of it — `[start, end)` split into row
//! ranges, each read by the generator's own `read` — so the case runs inside the wrapper, and
//! two faults break the partitions: one drops a record of each, one makes neighbours overlap.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeSet, HashMap};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use futures::TryStreamExt;
use tributary_conformance::fixtures::GeneratorFixture;
use tributary_conformance::{CaseStatus, Report, RunOptions};
use tributary_plugin_generator::{GeneratorSourceFactory, RowsOffset};
use tributary_sdk::secret::resolve_value;
use tributary_sdk::{
    chunk_queue, ChunkSender, ConnectorContext, InputPartition, Offset, OptionSpec, Options,
    PreparedSource, ReadLimit, Result, Source, SourceDescription, SourceFactory, SourceIdentity,
    SourceMetrics, StateReport, StateRequest, StreamingSource,
};

/// One way of being wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// `read` loses the last row of a range.
    DropsLastRow,
    /// `latest_offset` ignores the read limit.
    IgnoresReadLimit,
    /// A second read of the same range returns other rows.
    UnstableReads,
    /// `startingOffsets = latest` is ignored.
    StartsAtEarliestAlways,
    /// Unknown options are silently dropped instead of refused.
    AcceptsUnknownOptions,
    /// The sensitive token is printed by the source's `Debug`.
    LeaksSecretInDebug,
    /// Data loss is never reported: a read over trimmed rows returns what is left, whatever
    /// `failOnDataLoss` says, and no `dataLoss.*` metric counts it.
    IgnoresDataLoss,
    /// `assign` is ignored: every partition is read.
    ReadsUnassignedPartitions,
    /// A malformed record fails the read in PERMISSIVE mode too.
    MalformedFailsInPermissiveMode,
    /// `prepare_available_now` fixes nothing: an availableNow run reads records produced later.
    UnboundedAvailableNow,
    /// `read_partition` loses the last row of every input partition.
    PartitionsDropRecord,
    /// Neighbouring input partitions overlap by one row.
    PartitionsOverlap,
    /// The real-time stream delivers every chunk twice.
    StreamRepeatsChunks,
    /// Planned for parallelism 4, the last input partition ends one row early.
    RescaleLosesRow,
    /// The readers of input partitions past the fourth wait forever.
    ManyReadersHang,
    /// Every row's metadata (its partition) reads as partition 0.
    DropsMetadata,
}

/// The full set of cases each fault must fail — no more, no fewer.
const EXPECTED: &[(Fault, &[&str])] = &[
    (
        Fault::DropsLastRow,
        &[
            "assign_partitions",
            "starting_earliest",
            "starting_latest",
            "read_range_determinism",
            "replay_after_restart",
            "rate_limit_honoured",
            "available_now_bounded",
            "fail_on_data_loss_false",
            "permissive_decoding",
            // The partitions, read by the generator itself, keep the row `read` drops.
            "input_partitions_cover_range",
            "rescale_reads_same_rows",
            "more_readers_than_partitions",
            // The replay of the streamed range (`read_stream`) loses the row the stream had.
            "streaming_replay_matches",
            "metadata_round_trips",
        ],
    ),
    (Fault::IgnoresReadLimit, &["rate_limit_honoured"]),
    (Fault::UnstableReads, &["read_range_determinism"]),
    (Fault::StartsAtEarliestAlways, &["starting_latest"]),
    (Fault::AcceptsUnknownOptions, &["unknown_option_refused"]),
    (Fault::LeaksSecretInDebug, &["secrets_hidden"]),
    (
        Fault::IgnoresDataLoss,
        &["fail_on_data_loss_true", "fail_on_data_loss_false"],
    ),
    (Fault::ReadsUnassignedPartitions, &["assign_partitions"]),
    (
        Fault::MalformedFailsInPermissiveMode,
        &["permissive_decoding"],
    ),
    (Fault::UnboundedAvailableNow, &["available_now_bounded"]),
    // Every case that reads input partitions sees broken ones.
    (
        Fault::PartitionsDropRecord,
        &[
            "input_partitions_cover_range",
            "rescale_reads_same_rows",
            "more_readers_than_partitions",
        ],
    ),
    (
        Fault::PartitionsOverlap,
        &[
            "input_partitions_cover_range",
            "rescale_reads_same_rows",
            "more_readers_than_partitions",
        ],
    ),
    (Fault::StreamRepeatsChunks, &["streaming_replay_matches"]),
    (Fault::RescaleLosesRow, &["rescale_reads_same_rows"]),
    (Fault::ManyReadersHang, &["more_readers_than_partitions"]),
    (Fault::DropsMetadata, &["metadata_round_trips"]),
];

/// The sensitive option the wrapper adds (the generator itself has none), so the secrets case
/// runs instead of being skipped.
const TOKEN: &str = "apiToken";

#[derive(Debug)]
struct Broken {
    inner: GeneratorSourceFactory,
    fault: Option<Fault>,
}

impl Broken {
    fn with(fault: Option<Fault>) -> Self {
        Broken {
            inner: GeneratorSourceFactory,
            fault,
        }
    }

    /// The options the generator gets: the wrapper's token removed, and the fault applied.
    fn inner_options(&self, options: &Options) -> Options {
        let known = self.inner.options();
        let mut o: Options = options
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case(TOKEN))
            .filter(|(k, _)| {
                self.fault != Some(Fault::AcceptsUnknownOptions)
                    || known.iter().any(|s| s.name.eq_ignore_ascii_case(k))
            })
            .collect();
        match self.fault {
            Some(Fault::StartsAtEarliestAlways) => {
                o.remove("startingOffsets");
            }
            Some(Fault::ReadsUnassignedPartitions) => {
                o.remove("assign");
            }
            Some(Fault::MalformedFailsInPermissiveMode) if o.contains("controlFile") => {
                o.set("mode", "FAILFAST");
            }
            Some(Fault::IgnoresDataLoss) if o.contains("controlFile") => {
                o.set("failOnDataLoss", "false");
            }
            _ => {}
        }
        o
    }
}

#[warn(clippy::missing_trait_methods)]
impl SourceFactory for Broken {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn options(&self) -> Vec<OptionSpec> {
        let mut specs = self.inner.options();
        specs.push(OptionSpec::string(TOKEN, "An API token (unused).").sensitive());
        specs
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSource>> {
        // The wrapper checks its own declarations (the token included) like any connector,
        // unless it is the fault that accepts anything.
        if self.fault != Some(Fault::AcceptsUnknownOptions) {
            OptionSpec::validate_all(&self.options(), options, self.name())?;
        }
        Ok(Box::new(BrokenPrepared {
            inner: self.inner.prepare(&self.inner_options(options))?,
            fault: self.fault,
            token: options.get(TOKEN).map(str::to_string),
        }))
    }

    fn describe_state(&self, request: &StateRequest<'_>) -> Result<Option<StateReport>> {
        self.inner.describe_state(request)
    }

    fn verify_state(&self, request: &StateRequest<'_>) -> Result<()> {
        self.inner.verify_state(request)
    }

    fn stream_binding(&self) -> Option<std::sync::Arc<dyn tributary_sdk::StreamBinding>> {
        self.inner.stream_binding()
    }

    fn commands(&self) -> Vec<std::sync::Arc<dyn tributary_sdk::ConnectorCommand>> {
        self.inner.commands()
    }
}

#[derive(Debug)]
struct BrokenPrepared {
    inner: Box<dyn PreparedSource>,
    fault: Option<Fault>,
    /// The token as given (a secret reference or the value).
    token: Option<String>,
}

#[warn(clippy::missing_trait_methods)]
impl PreparedSource for BrokenPrepared {
    fn description(&self) -> &SourceDescription {
        self.inner.description()
    }

    fn schema(&self) -> Result<Option<SchemaRef>> {
        self.inner.schema()
    }

    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        let token = match &self.token {
            Some(v) => resolve_value(context.secrets.as_ref(), v)?
                .expose()
                .to_string(),
            None => String::new(),
        };
        Ok(Box::new(BrokenSource {
            inner: self.inner.build(context)?,
            fault: self.fault,
            token,
            reads: HashMap::new(),
        }))
    }
}

struct BrokenSource {
    inner: Box<dyn Source>,
    fault: Option<Fault>,
    token: String,
    /// Reads per range, for the unstable fault.
    reads: HashMap<String, usize>,
}

impl std::fmt::Debug for BrokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let token = if self.fault == Some(Fault::LeaksSecretInDebug) {
            self.token.as_str()
        } else {
            "***"
        };
        write!(
            f,
            "BrokenSource({:?}, token={token}, {:?})",
            self.fault, self.inner
        )
    }
}

/// The spec of the wrapper's input partitions: generator rows `[start, end)`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RowRange {
    start: u64,
    end: u64,
}

/// Rows `[from, to)` in `parallelism` ranges (fewer when there are fewer rows); with `overlap`
/// every range but the last reaches one row into the next.
fn row_partitions(from: u64, to: u64, parallelism: usize, overlap: bool) -> Vec<InputPartition> {
    let n = (parallelism.max(1) as u64)
        .min(to.saturating_sub(from))
        .max(1);
    let size = to.saturating_sub(from);
    (0..n)
        .map(|i| {
            let start = from + size * i / n;
            let mut end = from + size * (i + 1) / n;
            if overlap && i + 1 < n {
                end += 1;
            }
            let mut p = InputPartition::new(
                i as usize,
                format!("rows [{start}, {end})"),
                serde_json::json!({ "start": start, "end": end }),
            );
            p.expected_records = Some(end - start);
            p
        })
        .collect()
}

/// `batches` with every row's partition set to 0.
fn zero_partitions(batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
    batches
        .into_iter()
        .map(|b| {
            let i = b.schema().index_of("partition").expect("generator schema");
            let mut columns = b.columns().to_vec();
            columns[i] = std::sync::Arc::new(arrow::array::Int32Array::from(vec![0; b.num_rows()]));
            Ok(RecordBatch::try_new(b.schema(), columns)?)
        })
        .collect()
}

/// `batches` without their last row.
fn drop_last_row(mut batches: Vec<RecordBatch>) -> Vec<RecordBatch> {
    if let Some(i) = batches.iter().rposition(|b| b.num_rows() > 0) {
        let b = &batches[i];
        batches[i] = b.slice(0, b.num_rows() - 1);
    }
    batches
}

#[async_trait]
#[warn(clippy::missing_trait_methods)]
impl Source for BrokenSource {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn identity(&self) -> SourceIdentity {
        self.inner.identity()
    }

    fn default_read_limit(&self) -> ReadLimit {
        self.inner.default_read_limit()
    }

    async fn initial_offset(&mut self) -> Result<Offset> {
        self.inner.initial_offset().await
    }

    async fn prepare_available_now(&mut self) -> Result<()> {
        match self.fault {
            Some(Fault::UnboundedAvailableNow) => Ok(()),
            _ => self.inner.prepare_available_now().await,
        }
    }

    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        let limit = match self.fault {
            Some(Fault::IgnoresReadLimit) => &ReadLimit::All,
            _ => limit,
        };
        self.inner.latest_offset(start, limit).await
    }

    /// The generator's parts, with the fault applied to the whole range.
    async fn read_stream<'a>(
        &'a mut self,
        start: &Offset,
        end: &Offset,
    ) -> Result<tributary_sdk::BatchStream<'a>> {
        let batches: Vec<RecordBatch> = self
            .inner
            .read_stream(start, end)
            .await?
            .try_collect()
            .await?;
        let n = self.reads.entry(format!("{start:?}..{end:?}")).or_default();
        *n += 1;
        Ok(tributary_sdk::batch_stream(match self.fault {
            Some(Fault::DropsLastRow) => drop_last_row(batches),
            Some(Fault::UnstableReads) if *n > 1 => drop_last_row(batches),
            Some(Fault::DropsMetadata) => zero_partitions(batches)?,
            _ => batches,
        }))
    }

    /// The generator's own plan when it has one; otherwise row ranges of about
    /// `rows / parallelism` rows (see [`row_partitions`]).
    async fn plan_partitions(
        &mut self,
        start: &Offset,
        end: &Offset,
        parallelism: usize,
    ) -> Result<Option<Vec<InputPartition>>> {
        if let Some(parts) = self.inner.plan_partitions(start, end, parallelism).await? {
            return Ok(Some(parts));
        }
        let (from, to) = (RowsOffset::of(start)?, RowsOffset::of(end)?);
        let overlap = self.fault == Some(Fault::PartitionsOverlap);
        let mut parts = row_partitions(from, to, parallelism, overlap);
        if self.fault == Some(Fault::RescaleLosesRow) && parallelism == 4 {
            if let Some(last) = parts.last_mut() {
                let start = last.spec["start"].as_u64().unwrap_or(from);
                let end = last.spec["end"]
                    .as_u64()
                    .unwrap_or(to)
                    .saturating_sub(1)
                    .max(start);
                last.spec = serde_json::json!({ "start": start, "end": end });
                last.label = format!("rows [{start}, {end})");
                last.expected_records = Some(end - start);
            }
        }
        Ok(Some(parts))
    }

    async fn read_partition<'a>(
        &'a mut self,
        partition: &InputPartition,
    ) -> Result<tributary_sdk::BatchStream<'a>> {
        if self.fault == Some(Fault::ManyReadersHang) && partition.index >= 4 {
            futures::future::pending::<()>().await;
        }
        let Ok(rows) = partition.decode_spec::<RowRange>("wrapped generator") else {
            return self.inner.read_partition(partition).await;
        };
        let batches = self
            .inner
            .read(&RowsOffset::at(rows.start)?, &RowsOffset::at(rows.end)?)
            .await?;
        let batches = match self.fault {
            Some(Fault::PartitionsDropRecord) => drop_last_row(batches),
            _ => batches,
        };
        Ok(tributary_sdk::batch_stream(batches))
    }

    /// The provided `read` (the parts collected), spelled out for `missing_trait_methods`.
    async fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>> {
        self.read_stream(start, end).await?.try_collect().await
    }

    async fn commit(&mut self, end: &Offset) -> Result<()> {
        self.inner.commit(end).await
    }

    fn metrics(&self) -> SourceMetrics {
        let mut m = self.inner.metrics();
        if self.fault == Some(Fault::IgnoresDataLoss) {
            m.retain(|k, _| !k.starts_with("dataLoss."));
        }
        m
    }

    async fn stop(&mut self) -> Result<()> {
        self.inner.stop().await
    }

    fn as_streaming(&mut self) -> Option<&mut dyn tributary_sdk::StreamingSource> {
        match self.inner.as_streaming() {
            Some(_) => Some(self),
            None => None,
        }
    }
}

#[async_trait]
#[warn(clippy::missing_trait_methods)]
impl StreamingSource for BrokenSource {
    async fn start_stream(&mut self, start: &Offset, queue: ChunkSender) -> Result<()> {
        let repeat = self.fault == Some(Fault::StreamRepeatsChunks);
        let inner = self.inner.as_streaming().expect("checked by as_streaming");
        if !repeat {
            return inner.start_stream(start, queue).await;
        }
        let (tx, mut rx) = chunk_queue(16);
        inner.start_stream(start, tx).await?;
        tokio::spawn(async move {
            while let Some(chunk) = rx.recv().await {
                if let Ok(c) = &chunk {
                    if !queue.send(Ok(c.clone())).await {
                        return;
                    }
                }
                if !queue.send(chunk).await {
                    return;
                }
            }
        });
        Ok(())
    }

    async fn stop_stream(&mut self) -> Result<()> {
        match self.inner.as_streaming() {
            Some(s) => s.stop_stream().await,
            None => Ok(()),
        }
    }

    /// The generator's own rule (its one stream partition's position is a row count), which
    /// `&self` cannot borrow from the wrapped source.
    fn end_offset(
        &self,
        start: &Offset,
        delivered: &std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Result<Offset> {
        match delivered.values().next().and_then(|p| p.as_u64()) {
            None => Ok(start.clone()),
            Some(rows) => RowsOffset::at(rows.max(RowsOffset::of(start)?)),
        }
    }
}

async fn report(connector: &dyn SourceFactory) -> Report {
    let mut fixture = GeneratorFixture::new(2).expect("temp dir");
    tributary_conformance::run(connector, &mut fixture, &RunOptions::default()).await
}

fn with_status(r: &Report, status: CaseStatus) -> BTreeSet<String> {
    r.cases
        .iter()
        .filter(|c| c.status == status)
        .map(|c| c.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthy_generator_passes_bare_and_wrapped() {
    let bare = report(&GeneratorSourceFactory).await;
    assert!(bare.is_success(), "{}", bare.to_table());
    // Inside the wrapper (which declares a sensitive token and hides it) the secrets case runs
    // too, and nothing else changes.
    let wrapped = report(&Broken::with(None)).await;
    println!("wrapped:\n{}", wrapped.to_table());
    assert!(wrapped.is_success(), "{}", wrapped.to_table());
    let mut skipped = with_status(&bare, CaseStatus::Skipped);
    assert!(skipped.remove("secrets_hidden"), "{}", bare.to_table());
    // Likewise the rescale case, which needs planned partitions.
    assert!(
        skipped.remove("rescale_reads_same_rows"),
        "{}",
        bare.to_table()
    );
    // Bare, the generator plans no input partitions: the case does not apply, and says so.
    assert!(
        skipped.remove("input_partitions_cover_range"),
        "{}",
        bare.to_table()
    );
    let not_applicable = bare
        .cases
        .iter()
        .find(|c| c.name == "input_partitions_cover_range")
        .and_then(|c| c.reason.clone())
        .unwrap_or_default();
    assert!(
        not_applicable.contains("does not plan input partitions"),
        "{not_applicable}"
    );
    assert_eq!(with_status(&wrapped, CaseStatus::Skipped), skipped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_injected_fault_fails_exactly_the_cases_that_check_it() {
    let names: BTreeSet<&str> = tributary_conformance::all_cases()
        .iter()
        .map(|c| c.name)
        .collect();
    let mut wrong = Vec::new();
    for (fault, cases) in EXPECTED {
        let expected: BTreeSet<String> = cases.iter().map(|c| c.to_string()).collect();
        assert!(
            cases.iter().all(|c| names.contains(c)),
            "{fault:?} names a case that does not exist: {cases:?}"
        );
        let r = report(&Broken::with(Some(*fault))).await;
        println!("{fault:?}:\n{}", r.to_table());
        let failed = with_status(&r, CaseStatus::Failed);
        if failed != expected {
            wrong.push(format!(
                "{fault:?}: expected to fail {expected:?}, failed {failed:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
