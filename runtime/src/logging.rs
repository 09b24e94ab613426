//! The logs of the `tributary` command (and of any host that wants the same): which events are
//! written, in which format, with or without colour.
//!
//! - **Filter**: `TRIBUTARY_LOG`, or when it is unset the usual `RUST_LOG`, in the
//!   `tracing_subscriber::EnvFilter` syntax (`info`, `warn,tributary_kafka=debug`); `warn` when
//!   neither is set. An invalid filter is an error naming the variable, never ignored.
//! - **Format** ([`LogFormat`]): `text` for people, or `json`: one JSON object per line with
//!   `timestamp`, `level`, `target`, `fields` (the message and the event's own fields), `span`
//!   (the innermost span) and `spans` (every span the event is in, outermost first). A run is
//!   in a span `pipeline` with the field `pipeline`, and each batch in a span `batch` with the
//!   fields `pipeline` and `batch_id`, so every line logged during a batch carries both — what
//!   a log collector (an OpenTelemetry collector's JSON parser, Vector, Loki) needs to group
//!   lines by pipeline and batch.
//! - **Colour**: ANSI colour codes only when stderr is a terminal and `NO_COLOR` is unset, in
//!   both formats: a log redirected to a file or a pipe is plain text.
//!
//! With `json`, what the command would otherwise print as plain text on stderr — the progress
//! line of each batch, the run's summary, notices — is logged too ([`progress_listener`],
//! [`notice`], [`error_line`]), at `info` (errors at `error`), so that stderr carries nothing but JSON lines.

use std::io::IsTerminal;
use std::sync::OnceLock;

use tracing_subscriber::EnvFilter;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::progress::{ProgressEvent, ProgressListener, TerminalListener};

/// The variables the filter is read from, in order: the first one set wins.
pub const FILTER_VARIABLES: [&str; 2] = ["TRIBUTARY_LOG", "RUST_LOG"];

/// The filter when no variable is set.
pub const DEFAULT_FILTER: &str = "warn";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, with the current span's fields (`pipeline`, `batch_id`).
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// The filter from the first of [`FILTER_VARIABLES`] that `lookup` finds set (an empty value
/// counts as unset), else [`DEFAULT_FILTER`]. An invalid filter is `INVALID_OPTION` naming the
/// variable and its value.
pub fn filter_from(lookup: impl Fn(&str) -> Option<String>) -> Result<EnvFilter> {
    for variable in FILTER_VARIABLES {
        let Some(text) = lookup(variable).filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        return EnvFilter::builder().parse(&text).map_err(|e| {
            Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "invalid log filter in {variable}='{text}': {e}; expected comma-separated \
                     directives like 'info' or 'warn,tributary_kafka=debug' (levels: off, error, \
                     warn, info, debug, trace)"
                ),
            )
            .with_context("variable", variable)
            .with_context("value", &text)
        });
    }
    Ok(EnvFilter::new(DEFAULT_FILTER))
}

/// Whether log lines may carry ANSI colour codes: stderr is a terminal and `NO_COLOR` is unset.
pub fn colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the global logger writing to stderr: the filter from the environment
/// ([`filter_from`]), `format`, colour only on a terminal ([`colour`]). The run's `pipeline`
/// and `batch` spans are always recorded, whatever the filter, so that a warning logged under
/// the default `warn` filter still carries the pipeline name and batch id.
pub fn init(format: LogFormat) -> Result<()> {
    use tracing_subscriber::filter::{filter_fn, FilterExt};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;

    let env_filter =
        filter_from(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))?;
    let run_spans = filter_fn(|m| {
        m.is_span()
            && m.target().starts_with("tributary_runtime")
            && matches!(m.name(), "pipeline" | "batch")
    });
    let filter = env_filter.or(run_spans);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour());
    let registry = tracing_subscriber::registry();
    let installed = match format {
        LogFormat::Text => registry.with(layer.with_filter(filter)).try_init(),
        LogFormat::Json => registry
            .with(
                layer
                    .json()
                    .with_current_span(true)
                    .with_span_list(true)
                    .with_filter(filter),
            )
            .try_init(),
    };
    installed.map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            format!("cannot install the logger: {e}"),
        )
    })?;
    let _ = FORMAT.set(format);
    Ok(())
}

/// The format [`init`] installed ([`LogFormat::Text`] before, or when a host logs its own way).
pub fn format() -> LogFormat {
    FORMAT.get().copied().unwrap_or_default()
}

/// The listener that shows each batch's progress: the terminal line ([`TerminalListener`]) for
/// text logs, an `info` log line per batch ([`LogListener`]) for JSON logs.
pub fn progress_listener() -> Box<dyn ProgressListener> {
    match format() {
        LogFormat::Text => Box::new(TerminalListener::new()),
        LogFormat::Json => Box::new(LogListener),
    }
}

/// A message for the person running the command (a summary, "stopping after the current
/// batch"): a plain stderr line for text logs, an `info` log line for JSON logs.
pub fn notice(message: &str) {
    match format() {
        LogFormat::Text => eprintln!("{message}"),
        LogFormat::Json => tracing::info!("{message}"),
    }
}

/// An error for the person running the command: a plain stderr line for text logs, an
/// `error` log line for JSON logs.
pub fn error_line(message: &str) {
    match format() {
        LogFormat::Text => eprintln!("{message}"),
        LogFormat::Json => tracing::error!("{message}"),
    }
}

/// Logs each progress event as one `info` line with the batch's numbers as fields; called in
/// the batch's span, so the line carries `pipeline` and `batch_id` too.
#[derive(Debug, Default)]
pub struct LogListener;

impl ProgressListener for LogListener {
    fn on_progress(&mut self, e: &ProgressEvent) {
        tracing::info!(
            rows = e.num_input_rows,
            duration_ms = e.duration_ms.trigger_execution,
            rows_per_second = e.processed_rows_per_second,
            interim = e.interim,
            replayed = e.replayed,
            "batch {} progress: {} rows",
            e.batch_id,
            e.num_input_rows
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn from(pairs: &[(&str, &str)]) -> Result<EnvFilter> {
        filter_from(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn tributary_log_wins_then_rust_log_then_warn() {
        let f = from(&[("TRIBUTARY_LOG", "debug"), ("RUST_LOG", "error")]).unwrap();
        assert_eq!(f.to_string(), "debug");
        let f = from(&[("RUST_LOG", "info,tributary_kafka=trace")]).unwrap();
        assert!(f.to_string().contains("tributary_kafka=trace"), "{f}");
        let f = from(&[("TRIBUTARY_LOG", " "), ("RUST_LOG", "error")]).unwrap();
        assert_eq!(f.to_string(), "error");
        assert_eq!(from(&[]).unwrap().to_string(), "warn");
    }

    #[test]
    fn an_invalid_filter_names_its_variable() {
        let e = from(&[("TRIBUTARY_LOG", "info,tributary=loud")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert_eq!(e.context_value("variable"), Some("TRIBUTARY_LOG"));
        assert!(
            e.message().contains("TRIBUTARY_LOG='info,tributary=loud'"),
            "{e}"
        );
        let e = from(&[("RUST_LOG", "tributary_kafka=verbose")]).unwrap_err();
        assert_eq!(e.context_value("variable"), Some("RUST_LOG"));
    }
}
