//! What the monitor knows of a running pipeline: its recent progress events (Spark's
//! `recentProgress`), its metrics, whether it is alive and ready, and how it ended.
//!
//! [`Monitor`] is shared between the pipeline (through the [`ProgressListener`] it hands out) and
//! the HTTP server; a lock guards it, held only to copy or update (never across an await).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tributary_sdk::SourceMetrics;

use super::metrics::PipelineMetrics;
use crate::progress::{ProgressEvent, ProgressListener};

/// Events kept for `/api/progress`, as Spark's `spark.sql.streaming.numRecentProgressUpdates`.
pub const RECENT_EVENTS: usize = 100;

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunState {
    /// Started; no trigger has completed yet (the source has not answered).
    Starting,
    /// Batches or triggers complete.
    Running,
    /// Stopped cleanly.
    Stopped,
    /// Stopped with an error.
    Failed,
}

/// `/api/status`, in the spirit of Spark's `StreamingQueryStatus`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Pipeline name.
    pub name: String,
    /// Trigger, as configured (`availableNow`, `processingTime 10s`, `realTime`).
    pub trigger: String,
    /// How the run stands.
    pub state: RunState,
    /// A sentence for people (the error of a failed run).
    pub message: String,
    /// Whether `/readyz` answers 200.
    pub ready: bool,
    /// When the run started (Unix ms).
    pub started_ms: u64,
    /// When the last batch was committed or a trigger found no new data (Unix ms).
    pub last_alive_ms: Option<u64>,
    /// Committed batches seen.
    pub batches: u64,
    /// The id of the last batch.
    pub last_batch_id: Option<u64>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    trigger: String,
    ready_within: Duration,
    started: SystemTime,
    metrics: PipelineMetrics,
    recent: VecDeque<ProgressEvent>,
    last_alive: Option<(Instant, SystemTime)>,
    batches: u64,
    last_batch_id: Option<u64>,
    ended: Option<(RunState, String)>,
}

/// A pipeline's monitor (cheap to clone: one shared state).
#[derive(Debug, Clone)]
pub struct Monitor {
    inner: Arc<Mutex<Inner>>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Monitor {
    /// The monitor of pipeline `name` with trigger `trigger`; `/readyz` fails when nothing
    /// completed for `ready_within`.
    pub fn new(name: &str, trigger: &str, ready_within: Duration) -> Self {
        Monitor {
            inner: Arc::new(Mutex::new(Inner {
                name: name.to_string(),
                trigger: trigger.to_string(),
                ready_within,
                started: SystemTime::now(),
                metrics: PipelineMetrics::new(name),
                recent: VecDeque::with_capacity(RECENT_EVENTS),
                last_alive: None,
                batches: 0,
                last_batch_id: None,
                ended: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data; keep serving it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The listener to add to the pipeline.
    pub fn listener(&self) -> Box<dyn ProgressListener> {
        Box::new(MonitorListener(self.clone()))
    }

    /// The recent progress events, oldest first.
    pub fn recent(&self) -> Vec<ProgressEvent> {
        self.lock().recent.iter().cloned().collect()
    }

    /// `/metrics`.
    pub fn metrics_text(&self) -> tributary_sdk::Result<String> {
        self.lock().metrics.render()
    }

    /// `/api/status`.
    pub fn status(&self) -> Status {
        let g = self.lock();
        let (state, message) = match &g.ended {
            Some((state, message)) => (*state, message.clone()),
            None if g.last_alive.is_none() => (
                RunState::Starting,
                "waiting for the first trigger to complete".to_string(),
            ),
            None => (RunState::Running, String::new()),
        };
        let (ready, message) = match (&g.ended, g.last_alive) {
            (Some(_), _) => (false, message),
            (None, None) => (false, message),
            (None, Some((at, _))) if at.elapsed() > g.ready_within => (
                false,
                format!(
                    "no batch committed and no trigger completed for {} s (readyWithin is {} s)",
                    at.elapsed().as_secs(),
                    g.ready_within.as_secs()
                ),
            ),
            (None, Some(_)) => (true, message),
        };
        Status {
            name: g.name.clone(),
            trigger: g.trigger.clone(),
            state,
            message,
            ready,
            started_ms: unix_ms(g.started),
            last_alive_ms: g.last_alive.map(|(_, t)| unix_ms(t)),
            batches: g.batches,
            last_batch_id: g.last_batch_id,
        }
    }
}

/// Feeds the monitor from the pipeline.
struct MonitorListener(Monitor);

impl ProgressListener for MonitorListener {
    fn on_progress(&mut self, event: &ProgressEvent) {
        let now = SystemTime::now();
        let mut g = self.0.lock();
        let secs = now
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        g.metrics.observe(event, secs);
        if !event.interim {
            g.batches += 1;
            g.last_batch_id = Some(event.batch_id);
        }
        g.last_alive = Some((Instant::now(), now));
        if g.recent.len() == RECENT_EVENTS {
            g.recent.pop_front();
        }
        g.recent.push_back(event.clone());
    }

    fn on_idle(&mut self, source: &str, metrics: &SourceMetrics) {
        let mut g = self.0.lock();
        g.metrics.observe_source(source, metrics);
        g.last_alive = Some((Instant::now(), SystemTime::now()));
    }

    fn on_terminated(&mut self, error: Option<&tributary_sdk::Error>) {
        let mut g = self.0.lock();
        g.ended = Some(match error {
            Some(e) => (RunState::Failed, e.to_string()),
            None => (RunState::Stopped, "stopped".to_string()),
        });
    }
}
