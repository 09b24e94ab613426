//! Arbitrary stateful processing per key, in the spirit of Spark's `transformWithState`, for a
//! crate that embeds the runtime.
//!
//! A [`StatefulProcessor`] sees, for every batch, each grouping key's rows in arrival order with
//! that key's [`KeyState`]: named value, list and map state variables (any serde type) and
//! processing-time timers. It emits rows of its own schema. Registered as a stage
//! ([`ProcessorStageFactory`] in the runtime's registry, `StageSpec::registered(name, ..)` in the
//! pipeline's stage list), its state is saved with each batch's commit like the SQL operators'
//! (a changelog of the keys the batch changed, with periodic snapshots; a replayed batch starts
//! from the state its first attempt started from), and it runs in micro-batch and real-time
//! mode.
//!
//! Timers are processing time, as Spark's `TimeMode.ProcessingTime()`: a timer fires at the end
//! of the first batch (or real-time chunk) that ends at or after it, after the batch's input
//! rows, earliest first; a held timer that is due asks for a batch without input, so it fires
//! while the source is idle. Processing time is not replayed: a batch replayed after a crash
//! fires the timers due at its replay. Event-time timers, state TTL and an initial state are
//! not supported.
//!
//! ```no_run
//! use std::sync::Arc;
//! use arrow_array::{RecordBatch, UInt64Array};
//! use arrow_schema::{DataType, Field, Schema, SchemaRef};
//! use tributary_sdk::Result;
//! use tributary_transform::processor::{KeyState, StatefulProcessor};
//!
//! /// Counts each user's events; says so every 100th.
//! struct Milestones;
//!
//! impl StatefulProcessor for Milestones {
//!     fn output_schema(&self, _input: &SchemaRef) -> Result<SchemaRef> {
//!         Ok(Arc::new(Schema::new(vec![
//!             Field::new("user", DataType::Utf8, true),
//!             Field::new("events", DataType::UInt64, false),
//!         ])))
//!     }
//!
//!     fn handle_input_rows(&mut self, key: &RecordBatch, rows: &RecordBatch, state: &mut KeyState) -> Result<Option<RecordBatch>> {
//!         let before: u64 = state.get_value("events")?.unwrap_or(0);
//!         let after = before + rows.num_rows() as u64;
//!         state.set_value("events", &after)?;
//!         if after / 100 == before / 100 {
//!             return Ok(None);
//!         }
//!         let schema = self.output_schema(&rows.schema())?;
//!         let batch = RecordBatch::try_new(schema, vec![key.column(0).clone(), Arc::new(UInt64Array::from(vec![after]))]);
//!         Ok(Some(batch.map_err(|e| tributary_sdk::Error::new(tributary_sdk::ErrorCode::Internal, e.to_string()))?))
//!     }
//! }
//! ```

mod key_state;
mod stage;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tributary_sdk::Result;

pub use key_state::KeyState;
pub use stage::{Clock, ProcessorStage, ProcessorStageFactory};

/// Per-key processing with state (see the module docs). A handler that returns an error fails
/// the run; a restart replays the batch from the state saved before it.
pub trait StatefulProcessor: Send + 'static {
    /// The schema of the rows it emits, given the stage's input schema.
    fn output_schema(&self, input: &SchemaRef) -> Result<SchemaRef>;

    /// One key's rows of a batch, in arrival order: `key` holds the key columns (one row),
    /// `rows` every input column.
    fn handle_input_rows(
        &mut self,
        key: &RecordBatch,
        rows: &RecordBatch,
        state: &mut KeyState,
    ) -> Result<Option<RecordBatch>>;

    /// The timer the key registered at `expiry_ms` fired (it is already removed from
    /// `state`'s timers).
    fn handle_expired_timer(
        &mut self,
        key: &RecordBatch,
        expiry_ms: i64,
        state: &mut KeyState,
    ) -> Result<Option<RecordBatch>> {
        let _ = (key, expiry_ms, state);
        Ok(None)
    }
}
