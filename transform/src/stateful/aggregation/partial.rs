//! The partial aggregation of a part on every core: a large part is cut into slices, one per
//! copy of the partial plan ([`copies`], each reading its own slot), run side by side as tokio
//! tasks. Each slice's partial values are merged with the others' like the parts of a batch.
//!
//! The plans stay single-partition (a re-executed plan must not hold a `RepartitionExec`'s
//! state), so DataFusion's own parallelism is not used; this is it, done one level up.

use std::sync::Arc;

use arrow_array::RecordBatch;
use datafusion::physical_plan::ExecutionPlan;
use tributary_sdk::Result;

use super::{internal, Aggregation};
use crate::source_table::{reading, BatchSlot};
use crate::transform::collect;

/// A part is cut only into slices of at least this many rows: below it, a task's start costs
/// more than it saves.
const MIN_SLICE_ROWS: usize = 16 * 1024;

/// At most this many slices (one per core up to it).
const MAX_SLICES: usize = 8;

/// Copies of the partial plan `plan`, each reading its own slot, one per further core.
pub(crate) fn copies(
    plan: &Arc<dyn ExecutionPlan>,
) -> Result<Vec<(Arc<dyn ExecutionPlan>, BatchSlot)>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (1..cores.min(MAX_SLICES))
        .map(|_| {
            let slot = BatchSlot::new();
            reading(plan, &slot)
                .map(|p| (p, slot))
                .map_err(|e| internal("copying the partial plan", e))
        })
        .collect()
}

/// Whether tasks spawned now run on other threads.
fn parallel() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

impl Aggregation {
    /// The partial values of `part` (read through the transform's `slot`): one batch per slice.
    pub(super) async fn partials(
        &self,
        slot: &BatchSlot,
        part: RecordBatch,
    ) -> Result<Vec<RecordBatch>> {
        let rows = part.num_rows();
        let slices = (1 + self.plans.partial_copies.len())
            .min(rows / MIN_SLICE_ROWS)
            .max(1);
        if slices == 1 || !parallel() {
            slot.set(part);
            let p = collect(&self.plans.partial, &self.plans.task, &self.state_schema).await;
            slot.clear();
            return Ok(vec![p?]);
        }
        let each = rows.div_ceil(slices);
        let mut tasks = Vec::with_capacity(slices - 1);
        for (i, (plan, own)) in self
            .plans
            .partial_copies
            .iter()
            .take(slices - 1)
            .enumerate()
        {
            let from = (i + 1) * each;
            own.set(part.slice(from, each.min(rows - from)));
            let (plan, task, schema) = (
                Arc::clone(plan),
                Arc::clone(&self.plans.task),
                Arc::clone(&self.state_schema),
            );
            tasks.push(tokio::spawn(
                async move { collect(&plan, &task, &schema).await },
            ));
        }
        slot.set(part.slice(0, each));
        let first = collect(&self.plans.partial, &self.plans.task, &self.state_schema).await;
        slot.clear();
        let mut out = Vec::with_capacity(slices);
        let mut failed = None;
        match first {
            Ok(p) => out.push(p),
            Err(e) => failed = Some(e),
        }
        for t in tasks {
            match t.await {
                Ok(Ok(p)) => out.push(p),
                Ok(Err(e)) => {
                    failed.get_or_insert(e);
                }
                Err(e) => {
                    failed.get_or_insert(internal("a slice's partial aggregation", e));
                }
            }
        }
        for (_, own) in self.plans.partial_copies.iter() {
            own.clear();
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}
