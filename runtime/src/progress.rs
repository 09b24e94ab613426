//! Progress events: one JSON document per batch, like Spark's `StreamingQueryProgress`.
//!
//! Listeners receive every event. Built in: [`JsonLinesListener`] (one JSON object per line to a
//! file or stderr) and [`TerminalListener`] (an indicatif progress line on a terminal, plain
//! summary lines otherwise). Secrets never appear: events carry offsets, counts and metrics only.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde::Serialize;
use tributary_sdk::{Offset, SourceMetrics};

use crate::latency::Latencies;

/// Durations of the phases of one batch, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Durations {
    /// Asking the source where the batch ends.
    pub latest_offset: u64,
    /// Writing `offsets/<n>` and `commits/<n>`.
    pub wal_commit: u64,
    /// Reading (and decoding) the batch.
    pub get_batch: u64,
    /// Writing the batch to the sinks.
    pub add_batch: u64,
    /// The whole batch.
    pub trigger_execution: u64,
    /// Time in each stage, keyed `stage.<name>` (`stage.decode`, `stage.sql`): part of
    /// `getBatch` (on a cluster, summed over the tasks).
    #[serde(flatten)]
    pub stages: std::collections::BTreeMap<String, u64>,
}

/// The source part of a progress event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceProgress {
    /// Connector and target.
    pub description: String,
    /// Start of the batch.
    pub start_offset: Offset,
    /// End of the batch.
    pub end_offset: Offset,
    /// Rows read.
    pub num_input_rows: u64,
    /// Bytes read, as Arrow holds them (every column's buffers; not bytes on the wire).
    pub num_input_bytes: u64,
    /// Source metrics (lag, outstanding files, data-loss and malformed-record counts).
    pub metrics: SourceMetrics,
}

/// The sink part of a progress event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SinkProgress {
    /// Connector name.
    pub description: String,
    /// Rows written.
    pub num_output_rows: u64,
    /// Bytes written, as Arrow holds them (the rows the sink received).
    pub num_output_bytes: u64,
}

/// One batch's progress.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressEvent {
    /// Checkpoint id (stable across restarts).
    pub id: String,
    /// Pipeline name.
    pub name: String,
    /// Batch id.
    pub batch_id: u64,
    /// True when this batch was a replay of an uncommitted batch after a restart.
    pub replayed: bool,
    /// Wall-clock time the batch finished, RFC 3339.
    pub timestamp: String,
    /// Rows read.
    pub num_input_rows: u64,
    /// Rows per second of wall time since the previous batch.
    pub input_rows_per_second: f64,
    /// Rows per second of processing time in this batch.
    pub processed_rows_per_second: f64,
    /// Phase durations.
    pub duration_ms: Durations,
    /// Source details.
    pub sources: Vec<SourceProgress>,
    /// Sink details.
    pub sinks: Vec<SinkProgress>,
    /// Real-time batches: latency percentiles so far (Spark's `latencies`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latencies: Option<Latencies>,
    /// Real-time batches: true for the events emitted every `progressInterval` while the long
    /// batch still runs (its offsets are not committed yet).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interim: bool,
    /// Distributed batches (`[engine] kind = "ballista"`): where each input partition ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskProgress>,
    /// Distributed batches: the job's milliseconds (submitted → results back at the driver)
    /// not covered by tasks running, i.e. the job's time minus the span from the first task's
    /// start to the last task's end (placing the job, shipping plans, collecting results).
    /// Gaps between tasks on one executor slot are inside that span and not counted here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduling_ms: Option<u64>,
    /// Stateful stages (aggregations): Spark's `stateOperators`, one per operator.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub state_operators: Vec<tributary_sdk::StateOperatorProgress>,
    /// Queries with a watermark: Spark's `eventTime` (min, max, avg, watermark).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_time: Option<tributary_sdk::EventTimeProgress>,
}

/// One task of a distributed batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskProgress {
    /// The input partition.
    pub partition: usize,
    /// What it read (`orders-3 [100, 200)`).
    pub label: String,
    /// The executor that ran it (the attempt whose result was committed).
    pub executor: String,
    /// The executor's host.
    pub host: String,
    /// Rows it produced.
    pub rows: u64,
    /// Its time on the executor.
    pub duration_ms: u64,
    /// When it started (Unix epoch milliseconds, the executor's clock).
    pub started_ms: u64,
}

/// Receives progress events.
pub trait ProgressListener: Send {
    /// A batch finished.
    fn on_progress(&mut self, event: &ProgressEvent);
    /// A trigger found no new data: the source answered, nothing was read. `source` is its
    /// description, `metrics` its metrics now (backlog, counts).
    fn on_idle(&mut self, _source: &str, _metrics: &SourceMetrics) {}
    /// The query stopped (normally or with an error).
    fn on_terminated(&mut self, _error: Option<&tributary_sdk::Error>) {}
}

/// Writes each event as one JSON line.
pub struct JsonLinesListener {
    out: Box<dyn Write + Send>,
}

impl JsonLinesListener {
    /// Writes to any writer.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        JsonLinesListener { out }
    }
}

impl ProgressListener for JsonLinesListener {
    fn on_progress(&mut self, event: &ProgressEvent) {
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(self.out, "{line}");
            let _ = self.out.flush();
        }
    }
}

/// A progress line on stderr: on a terminal an indicatif bar when the source tells how much is
/// left (files: `numFilesRead` of `numFilesRead + numFilesOutstanding`; Kafka: rows read of
/// rows read + `totalOffsetsBehindLatest`), a spinner otherwise; plain lines when stderr is
/// not a terminal.
pub struct TerminalListener {
    bar: Option<indicatif::ProgressBar>,
    total_rows: u64,
    /// Whether the bar has switched from a spinner to a bar with a length.
    has_length: bool,
}

impl TerminalListener {
    /// Chooses the form from whether stderr is a terminal.
    pub fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        TerminalListener {
            bar,
            total_rows: 0,
            has_length: false,
        }
    }
}

impl Default for TerminalListener {
    fn default() -> Self {
        Self::new()
    }
}

/// How far the run is, in the source's own unit: `(done, total, unit)`, when its metrics tell.
pub fn completion(metrics: &SourceMetrics, rows_so_far: u64) -> Option<(u64, u64, &'static str)> {
    let n = |k: &str| metrics.get(k).and_then(|v| v.as_u64());
    if let (Some(read), Some(left)) = (n("numFilesRead"), n("numFilesOutstanding")) {
        return Some((read, read + left, "files"));
    }
    let behind = n("totalOffsetsBehindLatest")?;
    Some((rows_so_far, rows_so_far + behind, "records"))
}

fn outstanding(metrics: &SourceMetrics) -> String {
    let mut parts = Vec::new();
    if let Some(n) = metrics.get("numFilesOutstanding") {
        parts.push(format!("{n} files outstanding"));
    }
    if let Some(n) = metrics.get("maxOffsetsBehindLatest") {
        parts.push(format!("{n} offsets behind"));
    }
    parts.join(", ")
}

impl ProgressListener for TerminalListener {
    fn on_progress(&mut self, e: &ProgressEvent) {
        if !e.interim {
            self.total_rows += e.num_input_rows;
        }
        let rest = e
            .sources
            .first()
            .map(|s| outstanding(&s.metrics))
            .filter(|s| !s.is_empty())
            .map(|s| format!(", {s}"))
            .unwrap_or_default();
        let latency = e
            .latencies
            .as_ref()
            .map(|l| format!(", e2e p99 {:.1} ms", l.e2e_latency_ms.p99))
            .unwrap_or_default();
        let msg = format!(
            "batch {}{}{}: {} rows in {} ms ({:.0} rows/s){latency}, {} rows in total{}",
            e.batch_id,
            if e.replayed { " (replayed)" } else { "" },
            if e.interim { " (running)" } else { "" },
            e.num_input_rows,
            e.duration_ms.trigger_execution,
            e.processed_rows_per_second,
            self.total_rows,
            rest
        );
        let done = e
            .sources
            .first()
            .and_then(|s| completion(&s.metrics, self.total_rows));
        match &self.bar {
            Some(bar) => {
                if let Some((pos, len, unit)) = done.filter(|(_, len, _)| *len > 0) {
                    if !self.has_length {
                        let template = format!(
                            "[{{elapsed_precise}}] {{bar:30}} {{pos}}/{{len}} {unit} {{msg}}"
                        );
                        if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
                            bar.set_style(style);
                            self.has_length = true;
                        }
                    }
                    bar.set_length(len);
                    bar.set_position(pos);
                }
                bar.set_message(msg);
            }
            None => eprintln!("{msg}"),
        }
    }

    fn on_terminated(&mut self, error: Option<&tributary_sdk::Error>) {
        if let Some(bar) = self.bar.take() {
            match error {
                None => bar.finish_with_message(format!("done: {} rows", self.total_rows)),
                Some(_) => bar.abandon(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_uses_the_sources_own_backlog() {
        let mut m = SourceMetrics::new();
        assert_eq!(completion(&m, 10), None);
        m.insert("totalOffsetsBehindLatest".into(), 90.into());
        assert_eq!(completion(&m, 10), Some((10, 100, "records")));
        m.insert("numFilesRead".into(), 3.into());
        m.insert("numFilesOutstanding".into(), 5.into());
        assert_eq!(completion(&m, 10), Some((3, 8, "files")));
    }
}
