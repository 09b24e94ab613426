//! [`Aggregation`]: the state of a query's aggregation and the three plans that move it (see
//! the [`super`] docs), driven by the host through [`StageState`].

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::arrow::compute::concat_batches;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use tributary_sdk::{Error, ErrorCode, OutputMode, Result, StageState, StateOperatorProgress};

use super::rewrite::SplitAggregation;
use super::store;
use crate::source_table::BatchSlot;
use crate::transform::collect;

/// The plans made at start.
pub(crate) struct Plans {
    /// Partial values of one part (reads the transform's `source` slot).
    pub(crate) partial: Arc<dyn ExecutionPlan>,
    /// State ∪ the batch's partials, merged, with the touched flag last.
    pub(crate) merge: Arc<dyn ExecutionPlan>,
    /// The rows emitted from the merged groups.
    pub(crate) output: Arc<dyn ExecutionPlan>,
    pub(crate) task: Arc<TaskContext>,
}

/// The tables the merge and output plans read.
pub(crate) struct Slots {
    pub(crate) state: BatchSlot,
    pub(crate) delta: BatchSlot,
    pub(crate) merged: BatchSlot,
}

/// A query's aggregation with its state.
pub(crate) struct Aggregation {
    split: SplitAggregation,
    mode: OutputMode,
    plans: Plans,
    slots: Slots,
    state_schema: SchemaRef,
    merged_schema: SchemaRef,
    /// The state as of the last committed (restored or saved) batch.
    state: RecordBatch,
    /// The state after the current batch, until it is saved.
    next: Option<RecordBatch>,
    /// The current batch's partial values, one entry per part.
    pending: Vec<RecordBatch>,
    progress: StateOperatorProgress,
}

impl std::fmt::Debug for Aggregation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregation")
            .field("signature", &self.split.signature)
            .field("mode", &self.mode)
            .field("groups", &self.state.num_rows())
            .finish()
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] aggregation state: {what}: {e}"),
    )
}

/// `batch`'s columns under `schema` (same types, nullability relaxed).
fn as_schema(schema: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch> {
    RecordBatch::try_new(Arc::clone(schema), batch.columns().to_vec())
        .map_err(|e| internal("re-typing a batch", e))
}

fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    match batches {
        [] => Ok(RecordBatch::new_empty(Arc::clone(schema))),
        [one] => as_schema(schema, one),
        many => {
            let many: Vec<RecordBatch> = many
                .iter()
                .map(|b| as_schema(schema, b))
                .collect::<Result<_>>()?;
            concat_batches(schema, &many).map_err(|e| internal("concatenating", e))
        }
    }
}

impl Aggregation {
    pub(crate) fn new(
        split: SplitAggregation,
        mode: OutputMode,
        plans: Plans,
        slots: Slots,
        state_schema: SchemaRef,
        merged_schema: SchemaRef,
    ) -> Self {
        Aggregation {
            state: RecordBatch::new_empty(Arc::clone(&state_schema)),
            split,
            mode,
            plans,
            slots,
            state_schema,
            merged_schema,
            next: None,
            pending: Vec::new(),
            progress: StateOperatorProgress {
                operator_name: "stateStoreSave".into(),
                ..Default::default()
            },
        }
    }

    /// The schema of the rows it emits.
    pub(crate) fn output_schema(&self) -> SchemaRef {
        self.plans.output.schema()
    }

    /// Takes the partial values of one part (the `source` slot holds the part).
    pub(crate) async fn absorb(&mut self) -> Result<()> {
        let p = collect(&self.plans.partial, &self.plans.task, &self.state_schema).await?;
        if p.num_rows() > 0 {
            self.pending.push(as_schema(&self.state_schema, &p)?);
        }
        Ok(())
    }

    /// Executes the start-up run of every plan on empty inputs (as the stateless transform
    /// primes its joins), so a plan that cannot run fails at open, not on the first batch.
    pub(crate) async fn prime(&mut self) -> Result<()> {
        self.pending.clear();
        let out = self.end_batch().await;
        self.next = None;
        self.progress = StateOperatorProgress {
            operator_name: "stateStoreSave".into(),
            ..Default::default()
        };
        out.map(|_| ())
    }
}

#[async_trait]
impl StageState for Aggregation {
    async fn restore(&mut self, dir: &Path, version: Option<u64>) -> Result<()> {
        self.pending.clear();
        self.next = None;
        self.state = match version {
            None => RecordBatch::new_empty(Arc::clone(&self.state_schema)),
            Some(v) => store::load(dir, v, &self.split.signature, &self.state_schema)?,
        };
        self.progress.num_rows_total = self.state.num_rows() as u64;
        Ok(())
    }

    async fn end_batch(&mut self) -> Result<Option<RecordBatch>> {
        let delta = concat(&self.state_schema, &std::mem::take(&mut self.pending))?;
        self.slots.state.set(self.state.clone());
        self.slots.delta.set(delta);
        let merged = collect(&self.plans.merge, &self.plans.task, &self.merged_schema).await;
        self.slots.state.clear();
        self.slots.delta.clear();
        let merged = as_schema(&self.merged_schema, &merged?)?;
        let touched_col = merged.num_columns().saturating_sub(1);
        let updated = merged
            .column(touched_col)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .map(|b| b.true_count() as u64)
            .unwrap_or(0);
        let columns = merged.columns()[..touched_col].to_vec();
        let next = RecordBatch::try_new(Arc::clone(&self.state_schema), columns)
            .map_err(|e| internal("the merged state", e))?;
        self.slots.merged.set(merged);
        let out = collect(&self.plans.output, &self.plans.task, &self.output_schema()).await;
        self.slots.merged.clear();
        let out = out?;
        self.progress.num_rows_total = next.num_rows() as u64;
        self.progress.num_rows_updated = updated;
        self.progress.memory_used_bytes = next
            .columns()
            .iter()
            .map(|c| c.get_array_memory_size() as u64)
            .sum();
        self.next = Some(next);
        Ok((out.num_rows() > 0).then_some(out))
    }

    async fn save(&mut self, dir: &Path, version: u64) -> Result<()> {
        let t = Instant::now();
        if let Some(next) = self.next.take() {
            self.state = next;
        }
        store::save(dir, version, &self.split.signature, &self.state)?;
        self.progress.commit_time_ms = t.elapsed().as_millis() as u64;
        Ok(())
    }

    fn progress(&self) -> StateOperatorProgress {
        self.progress.clone()
    }
}
