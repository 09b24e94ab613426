//! Triggers: when micro-batches run and when a query stops.
//!
//! - `processingTime` with an `interval` (default `0`: as fast as possible): a batch starts every
//!   interval; the query runs until stopped.
//! - `availableNow`: the source fixes what exists at start, it is processed in batches that honour
//!   the source's rate limits, then the query stops.
//! - `once`: everything available at start in one batch (rate limits ignored), then stop.

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
}

impl Trigger {
    /// True when the query stops by itself once the data present at start is processed.
    pub fn is_bounded(&self) -> bool {
        !matches!(self, Trigger::ProcessingTime(_))
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
    /// For `processingTime`: `10s`, `1m`, ...
    #[serde(default)]
    pub interval: Option<String>,
}

impl TriggerSpec {
    /// Parses the table; errors name the field and the allowed values.
    pub fn parse(&self) -> Result<Trigger> {
        let kind = self.kind.as_deref().unwrap_or("processingTime");
        let interval = || -> Result<Duration> {
            match &self.interval {
                None => Ok(Duration::ZERO),
                Some(text) => tributary_sdk::options::parse_duration(text).ok_or_else(|| {
                    Error::new(
                        ErrorCode::InvalidPipeline,
                        format!(
                            "invalid trigger interval '{text}': expected a duration such as 500ms, 10s or 5m"
                        ),
                    )
                    .with_context("option", "trigger.interval")
                }),
            }
        };
        let trigger = match kind.to_ascii_lowercase().as_str() {
            "processingtime" => Trigger::ProcessingTime(interval()?),
            "availablenow" => Trigger::AvailableNow,
            "once" => Trigger::Once,
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!(
                        "invalid trigger kind '{other}': expected one of processingTime, availableNow, once"
                    ),
                )
                .with_context("option", "trigger.kind"))
            }
        };
        if self.interval.is_some() && !matches!(trigger, Trigger::ProcessingTime(_)) {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!("trigger.interval only applies to processingTime, not {kind}"),
            )
            .with_context("option", "trigger.interval"));
        }
        Ok(trigger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: Option<&str>, interval: Option<&str>) -> TriggerSpec {
        TriggerSpec {
            kind: kind.map(String::from),
            interval: interval.map(String::from),
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
    }

    #[test]
    fn bad_kind_and_misplaced_interval_are_refused() {
        let e = spec(Some("continuous"), None).parse().unwrap_err();
        assert!(e.message().contains("processingTime, availableNow, once"));
        let e = spec(Some("once"), Some("1s")).parse().unwrap_err();
        assert_eq!(e.context_value("option"), Some("trigger.interval"));
        let e = spec(None, Some("soon")).parse().unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPipeline);
    }
}
