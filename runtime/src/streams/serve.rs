//! `streams serve`: keeps every stream of a catalog ingesting, as a service would.
//!
//! A supervisor loop re-reads the catalog every `poll_interval` (and at once when a stream's
//! run ends) and reconciles what runs with what the catalog holds:
//!
//! - a stream in the catalog that is not running starts (a continuous run of
//!   [`super::runner::run_stream`], one tokio task each);
//! - a run that fails (or ends by itself) is restarted after a back-off that doubles from
//!   `backoff_initial` up to `backoff_max`, and starts again from `backoff_initial` once a run
//!   has lasted `stable_after`; the pipeline resumes from its checkpoint, so a restart neither
//!   loses nor repeats a committed batch;
//! - a stream deleted from the catalog (or deleted and created again under the same name: its
//!   id changed) is stopped after its current batch. Serve removes nothing itself: a catalog
//!   directory that reads empty by mistake must not cost any table. (A batch in flight while
//!   `streams delete --yes` runs may write its table again after the delete removed it; the
//!   `Stopped` event names the paths to check.)
//! - on stop (Ctrl-C, SIGTERM) every run stops after its current batch, and `serve` returns.
//!
//! Each transition is a [`ServeEvent`] handed to the caller's callback (the command logs them
//! one line each). A catalog that cannot be read keeps the running streams as they are.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tributary_sdk::{Error, ErrorCode, Result};

use super::catalog::{Catalog, ListRequest, StreamEntry};
use super::name::ThreePartName;
use super::runner::{run_stream, RunOptions, StreamRunSummary};
use crate::engine::Shutdown;

/// How `serve` supervises.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How each stream runs (`available_now` must be off: served streams run continuously).
    pub run: RunOptions,
    /// Which streams of the catalog to serve.
    pub filter: ListRequest,
    /// How often the catalog is read again.
    pub poll_interval: Duration,
    /// The first restart's delay.
    pub backoff_initial: Duration,
    /// The longest delay between restarts.
    pub backoff_max: Duration,
    /// A run that lasted this long resets the back-off.
    pub stable_after: Duration,
}

impl ServeOptions {
    /// Catalog read every 10 s, restarts after 1 s doubling to 5 minutes, reset after a
    /// minute of running.
    pub fn new(run: RunOptions) -> Self {
        ServeOptions {
            run,
            filter: ListRequest::default(),
            poll_interval: Duration::from_secs(10),
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
            stable_after: Duration::from_secs(60),
        }
    }

    /// The delay before restart number `attempt` (1 = the first).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(31));
        self.backoff_initial
            .saturating_mul(factor)
            .min(self.backoff_max)
    }
}

/// Why a served stream stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Its catalog entry is gone.
    Deleted,
    /// Its entry was deleted and created again (another id): the new one starts next.
    Replaced,
    /// `serve` was asked to stop.
    Shutdown,
}

/// One transition of a served stream.
#[derive(Debug, Clone)]
pub enum ServeEvent {
    /// A run started (`attempt` 0: the first since serve started or since it was stable).
    Started {
        /// The stream.
        stream: String,
        /// Restarts in a row before this one.
        attempt: u32,
    },
    /// A run failed or ended by itself; it restarts after `retry_in`.
    Failed {
        /// The stream.
        stream: String,
        /// The error (one line), or why an ending without error counts as a failure.
        error: String,
        /// The back-off before the restart.
        retry_in: Duration,
        /// Restarts in a row, this one included.
        attempt: u32,
    },
    /// A run stopped and is not restarted.
    Stopped {
        /// The stream.
        stream: String,
        /// Why.
        reason: StopReason,
        /// Rows the run wrote, when it ended cleanly.
        rows: Option<u64>,
        /// For a deleted stream: its checkpoint and table when they exist again after the
        /// delete (a batch in flight wrote them), for the operator to remove.
        leftovers: Vec<PathBuf>,
    },
    /// The catalog could not be read; running streams are kept.
    CatalogError {
        /// The error.
        error: String,
    },
}

/// What `serve` did, when it returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeSummary {
    /// Runs started, by stream.
    pub starts: BTreeMap<String, u32>,
    /// Failed runs, by stream.
    pub failures: BTreeMap<String, u32>,
}

struct Worker {
    id: String,
    stop: Shutdown,
    task: JoinHandle<Result<StreamRunSummary>>,
    started: Instant,
    attempt: u32,
    /// Set when the supervisor stopped it (and why).
    stopping: Option<StopReason>,
    /// The places `streams delete` removes, checked again after a deleted stream stopped.
    owned: Vec<PathBuf>,
}

struct Waiting {
    id: String,
    until: Instant,
    attempt: u32,
}

/// Serves the catalog's streams until `stop`; `on_event` sees every transition.
pub async fn serve(
    catalog: &Catalog,
    options: &ServeOptions,
    stop: Shutdown,
    on_event: impl Fn(&ServeEvent),
) -> Result<ServeSummary> {
    if options.run.available_now {
        return Err(Error::new(
            ErrorCode::ConflictingOptions,
            "streams serve runs streams continuously: --available-now applies to `streams run` (a scheduled run) only",
        )
        .with_context("option", "available_now"));
    }
    let wake = Arc::new(tokio::sync::Notify::new());
    let mut workers: HashMap<String, Worker> = HashMap::new();
    let mut waiting: HashMap<String, Waiting> = HashMap::new();
    let mut summary = ServeSummary::default();
    while !stop.is_triggered() {
        reap(&mut workers, &mut waiting, options, &mut summary, &on_event);
        let wanted = match catalog.list(&options.filter) {
            Ok(entries) => Some(entries),
            Err(e) => {
                on_event(&ServeEvent::CatalogError {
                    error: e.to_string(),
                });
                None
            }
        };
        if let Some(entries) = wanted {
            let ids: HashMap<&str, &str> = entries
                .iter()
                .map(|e| (e.name.as_str(), e.id.as_str()))
                .collect();
            for (name, w) in workers.iter_mut() {
                if w.stopping.is_some() {
                    continue;
                }
                let reason = match ids.get(name.as_str()) {
                    None => StopReason::Deleted,
                    Some(id) if *id != w.id => StopReason::Replaced,
                    Some(_) => continue,
                };
                w.stopping = Some(reason);
                w.stop.trigger();
            }
            waiting.retain(|name, wt| {
                let keep = ids.get(name.as_str()) == Some(&wt.id.as_str());
                if !keep {
                    on_event(&ServeEvent::Stopped {
                        stream: name.clone(),
                        reason: StopReason::Deleted,
                        rows: None,
                        leftovers: Vec::new(),
                    });
                }
                keep
            });
            let now = Instant::now();
            for entry in &entries {
                if workers.contains_key(&entry.name) {
                    continue;
                }
                let attempt = match waiting.get(&entry.name) {
                    Some(wt) if wt.until > now => continue,
                    Some(wt) => wt.attempt,
                    None => 0,
                };
                waiting.remove(&entry.name);
                let worker = start(catalog, entry, options, attempt, &wake);
                *summary.starts.entry(entry.name.clone()).or_default() += 1;
                on_event(&ServeEvent::Started {
                    stream: entry.name.clone(),
                    attempt,
                });
                workers.insert(entry.name.clone(), worker);
            }
        }
        // Sleep until the next poll, the next restart that is due, a run ending, or stop.
        let now = Instant::now();
        let next_restart = waiting
            .values()
            .map(|w| w.until.saturating_duration_since(now))
            .min()
            .unwrap_or(options.poll_interval);
        let nap = options
            .poll_interval
            .min(next_restart)
            .max(Duration::from_millis(10));
        tokio::select! {
            _ = tokio::time::sleep(nap) => {}
            _ = wake.notified() => {}
            _ = stop.wait() => {}
        }
    }
    for w in workers.values_mut() {
        w.stopping.get_or_insert(StopReason::Shutdown);
        w.stop.trigger();
    }
    for (name, w) in workers.drain() {
        let reason = w.stopping.unwrap_or(StopReason::Shutdown);
        let rows = match w.task.await {
            Ok(Ok(s)) => Some(s.run.rows),
            _ => None,
        };
        on_event(&ServeEvent::Stopped {
            stream: name,
            reason,
            rows,
            leftovers: Vec::new(),
        });
    }
    Ok(summary)
}

fn start(
    catalog: &Catalog,
    entry: &StreamEntry,
    options: &ServeOptions,
    attempt: u32,
    wake: &Arc<tokio::sync::Notify>,
) -> Worker {
    let stop = Shutdown::default();
    let (c, name, run, s, wake) = (
        catalog.clone(),
        entry.name.clone(),
        options.run.clone(),
        stop.clone(),
        wake.clone(),
    );
    let task = tokio::spawn(async move {
        let r = run_stream(&c, &name, &run, s).await;
        wake.notify_one();
        r
    });
    let mut owned = Vec::new();
    if let Ok(n) = ThreePartName::parse(&entry.name, "stream name") {
        owned.push(catalog.checkpoint_path(&n));
    }
    if let Ok(t) = entry.spec.table_name() {
        owned.push(catalog.table_path(&t));
    }
    Worker {
        id: entry.id.clone(),
        stop,
        task,
        started: Instant::now(),
        attempt,
        stopping: None,
        owned,
    }
}

/// Collects the runs that ended: restarts scheduled, stops reported, leftovers removed.
fn reap(
    workers: &mut HashMap<String, Worker>,
    waiting: &mut HashMap<String, Waiting>,
    options: &ServeOptions,
    summary: &mut ServeSummary,
    on_event: &impl Fn(&ServeEvent),
) {
    let done: Vec<String> = workers
        .iter()
        .filter(|(_, w)| w.task.is_finished())
        .map(|(n, _)| n.clone())
        .collect();
    for name in done {
        let Some(w) = workers.remove(&name) else {
            continue;
        };
        let result = futures::FutureExt::now_or_never(w.task).unwrap_or_else(|| {
            Ok(Err(Error::new(
                ErrorCode::Internal,
                "the run's task was not finished",
            )))
        });
        let result = result.unwrap_or_else(|e| {
            Err(Error::new(
                ErrorCode::Internal,
                format!("the run's task failed: {e}"),
            ))
        });
        if let Some(reason) = w.stopping {
            let leftovers = if reason == StopReason::Deleted {
                w.owned.iter().filter(|p| p.exists()).cloned().collect()
            } else {
                Vec::new()
            };
            on_event(&ServeEvent::Stopped {
                stream: name.clone(),
                reason,
                rows: result.as_ref().ok().map(|s| s.run.rows),
                leftovers,
            });
            continue;
        }
        let error = match result {
            Err(e) => e.to_string(),
            Ok(s) => format!(
                "the run ended by itself after {} rows (a served stream runs until stopped)",
                s.run.rows
            ),
        };
        let attempt = if w.started.elapsed() >= options.stable_after {
            1
        } else {
            w.attempt + 1
        };
        let retry_in = options.backoff(attempt);
        *summary.failures.entry(name.clone()).or_default() += 1;
        on_event(&ServeEvent::Failed {
            stream: name.clone(),
            error,
            retry_in,
            attempt,
        });
        waiting.insert(
            name,
            Waiting {
                id: w.id,
                until: Instant::now() + retry_in,
                attempt,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tributary_sdk::EnvSecretStore;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let mut o = ServeOptions::new(RunOptions::new(Arc::new(EnvSecretStore)));
        o.backoff_initial = Duration::from_secs(1);
        o.backoff_max = Duration::from_secs(10);
        let d: Vec<u64> = (1..=6).map(|a| o.backoff(a).as_secs()).collect();
        assert_eq!(d, [1, 2, 4, 8, 10, 10]);
        assert_eq!(o.backoff(u32::MAX), Duration::from_secs(10));
    }
}
