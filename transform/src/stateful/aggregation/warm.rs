//! [`WarmPartial`]: the partial aggregation of one slice of a batch into a hash table kept
//! from batch to batch.
//!
//! DataFusion's `AggregateExec` builds its hash table, its group-id vector and its
//! accumulators afresh on every execution, and a stream executes the partial plan once per
//! part: every batch paid for a cold table growing from empty, and for page-faulting the
//! buffers the allocator had just returned to the kernel. This runs the same aggregation —
//! the plan's own input, grouping expressions, argument expressions and DataFusion's own
//! [`GroupValues`] and [`GroupsAccumulator`]s, the loop of DataFusion's grouped hash stream —
//! but keeps them: emitting the groups at the end of the slice (`EmitTo::All`) clears the
//! hash table and keeps its capacity, so the next batch's keys land in a warm table.
//!
//! A slice whose groups are nearly as many as its rows (see [`PASS_RATIO`]) was aggregated for
//! nothing: the following slices hand their rows on as groups of one (each function's
//! `convert_to_state`, as DataFusion's partial aggregation does once it stops aggregating),
//! and the group table merges them as it merges any partial rows; every [`PASS_RUNS`] + 1-th
//! slice is aggregated again to look at the ratio.
//!
//! Only a plain aggregation is taken over ([`WarmPartial::of`]): one partition, raw input, one
//! grouping set with at least one key, no `FILTER`, no ordered or `DISTINCT` aggregate, every
//! function with a groups accumulator. Anything else runs the plan as before.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{ColumnarValue, EmitTo, GroupsAccumulator};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::group_values::{new_group_values, GroupValues};
use datafusion::physical_plan::aggregates::order::GroupOrdering;
use datafusion::physical_plan::aggregates::{
    aggregate_expressions, evaluate_group_by, AggregateExec, AggregateMode, PhysicalGroupBy,
};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::scalar::ScalarValue;
use futures::StreamExt;
use tributary_sdk::Result;

use super::internal;

/// A partial aggregation whose hash table outlives the batch (see the module docs).
pub(crate) struct WarmPartial {
    /// What the aggregation reads (its `source` scan reading this copy's slot).
    input: Arc<dyn ExecutionPlan>,
    group_by: PhysicalGroupBy,
    /// Each function's argument expressions.
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    /// Whether the plan emits final values (`Single`) rather than states (`Partial`).
    emits_final: bool,
    /// The rows emitted: the state's schema.
    schema: SchemaRef,
    /// The aggregation's columns in emitted order, when a projection renames or reorders them.
    order: Option<Vec<usize>>,
    values: Box<dyn GroupValues>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    /// The group id of each row of the chunk being aggregated (reused).
    ids: Vec<usize>,
    /// Rows aggregated at a time ([`CHUNK_ROWS`]).
    chunk: usize,
    /// The most rows of one input batch this run: the size the table's buffers are kept at.
    widest: usize,
    /// Each argument that is a constant (`count(*)` counts `1`), as an array kept to be sliced
    /// for every batch instead of filled anew: same values, no allocation.
    constants: Vec<Vec<Option<ArrayRef>>>,
    /// Whether every function can hand its rows on as their own groups
    /// (`convert_to_state`, its one state column of the type it emits).
    can_pass: bool,
    /// Runs left that hand the rows on without aggregating them (see [`PASS_RATIO`]); 0:
    /// aggregate, and look again.
    passing: u32,
}

/// When a slice's groups are at least this share of its rows, aggregating it reduces nothing:
/// the next slices hand their rows on as groups of one (`convert_to_state`) to the table
/// that merges them anyway, as DataFusion's partial aggregation stops aggregating at its
/// `skip_partial_aggregation_probe_ratio_threshold` (0.8).
const PASS_RATIO: (usize, usize) = (4, 5);

/// Slices of fewer rows are always aggregated (DataFusion's probe waits for 100,000 rows).
const PASS_MIN_ROWS: usize = 10_000;

/// Rows aggregated at a time. A slice of a large part is aggregated in chunks, as
/// DataFusion's stream aggregates its `batch_size` batches: the group ids of a chunk and a
/// constant argument's array stay in the core's cache, and the first batch page-faults buffers
/// of a chunk, not of the whole slice (a 500,000-row slice's ids and `count(*)` ones are 8 MB).
const CHUNK_ROWS: usize = 64 * 1024;

/// Slices handed on before the next one is aggregated to look at the ratio again.
const PASS_RUNS: u32 = 16;

impl std::fmt::Debug for WarmPartial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPartial")
            .field("functions", &self.accumulators.len())
            .finish()
    }
}

/// An empty group-id vector with room for `rows`, its pages written once: they are faulted in
/// when the query opens, not in its first batch.
fn prefaulted_ids(rows: usize) -> Vec<usize> {
    let mut ids = Vec::with_capacity(rows);
    ids.extend(std::iter::repeat_n(0, rows));
    ids.clear();
    ids
}

impl WarmPartial {
    /// The aggregation of `plan` (a partial plan) kept warm, emitting rows of `schema`; none
    /// when the plan is not a plain aggregation (see the module docs).
    pub(crate) fn of(plan: &Arc<dyn ExecutionPlan>, schema: &SchemaRef) -> Option<Self> {
        // a projection of plain columns on top (names, order) is applied at emit
        let (plan, order) = match plan.downcast_ref::<ProjectionExec>() {
            Some(p) => {
                let order = p
                    .expr()
                    .iter()
                    .map(|e| e.expr.downcast_ref::<Column>().map(Column::index))
                    .collect::<Option<Vec<_>>>()?;
                (p.input(), Some(order))
            }
            None => (plan, None),
        };
        let agg = plan.downcast_ref::<AggregateExec>()?;
        let emits_final = match agg.mode() {
            AggregateMode::Single | AggregateMode::SinglePartitioned => true,
            AggregateMode::Partial => false,
            _ => return None,
        };
        let plain = agg.group_expr().is_single()
            && !agg.group_expr().is_empty()
            && agg.filter_expr().iter().all(Option::is_none)
            && agg.limit_options().is_none()
            && agg.input().output_partitioning().partition_count() == 1
            && agg.aggr_expr().iter().all(|f| {
                f.groups_accumulator_supported() && f.order_bys().is_empty() && !f.is_distinct()
            });
        if !plain {
            return None;
        }
        let group_schema = agg.group_expr().group_schema(&agg.input().schema()).ok()?;
        let accumulators = agg
            .aggr_expr()
            .iter()
            .map(|f| f.create_groups_accumulator())
            .collect::<datafusion::error::Result<Vec<Box<dyn GroupsAccumulator>>>>()
            .ok()?;
        // a row as its own group is its state; a `Single` plan emits final values, which
        // must then be that same one column
        let can_pass = !emits_final
            || agg.aggr_expr().iter().all(|f| {
                f.state_fields()
                    .is_ok_and(|s| s.len() == 1 && s[0].data_type() == f.field().data_type())
            });
        Some(WarmPartial {
            input: Arc::clone(agg.input()),
            group_by: agg.group_expr().clone(),
            arguments: aggregate_expressions(agg.aggr_expr(), agg.mode(), 0).ok()?,
            emits_final,
            schema: Arc::clone(schema),
            order,
            values: new_group_values(group_schema, &GroupOrdering::None).ok()?,
            accumulators,
            ids: prefaulted_ids(CHUNK_ROWS),
            chunk: CHUNK_ROWS,
            widest: 0,
            constants: Vec::new(),
            can_pass,
            passing: 0,
        })
    }

    /// The same, never handing rows on (`allowed` false): where the rows after the partial
    /// aggregation are counted (late partial groups) or are sessions to merge.
    pub(crate) fn allow_passing(mut self, allowed: bool) -> Self {
        self.can_pass &= allowed;
        self
    }

    /// Bytes it holds between batches: the emptied table's capacity, the accumulators, the
    /// group-id vector and the kept constants.
    pub(crate) fn size(&self) -> usize {
        self.values.size()
            + self.accumulators.iter().map(|a| a.size()).sum::<usize>()
            + self.ids.capacity() * std::mem::size_of::<usize>()
            + self
                .constants
                .iter()
                .flatten()
                .flatten()
                .map(|a| a.get_array_memory_size())
                .sum::<usize>()
    }

    /// Aggregates what the input plan reads now: one row per group, of the state's schema.
    /// After an error the table holds part of the slice; the caller drops it.
    pub(crate) async fn run(&mut self, task: &Arc<TaskContext>) -> Result<RecordBatch> {
        let mut stream = self
            .input
            .execute(0, Arc::clone(task))
            .map_err(|e| internal("the partial aggregation's input", e))?;
        let mut passing = self.can_pass && self.passing > 0;
        let (mut rows, mut passed) = (0, Vec::new());
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(|e| internal("the partial aggregation's input", e))?;
            rows += batch.num_rows();
            if passing {
                match self.pass(&batch) {
                    Ok(p) => {
                        passed.push(p);
                        continue;
                    }
                    // a function that cannot hand a row on: aggregated from here on (the
                    // rows already handed on merge with the groups like any other)
                    Err(_) => (self.can_pass, passing) = (false, false),
                }
            }
            self.update(&batch)
                .map_err(|e| internal("the partial aggregation", e))?;
        }
        let schema = Arc::clone(&self.schema);
        let concat = |parts: &[RecordBatch]| {
            datafusion::arrow::compute::concat_batches(&schema, parts)
                .map_err(|e| internal("the partial aggregation's rows", e))
        };
        if passing {
            self.passing -= 1;
            return concat(&passed);
        }
        let out = self
            .emit()
            .map_err(|e| internal("the partial aggregation's groups", e))?;
        if !passed.is_empty() {
            passed.push(out);
            return concat(&passed);
        }
        if self.can_pass
            && rows >= PASS_MIN_ROWS
            && out.num_rows() * PASS_RATIO.1 >= rows * PASS_RATIO.0
        {
            self.passing = PASS_RUNS;
        }
        Ok(out)
    }

    /// `batch`'s rows handed on as groups of one: their keys and each function's state of
    /// the row alone.
    fn pass(&mut self, batch: &RecordBatch) -> datafusion::error::Result<RecordBatch> {
        let keys = evaluate_group_by(&self.group_by, batch)?;
        let arguments = self.evaluate_arguments(batch)?;
        let mut columns = keys.into_iter().next().unwrap_or_default();
        for (acc, args) in self.accumulators.iter().zip(&arguments) {
            columns.extend(acc.convert_to_state(args, None)?);
        }
        self.ordered(columns)
    }

    /// Aggregates `batch` [`Self::chunk`] rows at a time.
    fn update(&mut self, batch: &RecordBatch) -> datafusion::error::Result<()> {
        let rows = batch.num_rows();
        self.widest = self.widest.max(rows);
        let mut from = 0;
        while from < rows {
            let n = self.chunk.min(rows - from);
            self.update_chunk(&batch.slice(from, n))?;
            from += n;
        }
        Ok(())
    }

    fn update_chunk(&mut self, batch: &RecordBatch) -> datafusion::error::Result<()> {
        let keys = evaluate_group_by(&self.group_by, batch)?;
        let arguments = self.evaluate_arguments(batch)?;
        for keys in &keys {
            self.values.intern(keys, &mut self.ids)?;
            let groups = self.values.len();
            for (acc, args) in self.accumulators.iter_mut().zip(&arguments) {
                acc.update_batch(args, &self.ids, None, groups)?;
            }
        }
        Ok(())
    }

    /// Each function's arguments over `batch`, as `evaluate_many` gives them, but a constant
    /// is a slice of the array kept for it (made again only when a batch is longer, or the
    /// constant differs).
    fn evaluate_arguments(
        &mut self,
        batch: &RecordBatch,
    ) -> datafusion::error::Result<Vec<Vec<ArrayRef>>> {
        let rows = batch.num_rows();
        self.constants.resize_with(self.arguments.len(), Vec::new);
        let mut out = Vec::with_capacity(self.arguments.len());
        for (exprs, kept) in self.arguments.iter().zip(&mut self.constants) {
            kept.resize(exprs.len(), None);
            let mut args = Vec::with_capacity(exprs.len());
            for (e, kept) in exprs.iter().zip(kept.iter_mut()) {
                let value = match e.evaluate(batch)? {
                    ColumnarValue::Array(a) => a,
                    ColumnarValue::Scalar(s) => {
                        let fits = kept.as_ref().is_some_and(|k| {
                            k.len() >= rows
                                && ScalarValue::try_from_array(k.as_ref(), 0).is_ok_and(|v| v == s)
                        });
                        let k = match kept {
                            Some(k) if fits => k,
                            _ => kept.insert(s.to_array_of_size(rows.max(1))?),
                        };
                        k.slice(0, rows)
                    }
                };
                args.push(value);
            }
            out.push(args);
        }
        Ok(out)
    }

    /// Every group, emitted: the hash table is left empty with its capacity.
    fn emit(&mut self) -> datafusion::error::Result<RecordBatch> {
        let mut columns: Vec<ArrayRef> = self.values.emit(EmitTo::All)?;
        // `EmitTo::All` does not empty every kind of table (the multi-column one keeps its
        // map); this does, as DataFusion's own stream does after emitting to spill, and
        // `shrink_to` never grows: the capacity the groups and rows needed is kept.
        self.values.clear_shrink(std::mem::take(&mut self.widest));
        for acc in &mut self.accumulators {
            match self.emits_final {
                true => columns.push(acc.evaluate(EmitTo::All)?),
                false => columns.extend(acc.state(EmitTo::All)?),
            }
        }
        self.ordered(columns)
    }

    /// The aggregation's columns as the plan emits them (its projection applied).
    fn ordered(&self, mut columns: Vec<ArrayRef>) -> datafusion::error::Result<RecordBatch> {
        if let Some(order) = &self.order {
            columns = order
                .iter()
                .map(|&i| {
                    columns.get(i).cloned().ok_or_else(|| {
                        datafusion::error::DataFusionError::Internal(format!(
                            "the projection names column {i} of {}",
                            columns.len()
                        ))
                    })
                })
                .collect::<datafusion::error::Result<_>>()?;
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    use arrow_array::{Float64Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    use crate::transform::{collect, session_config};

    fn input() -> Vec<RecordBatch> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("v", DataType::Float64, true),
        ]));
        // batches of other lengths: a constant argument's kept array is sliced, and grown
        [(0, 1000), (1000, 1500), (2500, 500)]
            .into_iter()
            .map(|(from, n)| {
                let ids = from..from + n;
                RecordBatch::try_new(
                    Arc::clone(&schema),
                    vec![
                        Arc::new(Int64Array::from_iter(
                            ids.clone().map(|i| (i % 7 != 3).then_some(i % 37)),
                        )),
                        Arc::new(StringArray::from_iter(
                            ids.clone()
                                .map(|i| (i % 11 != 5).then(|| format!("s{}", i % 5))),
                        )),
                        Arc::new(Float64Array::from_iter(
                            ids.map(|i| (i % 13 != 0).then_some(i as f64 / 3.0)),
                        )),
                    ],
                )
                .unwrap()
            })
            .collect()
    }

    /// A session with `source` holding [`input`], as the transform plans.
    fn context() -> SessionContext {
        let ctx = SessionContext::new_with_config(session_config());
        let batches = input();
        let table = MemTable::try_new(batches[0].schema(), vec![batches]).unwrap();
        ctx.register_table("source", Arc::new(table)).unwrap();
        ctx
    }

    async fn planned(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
        ctx.sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap()
    }

    /// Rows as sorted strings, to compare results whatever their order.
    fn sorted(b: &RecordBatch) -> Vec<String> {
        let shown = datafusion::arrow::util::pretty::pretty_format_batches(std::slice::from_ref(b))
            .unwrap()
            .to_string();
        let mut lines: Vec<String> = shown.lines().map(str::to_string).collect();
        lines.sort();
        lines
    }

    /// Every plain aggregation the stream keeps is taken over, and gives DataFusion's own
    /// result, run after run (the table emptied between runs, its capacity kept).
    #[tokio::test]
    async fn a_warm_partial_gives_what_the_plan_gives_run_after_run() {
        let ctx = context();
        for sql in [
            "SELECT k AS __g0, count(*) AS __p0, sum(v) AS __p1 FROM source GROUP BY k",
            "SELECT k AS __g0, s AS __g1, min(v) AS __p0, max(v) AS __p1, count(v) AS __p2 FROM source GROUP BY k, s",
            "SELECT s AS __g0, sum(k) AS __p0, bool_and(v > 10) AS __p1, bool_or(k IS NULL) AS __p2 FROM source GROUP BY s",
            "SELECT k % 5 AS __g0, max(s) AS __p0, count(k) AS __p1 FROM source WHERE v > 1 GROUP BY k % 5",
        ] {
            let plan = planned(&ctx, sql).await;
            let schema = plan.schema();
            let theirs = collect(&plan, &ctx.task_ctx(), &schema).await.unwrap();
            // whole batches, and batches aggregated in chunks (1000 rows: 700 + 300; 1500:
            // 700 + 700 + 100; 500 in one)
            for chunk in [CHUNK_ROWS, 700] {
                let mut warm = WarmPartial::of(&plan, &schema)
                    .unwrap_or_else(|| panic!("{sql}: not taken over: {}", datafusion::physical_plan::displayable(plan.as_ref()).indent(true)));
                (warm.chunk, warm.ids) = (chunk, prefaulted_ids(chunk));
                for run in 0..3 {
                    let ours = warm.run(&ctx.task_ctx()).await.unwrap();
                    assert_eq!(ours.num_rows(), theirs.num_rows(), "{sql}, chunk {chunk}, run {run}");
                    assert_eq!(sorted(&ours), sorted(&theirs), "{sql}, chunk {chunk}, run {run}");
                }
                // what it keeps between batches is counted: at least the ids of the longest
                // chunk
                let longest = chunk.min(1500);
                assert!(warm.size() >= longest * std::mem::size_of::<usize>(), "{sql}");
                assert!(
                    chunk >= 1500 || warm.ids.capacity() < 1500,
                    "{sql}: the ids of a chunk, not of the batch"
                );
            }
        }
    }

    /// A query that is not a plain aggregation is left to the plan.
    #[tokio::test]
    async fn only_a_plain_aggregation_is_taken_over() {
        let ctx = context();
        for sql in [
            "SELECT count(*) FROM source",
            "SELECT k, count(*) FILTER (WHERE v > 2) FROM source GROUP BY k",
            "SELECT k, s, count(*) FROM source GROUP BY ROLLUP (k, s)",
            "SELECT k FROM source",
        ] {
            let plan = planned(&ctx, sql).await;
            assert!(
                WarmPartial::of(&plan, &plan.schema()).is_none(),
                "{sql} is left to the plan"
            );
        }
        // and the count of a taken-over one is right
        let plan = planned(&ctx, "SELECT k, count(*) AS n FROM source GROUP BY k").await;
        let mut warm = WarmPartial::of(&plan, &plan.schema()).unwrap();
        let out = warm.run(&ctx.task_ctx()).await.unwrap();
        let total: i64 = out
            .column(1)
            .as_primitive::<Int64Type>()
            .iter()
            .flatten()
            .sum();
        assert_eq!(total, 3000);
        let plan = planned(
            &ctx,
            "SELECT k, count(*) AS n, sum(2) AS two FROM source GROUP BY k",
        )
        .await;
        let mut warm = WarmPartial::of(&plan, &plan.schema()).unwrap();
        for _ in 0..2 {
            let out = warm.run(&ctx.task_ctx()).await.unwrap();
            let n: i64 = out
                .column(1)
                .as_primitive::<Int64Type>()
                .iter()
                .flatten()
                .sum();
            let two: i64 = out
                .column(2)
                .as_primitive::<Int64Type>()
                .iter()
                .flatten()
                .sum();
            assert_eq!((n, two), (3000, 6000));
        }
    }

    /// A slice with nearly as many keys as rows is aggregated once, then handed on as groups
    /// of one for the next runs (the same totals once merged), then aggregated again.
    #[tokio::test]
    async fn a_slice_that_reduces_nothing_is_handed_on_row_by_row_then_looked_at_again() {
        let ctx = SessionContext::new_with_config(session_config());
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let rows = 12_000i64;
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i % 11_000))),
                Arc::new(Int64Array::from_iter(
                    (0..rows).map(|i| (i % 9 != 0).then_some(i)),
                )),
            ],
        )
        .unwrap();
        let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("source", Arc::new(table)).unwrap();
        let plan = planned(
            &ctx,
            "SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, count(v) AS c FROM source GROUP BY k",
        )
        .await;
        let mut warm = WarmPartial::of(&plan, &plan.schema()).unwrap();
        assert!(warm.can_pass);
        // key → (n, s, lo, c), folded as the group table merges
        let fold = |b: &RecordBatch| {
            let c = |i: usize| b.column(i).as_primitive::<Int64Type>().clone();
            let (k, n, s, lo, cv) = (c(0), c(1), c(2), c(3), c(4));
            let mut out = std::collections::BTreeMap::new();
            for r in 0..b.num_rows() {
                let e = out
                    .entry(k.value(r))
                    .or_insert((0i64, None::<i64>, None::<i64>, 0i64));
                e.0 += n.value(r);
                if s.is_valid(r) {
                    e.1 = Some(e.1.unwrap_or(0) + s.value(r));
                }
                if lo.is_valid(r) {
                    e.2 = Some(e.2.map_or(lo.value(r), |x: i64| x.min(lo.value(r))));
                }
                e.3 += cv.value(r);
            }
            out
        };
        let first = warm.run(&ctx.task_ctx()).await.unwrap();
        assert_eq!(first.num_rows(), 11_000, "aggregated");
        for run in 1..=PASS_RUNS {
            let out = warm.run(&ctx.task_ctx()).await.unwrap();
            assert_eq!(
                out.num_rows(),
                rows as usize,
                "run {run}: handed on row by row"
            );
            assert_eq!(fold(&out), fold(&first), "run {run}");
        }
        let again = warm.run(&ctx.task_ctx()).await.unwrap();
        assert_eq!(
            again.num_rows(),
            11_000,
            "aggregated again, to look at the ratio"
        );
        assert_eq!(fold(&again), fold(&first));
    }
}
