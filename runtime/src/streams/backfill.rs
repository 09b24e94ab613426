//! Backfill orchestration of a stream: when to run the one-time MERGE of the backfill source
//! into the ingestion table.
//!
//! States (stored in the catalog entry, shown by `streams get`):
//!
//! ```text
//! none                      (no backfill source)
//! pending ──check──> waiting_for_overlap ──overlap──> done
//!    │                      │
//!    └──overlap──> done     └──2 days after creation──> forced
//! ```
//!
//! The overlap check passes when max(backfill `stream_record_timestamp`) ≥ min(stream rows'
//! `stream_record_timestamp`) + 1 hour: the backfill then covers the time the stream started
//! at, with an hour of margin. When it has not passed 2 days after the stream's creation the
//! MERGE runs anyway (`forced`). The clock is injectable ([`Clock`]) so tests need not wait.
//! The MERGE itself (`tributary_sinks::delta::merge_backfill_with`, feature `delta`) is one
//! Delta commit carrying a transaction id derived from the stream id, so a crash during it and a
//! re-run insert nothing twice.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// How far the backfill must reach past the first stream row.
pub const OVERLAP: Duration = Duration::hours(1);
/// When the MERGE runs even without overlap.
pub const FORCE_AFTER: Duration = Duration::days(2);

/// The state of a stream's backfill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackfillState {
    /// The stream has no backfill source.
    None,
    /// Not checked yet.
    Pending,
    /// Checked: the backfill does not overlap the stream rows yet.
    WaitingForOverlap,
    /// Merged after the overlap check passed.
    Done,
    /// Merged without overlap, 2 days after the stream's creation.
    Forced,
}

impl BackfillState {
    /// True once the MERGE has run.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            BackfillState::None | BackfillState::Done | BackfillState::Forced
        )
    }
}

/// The backfill state with what the last check saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackfillStatus {
    /// The state.
    pub state: BackfillState,
    /// When the state last changed or was checked (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// Why the state is what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Max backfill `stream_record_timestamp` seen by the last check (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill_max_timestamp: Option<String>,
    /// Min stream rows' `stream_record_timestamp` seen by the last check (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_min_timestamp: Option<String>,
    /// What the MERGE did (rows inserted, matched, duplicates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<serde_json::Value>,
}

impl BackfillStatus {
    /// The initial status of a stream (`pending` with a backfill source, else `none`).
    pub fn initial(has_backfill: bool) -> Self {
        BackfillStatus {
            state: if has_backfill {
                BackfillState::Pending
            } else {
                BackfillState::None
            },
            checked_at: None,
            message: None,
            backfill_max_timestamp: None,
            stream_min_timestamp: None,
            merge: None,
        }
    }
}

/// The time, injectable for tests.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that says what it is told (tests).
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// A clock at `t`.
    pub fn new(t: DateTime<Utc>) -> Self {
        ManualClock(Mutex::new(t))
    }

    /// Moves the clock.
    pub fn set(&self, t: DateTime<Utc>) {
        if let Ok(mut g) = self.0.lock() {
            *g = t;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
            .lock()
            .map(|g| *g)
            .unwrap_or_else(|p| *p.into_inner())
    }
}

/// What to do after a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Keep waiting, with the reason.
    Wait(String),
    /// Run the MERGE; `forced` when the overlap check did not pass.
    Merge {
        /// True when the 2-day limit, not the overlap, triggered it.
        forced: bool,
    },
}

/// The overlap rule (pure): `backfill_max` and `stream_min` are the timestamps the check read
/// (None: no rows).
pub fn decide(
    created_at: DateTime<Utc>,
    now: DateTime<Utc>,
    backfill_max: Option<DateTime<Utc>>,
    stream_min: Option<DateTime<Utc>>,
) -> Decision {
    let overlap = match (backfill_max, stream_min) {
        (Some(b), Some(s)) if b >= s + OVERLAP => return Decision::Merge { forced: false },
        (Some(b), Some(s)) => format!(
            "the backfill ends at {} and the stream rows start at {}: the backfill must reach 1 hour past the first stream row",
            b.to_rfc3339(),
            s.to_rfc3339()
        ),
        (None, _) => "the backfill source has no rows yet".to_string(),
        (_, None) => "the ingestion table has no stream rows yet".to_string(),
    };
    if now >= created_at + FORCE_AFTER {
        Decision::Merge { forced: true }
    } else {
        Decision::Wait(format!(
            "{overlap}; the MERGE runs anyway at {}",
            (created_at + FORCE_AFTER).to_rfc3339()
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn t(h: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap_or_default() + Duration::hours(h)
    }

    #[test]
    fn overlap_of_one_hour_merges_and_two_days_forces() {
        let created = t(0);
        assert_eq!(
            decide(created, t(1), Some(t(3)), Some(t(2))),
            Decision::Merge { forced: false }
        );
        assert!(
            matches!(decide(created, t(1), Some(t(2)), Some(t(2))), Decision::Wait(m) if m.contains("1 hour"))
        );
        assert!(matches!(
            decide(created, t(1), None, Some(t(2))),
            Decision::Wait(_)
        ));
        assert!(
            matches!(decide(created, t(1), Some(t(2)), None), Decision::Wait(m) if m.contains("no stream rows"))
        );
        assert_eq!(
            decide(created, t(48), Some(t(2)), Some(t(2))),
            Decision::Merge { forced: true }
        );
        assert_eq!(
            decide(created, t(47), None, None),
            Decision::Wait(decide(created, t(47), None, None).wait_text())
        );
    }

    impl Decision {
        fn wait_text(&self) -> String {
            match self {
                Decision::Wait(m) => m.clone(),
                Decision::Merge { .. } => String::new(),
            }
        }
    }
}
