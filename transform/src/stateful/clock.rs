//! [`Clock`]: a query's event-time watermark across batches, as Spark keeps it.
//!
//! The watermark after a batch is the latest event time seen so far minus the delay, never
//! moving back. Batch `n` judges with two of them, like Spark's stateful operators: input
//! later than the watermark computed after batch `n - 2` is dropped ("late events"), state
//! older than the one computed after batch `n - 1` is evicted. Both are saved with the state.

use tributary_sdk::Result;

use super::store::Marks;

/// The watermarks of the current batch and the one after it.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    /// `delayThreshold` in milliseconds.
    delay_ms: i64,
    /// `(late rows, eviction)` for the current batch (epoch ms).
    marks: Marks,
    /// The same for the next batch, from [`Clock::end_batch`] until [`Clock::commit`].
    next: Marks,
    /// The latest event time of the current batch (epoch ms).
    batch_max_ms: Option<i64>,
}

impl Clock {
    pub(crate) fn new(delay_ms: i64) -> Self {
        Clock {
            delay_ms,
            marks: (None, None),
            next: (None, None),
            batch_max_ms: None,
        }
    }

    /// Notes the latest event time of a part (epoch ms).
    pub(crate) fn observe(&mut self, max_ms: i64) {
        self.batch_max_ms = Some(self.batch_max_ms.map_or(max_ms, |m| m.max(max_ms)));
    }

    /// Notes the latest event time of `times` (epoch ms).
    pub(crate) fn observe_column(&mut self, times: &arrow_array::Int64Array) {
        if let Some(max) = datafusion::arrow::compute::max(times) {
            self.observe(max);
        }
    }

    /// Input at or before this is late (epoch ms).
    pub(crate) fn late(&self) -> Option<i64> {
        self.marks.0
    }

    /// State at or before this is evicted (epoch ms).
    pub(crate) fn eviction(&self) -> Option<i64> {
        self.marks.1
    }

    /// Ends the batch: the watermark after it, which the next batch evicts with.
    pub(crate) fn end_batch(&mut self) -> Option<i64> {
        let candidate = self.batch_max_ms.map(|m| m.saturating_sub(self.delay_ms));
        let wm = match (self.marks.1, candidate) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.next = (self.marks.1, wm);
        self.batch_max_ms = None;
        wm
    }

    /// The batch was saved: its successor's watermarks become current.
    pub(crate) fn commit(&mut self) {
        self.marks = self.next;
    }

    /// The watermarks saved with the restored state (for the batch after it).
    pub(crate) fn restore(&mut self, marks: Marks) {
        self.marks = marks;
        self.next = marks;
        self.batch_max_ms = None;
    }

    /// What to save with the state.
    pub(crate) fn marks(&self) -> Marks {
        self.marks
    }

    /// Whether the watermark moved in the last batch (so a batch without input would evict
    /// with it: Spark's `noDataMicroBatches`).
    pub(crate) fn moved(&self) -> bool {
        self.marks.0 != self.marks.1
    }
}

/// A timestamp column as epoch microseconds (Spark's precision: a row is late when its time
/// in microseconds is at or before the watermark in milliseconds times 1000).
pub(crate) fn micros(column: &arrow_array::ArrayRef) -> Result<arrow_array::Int64Array> {
    as_unit(column, arrow_schema::TimeUnit::Microsecond)
}

/// A timestamp column as epoch milliseconds.
pub(crate) fn millis(column: &arrow_array::ArrayRef) -> Result<arrow_array::Int64Array> {
    as_unit(column, arrow_schema::TimeUnit::Millisecond)
}

fn as_unit(
    column: &arrow_array::ArrayRef,
    unit: arrow_schema::TimeUnit,
) -> Result<arrow_array::Int64Array> {
    use arrow_schema::DataType;
    let internal = |e: &dyn std::fmt::Display| {
        tributary_sdk::Error::new(
            tributary_sdk::ErrorCode::Internal,
            format!("[transform] the event time: {e}"),
        )
    };
    let tz = match column.data_type() {
        DataType::Timestamp(_, tz) => tz.clone(),
        other => return Err(internal(&format!("is {other}, not a timestamp"))),
    };
    let cast = datafusion::arrow::compute::cast(column, &DataType::Timestamp(unit, tz))
        .and_then(|c| datafusion::arrow::compute::cast(&c, &DataType::Int64))
        .map_err(|e| internal(&e))?;
    cast.as_any()
        .downcast_ref::<arrow_array::Int64Array>()
        .cloned()
        .ok_or_else(|| internal(&"not an Int64 array after the cast"))
}

/// Epoch milliseconds as a UTC timestamp (Spark's `eventTime.watermark`).
pub(crate) fn format_ms(ms: i64) -> String {
    match datafusion::arrow::temporal_conversions::timestamp_ms_to_datetime(ms) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => ms.to_string(),
    }
}
