//! [`EventTimes`]: the event times a batch read, for Spark's `eventTime` progress block
//! (`min`, `max`, `avg` of the watermark column over every input row, before any row is
//! dropped, and the watermark after the batch).

use arrow_array::ArrayRef;
use tributary_sdk::{EventTimeProgress, Result};

use super::clock::{format_ms, millis};

/// The running minimum, maximum and mean of one column's event times since the last save.
#[derive(Debug, Default)]
pub(crate) struct EventTimes {
    /// The watermark column's index in the stage's input.
    pub(crate) column: usize,
    min: Option<i64>,
    max: Option<i64>,
    sum: i128,
    count: u64,
    last: Option<EventTimeProgress>,
}

impl EventTimes {
    pub(crate) fn new(column: usize) -> Self {
        EventTimes {
            column,
            ..Default::default()
        }
    }

    /// Takes a part's event-time column.
    pub(crate) fn observe(&mut self, times: &ArrayRef) -> Result<()> {
        for t in millis(times)?.iter().flatten() {
            self.min = Some(self.min.map_or(t, |m| m.min(t)));
            self.max = Some(self.max.map_or(t, |m| m.max(t)));
            self.sum += t as i128;
            self.count += 1;
        }
        Ok(())
    }

    /// The block for the batch (or the real-time long batch so far), with `watermark`.
    pub(crate) fn finish(&mut self, watermark: Option<String>) {
        let avg = (self.count > 0).then(|| format_ms((self.sum / self.count as i128) as i64));
        self.last = Some(EventTimeProgress {
            avg,
            max: self.max.map(format_ms),
            min: self.min.map(format_ms),
            watermark,
        });
    }

    /// The batch was saved: the next one counts anew.
    pub(crate) fn reset(&mut self) {
        (self.min, self.max, self.sum, self.count) = (None, None, 0, 0);
    }

    pub(crate) fn last(&self) -> Option<EventTimeProgress> {
        self.last.clone()
    }
}
