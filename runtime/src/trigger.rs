//! Triggers: when micro-batches run and when a query stops.
//!
//! - `processingTime` with an `interval` (default `0`: as fast as possible): a batch starts every
//!   interval; the query runs until stopped.
//! - `availableNow`: the source fixes what exists at start, it is processed in batches that honour
//!   the source's rate limits, then the query stops.
//! - `once`: everything available at start in one batch (rate limits ignored), then stop.
//! - `realTime` with an `interval` (the checkpoint interval, default `5 minutes`) and a
//!   `progressInterval` (default `10s`): long batches in which records reach the sinks as they
//!   arrive (Databricks' `pipelines.trigger = "RealTime"`); see `realtime.rs`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Result};

/// When batches run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Batches every interval, until stopped.
    ProcessingTime(Duration),
    /// All data available at start, in rate-limited batches, then stop.
    AvailableNow,
    /// All data available at start in one batch, then stop.
    Once,
    /// Long batches of `checkpoint` length, records streamed to the sinks as they arrive, an
    /// interim progress event every `progress`.
    RealTime {
        /// How long one batch runs before its offsets are logged and committed.
        checkpoint: Duration,
        /// How often an interim progress event is emitted within a batch.
        progress: Duration,
    },
}

/// The default checkpoint interval of real-time mode (Databricks: 5 minutes).
pub const REAL_TIME_CHECKPOINT: Duration = Duration::from_secs(300);
/// The default interim progress interval of real-time mode.
pub const REAL_TIME_PROGRESS: Duration = Duration::from_secs(10);
/// How long a `processingTime` query waits before asking the source again when a trigger found
/// no new data (`[trigger] pollingDelay`). Spark's `spark.sql.streaming.pollingDelay` is 10 ms;
/// a longer default spares an idle stream a listing or a metadata request every 10 ms.
pub const POLLING_DELAY: Duration = Duration::from_millis(500);

impl Trigger {
    /// True when the query stops by itself once the data present at start is processed.
    pub fn is_bounded(&self) -> bool {
        !matches!(self, Trigger::ProcessingTime(_) | Trigger::RealTime { .. })
    }
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::ProcessingTime(d) if d.is_zero() => {
                f.write_str("processingTime (as fast as possible)")
            }
            Trigger::ProcessingTime(d) => {
                write!(f, "processingTime every {}", humantime_like(*d))
            }
            Trigger::AvailableNow => f.write_str("availableNow"),
            Trigger::Once => f.write_str("once"),
            Trigger::RealTime { checkpoint, .. } => {
                write!(
                    f,
                    "realTime (checkpoint every {})",
                    humantime_like(*checkpoint)
                )
            }
        }
    }
}

fn humantime_like(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The `[trigger]` table of a pipeline file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    /// `processingTime`, `availableNow` or `once`.
    #[serde(default)]
    pub kind: Option<String>,
    /// For `processingTime` and `realTime`: `10s`, `1m`, `5 minutes`, ...
    #[serde(default)]
    pub interval: Option<String>,
    /// For `realTime`: how often an interim progress event is emitted (default `10s`).
    #[serde(default, rename = "progressInterval")]
    pub progress_interval: Option<String>,
    /// For `processingTime`: how long to wait before asking the source again when a trigger
    /// found no new data (Spark's `spark.sql.streaming.pollingDelay`; default [`POLLING_DELAY`]);
    /// with an `interval`, the next trigger waits for the interval instead.
    #[serde(default, rename = "pollingDelay")]
    pub polling_delay: Option<String>,
}

impl TriggerSpec {
    /// Parses the table; errors name the field and the allowed values.
    pub fn parse(&self) -> Result<Trigger> {
        let kind = self.kind.as_deref().unwrap_or("processingTime");
        let duration = |field: &Option<String>,
                        name: &str,
                        default: Duration|
         -> Result<Duration> {
            match field {
                None => Ok(default),
                Some(text) => tributary_sdk::options::parse_duration(text).ok_or_else(|| {
                    Error::new(
                        ErrorCode::InvalidPipeline,
                        format!(
                            "invalid trigger interval '{text}': expected a duration such as 500ms, 10s, 5m or Spark's '10 seconds'"
                        ),
                    )
                    .with_context("option", format!("trigger.{name}"))
                }),
            }
        };
        let interval = || duration(&self.interval, "interval", Duration::ZERO);
        let trigger = match kind.to_ascii_lowercase().as_str() {
            "processingtime" => Trigger::ProcessingTime(interval()?),
            "availablenow" => Trigger::AvailableNow,
            "once" => Trigger::Once,
            "realtime" => {
                let checkpoint = duration(&self.interval, "interval", REAL_TIME_CHECKPOINT)?;
                let progress =
                    duration(&self.progress_interval, "progressInterval", REAL_TIME_PROGRESS)?;
                if checkpoint.is_zero() || progress.is_zero() {
                    return Err(Error::new(
                        ErrorCode::InvalidPipeline,
                        "trigger.interval and trigger.progressInterval of realTime must be above zero",
                    )
                    .with_context("option", "trigger.interval"));
                }
                Trigger::RealTime {
                    checkpoint,
                    progress,
                }
            }
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!(
                        "invalid trigger kind '{other}': expected one of processingTime, availableNow, once, realTime"
                    ),
                )
                .with_context("option", "trigger.kind"))
            }
        };
        if self.interval.is_some()
            && !matches!(
                trigger,
                Trigger::ProcessingTime(_) | Trigger::RealTime { .. }
            )
        {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!("trigger.interval only applies to processingTime and realTime, not {kind}"),
            )
            .with_context("option", "trigger.interval"));
        }
        if self.polling_delay.is_some() && !matches!(trigger, Trigger::ProcessingTime(_)) {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!("trigger.pollingDelay only applies to processingTime, not {kind}"),
            )
            .with_context("option", "trigger.pollingDelay"));
        }
        if self.progress_interval.is_some() && !matches!(trigger, Trigger::RealTime { .. }) {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!("trigger.progressInterval only applies to realTime, not {kind}"),
            )
            .with_context("option", "trigger.progressInterval"));
        }
        Ok(trigger)
    }

    /// `pollingDelay`, checked (see [`TriggerSpec::polling_delay`]).
    pub fn polling_delay(&self) -> Result<Duration> {
        let Some(text) = &self.polling_delay else {
            return Ok(POLLING_DELAY);
        };
        tributary_sdk::options::parse_duration(text).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "invalid trigger.pollingDelay '{text}': expected a duration such as 10ms, 500ms, 1s or Spark's '10 milliseconds'"
                ),
            )
            .with_context("option", "trigger.pollingDelay")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: Option<&str>, interval: Option<&str>) -> TriggerSpec {
        TriggerSpec {
            kind: kind.map(String::from),
            interval: interval.map(String::from),
            progress_interval: None,
            polling_delay: None,
        }
    }

    #[test]
    fn kinds_parse_case_insensitively() {
        assert_eq!(
            spec(None, None).parse().unwrap(),
            Trigger::ProcessingTime(Duration::ZERO)
        );
        assert_eq!(
            spec(Some("processingtime"), Some("10s")).parse().unwrap(),
            Trigger::ProcessingTime(Duration::from_secs(10))
        );
        assert_eq!(
            spec(Some("availableNow"), None).parse().unwrap(),
            Trigger::AvailableNow
        );
        assert_eq!(spec(Some("ONCE"), None).parse().unwrap(), Trigger::Once);
        assert_eq!(
            spec(Some("RealTime"), None).parse().unwrap(),
            Trigger::RealTime {
                checkpoint: REAL_TIME_CHECKPOINT,
                progress: REAL_TIME_PROGRESS
            }
        );
        assert_eq!(
            spec(Some("realTime"), Some("5 minutes")).parse().unwrap(),
            Trigger::RealTime {
                checkpoint: Duration::from_secs(300),
                progress: REAL_TIME_PROGRESS
            }
        );
    }

    #[test]
    fn polling_delay_is_checked_and_only_for_processing_time() {
        let mut s = spec(None, None);
        assert_eq!(s.polling_delay().unwrap(), POLLING_DELAY);
        s.polling_delay = Some("10 milliseconds".into());
        assert_eq!(s.polling_delay().unwrap(), Duration::from_millis(10));
        s.parse().unwrap();
        s.polling_delay = Some("soon".into());
        let e = s.polling_delay().unwrap_err();
        assert_eq!(e.context_value("option"), Some("trigger.pollingDelay"));
        assert!(e.message().contains("'soon'"), "{e}");
        for kind in ["availableNow", "once", "realTime"] {
            let mut s = spec(Some(kind), None);
            s.polling_delay = Some("10ms".into());
            let e = s.parse().unwrap_err();
            assert_eq!(
                e.context_value("option"),
                Some("trigger.pollingDelay"),
                "{kind}"
            );
        }
    }

    #[test]
    fn real_time_intervals_are_checked() {
        let e = spec(Some("realTime"), Some("0s")).parse().unwrap_err();
        assert!(e.message().contains("above zero"), "{e}");
        let mut s = spec(Some("processingTime"), None);
        s.progress_interval = Some("1s".into());
        let e = s.parse().unwrap_err();
        assert_eq!(e.context_value("option"), Some("trigger.progressInterval"));
    }

    #[test]
    fn bad_kind_and_misplaced_interval_are_refused() {
        let e = spec(Some("continuous"), None).parse().unwrap_err();
        assert!(e
            .message()
            .contains("processingTime, availableNow, once, realTime"));
        let e = spec(Some("once"), Some("1s")).parse().unwrap_err();
        assert_eq!(e.context_value("option"), Some("trigger.interval"));
        let e = spec(None, Some("soon")).parse().unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPipeline);
    }
}
