//! The one progress-event builder: every driver describes a batch as a [`BatchReport`] and the
//! core turns it into a [`ProgressEvent`] for the listeners.

use std::time::Duration;

use tributary_sdk::Offset;

use super::batch::Moved;
use super::Pipeline;
use crate::latency::Latencies;
use crate::progress::{Durations, ProgressEvent, SinkProgress, SourceProgress, TaskProgress};

/// What a driver knows of a batch when it reports it.
#[derive(Debug, Clone)]
pub(crate) struct BatchReport {
    /// The batch id.
    pub batch_id: u64,
    /// A replay of an uncommitted batch.
    pub replayed: bool,
    /// The batch's range (for an interim event, the end delivered so far).
    pub start: Offset,
    /// See `start`.
    pub end: Offset,
    /// Rows read from the source.
    pub rows_in: u64,
    /// Rows the sinks received (after the stages).
    pub rows: u64,
    /// Bytes read from the source (Arrow buffers).
    pub bytes_in: u64,
    /// Bytes every sink received.
    pub bytes: u64,
    /// Time in each stage, in the chain's order.
    pub stages: Vec<Duration>,
    /// Phase durations.
    pub durations: Durations,
    /// Wall time since the previous batch ended (input rate).
    pub since_last: Duration,
    /// Time the batch has run (processing rate).
    pub elapsed: Duration,
    /// Real-time: latency percentiles so far.
    pub latencies: Option<Latencies>,
    /// Real-time: an event of a long batch still running.
    pub interim: bool,
    /// Distributed: where each input partition ran.
    pub tasks: Vec<TaskProgress>,
    /// Distributed: the job's time not covered by tasks.
    pub scheduling_ms: Option<u64>,
}

impl BatchReport {
    /// A report of batch `batch_id` over `[start, end)` with nothing measured yet.
    pub(crate) fn new(batch_id: u64, start: Offset, end: Offset) -> Self {
        BatchReport {
            batch_id,
            replayed: false,
            start,
            end,
            rows_in: 0,
            rows: 0,
            bytes_in: 0,
            bytes: 0,
            stages: Vec::new(),
            durations: Durations::default(),
            since_last: Duration::ZERO,
            elapsed: Duration::ZERO,
            latencies: None,
            interim: false,
            tasks: Vec::new(),
            scheduling_ms: None,
        }
    }

    /// Takes the counts and stage times of what the batch moved.
    pub(crate) fn moved(&mut self, moved: &Moved) {
        self.rows_in = moved.rows_in;
        self.rows = moved.rows;
        self.bytes_in = moved.bytes_in;
        self.bytes = moved.bytes;
        self.stages = moved.stages.clone();
    }
}

fn rfc3339_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Pipeline {
    /// Builds the event of `report` and hands it to every listener.
    pub(crate) fn report(&mut self, report: BatchReport) {
        let rows = report.rows_in;
        let mut durations = report.durations;
        for (name, spent) in self.stages.names().zip(&report.stages) {
            durations
                .stages
                .insert(format!("stage.{name}"), spent.as_millis() as u64);
        }
        let event = ProgressEvent {
            id: self.checkpoint_id.clone(),
            name: self.name.clone(),
            batch_id: report.batch_id,
            replayed: report.replayed,
            timestamp: rfc3339_now(),
            num_input_rows: rows,
            input_rows_per_second: rows as f64 / report.since_last.as_secs_f64().max(1e-3),
            processed_rows_per_second: rows as f64 / report.elapsed.as_secs_f64().max(1e-3),
            duration_ms: durations,
            sources: vec![SourceProgress {
                description: self.source_label.clone(),
                start_offset: report.start,
                end_offset: report.end,
                num_input_rows: rows,
                num_input_bytes: report.bytes_in,
                metrics: self.metrics(),
            }],
            sinks: self
                .sinks
                .names()
                .map(|name| SinkProgress {
                    description: name.to_string(),
                    num_output_rows: report.rows,
                    num_output_bytes: report.bytes,
                })
                .collect(),
            latencies: report.latencies,
            interim: report.interim,
            tasks: report.tasks,
            scheduling_ms: report.scheduling_ms,
            state_operators: self.stages.state_progress(),
            event_time: self.stages.event_time(),
        };
        for l in &mut self.listeners {
            l.on_progress(&event);
        }
    }

    /// Tells the listeners a trigger found no new data.
    pub(crate) fn report_idle(&mut self) {
        let metrics = self.metrics();
        for l in &mut self.listeners {
            l.on_idle(&self.source_label, &metrics);
        }
    }
}
