//! Typed data-loss events and the `failOnDataLoss` policy.
//!
//! A source never loses track silently: every gap it notices (offset out of range, partition
//! deleted or recreated, gap in fetched offsets, shard expired, stream removed, file vanished)
//! becomes a [`DataLossEvent`]. The [`DataLossTracker`] applies the policy: with
//! `failOnDataLoss=true` (the default) the event becomes an [`Error`] with a stable code naming the
//! location and offsets; with `false` it is logged as a warning, counted in the source metrics
//! (`dataLoss.<CODE>`) and the source skips to the earliest available position.

use std::collections::BTreeMap;
use std::fmt;

pub use crate::error::DataLossKind;
use crate::error::{Error, ErrorCode};

/// One detected gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataLossEvent {
    /// What happened.
    pub kind: DataLossKind,
    /// Where: `topic-partition`, `stream/shard`, a file path.
    pub location: String,
    /// The position the source expected (the start of the gap), if known.
    pub expected: Option<String>,
    /// The position the source found instead (the earliest available, the returned offset), if known.
    pub actual: Option<String>,
    /// A sentence explaining the event to a user.
    pub detail: String,
}

impl DataLossEvent {
    /// A new event.
    pub fn new(kind: DataLossKind, location: impl Into<String>, detail: impl Into<String>) -> Self {
        DataLossEvent {
            kind,
            location: location.into(),
            expected: None,
            actual: None,
            detail: detail.into(),
        }
    }

    /// Records the expected and actual positions.
    pub fn with_positions(mut self, expected: impl ToString, actual: impl ToString) -> Self {
        self.expected = Some(expected.to_string());
        self.actual = Some(actual.to_string());
        self
    }

    /// The error this event becomes under `failOnDataLoss=true`.
    pub fn into_error(self) -> Error {
        let mut err = Error::new(
            ErrorCode::DataLoss(self.kind),
            format!(
                "{} at {}{}. Some data may have been lost. If you want the query to continue \
                 when data is lost, set the source option failOnDataLoss to false.",
                self.detail,
                self.location,
                match (&self.expected, &self.actual) {
                    (Some(e), Some(a)) => format!(" (expected position {e}, available {a})"),
                    _ => String::new(),
                }
            ),
        )
        .with_context("location", &self.location);
        if let Some(e) = &self.expected {
            err = err.with_context("expected", e);
        }
        if let Some(a) = &self.actual {
            err = err.with_context("actual", a);
        }
        err
    }
}

impl fmt::Display for DataLossEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {}: {}",
            self.kind.code(),
            self.location,
            self.detail
        )
    }
}

/// Applies `failOnDataLoss` to events and counts the ones it lets pass.
#[derive(Debug, Clone)]
pub struct DataLossTracker {
    fail_on_data_loss: bool,
    counts: BTreeMap<DataLossKind, u64>,
}

impl DataLossTracker {
    /// A tracker with the given policy.
    pub fn new(fail_on_data_loss: bool) -> Self {
        DataLossTracker {
            fail_on_data_loss,
            counts: BTreeMap::new(),
        }
    }

    /// True when events fail the query.
    pub fn fails(&self) -> bool {
        self.fail_on_data_loss
    }

    /// Reports an event: `Err` under `failOnDataLoss=true`, otherwise a warning and a count.
    pub fn report(&mut self, event: DataLossEvent) -> Result<(), Error> {
        if self.fail_on_data_loss {
            return Err(event.into_error());
        }
        tracing::warn!(code = event.kind.code(), location = %event.location,
            expected = ?event.expected, actual = ?event.actual,
            "data loss (failOnDataLoss=false, continuing): {}", event.detail);
        *self.counts.entry(event.kind).or_default() += 1;
        Ok(())
    }

    /// How many events of each kind were let pass.
    pub fn counts(&self) -> &BTreeMap<DataLossKind, u64> {
        &self.counts
    }

    /// Writes the counts into a metrics map as `dataLoss.<CODE>` and `dataLoss.total`.
    pub fn write_metrics(&self, metrics: &mut crate::SourceMetrics) {
        let mut total = 0;
        for (kind, n) in &self.counts {
            metrics.insert(format!("dataLoss.{}", kind.code()), (*n).into());
            total += n;
        }
        metrics.insert("dataLoss.total".into(), total.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_policy_turns_event_into_error_with_stable_code() {
        let mut t = DataLossTracker::new(true);
        let err = t
            .report(
                DataLossEvent::new(DataLossKind::OffsetOutOfRange, "events-0", "offset reset")
                    .with_positions(5, 10),
            )
            .unwrap_err();
        assert_eq!(err.code().as_str(), "DATA_LOSS.START_OFFSET_RESET");
        assert!(err.is_data_loss());
        assert_eq!(err.context_value("expected"), Some("5"));
        assert!(err.message().contains("failOnDataLoss"));
    }

    #[test]
    fn continue_policy_counts_by_kind() {
        let mut t = DataLossTracker::new(false);
        for _ in 0..2 {
            t.report(DataLossEvent::new(
                DataLossKind::FileVanished,
                "a.json",
                "gone",
            ))
            .unwrap();
        }
        assert_eq!(t.counts()[&DataLossKind::FileVanished], 2);
        let mut m = crate::SourceMetrics::new();
        t.write_metrics(&mut m);
        assert_eq!(m["dataLoss.total"], 2);
        assert_eq!(m["dataLoss.CLOUD_FILES_FILE_NOT_FOUND"], 2);
    }

    #[test]
    fn every_kind_parses_back() {
        for k in DataLossKind::ALL {
            assert_eq!(DataLossKind::parse(k.code()), Some(k));
        }
    }
}
