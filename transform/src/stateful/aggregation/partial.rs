//! The partial aggregation of a part on every core: a large part is cut into slices, one per
//! copy of the partial plan ([`copies`], each reading its own slot), run side by side as tokio
//! tasks. Each slice's partial values are merged with the others' like the parts of a batch.
//!
//! The plans stay single-partition (a re-executed plan must not hold a `RepartitionExec`'s
//! state), so DataFusion's own parallelism is not used; this is it, done one level up. Each
//! slice's aggregation keeps its hash table across batches ([`WarmPartial`]) when the plan is
//! one it takes over.

use std::sync::Arc;

use arrow_array::RecordBatch;
use datafusion::physical_plan::ExecutionPlan;
use tributary_sdk::Result;

use arrow_schema::SchemaRef;
use datafusion::execution::TaskContext;

use super::warm::WarmPartial;
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

/// Slice `plan`'s partial values: through its warm aggregation when there is one (given back
/// unless it failed), else by executing the plan.
async fn run(
    warm: Option<WarmPartial>,
    plan: Arc<dyn ExecutionPlan>,
    task: Arc<TaskContext>,
    schema: SchemaRef,
) -> (Option<WarmPartial>, Result<RecordBatch>) {
    match warm {
        Some(mut w) => {
            let out = w.run(&task).await;
            (out.is_ok().then_some(w), out)
        }
        None => (None, collect(&plan, &task, &schema).await),
    }
}

impl Aggregation {
    /// The partial plan of slice `i` (0: the one reading the transform's slot).
    fn slice_plan(&self, i: usize) -> Result<&Arc<dyn ExecutionPlan>> {
        match i {
            0 => Ok(&self.plans.partial),
            i => self
                .plans
                .partial_copies
                .get(i - 1)
                .map(|(p, _)| p)
                .ok_or_else(|| internal("the partial plans", format!("have no copy {i}"))),
        }
    }

    /// Whether a slice's rows may be handed on as groups of one: into the group table, and
    /// unless late partial groups are dropped and counted (Spark counts the rows after its
    /// partial aggregation), which would then count rows.
    fn may_pass(&self) -> bool {
        self.groups.is_some() && self.watermark.as_ref().is_none_or(|w| w.expiry.is_none())
    }

    /// A warm aggregation of `plan` (a slice's partial plan), when it is one taken over.
    fn warm_of(&self, plan: &Arc<dyn ExecutionPlan>) -> Option<WarmPartial> {
        WarmPartial::of(plan, &self.state_schema).map(|w| w.allow_passing(self.may_pass()))
    }

    /// One slot per slice (the partial plan's, then each copy's) for its warm aggregation, each
    /// made now (at open, so the first batch does not make them); none when the plan is not
    /// taken over.
    pub(super) fn warm_slots(&self) -> Vec<std::sync::Mutex<Option<WarmPartial>>> {
        if super::cold_partial() {
            return Vec::new();
        }
        let Some(first) = self.warm_of(&self.plans.partial) else {
            return Vec::new();
        };
        let mut slots = vec![std::sync::Mutex::new(Some(first))];
        slots.extend(
            self.plans
                .partial_copies
                .iter()
                .map(|(p, _)| std::sync::Mutex::new(self.warm_of(p))),
        );
        slots
    }

    /// Slice `i`'s warm aggregation, taken out to run (made anew when the last one failed);
    /// none when the plan is not taken over.
    fn take_warm(&mut self, i: usize) -> Result<Option<WarmPartial>> {
        let Some(held) = self.warm.get_mut(i) else {
            return Ok(None);
        };
        let held = held.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        match held {
            Some(w) => Ok(Some(w)),
            None => Ok(self.warm_of(self.slice_plan(i)?)),
        }
    }

    fn give_back(&mut self, i: usize, w: Option<WarmPartial>) {
        if let Some(held) = self.warm.get_mut(i) {
            *held.get_mut().unwrap_or_else(|p| p.into_inner()) = w;
        }
    }

    /// Bytes the warm partial aggregations hold between batches (counted in the operator's
    /// `memoryUsedBytes`, as Spark counts its state store's memory).
    pub(super) fn warm_memory(&mut self) -> u64 {
        self.warm
            .iter_mut()
            .filter_map(|w| {
                w.get_mut()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                    .map(WarmPartial::size)
            })
            .sum::<usize>() as u64
    }

    /// Slice `i`'s partial aggregation, its input already in its slot, ready to run here or on
    /// another thread; what it gives back goes to [`Self::give_back`].
    fn start(
        &mut self,
        i: usize,
    ) -> Result<
        impl std::future::Future<Output = (Option<WarmPartial>, Result<RecordBatch>)> + Send + 'static,
    > {
        let warm = self.take_warm(i)?;
        Ok(run(
            warm,
            Arc::clone(self.slice_plan(i)?),
            Arc::clone(&self.plans.task),
            Arc::clone(&self.state_schema),
        ))
    }

    /// Slice `i`'s partial values, run here.
    async fn slice(&mut self, i: usize) -> Result<RecordBatch> {
        let (w, out) = self.start(i)?.await;
        self.give_back(i, w);
        out
    }

    /// The partial values of `part` (read through the transform's `slot`): one batch per slice.
    pub(super) async fn partials(
        &mut self,
        slot: &BatchSlot,
        part: RecordBatch,
    ) -> Result<Vec<RecordBatch>> {
        let rows = part.num_rows();
        let slices = (1 + self.plans.partial_copies.len())
            .min(rows / MIN_SLICE_ROWS)
            .max(1);
        if slices == 1 || !parallel() {
            slot.set(part);
            let p = self.slice(0).await;
            slot.clear();
            return Ok(vec![p?]);
        }
        let each = rows.div_ceil(slices);
        let mut tasks = Vec::with_capacity(slices - 1);
        for i in 1..slices {
            let from = i * each;
            let own = self.plans.partial_copies[i - 1].1.clone();
            own.set(part.slice(from, each.min(rows - from)));
            tasks.push((i, tokio::spawn(self.start(i)?)));
        }
        slot.set(part.slice(0, each));
        let first = self.slice(0).await;
        slot.clear();
        let mut out = Vec::with_capacity(slices);
        let mut failed = None;
        match first {
            Ok(p) => out.push(p),
            Err(e) => failed = Some(e),
        }
        for (i, t) in tasks {
            match t.await {
                Ok((w, Ok(p))) => {
                    self.give_back(i, w);
                    out.push(p);
                }
                Ok((_, Err(e))) => {
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
