//! `streams run`: runs streams' ingestion pipelines — one, or all of a catalog in one process
//! (one tokio task per pipeline) — continuously or until the data available at start is in
//! (`--available-now`). With the `delta` feature, the backfill check runs after an
//! available-now run and every `backfill_interval` of a continuous one.

use std::sync::Arc;
use std::time::Duration;

use tributary_sdk::secret::resolve_value;
use tributary_sdk::{Error, ErrorCode, Result, SecretStore};

use super::backfill::{BackfillStatus, Clock, SystemClock};
use super::catalog::{Catalog, ListRequest};
use super::pipeline::{pipeline_spec_with, SINK};
use crate::engine::{Pipeline, RunSummary, Shutdown};
use crate::progress::ProgressListener;
use crate::trigger::Trigger;

/// Makes the progress listeners of a stream's pipeline, given the stream's name.
pub type ListenerFactory = Arc<dyn Fn(&str) -> Vec<Box<dyn ProgressListener>> + Send + Sync>;

/// How streams run.
#[derive(Clone)]
pub struct RunOptions {
    /// Stop once the data available at start is written (scheduled runs).
    pub available_now: bool,
    /// Resolves the secret references of the streams.
    pub secrets: Arc<dyn SecretStore>,
    /// The backfill rule's clock.
    pub clock: Arc<dyn Clock>,
    /// How often a continuous run checks the backfill.
    pub backfill_interval: Duration,
    /// Makes the progress listeners of each stream's pipeline (by stream name).
    pub listeners: Option<ListenerFactory>,
}

impl RunOptions {
    /// Continuous runs, environment secrets, the system clock, a backfill check every minute.
    pub fn new(secrets: Arc<dyn SecretStore>) -> Self {
        RunOptions {
            available_now: false,
            secrets,
            clock: Arc::new(SystemClock),
            backfill_interval: Duration::from_secs(60),
            listeners: None,
        }
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("available_now", &self.available_now)
            .field("backfill_interval", &self.backfill_interval)
            .finish_non_exhaustive()
    }
}

/// What a stream's run did.
#[derive(Debug, Clone)]
pub struct StreamRunSummary {
    /// The stream.
    pub stream: String,
    /// The pipeline's run.
    pub run: RunSummary,
    /// The backfill status after the run.
    pub backfill: BackfillStatus,
}

/// Builds a stream's pipeline (refused when this build cannot write its Delta table).
pub fn build(catalog: &Catalog, name: &str, options: &RunOptions) -> Result<Pipeline> {
    let entry = catalog.get(name)?;
    let registry = super::stream_registry();
    if registry.sink(SINK).is_err() {
        return Err(Error::new(
            ErrorCode::UnknownConnector,
            format!(
                "stream '{}' writes its ingestion table with the '{SINK}' sink, which this build of tributary lacks: rebuild with `--features delta` (cargo build -p tributary-runtime --features delta)",
                entry.name
            ),
        )
        .with_context("connector", SINK)
        .with_context("feature", "delta"));
    }
    let key = match &entry.spec.connection.schema_registry_api_key {
        Some(r) => Some(resolve_value(options.secrets.as_ref(), r)?),
        None => None,
    };
    let trigger = if options.available_now {
        Trigger::AvailableNow
    } else {
        Trigger::ProcessingTime(Duration::ZERO)
    };
    let spec = pipeline_spec_with(
        catalog,
        &entry,
        trigger,
        key.as_ref().map(|k| k.expose()),
        &registry,
    )?;
    let mut p = Pipeline::build(&spec, &registry, options.secrets.clone())?;
    if let Some(make) = &options.listeners {
        for l in make(&entry.name) {
            p.add_listener(l);
        }
    }
    Ok(p)
}

/// Checks the backfill once (a no-op without the `delta` feature).
pub async fn check_backfill(
    catalog: &Catalog,
    name: &str,
    clock: &dyn Clock,
) -> Result<BackfillStatus> {
    #[cfg(feature = "delta")]
    {
        super::backfill_merge::advance(catalog, name, clock).await
    }
    #[cfg(not(feature = "delta"))]
    {
        let _ = clock;
        Ok(catalog.get(name)?.backfill)
    }
}

/// Runs one stream until `stop` (continuous) or until the available data is in.
pub async fn run_stream(
    catalog: &Catalog,
    name: &str,
    options: &RunOptions,
    stop: Shutdown,
) -> Result<StreamRunSummary> {
    let mut pipeline = build(catalog, name, options)?;
    let entry = catalog.get(name)?;
    let handle = pipeline.shutdown_handle();
    let forward = stop.clone();
    let relay = tokio::spawn(async move {
        forward.wait().await;
        handle.trigger();
    });
    // A continuous run checks the backfill beside the pipeline, in its own task.
    let checker = (!options.available_now && !entry.backfill.state.is_final()).then(|| {
        let (catalog, name, clock, every, stop) = (
            catalog.clone(),
            entry.name.clone(),
            options.clock.clone(),
            options.backfill_interval,
            stop.clone(),
        );
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = stop.wait() => return,
                }
                match check_backfill(&catalog, &name, clock.as_ref()).await {
                    Ok(s) if s.state.is_final() => return,
                    Ok(_) => {}
                    Err(e) => tracing::warn!(stream = %name, error = %e, "backfill check failed; retried at the next interval"),
                }
            }
        })
    });
    let run = pipeline.run().await;
    relay.abort();
    if let Some(c) = checker {
        c.abort();
    }
    let run = run?;
    let backfill = check_backfill(catalog, &entry.name, options.clock.as_ref())
        .await
        .map_err(|e| {
            Error::new(
                e.code(),
                format!(
                    "stream '{}' wrote {} rows, then its backfill check failed: {}",
                    entry.name,
                    run.rows,
                    e.message()
                ),
            )
            .with_context("stream", &entry.name)
        })?;
    Ok(StreamRunSummary {
        stream: entry.name,
        run,
        backfill,
    })
}

/// Runs every stream of the catalog (filtered by `filter`), one task each; returns each
/// stream's result. One stream failing does not stop the others.
pub async fn run_all(
    catalog: &Catalog,
    filter: &ListRequest,
    options: &RunOptions,
    stop: Shutdown,
) -> Result<Vec<(String, Result<StreamRunSummary>)>> {
    let names: Vec<String> = catalog.list(filter)?.into_iter().map(|e| e.name).collect();
    if names.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "no stream to run: the catalog has none (tributary streams create <spec.toml>)",
        ));
    }
    let mut tasks = Vec::new();
    for name in names {
        let (catalog, options, stop) = (catalog.clone(), options.clone(), stop.clone());
        let task_name = name.clone();
        tasks.push((
            name,
            tokio::spawn(async move { run_stream(&catalog, &task_name, &options, stop).await }),
        ));
    }
    let mut out = Vec::new();
    for (name, task) in tasks {
        let r = task.await.unwrap_or_else(|e| {
            Err(Error::new(
                ErrorCode::Internal,
                format!("the task of stream '{name}' failed: {e}"),
            ))
        });
        out.push((name, r));
    }
    Ok(out)
}
