//! [`Aggregation`]: the state of a query's aggregation and the three plans that move it (see
//! the [`super`] docs), driven by the host through [`StageState`]. Its groups are held in
//! memory ([`GroupTable`], batches in [`resident`]), on disk ([`SpilledGroups`], batches in
//! [`spilled`]), or, with a session window or without grouping keys, as one batch regrouped
//! whole by the merge plan.

mod partial;
mod resident;
mod spilled;
mod warm;

pub(crate) use partial::copies as partial_copies;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::arrow::compute::concat_batches;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use tributary_sdk::{
    Error, ErrorCode, OutputMode, OutputShape, Result, StageState, StateOperatorProgress,
};

use super::clock::{format_ms, millis, Clock};
use super::groups::GroupTable;
use super::rewrite::{Expiry, SplitAggregation};
use super::spill::SpilledGroups;
use super::store::{self, changelog};
use crate::source_table::BatchSlot;
use crate::transform::collect;

/// The plans made at start.
pub(crate) struct Plans {
    /// Partial values of one part (reads the transform's `source` slot).
    pub(crate) partial: Arc<dyn ExecutionPlan>,
    /// Copies of `partial` reading their own slots, run beside it on slices of a large part.
    pub(crate) partial_copies: Vec<(Arc<dyn ExecutionPlan>, BatchSlot)>,
    /// State ∪ the batch's partials, merged, with the touched flag last.
    pub(crate) merge: Arc<dyn ExecutionPlan>,
    /// The rows emitted from the merged groups.
    pub(crate) output: Arc<dyn ExecutionPlan>,
    pub(crate) task: Arc<TaskContext>,
}

/// The watermark of the query (`[transform] watermark`), checked.
#[derive(Debug, Clone)]
pub(crate) struct WatermarkSpec {
    /// The event-time column's index in the stage's input.
    pub(crate) column: usize,
    /// `delayThreshold` in milliseconds.
    pub(crate) delay_ms: i64,
    /// Which grouping key finalises a group (none: late rows are dropped, nothing is evicted).
    pub(crate) expiry: Option<Expiry>,
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
    /// The index of the `session_window` grouping key, when there is one: the state's and the
    /// batch's sessions are merged before the merge plan groups by them ([`super::session`]).
    session: Option<usize>,
    /// The groups, merged in place (none with a session window, whose keys move, without
    /// grouping keys, or on disk; `state` then stays empty): a batch merges only its own groups.
    groups: Option<GroupTable>,
    /// A batch ended in the group table and was not yet saved.
    ended: bool,
    mode: OutputMode,
    /// The output plan's schema with the [`OutputShape`] in its metadata: what the sinks open
    /// with and every emitted batch carries.
    output: SchemaRef,
    watermark: Option<WatermarkSpec>,
    /// The watermarks ([`Clock`]): rows (partial groups) of a window already final under its
    /// late-rows watermark are dropped; groups final under its eviction watermark are evicted.
    clock: Clock,
    /// Rows of the current batch dropped as later than the watermark.
    late: u64,
    plans: Plans,
    slots: Slots,
    state_schema: SchemaRef,
    merged_schema: SchemaRef,
    /// The state as of the last committed (restored or saved) batch.
    state: RecordBatch,
    /// The state after the current batch, until it is saved.
    next: Option<RecordBatch>,
    /// What the current batch changed in the state, until it is saved.
    changes: Option<RecordBatch>,
    /// Writes snapshots in the background.
    store: store::Store,
    /// The current batch's partial values, one entry per part.
    pending: Vec<RecordBatch>,
    /// The partial aggregation of each slice (the transform's slot first, then each copy's)
    /// with its hash table kept across batches; empty when the partial plan is not one it
    /// takes over. A slot is empty while its slice runs, or after a failure (made anew).
    warm: Vec<std::sync::Mutex<Option<warm::WarmPartial>>>,
    progress: StateOperatorProgress,
    /// Real-time mode: what the long batch's earlier chunks changed, in order, until saved.
    chunk_changes: Vec<RecordBatch>,
    /// Real-time mode: the progress of the long batch's chunks so far.
    chunks: Option<StateOperatorProgress>,
    /// The groups, when they are held on disk (`state` then stays empty).
    spill: Option<SpilledGroups>,
}

impl std::fmt::Debug for Aggregation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregation")
            .field("signature", &self.split.signature)
            .field("mode", &self.mode)
            .field("groups", &self.groups())
            .field(
                "partial",
                &match self.warm.is_empty() {
                    true => "the plan, executed per part",
                    false => "warm hash tables, one per slice",
                },
            )
            .finish()
    }
}

/// `cargo bench --features bench` only: aggregations made after `bench_regroup(true)` merge
/// by regrouping the whole state, as before the [`GroupTable`], for the side-by-side benchmark.
static REGROUP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `cargo bench --features bench` only: aggregations made after `bench_cold_partial(true)`
/// execute the partial plan afresh for every part, as before [`warm::WarmPartial`].
static COLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Switches the whole-state regrouping on or off (benchmarks only).
#[cfg(feature = "bench")]
#[doc(hidden)]
pub fn bench_regroup(on: bool) {
    REGROUP.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// Switches the per-part partial plan on or off (benchmarks only).
#[cfg(feature = "bench")]
#[doc(hidden)]
pub fn bench_cold_partial(on: bool) {
    COLD.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// A benchmark switch: off unless a `--features bench` build turned it on.
fn switched(flag: &std::sync::atomic::AtomicBool) -> bool {
    cfg!(feature = "bench") && flag.load(std::sync::atomic::Ordering::SeqCst)
}

fn cold_partial() -> bool {
    switched(&COLD)
}

fn regroup_whole_state() -> bool {
    switched(&REGROUP)
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
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        split: SplitAggregation,
        session: Option<usize>,
        shape: OutputShape,
        watermark: Option<WatermarkSpec>,
        plans: Plans,
        slots: Slots,
        state_schema: SchemaRef,
        merged_schema: SchemaRef,
        spill: Option<SpilledGroups>,
    ) -> Self {
        let mut aggregation = Aggregation {
            mode: shape.mode,
            output: Arc::new(shape.attach(&plans.output.schema())),
            state: RecordBatch::new_empty(Arc::clone(&state_schema)),
            groups: match (session, split.groups.len()) {
                (None, n) if n > 0 && !regroup_whole_state() && spill.is_none() => GroupTable::new(
                    &state_schema,
                    n,
                    split.merges(),
                    watermark.as_ref().and_then(|w| w.expiry),
                )
                .ok(),
                _ => None,
            },
            ended: false,
            split,
            session,
            clock: Clock::new(watermark.as_ref().map_or(0, |w| w.delay_ms)),
            late: 0,
            watermark,
            plans,
            slots,
            state_schema,
            merged_schema,
            next: None,
            changes: None,
            store: store::Store::default(),
            pending: Vec::new(),
            warm: Vec::new(),
            progress: StateOperatorProgress {
                operator_name: "stateStoreSave".into(),
                ..Default::default()
            },
            chunk_changes: Vec::new(),
            chunks: None,
            spill,
        };
        aggregation.warm = aggregation.warm_slots();
        aggregation
    }

    /// Groups held as of the last kept batch.
    fn groups(&self) -> u64 {
        match (&self.spill, &self.groups) {
            (Some(s), _) => s.rows(),
            (None, Some(t)) => t.len() as u64,
            (None, None) => self.state.num_rows() as u64,
        }
    }

    /// The schema of the rows it emits.
    pub(crate) fn output_schema(&self) -> SchemaRef {
        Arc::clone(&self.output)
    }

    /// Takes the partial values of one part, read through the transform's `source` slot.
    /// Under a watermark the part's latest event time is noted; late input is dropped and
    /// counted as Spark does: partial groups whose window (or event-time key) is already final
    /// under the late-rows watermark, or, when no grouping key carries the event time, rows at
    /// or before it.
    pub(crate) async fn absorb(&mut self, slot: &BatchSlot, part: &RecordBatch) -> Result<()> {
        let mut part = part.clone();
        if let Some(w) = &self.watermark {
            let times = millis(part.column(w.column))?;
            self.clock.observe_column(&times);
            if let (Some(late), None) = (self.clock.late(), w.expiry) {
                let keep: BooleanArray = times
                    .iter()
                    .map(|t| Some(t.is_none_or(|t| t > late)))
                    .collect();
                let kept = datafusion::arrow::compute::filter_record_batch(&part, &keep)
                    .map_err(|e| internal("dropping late rows", e))?;
                self.late += (part.num_rows() - kept.num_rows()) as u64;
                part = kept;
            }
        }
        for p in self.partials(slot, part).await? {
            let mut p = as_schema(&self.state_schema, &p)?;
            if let Some(late) = self.expired(&p, self.clock.late())? {
                let keep = datafusion::arrow::compute::not(&late)
                    .map_err(|e| internal("late groups", e))?;
                let kept = datafusion::arrow::compute::filter_record_batch(&p, &keep)
                    .map_err(|e| internal("dropping late groups", e))?;
                self.late += (p.num_rows() - kept.num_rows()) as u64;
                p = kept;
            }
            if p.num_rows() > 0 {
                self.pending.push(p);
            }
        }
        Ok(())
    }

    /// Every group of the state merged with the batch's partials by the merge plan (the state
    /// regrouped whole), with the touched flag last; with a session window, also the old keys
    /// of the held sessions merged into others.
    #[allow(clippy::type_complexity)]
    async fn merge_all(
        &mut self,
        delta: RecordBatch,
    ) -> Result<(RecordBatch, Option<Vec<ArrayRef>>)> {
        let (held, delta, merged_away) = self.sessionize(delta)?;
        Ok((self.merge(held, delta).await?, merged_away))
    }

    /// The output plan over `merged` groups (the flag last telling which to emit, but in
    /// complete mode): the rows emitted, under the output schema.
    async fn output(&mut self, merged: RecordBatch) -> Result<RecordBatch> {
        self.slots.merged.set(merged);
        let out = collect(&self.plans.output, &self.plans.task, &self.output_schema()).await;
        self.slots.merged.clear();
        out?.with_schema(self.output_schema())
            .map_err(|e| internal("the emitted rows", e))
    }

    /// The merge plan over `held` groups and the batch's partials `delta`: the merged groups,
    /// with the touched flag last.
    async fn merge(&mut self, held: RecordBatch, delta: RecordBatch) -> Result<RecordBatch> {
        self.slots.state.set(held);
        self.slots.delta.set(delta);
        let merged = collect(&self.plans.merge, &self.plans.task, &self.merged_schema).await;
        self.slots.state.clear();
        self.slots.delta.clear();
        as_schema(&self.merged_schema, &merged?)
    }

    /// The state and the batch's partials to merge: as they are, or, with a session window,
    /// with every row's session replaced by the merged session it falls in. Also the old keys
    /// of the held sessions that changed (they leave the state under those keys).
    #[allow(clippy::type_complexity)]
    fn sessionize(
        &self,
        delta: RecordBatch,
    ) -> Result<(RecordBatch, RecordBatch, Option<Vec<ArrayRef>>)> {
        let Some(s) = self.session else {
            return Ok((self.state.clone(), delta, None));
        };
        let n_keys = self.split.groups.len();
        let both = concat(&self.state_schema, &[self.state.clone(), delta])?;
        let (sessions, changed) = super::session::sessionize(&both.columns()[..n_keys], s)?;
        let mut columns = both.columns().to_vec();
        columns[s] = sessions;
        let both_new = RecordBatch::try_new(Arc::clone(&self.state_schema), columns)
            .map_err(|e| internal("the merged sessions", e))?;
        let held = self.state.num_rows();
        let old_changed = changed.slice(0, held);
        let away: Vec<ArrayRef> = self.state.columns()[..n_keys]
            .iter()
            .map(|c| datafusion::arrow::compute::filter(c, &old_changed))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| internal("the merged sessions", e))?;
        Ok((
            both_new.slice(0, held),
            both_new.slice(held, both_new.num_rows() - held),
            Some(away),
        ))
    }

    /// The watermark this batch evicts with (the previous batch's), when there is one.
    pub(crate) fn batch_watermark(&self) -> Option<i64> {
        self.watermark.as_ref().and(self.clock.eviction())
    }

    /// Notes the latest event time of a part whose rows an operator before this one removed
    /// (a deduplication): the watermark is the whole input's, as in Spark.
    pub(crate) fn observe(&mut self, max_ms: i64) {
        self.clock.observe(max_ms);
    }

    /// Which rows of `state` are final under watermark `wm` (the expiry key ≤ `wm`).
    fn expired(&self, state: &RecordBatch, wm: Option<i64>) -> Result<Option<BooleanArray>> {
        let (Some(wm), Some(expiry)) = (wm, self.watermark.as_ref().and_then(|w| w.expiry)) else {
            return Ok(None);
        };
        let key = expiry.millis(state)?;
        Ok(Some(
            key.iter()
                .map(|k| Some(k.is_some_and(|k| k <= wm)))
                .collect(),
        ))
    }

    /// Executes the start-up run of every plan on empty inputs (as the stateless transform
    /// primes its joins), so a plan that cannot run fails at open, not on the first batch.
    pub(crate) async fn prime(&mut self) -> Result<()> {
        self.pending.clear();
        let out = self.end_batch().await;
        self.next = None;
        self.changes = None;
        if let Some(groups) = self.groups.as_mut() {
            groups.rollback();
        }
        self.ended = false;
        if let Some(spill) = self.spill.as_mut() {
            spill.discard();
        }
        let marks = self.clock.marks();
        self.clock.restore(marks);
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
        self.store.reset(dir)?;
        self.pending.clear();
        self.next = None;
        self.changes = None;
        self.chunk_changes.clear();
        self.chunks = None;
        self.late = 0;
        if let Some(spill) = self.spill.as_mut() {
            let marks = match version {
                None => {
                    spill.reset(dir)?;
                    (None, None)
                }
                Some(v) => spill.restore(dir, v, &self.split.signature)?,
            };
            self.clock.restore(marks);
            self.progress.num_rows_total = spill.rows();
            return Ok(());
        }
        let marks;
        (self.state, marks) = match version {
            None => (
                RecordBatch::new_empty(Arc::clone(&self.state_schema)),
                (None, None),
            ),
            Some(v) => store::load(dir, v, &self.split.signature, &self.state_schema)?,
        };
        self.clock.restore(marks);
        self.ended = false;
        if let Some(groups) = self.groups.as_mut() {
            // the table holds the groups; the batch is not kept twice
            groups.rebuild(&std::mem::replace(
                &mut self.state,
                RecordBatch::new_empty(Arc::clone(&self.state_schema)),
            ))?;
        }
        self.progress.num_rows_total = self.groups();
        Ok(())
    }

    async fn end_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.spill.is_some() {
            return self.end_batch_spilled().await;
        }
        if self.groups.is_some() {
            return self.end_batch_resident().await;
        }
        self.next = None;
        let delta = concat(&self.state_schema, &std::mem::take(&mut self.pending))?;
        let (merged, merged_away) = self.merge_all(delta).await?;
        let touched_col = merged.num_columns().saturating_sub(1);
        let updated = merged
            .column(touched_col)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .map(|b| b.true_count() as u64)
            .unwrap_or(0);
        let touched = merged
            .column(touched_col)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .cloned()
            .ok_or_else(|| internal("the touched flags", "are not booleans"))?;
        let columns = merged.columns()[..touched_col].to_vec();
        let next = RecordBatch::try_new(Arc::clone(&self.state_schema), columns)
            .map_err(|e| internal("the merged state", e))?;
        let wm = self
            .watermark
            .is_some()
            .then(|| self.clock.end_batch())
            .flatten();
        let expired = self.expired(&next, self.clock.eviction())?;
        // append emits the groups the watermark finalised: they take the flag's place
        let merged = match (&expired, self.mode) {
            (Some(e), OutputMode::Append) => {
                let mut columns = merged.columns().to_vec();
                columns[touched_col] = Arc::new(e.clone());
                RecordBatch::try_new(Arc::clone(&self.merged_schema), columns)
                    .map_err(|e| internal("the finalised groups", e))?
            }
            (None, OutputMode::Append) => {
                let mut columns = merged.columns().to_vec();
                columns[touched_col] = Arc::new(BooleanArray::from(vec![false; merged.num_rows()]));
                RecordBatch::try_new(Arc::clone(&self.merged_schema), columns)
                    .map_err(|e| internal("the finalised groups", e))?
            }
            // update: only the touched groups go through the output plan
            (_, OutputMode::Update) => {
                datafusion::arrow::compute::filter_record_batch(&merged, &touched)
                    .map_err(|e| internal("the touched groups", e))?
            }
            _ => merged,
        };
        let out = self.output(merged).await?;
        // the changelog: touched groups upserted, finalised ones deleted
        let n_keys = self.split.groups.len();
        let (upserts, mut deleted) = match &expired {
            Some(e) => {
                let kept = datafusion::arrow::compute::not(e)
                    .map_err(|err| internal("the changelog", err))?;
                let up = datafusion::arrow::compute::and(&touched, &kept)
                    .map_err(|err| internal("the changelog", err))?;
                let keys: Vec<ArrayRef> = next.columns()[..n_keys]
                    .iter()
                    .map(|c| datafusion::arrow::compute::filter(c, e))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|err| internal("the changelog", err))?;
                (up, keys)
            }
            None => (touched, Vec::new()),
        };
        // sessions merged into others leave the state under their old keys
        if let Some(away) = merged_away {
            deleted = match deleted.is_empty() {
                true => away,
                false => deleted
                    .iter()
                    .zip(&away)
                    .map(|(a, b)| datafusion::arrow::compute::concat(&[a.as_ref(), b.as_ref()]))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|err| internal("the changelog", err))?,
            };
        }
        let upserts = datafusion::arrow::compute::filter_record_batch(&next, &upserts)
            .map_err(|err| internal("the changelog", err))?;
        self.changes = Some(changelog::changes(&self.state_schema, &upserts, &deleted)?);
        // finalised groups leave the state
        let (next, removed) = match &expired {
            Some(e) => {
                let keep =
                    datafusion::arrow::compute::not(e).map_err(|err| internal("evicting", err))?;
                let kept = datafusion::arrow::compute::filter_record_batch(&next, &keep)
                    .map_err(|err| internal("evicting", err))?;
                let removed = (next.num_rows() - kept.num_rows()) as u64;
                (kept, removed)
            }
            None => (next, 0),
        };
        self.progress.num_rows_dropped_by_watermark = std::mem::take(&mut self.late);
        self.progress.num_rows_removed = removed;
        self.progress.watermark = wm.map(format_ms);
        self.progress.num_rows_total = next.num_rows() as u64;
        self.progress.num_rows_updated = updated;
        self.progress.memory_used_bytes = next
            .columns()
            .iter()
            .map(|c| c.get_array_memory_size() as u64)
            .sum::<u64>()
            + self.warm_memory();
        self.next = Some(next);
        Ok((out.num_rows() > 0).then_some(out))
    }

    async fn save(&mut self, dir: &Path, version: u64) -> Result<()> {
        let t = Instant::now();
        if let Some(spill) = self.spill.as_mut() {
            spill.ensure_open(dir)?;
            if spill.apply()? {
                self.clock.commit();
            }
        }
        if let Some(next) = self.next.take() {
            self.state = next;
            self.clock.commit();
        }
        if std::mem::take(&mut self.ended) {
            self.table()?.commit();
            self.clock.commit();
        }
        let header = store::Header {
            signature: &self.split.signature,
            keys: self.split.groups.len(),
            marks: self.clock.marks(),
        };
        // real-time mode: every chunk's changes in order make the long batch's one delta
        let mut changes = std::mem::take(&mut self.chunk_changes);
        changes.extend(self.changes.take());
        self.chunks = None;
        let changes = match changes.len() {
            0 | 1 => changes.pop(),
            _ => Some(
                concat_batches(&changes[0].schema(), &changes)
                    .map_err(|e| internal("the long batch's changes", e))?,
            ),
        };
        let (state, groups) = (&self.state, &self.groups);
        let full = match (&self.spill, groups) {
            (Some(spill), _) => store::Full::Scan(Arc::clone(&self.state_schema), spill.scan()?),
            (None, Some(t)) => store::Full::Memory(Box::new(|| t.all())),
            (None, None) => store::Full::Memory(Box::new(|| Ok(state.clone()))),
        };
        store::save(
            dir,
            version,
            &header,
            changes,
            self.groups() as usize,
            &mut self.store,
            full,
        )?;
        self.progress.commit_time_ms = t.elapsed().as_millis() as u64;
        Ok(())
    }

    fn progress(&self) -> Vec<StateOperatorProgress> {
        vec![self.progress.clone()]
    }

    /// `complete` would emit every group with every chunk; Spark's real-time mode runs
    /// aggregations in `update` mode (and `append` emits a window once its watermark passed).
    fn real_time_refusal(&self) -> Option<String> {
        if self.session.is_some() {
            return Some(
                "session_window is not supported in real-time mode, as in Spark; use window(ts, size) or a micro-batch trigger".to_string(),
            );
        }
        (self.mode == OutputMode::Complete).then(|| {
            "outputMode 'complete' emits every group with every chunk; use outputMode = \"update\", as Spark's real-time mode does".to_string()
        })
    }

    /// The chunk's rows, as a batch's; the state after it is the next chunk's, its changes
    /// kept for the long batch's save.
    async fn end_chunk(&mut self) -> Result<Option<RecordBatch>> {
        let out = self.end_batch().await?;
        if let Some(spill) = self.spill.as_mut() {
            spill.apply()?;
        }
        if let Some(next) = self.next.take() {
            self.state = next;
        }
        if std::mem::take(&mut self.ended) {
            self.table()?.commit();
        }
        self.clock.commit();
        self.chunk_changes.extend(self.changes.take());
        self.progress = super::add_chunk(&mut self.chunks, &self.progress);
        Ok(out)
    }

    fn needs_no_data_batch(&self) -> bool {
        // Spark's noDataMicroBatches: the watermark moved in the last batch, so a batch
        // without input would evict (and in append mode emit) with it.
        self.watermark.is_some() && self.clock.moved() && self.groups() > 0
    }
}
