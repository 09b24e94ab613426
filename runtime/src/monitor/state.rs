//! What the monitor knows of the pipelines of a process (one for `tributary run`, one per
//! stream for `tributary streams run`): their recent progress events (Spark's
//! `recentProgress`), their metrics, whether each is alive and ready, and how it ended.
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

/// One pipeline's part of the state.
#[derive(Debug)]
struct Watched {
    trigger: String,
    started: SystemTime,
    recent: VecDeque<ProgressEvent>,
    last_alive: Option<(Instant, SystemTime)>,
    batches: u64,
    last_batch_id: Option<u64>,
    ended: Option<(RunState, String)>,
}

#[derive(Debug)]
struct Inner {
    ready_within: Duration,
    metrics: PipelineMetrics,
    /// By pipeline name, in the order they were added.
    pipelines: Vec<(String, Watched)>,
}

impl Inner {
    fn watched(&mut self, name: &str) -> Option<&mut Watched> {
        self.pipelines
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, w)| w)
    }
}

/// The monitor of the pipelines of one process (cheap to clone: one shared state).
#[derive(Debug, Clone)]
pub struct Monitor {
    inner: Arc<Mutex<Inner>>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Monitor {
    /// A monitor whose `/readyz` fails for a pipeline that completed nothing for
    /// `ready_within`.
    pub fn new(ready_within: Duration) -> Self {
        Monitor {
            inner: Arc::new(Mutex::new(Inner {
                ready_within,
                metrics: PipelineMetrics::new(),
                pipelines: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data; keep serving it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Watches pipeline `name` (trigger `trigger`, for people); returns the listener to add
    /// to it. Watching a name again starts its state afresh.
    pub fn listener(&self, name: &str, trigger: &str) -> Box<dyn ProgressListener> {
        let watched = Watched {
            trigger: trigger.to_string(),
            started: SystemTime::now(),
            recent: VecDeque::with_capacity(RECENT_EVENTS),
            last_alive: None,
            batches: 0,
            last_batch_id: None,
            ended: None,
        };
        let mut g = self.lock();
        match g.watched(name) {
            Some(w) => *w = watched,
            None => g.pipelines.push((name.to_string(), watched)),
        }
        Box::new(MonitorListener {
            monitor: self.clone(),
            name: name.to_string(),
        })
    }

    /// The recent progress events of `pipeline` (every pipeline's when `None`), oldest first.
    pub fn recent(&self, pipeline: Option<&str>) -> Vec<ProgressEvent> {
        let g = self.lock();
        let mut events: Vec<ProgressEvent> = g
            .pipelines
            .iter()
            .filter(|(n, _)| pipeline.is_none_or(|p| p == n))
            .flat_map(|(_, w)| w.recent.iter().cloned())
            .collect();
        events.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
        events
    }

    /// `/metrics`.
    pub fn metrics_text(&self) -> tributary_sdk::Result<String> {
        self.lock().metrics.render()
    }

    /// `/api/status`: every pipeline's status, in the order they were added.
    pub fn status(&self) -> Vec<Status> {
        let g = self.lock();
        g.pipelines
            .iter()
            .map(|(name, w)| status_of(name, w, g.ready_within))
            .collect()
    }

    /// Whether every pipeline is ready (none watched: not ready), and why not.
    pub fn ready(&self) -> (bool, String) {
        let all = self.status();
        if all.is_empty() {
            return (false, "no pipeline runs yet".to_string());
        }
        let not: Vec<String> = all
            .iter()
            .filter(|s| !s.ready)
            .map(|s| format!("{}: {}", s.name, s.message))
            .collect();
        (not.is_empty(), not.join("; "))
    }
}

fn status_of(name: &str, w: &Watched, ready_within: Duration) -> Status {
    let (state, message) = match &w.ended {
        Some((state, message)) => (*state, message.clone()),
        None if w.last_alive.is_none() => (
            RunState::Starting,
            "waiting for the first trigger to complete".to_string(),
        ),
        None => (RunState::Running, String::new()),
    };
    let (ready, message) = match (&w.ended, w.last_alive) {
        (Some(_), _) | (None, None) => (false, message),
        (None, Some((at, _))) if at.elapsed() > ready_within => (
            false,
            format!(
                "no batch committed and no trigger completed for {} s (readyWithin is {} s)",
                at.elapsed().as_secs(),
                ready_within.as_secs()
            ),
        ),
        (None, Some(_)) => (true, message),
    };
    Status {
        name: name.to_string(),
        trigger: w.trigger.clone(),
        state,
        message,
        ready,
        started_ms: unix_ms(w.started),
        last_alive_ms: w.last_alive.map(|(_, t)| unix_ms(t)),
        batches: w.batches,
        last_batch_id: w.last_batch_id,
    }
}

/// Feeds the monitor from one pipeline.
struct MonitorListener {
    monitor: Monitor,
    name: String,
}

impl ProgressListener for MonitorListener {
    fn on_progress(&mut self, event: &ProgressEvent) {
        let now = SystemTime::now();
        let secs = now
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mut g = self.monitor.lock();
        g.metrics.observe(event, secs);
        let Some(w) = g.watched(&self.name) else {
            return;
        };
        if !event.interim {
            w.batches += 1;
            w.last_batch_id = Some(event.batch_id);
        }
        w.last_alive = Some((Instant::now(), now));
        if w.recent.len() == RECENT_EVENTS {
            w.recent.pop_front();
        }
        w.recent.push_back(event.clone());
    }

    fn on_idle(&mut self, source: &str, metrics: &SourceMetrics) {
        let mut g = self.monitor.lock();
        g.metrics.observe_source(&self.name, source, metrics);
        if let Some(w) = g.watched(&self.name) {
            w.last_alive = Some((Instant::now(), SystemTime::now()));
        }
    }

    fn on_terminated(&mut self, error: Option<&tributary_sdk::Error>) {
        let mut g = self.monitor.lock();
        if let Some(w) = g.watched(&self.name) {
            w.ended = Some(match error {
                Some(e) => (RunState::Failed, e.to_string()),
                None => (RunState::Stopped, "stopped".to_string()),
            });
        }
    }
}
