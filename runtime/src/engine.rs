//! The micro-batch engine: plan, log, read, write, commit — with replay after a crash.
//!
//! For each batch `n`:
//!
//! 1. `end = source.latest_offset(start, limit)`; `end == start` means no new data.
//! 2. `offsets/<n> = {start, end}` is written atomically (the write-ahead log).
//! 3. `source.read(start, end)`, then every sink writes batch `n` (idempotently keyed by `n`).
//! 4. `commits/<n>` is written, then `source.commit(end)`.
//!
//! On restart, an `offsets/<n>` without `commits/<n>` is replayed first with exactly the logged
//! range. With deterministic sources and [`Delivery::ExactlyOnce`] sinks every row lands once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tributary_sdk::{
    ConnectorContext, Delivery, Error, ErrorCode, Offset, PreparedSink, PreparedSource, ReadLimit,
    RealTimeSupport, Result, SecretStore, Sink, Source, SourceDescription, Stage, StageFactory,
};

use crate::checkpoint::{Checkpoint, Recovery};
use crate::pipeline::PipelineSpec;
use crate::progress::{Durations, ProgressEvent, ProgressListener, SinkProgress, SourceProgress};
use crate::registry::Registry;
use crate::trigger::Trigger;

/// A cloneable flag that asks a running pipeline to stop after the current batch.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<(AtomicBool, tokio::sync::Notify)>);

impl Shutdown {
    /// Asks the pipeline to stop.
    pub fn trigger(&self) {
        self.0 .0.store(true, Ordering::SeqCst);
        self.0 .1.notify_waiters();
    }

    /// True once stop was asked.
    pub fn is_triggered(&self) -> bool {
        self.0 .0.load(Ordering::SeqCst)
    }

    /// Resolves once stop is asked (at once if it already was).
    pub(crate) async fn wait(&self) {
        let notified = self.0 .1.notified();
        if self.is_triggered() {
            return;
        }
        notified.await
    }

    async fn sleep(&self, d: Duration) {
        if d.is_zero() || self.is_triggered() {
            return;
        }
        let notified = self.0 .1.notified();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = notified => {}
        }
    }
}

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

/// A built pipeline: a source, its sinks, a checkpoint and listeners.
pub struct Pipeline {
    pub(crate) name: String,
    pub(crate) trigger: Trigger,
    pub(crate) checkpoint: Checkpoint,
    pub(crate) checkpoint_id: String,
    /// `<connector> <target>`, the source's description in progress events.
    pub(crate) source_label: String,
    pub(crate) source: Box<dyn Source>,
    pub(crate) sinks: Vec<(String, Box<dyn Sink>)>,
    pub(crate) listeners: Vec<Box<dyn ProgressListener>>,
    pub(crate) shutdown: Shutdown,
    pub(crate) idle_poll: Duration,
    pub(crate) stages: Vec<Box<dyn Stage>>,
    /// The schema the sinks receive (after the stages), known once the stages are open.
    pub(crate) output_schema: Option<arrow::datatypes::SchemaRef>,
    /// `[engine] kind = "ballista"`: batches read and staged by a cluster's executors.
    #[cfg(feature = "ballista")]
    pub(crate) distributed: Option<crate::distributed::driver::Distributed>,
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

/// A pipeline whose options were all checked, nothing built or opened yet.
struct Prepared {
    source: Box<dyn PreparedSource>,
    stages: Vec<(Arc<dyn StageFactory>, tributary_sdk::Options)>,
    sinks: Vec<(String, Box<dyn PreparedSink>)>,
}

/// Validates every connector's and stage's options (no I/O) and returns what to build.
fn prepare(spec: &PipelineSpec, registry: &Registry) -> Result<Prepared> {
    let source = registry
        .source(&spec.source)?
        .prepare(&spec.source_options)?;
    if let (Trigger::RealTime { .. }, RealTimeSupport::Unsupported { reason }) =
        (spec.trigger, &source.description().real_time)
    {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "source '{}' cannot run with trigger kind realTime: {reason}; use processingTime or availableNow",
                spec.source
            ),
        )
        .with_context("option", "trigger.kind"));
    }
    if spec.engine != crate::distributed::EngineSpec::Embedded
        && matches!(spec.trigger, Trigger::RealTime { .. })
    {
        return Err(Error::new(
            ErrorCode::ConflictingOptions,
            "trigger kind realTime runs in the pipeline's own process; with engine kind \"ballista\" use processingTime or availableNow",
        )
        .with_context("option", "engine.kind"));
    }
    let mut stages = Vec::new();
    for (name, options) in &spec.stages {
        let factory = registry.stage(name)?;
        factory.validate(options, source.description())?;
        stages.push((factory, options.clone()));
    }
    if let Some(section) = &spec.transform {
        crate::transform::validate(section, &spec.origin)?;
    }
    let mut sinks = Vec::new();
    for (name, options) in &spec.sinks {
        sinks.push((name.clone(), registry.sink(name)?.prepare(options)?));
    }
    Ok(Prepared {
        source,
        stages,
        sinks,
    })
}

/// Checks a pipeline without any I/O: connectors exist, their options and the stages' options
/// are valid for this source. Returns what the source reads.
pub fn validate(spec: &PipelineSpec, registry: &Registry) -> Result<SourceDescription> {
    Ok(prepare(spec, registry)?.source.description().clone())
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
        #[cfg(feature = "ballista")]
        if spec.engine != crate::distributed::EngineSpec::Embedded {
            crate::distributed::payload::TaskPayload::check(spec, registry)?;
        }
        let prepared = prepare(spec, registry)?;
        let description = prepared.source.description().clone();
        let checkpoint = Checkpoint::open(&spec.checkpoint)?;
        let meta = checkpoint.bind(&description.identity)?;
        let source_ctx = ConnectorContext {
            state_dir: Some(checkpoint.source_state_dir()),
            secrets: secrets.clone(),
            pipeline: spec.name.clone(),
            checkpoint_id: Some(meta.id.clone()),
        };
        let source = prepared.source.build(&source_ctx)?;
        if source.identity() != description.identity {
            return Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "source '{}' was described as reading '{}' but its built source reports '{}'",
                    spec.source,
                    description.identity.target,
                    source.identity().target
                ),
            ));
        }
        let mut stages = Vec::new();
        for (factory, options) in &prepared.stages {
            stages.push(factory.create(options, &description, secrets.as_ref())?);
        }
        if let Some(section) = &spec.transform {
            stages.push(crate::transform::stage(section, &spec.origin)?);
        }
        let sink_ctx = ConnectorContext {
            state_dir: None,
            secrets: secrets.clone(),
            pipeline: spec.name.clone(),
            checkpoint_id: Some(meta.id.clone()),
        };
        let mut sinks = Vec::new();
        for (name, sink) in prepared.sinks {
            sinks.push((name, sink.build(&sink_ctx)?));
        }
        #[cfg(feature = "ballista")]
        let distributed = match &spec.engine {
            crate::distributed::EngineSpec::Embedded => None,
            crate::distributed::EngineSpec::Ballista {
                scheduler,
                parallelism,
                batch_timeout,
            } => {
                crate::distributed::driver::Distributed::check_sinks(&mut sinks)?;
                let payload =
                    crate::distributed::payload::TaskPayload::new(spec, registry, &meta.id)?;
                let payload = serde_json::to_value(payload).map_err(|e| {
                    Error::new(ErrorCode::Internal, format!("pipeline payload: {e}"))
                })?;
                Some(crate::distributed::driver::Distributed::new(
                    scheduler.clone(),
                    *parallelism,
                    *batch_timeout,
                    spec.name.clone(),
                    payload,
                ))
            }
        };
        Ok(Pipeline {
            name: spec.name.clone(),
            trigger: spec.trigger,
            checkpoint,
            checkpoint_id: meta.id,
            source_label: format!("{} {}", spec.source, description.identity.target),
            source,
            sinks,
            listeners: Vec::new(),
            shutdown: Shutdown::default(),
            idle_poll: Duration::from_millis(500),
            output_schema: None,
            stages,
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
        let real_time = matches!(self.trigger, Trigger::RealTime { .. });
        if self.sinks.iter_mut().all(|(_, s)| {
            s.delivery() == Delivery::ExactlyOnce && !(real_time && s.as_streaming().is_some())
        }) {
            Delivery::ExactlyOnce
        } else {
            Delivery::AtLeastOnce
        }
    }

    /// Runs until the trigger says stop (bounded triggers) or a shutdown is asked.
    pub async fn run(&mut self) -> Result<RunSummary> {
        let result = self.run_inner().await;
        let stop_source = self.source.stop().await;
        let mut stop_sinks = Ok(());
        for (_, s) in &mut self.sinks {
            if let Err(e) = s.stop().await {
                stop_sinks = Err(e);
            }
        }
        for l in &mut self.listeners {
            l.on_terminated(result.as_ref().err());
        }
        let summary = result?;
        stop_source?;
        stop_sinks?;
        Ok(summary)
    }

    /// Opens the stages once per run (a restart resolves registry schemas again) and returns
    /// the schema the sinks receive.
    async fn open_stages(&mut self) -> Result<arrow::datatypes::SchemaRef> {
        let mut schema = self.source.schema();
        for stage in &mut self.stages {
            schema = stage.open(schema).await?;
        }
        self.output_schema = Some(schema.clone());
        Ok(schema)
    }

    async fn run_inner(&mut self) -> Result<RunSummary> {
        let schema = self.open_stages().await?;
        for (_, s) in &mut self.sinks {
            s.open(schema.clone()).await?;
        }
        let mut summary = RunSummary::default();
        let mut last_end = Instant::now();
        let (mut batch_id, mut start) = match self.checkpoint.recovery()? {
            Recovery::Fresh => (0, self.source.initial_offset().await?),
            Recovery::Continue { last } => {
                self.source.commit(&last.end).await?;
                summary.last_batch_id = Some(last.batch_id);
                (last.batch_id + 1, last.end)
            }
            Recovery::Replay { entry } => {
                tracing::info!(batch = entry.batch_id, "replaying uncommitted batch");
                let rows = self
                    .execute(
                        entry.batch_id,
                        &entry.start,
                        &entry.end,
                        Durations::default(),
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
                (entry.batch_id + 1, entry.end)
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
        let limit = match self.trigger {
            Trigger::Once => ReadLimit::All,
            _ => self.source.default_read_limit(),
        };
        if self.trigger.is_bounded() {
            self.source.prepare_available_now().await?;
        }
        loop {
            if self.shutdown.is_triggered() {
                return Ok(summary);
            }
            let t0 = Instant::now();
            let end = self.source.latest_offset(&start, &limit).await?;
            let latest_ms = t0.elapsed().as_millis() as u64;
            if end == start {
                if self.trigger.is_bounded() {
                    return Ok(summary);
                }
                let wait = match self.trigger {
                    Trigger::ProcessingTime(i) if !i.is_zero() => i,
                    _ => self.idle_poll,
                };
                self.shutdown.sleep(wait).await;
                continue;
            }
            let durations = Durations {
                latest_offset: latest_ms,
                ..Durations::default()
            };
            let rows = self
                .execute(batch_id, &start, &end, durations, false, &mut last_end)
                .await?;
            summary.batches += 1;
            summary.rows += rows;
            summary.last_batch_id = Some(batch_id);
            batch_id += 1;
            start = end;
            match self.trigger {
                Trigger::Once => return Ok(summary),
                Trigger::ProcessingTime(interval) => {
                    self.shutdown
                        .sleep(interval.saturating_sub(t0.elapsed()))
                        .await
                }
                Trigger::AvailableNow | Trigger::RealTime { .. } => {}
            }
        }
    }

    /// Source metrics plus the stages' counters (malformed records by reason, ...).
    pub(crate) fn metrics(&self) -> tributary_sdk::SourceMetrics {
        let mut m = self.source.metrics();
        for stage in &self.stages {
            m.extend(stage.metrics());
        }
        m
    }

    /// Runs one batch: log its range (unless replaying), read, write, commit, report.
    async fn execute(
        &mut self,
        batch_id: u64,
        start: &Offset,
        end: &Offset,
        mut durations: Durations,
        replayed: bool,
        last_end: &mut Instant,
    ) -> Result<u64> {
        let t_batch = Instant::now();
        let t = Instant::now();
        if !replayed {
            self.checkpoint.write_offsets(batch_id, start, end)?;
        }
        let mut wal_ms = t.elapsed().as_millis() as u64;

        // The stages are opened before the first batch; the source's schema is the fallback.
        let schema = self
            .output_schema
            .clone()
            .unwrap_or_else(|| self.source.schema());
        #[allow(unused_mut)]
        let mut distributed_batch: Option<crate::distributed::DistributedBatch> = None;
        #[cfg(feature = "ballista")]
        if let Some(d) = &mut self.distributed {
            distributed_batch = d
                .run_batch(self.source.as_mut(), &mut self.sinks, batch_id, start, end)
                .await?;
        }
        let (io, tasks, scheduling_ms) = match distributed_batch {
            Some(b) => (b.io, b.tasks, Some(b.scheduling_ms)),
            None => (
                crate::batch_io::read_and_write(
                    self.source.as_mut(),
                    &mut self.stages,
                    &mut self.sinks,
                    &schema,
                    batch_id,
                    start,
                    end,
                )
                .await?,
                Vec::new(),
                None,
            ),
        };
        durations.get_batch = io.read.as_millis() as u64;
        durations.add_batch = io.write.as_millis() as u64;
        let rows = io.rows;
        let sink_progress = self
            .sinks
            .iter()
            .map(|(name, _)| SinkProgress {
                description: name.clone(),
                num_output_rows: rows,
            })
            .collect();

        let t = Instant::now();
        self.checkpoint.write_commit(batch_id, rows)?;
        wal_ms += t.elapsed().as_millis() as u64;
        self.source.commit(end).await?;
        durations.wal_commit = wal_ms;
        durations.trigger_execution =
            t_batch.elapsed().as_millis() as u64 + durations.latest_offset;

        let since_last = last_end.elapsed().as_secs_f64();
        *last_end = Instant::now();
        let exec_s = (durations.trigger_execution as f64 / 1000.0).max(1e-3);
        let event = ProgressEvent {
            id: self.checkpoint_id.clone(),
            name: self.name.clone(),
            batch_id,
            replayed,
            timestamp: rfc3339_now(),
            num_input_rows: rows,
            input_rows_per_second: rows as f64 / since_last.max(1e-3),
            processed_rows_per_second: rows as f64 / exec_s,
            duration_ms: durations,
            sources: vec![SourceProgress {
                description: self.source_label.clone(),
                start_offset: start.clone(),
                end_offset: end.clone(),
                num_input_rows: rows,
                metrics: self.metrics(),
            }],
            sinks: sink_progress,
            latencies: None,
            interim: false,
            tasks,
            scheduling_ms,
        };
        for l in &mut self.listeners {
            l.on_progress(&event);
        }
        Ok(rows)
    }
}

fn rfc3339_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
