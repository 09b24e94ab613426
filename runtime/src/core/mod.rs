//! The batch core: the one place where a pipeline is assembled, where a batch's records go
//! through the stages into the sinks, and where a batch is logged, committed and reported.
//!
//! | what | where |
//! |---|---|
//! | assembling a pipeline from its spec (driver and executor) | [`assemble`]: `prepare`, `Prepared::build` |
//! | the stage loop | `stages.rs`: `StageChain::apply` |
//! | sink dispatch (the SDK's one protocol, [`tributary_sdk::SinkWriter`]) | `sinks.rs`: `SinkSet` |
//! | a batch's parts, source → stages → sinks | `batch.rs`: `push`, `pump` |
//! | the commit sequence | `commit.rs`: `log`, `commit` |
//! | the progress-event builder | `report.rs`: `Pipeline::report` |
//!
//! The drivers (`crate::drivers`: micro-batch, real-time, distributed, and the executor's
//! task) decide when a batch starts and ends and where its pieces run, and call only these.
//! What every batch does — and what stateful operators will save and restore with it — is
//! therefore written once.
//!
//! A run ([`Pipeline::run`]): the stages open with the source's schema, the sinks open with the
//! stages' output schema, the checkpoint says where to resume (a fresh start, the end of the
//! last committed batch, or a logged batch to replay with exactly its range), and the trigger's
//! driver runs batches until it or a shutdown says stop.

pub mod assemble;
pub(crate) mod batch;
pub(crate) mod commit;
pub(crate) mod report;
pub(crate) mod sinks;
pub(crate) mod stages;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tributary_sdk::{ConnectorContext, Delivery, Result, SecretStore, Source, WriteMode};

use crate::checkpoint::verify::{self, LogSummary};
use crate::checkpoint::{Checkpoint, Recovery};
use crate::drivers::Shutdown;
use crate::pipeline::PipelineSpec;
use crate::progress::ProgressListener;
use crate::registry::Registry;
use crate::trigger::Trigger;
use sinks::SinkSet;
use stages::StageChain;

pub use assemble::{plan, validate, Plan};

/// What a finished run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Batches run (replays included).
    pub batches: u64,
    /// Rows read.
    pub rows: u64,
    /// Id of the last committed batch.
    pub last_batch_id: Option<u64>,
}

/// A built pipeline: a source, its stages, its sinks, a checkpoint and listeners.
pub struct Pipeline {
    pub(crate) name: String,
    pub(crate) trigger: Trigger,
    pub(crate) checkpoint: Checkpoint,
    pub(crate) checkpoint_id: String,
    /// What the checkpoint's logs held when the pipeline was built (checked).
    pub(crate) logs: LogSummary,
    /// `<connector> <target>`, the source's description in progress events.
    pub(crate) source_label: String,
    pub(crate) source: Box<dyn Source>,
    pub(crate) stages: StageChain,
    pub(crate) sinks: SinkSet,
    pub(crate) listeners: Vec<Box<dyn ProgressListener>>,
    pub(crate) shutdown: Shutdown,
    pub(crate) idle_poll: Duration,
    /// `[engine] kind = "ballista"`: batches read and staged by a cluster's executors.
    #[cfg(feature = "ballista")]
    pub(crate) distributed: Option<crate::drivers::distributed::driver::Distributed>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("name", &self.name)
            .field("trigger", &self.trigger)
            .field("source", &self.source)
            .field("sinks", &self.sinks)
            .finish()
    }
}

/// The write mode a pipeline's sinks are written in.
fn write_mode(spec: &PipelineSpec) -> WriteMode {
    if spec.engine != crate::distributed::EngineSpec::Embedded {
        WriteMode::Partition
    } else if matches!(spec.trigger, Trigger::RealTime { .. }) {
        WriteMode::RealTime
    } else {
        WriteMode::MicroBatch
    }
}

impl Pipeline {
    /// Builds the connectors of a pipeline and binds its checkpoint: every option is checked
    /// first, then the checkpoint is bound to the source's identity (a checkpoint of another
    /// source is refused before the connector opens anything), then the connectors are built.
    pub fn build(
        spec: &PipelineSpec,
        registry: &Registry,
        secrets: Arc<dyn SecretStore>,
    ) -> Result<Pipeline> {
        let prepared = assemble::prepare(spec, registry)?;
        let description = prepared.description().clone();
        let logs = verify::inspect(&spec.checkpoint)?.into_result(&spec.checkpoint)?;
        let checkpoint = Checkpoint::open(&spec.checkpoint)?;
        let meta = checkpoint.bind(&description.identity)?;
        verify_source_state(&checkpoint, registry, &spec.source, &logs.batches)?;
        let source_ctx = ConnectorContext {
            state_dir: Some(checkpoint.source_state_dir()),
            secrets: secrets.clone(),
            pipeline: spec.name.clone(),
            checkpoint_id: Some(meta.id.clone()),
        };
        let sink_ctx = ConnectorContext {
            state_dir: None,
            ..source_ctx.clone()
        };
        let built = prepared.build(&spec.source, &secrets, &source_ctx, &sink_ctx)?;
        let sinks = SinkSet::new(built.sinks, write_mode(spec))?;
        #[cfg(feature = "ballista")]
        let distributed =
            crate::drivers::distributed::driver::Distributed::for_spec(spec, registry, &meta.id)?;
        Ok(Pipeline {
            name: spec.name.clone(),
            trigger: spec.trigger,
            checkpoint,
            checkpoint_id: meta.id,
            logs,
            source_label: format!("{} {}", spec.source, description.identity.target),
            source: built.source,
            stages: built.stages,
            sinks,
            listeners: Vec::new(),
            shutdown: Shutdown::default(),
            idle_poll: spec.polling_delay,
            #[cfg(feature = "ballista")]
            distributed,
        })
    }

    /// Adds a progress listener.
    pub fn add_listener(&mut self, l: Box<dyn ProgressListener>) {
        self.listeners.push(l);
    }

    /// A handle that stops the pipeline after the current batch.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// The end-to-end guarantee: exactly-once only when every sink is idempotent (in real-time
    /// mode, a sink that acknowledges records as they come is at-least-once: a replayed long batch
    /// delivers them again).
    pub fn delivery(&mut self) -> Delivery {
        self.sinks.delivery()
    }

    /// Runs until the trigger says stop (bounded triggers) or a shutdown is asked. The run is
    /// in a span `pipeline` (field `pipeline`), each batch in a span `batch` (fields `pipeline`
    /// and `batch_id`): every log line of a batch carries both (see [`crate::logging`]).
    #[tracing::instrument(name = "pipeline", skip_all, fields(pipeline = %self.name))]
    pub async fn run(&mut self) -> Result<RunSummary> {
        let result = self.run_inner().await;
        let stop_source = self.source.stop().await;
        let stop_sinks = self.sinks.stop().await;
        for l in &mut self.listeners {
            l.on_terminated(result.as_ref().err());
        }
        let summary = result?;
        stop_source?;
        stop_sinks?;
        Ok(summary)
    }

    /// Source metrics plus the stages' counters (malformed records by reason, ...).
    pub(crate) fn metrics(&self) -> tributary_sdk::SourceMetrics {
        let mut m = self.source.metrics();
        m.extend(self.stages.metrics());
        #[cfg(feature = "ballista")]
        if let Some(d) = &self.distributed {
            return d.with_executed(m);
        }
        m
    }

    /// The schema the sinks receive (the stages' output once open, else the source's).
    pub(crate) fn output_schema(&self) -> arrow::datatypes::SchemaRef {
        self.stages
            .output_schema()
            .unwrap_or_else(|| self.source.schema())
    }

    async fn run_inner(&mut self) -> Result<RunSummary> {
        let schema = self.stages.open(self.source.schema()).await?;
        if self.stages.is_stateful() {
            self.refuse_state_elsewhere()?;
            let dir = self.checkpoint.stage_state_dir();
            self.stages.restore(&dir, self.logs.last_committed).await?;
        }
        self.sinks.open(&schema).await?;
        self.verify_sinks().await?;
        let mut summary = RunSummary::default();
        let mut last_end = Instant::now();
        let (batch_id, start) = match self.checkpoint.recovery()? {
            Recovery::Fresh => (0, self.source.initial_offset().await?),
            Recovery::Continue { last } => {
                self.source.commit(&last.end).await?;
                summary.last_batch_id = Some(last.batch_id);
                (next_id(last.batch_id)?, last.end)
            }
            Recovery::Replay { entry } => {
                tracing::info!(batch = entry.batch_id, "replaying uncommitted batch");
                let rows = self
                    .execute(
                        entry.batch_id,
                        &entry.start,
                        &entry.end,
                        Default::default(),
                        true,
                        &mut last_end,
                    )
                    .await?;
                summary.batches += 1;
                summary.rows += rows;
                summary.last_batch_id = Some(entry.batch_id);
                if self.trigger == Trigger::Once {
                    return Ok(summary);
                }
                (next_id(entry.batch_id)?, entry.end)
            }
        };
        if let Trigger::RealTime {
            checkpoint,
            progress,
        } = self.trigger
        {
            return self
                .run_real_time(checkpoint, progress, batch_id, start, summary)
                .await;
        }
        self.run_micro_batches(batch_id, start, summary, last_end)
            .await
    }
}

impl Pipeline {
    /// A query with state runs on this process only (so far), under the `realTime` trigger
    /// when its stages can run chunk by chunk.
    fn refuse_state_elsewhere(&mut self) -> Result<()> {
        #[cfg(feature = "ballista")]
        let distributed = self.distributed.is_some();
        #[cfg(not(feature = "ballista"))]
        let distributed = false;
        refuse_state(&mut self.stages, self.trigger, distributed)
    }

    /// Opens the stages and sinks, checks each sink's own record against the checkpoint and
    /// stops everything (`tributary checkpoint verify --pipeline`).
    pub async fn verify_only(&mut self) -> Result<()> {
        let result = async {
            let schema = self.stages.open(self.source.schema()).await?;
            self.sinks.open(&schema).await?;
            self.verify_sinks().await
        }
        .await;
        let _ = self.source.stop().await;
        let _ = self.sinks.stop().await;
        result
    }

    /// Each sink's own record against the checkpoint (see [`verify::check_sink`]).
    async fn verify_sinks(&mut self) -> Result<()> {
        let damages: Vec<_> = self
            .sinks
            .ledgers()
            .await?
            .iter()
            .filter_map(|(label, ledger)| {
                verify::check_sink(label, &self.checkpoint_id, &self.logs, ledger)
            })
            .collect();
        if damages.is_empty() {
            return Ok(());
        }
        Err(verify::damaged(self.checkpoint.dir(), &damages))
    }
}

/// What `check` verifies of an existing checkpoint, reading only: its parts agree, it belongs
/// to this pipeline's source, and the source's own state agrees with its logs — everything
/// [`Pipeline::build`] refuses about a checkpoint. A checkpoint not created yet passes.
pub fn check_checkpoint(
    spec: &PipelineSpec,
    registry: &Registry,
    source: &tributary_sdk::SourceIdentity,
) -> Result<()> {
    let logs = verify::inspect(&spec.checkpoint)?.into_result(&spec.checkpoint)?;
    let Ok(checkpoint) = Checkpoint::open_existing(&spec.checkpoint) else {
        return Ok(());
    };
    checkpoint.check_source(source)?;
    verify_source_state(&checkpoint, registry, &spec.source, &logs.batches)
}

/// The source's own state against the checkpoint's logs, as the inspection read them (see
/// [`tributary_sdk::SourceFactory::verify_state`]).
pub(crate) fn verify_source_state(
    checkpoint: &Checkpoint,
    registry: &Registry,
    connector: &str,
    batches: &[tributary_sdk::LoggedBatch],
) -> Result<()> {
    let state_dir = checkpoint.source_state_dir();
    registry
        .source(connector)?
        .verify_state(&tributary_sdk::StateRequest {
            state_dir: &state_dir,
            batches,
        })
}

/// The id after `id`; a log whose ids reached the end of the range is refused, not wrapped.
pub(crate) fn next_id(id: u64) -> Result<u64> {
    id.checked_add(1).ok_or_else(|| {
        tributary_sdk::Error::new(
            tributary_sdk::ErrorCode::InvalidPipeline,
            format!("the checkpoint's batch id {id} is the last possible one: the offsets log was edited or is damaged"),
        )
    })
}

/// A stateful chain is refused where its state cannot run: a stage that cannot run under the
/// `realTime` trigger, or any state on the Ballista engine. `run` and `check` both ask here.
pub(crate) fn refuse_state(
    stages: &mut StageChain,
    trigger: Trigger,
    distributed: bool,
) -> Result<()> {
    if matches!(trigger, Trigger::RealTime { .. }) {
        if let Some(why) = stages.real_time_refusal() {
            return Err(tributary_sdk::Error::new(
                tributary_sdk::ErrorCode::InvalidPipeline,
                format!("the query keeps state that the realTime trigger cannot run: {why}"),
            )
            .with_context("option", "trigger"));
        }
    }
    if distributed && stages.is_stateful() {
        return Err(tributary_sdk::Error::new(
            tributary_sdk::ErrorCode::InvalidPipeline,
            "a stage keeps state across batches (a [transform] aggregation or deduplication, or a stateful processor), which the Ballista engine does not support yet; run it on the embedded engine (engine.kind = \"embedded\")",
        )
        .with_context("option", "engine.kind"));
    }
    Ok(())
}
