//! Aggregations with state across batches (`SELECT k, count(*) FROM source GROUP BY k`), in
//! Spark's `update` and `complete` output modes.
//!
//! A query whose top is an aggregation over a stateless query of `source` (optionally under
//! projections, a `HAVING` filter and subquery aliases) is split into three plans, each planned
//! once at start and executed again per batch like the stateless transform:
//!
//! 1. **partial**: the aggregation's partial values over each part of a batch ([`rewrite`]),
//!    a large part cut into slices run side by side, one per core;
//! 2. **merge**: the batch's partials merged into the state (one row per group, as of the last
//!    committed batch), with a flag telling which groups the batch touched. Groups held in
//!    memory are merged in place in a [`groups::GroupTable`] (DataFusion's key tables and one
//!    vector per partial value), so a batch costs its own groups; groups on disk
//!    ([`spill`]), sessions and a global aggregate go through a merge plan: the held groups
//!    unioned with the partials and grouped again;
//! 3. **output**: the final values of the merged groups, the touched ones (`update`) or all
//!    (`complete`), through whatever stood above the aggregation (projection, `HAVING`).
//!
//! The merged groups become the next state, saved with the batch's commit ([`store`]): a
//! replayed batch starts from the state its first attempt started from, so it emits the same
//! rows. Spark's rules apply: `append` (its default) is refused for an aggregation without a
//! watermark, `complete` for a query without one. A `session_window` key merges the state's
//! sessions with the batch's before the merge plan ([`session`]).

pub(crate) mod aggregation;
pub(crate) mod clock;
pub(crate) mod dedup;
pub(crate) mod event_time;
pub(crate) mod groups;
pub(crate) mod query;
pub(crate) mod rewrite;
pub(crate) mod session;
pub(crate) mod spill;
pub(crate) mod store;
pub(crate) mod window;

use std::sync::Arc;

use arrow_schema::{Field, Schema, SchemaRef};
use datafusion::dataframe::DataFrame;
use datafusion::functions_aggregate::expr_fn::bool_or;
use datafusion::logical_expr::{Aggregate, LogicalPlan};
use datafusion::prelude::{col, lit, SessionContext};
use tributary_sdk::{Error, ErrorCode, OutputMode, OutputShape, Result};

use crate::spec::{StateStoreProvider, TransformSpec, STATE_STORE_OPTION};

use crate::allowlist::{check_logical, check_physical};
use crate::error::sql_error;
use crate::source_table::{BatchSlot, SourceTable};
pub(crate) use aggregation::Aggregation;

/// The option naming the output mode.
pub(crate) const OUTPUT_MODE_OPTION: &str = "transform.outputMode";

const STATE_TABLE: &str = "__tributary_state";
const DELTA_TABLE: &str = "__tributary_delta";
const MERGED_TABLE: &str = "__tributary_merged";
const TOUCHED: &str = "__touched";

/// Real-time mode: the long batch's progress after one more chunk whose own progress is
/// `chunk` (counts added up, totals and the watermark the chunk's); `so_far` keeps it until
/// the state is saved.
pub(crate) fn add_chunk(
    so_far: &mut Option<tributary_sdk::StateOperatorProgress>,
    chunk: &tributary_sdk::StateOperatorProgress,
) -> tributary_sdk::StateOperatorProgress {
    let sum = match so_far.take() {
        None => chunk.clone(),
        Some(mut p) => {
            p.num_rows_updated += chunk.num_rows_updated;
            p.num_rows_removed += chunk.num_rows_removed;
            p.num_rows_dropped_by_watermark += chunk.num_rows_dropped_by_watermark;
            for (k, v) in &chunk.custom_metrics {
                *p.custom_metrics.entry(k.clone()).or_default() += v;
            }
            p.num_rows_total = chunk.num_rows_total;
            p.memory_used_bytes = chunk.memory_used_bytes;
            p.watermark = chunk.watermark.clone();
            p
        }
    };
    *so_far = Some(sum.clone());
    sum
}

/// The query's top aggregation, under the nodes above it (outermost first), when the query is
/// one: projections, filters (`HAVING`) and subquery aliases over an `Aggregate`.
fn top_aggregation(plan: &LogicalPlan) -> Option<(Vec<&LogicalPlan>, &Aggregate)> {
    let mut upper = Vec::new();
    let mut node = plan;
    loop {
        match node {
            LogicalPlan::Aggregate(agg) => return Some((upper, agg)),
            LogicalPlan::Projection(_) | LogicalPlan::Filter(_) | LogicalPlan::SubqueryAlias(_) => {
                upper.push(node);
                let inputs = node.inputs();
                let [only] = inputs.as_slice() else {
                    return None;
                };
                node = only;
            }
            _ => return None,
        }
    }
}

/// Every field nullable: the state holds what the merge produced, whatever DataFusion declared.
fn nullable(schema: &SchemaRef) -> SchemaRef {
    Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ))
}

/// Plans the query's aggregation when it has one at its top (see the module docs); `Ok(None)`
/// for a query without (the caller checks it as a stateless query). Refuses Spark's invalid
/// mode combinations.
pub(crate) async fn plan(
    ctx: &SessionContext,
    logical: &LogicalPlan,
    input: &SchemaRef,
    spec: &TransformSpec,
) -> Result<Option<Aggregation>> {
    let (mode, sql) = (spec.output_mode, spec.sql.as_str());
    let deduplicates =
        spec.drop_duplicates.is_some() || spec.drop_duplicates_within_watermark.is_some();
    let on_disk = spec.state_store_provider()? == StateStoreProvider::Disk;
    let Some((upper, agg)) = top_aggregation(logical) else {
        if on_disk && !deduplicates {
            return Err(disk_refused(
                "the query keeps no state (no aggregation, no dropDuplicates), so it would be ignored; remove it",
            ));
        }
        if session::used_in(logical) {
            return Err(session_refused(
                "session_window can only be a GROUP BY key of the query's aggregation",
            ));
        }
        if spec.watermark.is_some() && !deduplicates {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                "[transform] watermark is set but the query has no aggregation and no dropDuplicates, so it would be ignored; remove it, aggregate (GROUP BY window(eventTime, ...)) or deduplicate (dropDuplicates = [...])",
            )
            .with_context("option", "transform.watermark"));
        }
        if mode == Some(OutputMode::Complete) {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                "[transform] Complete output mode not supported when there are no streaming aggregations on streaming DataFrames/Datasets; use outputMode = \"append\" (or leave it out)",
            )
            .with_context("option", OUTPUT_MODE_OPTION));
        }
        return Ok(None);
    };
    // What feeds the aggregation must itself be a stateless query of the stream.
    check_logical(&agg.input)?;
    let df_err = |e: datafusion::error::DataFusionError| sql_error(&e, sql);
    let state = ctx.state();
    let input_plan = DataFrame::new(state.clone(), (*agg.input).clone())
        .create_physical_plan()
        .await
        .map_err(df_err)?;
    check_physical(&input_plan)?;
    let split = rewrite::split(agg)?;
    let session = session_key(agg, &split, mode)?;
    if on_disk {
        if session.is_some() {
            return Err(disk_refused(
                "a session_window aggregation keeps its sessions in memory (their keys move as sessions merge); remove it or group by window(eventTime, ...)",
            ));
        }
        if split.groups.is_empty() {
            return Err(disk_refused(
                "an aggregation without GROUP BY holds one row, so it would be ignored; remove it",
            ));
        }
    }
    let watermark = match &spec.watermark {
        None => None,
        Some(w) => Some(watermark(input, w, &split, mode)?),
    };
    let mode = match mode.unwrap_or_default() {
        OutputMode::Append if watermark.as_ref().is_some_and(|w| w.expiry.is_some()) => {
            OutputMode::Append
        }
        OutputMode::Append => {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                "[transform] Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark; set outputMode = \"update\" (the changed groups every batch) or \"complete\" (every group every batch), or set a watermark and group by window(eventTime, ...)",
            )
            .with_context("option", OUTPUT_MODE_OPTION));
        }
        m => m,
    };
    let n_groups = split.groups.len();

    // A sliding window key: each row is expanded into its windows, then grouped by each.
    let mut split = split;
    let mut input_df = DataFrame::new(state.clone(), (*agg.input).clone());
    for i in 0..n_groups {
        if let Some(args) = window::sliding_args(&split.groups[i]) {
            let name = format!("__w{i}");
            input_df = input_df
                .with_column(&name, window::windows_udf().call(args))
                .and_then(|d| d.unnest_columns(&[name.as_str()]))
                .map_err(df_err)?;
            split.groups[i] = col(name);
        }
    }

    // 1. partial
    let (groups, partials) = split.partial_exprs();
    let partial = input_df
        .aggregate(groups, partials)
        .map_err(df_err)?
        .create_physical_plan()
        .await
        .map_err(df_err)?;
    let state_schema = nullable(&partial.schema());
    let partial_types: Vec<_> = state_schema
        .fields()
        .iter()
        .skip(n_groups)
        .map(|f| f.data_type().clone())
        .collect();

    // 2. merge
    let (state_slot, delta_slot, merged_slot) =
        (BatchSlot::new(), BatchSlot::new(), BatchSlot::new());
    register(ctx, STATE_TABLE, &state_schema, &state_slot)?;
    register(ctx, DELTA_TABLE, &state_schema, &delta_slot)?;
    let held = ctx
        .table(STATE_TABLE)
        .await
        .and_then(|d| d.with_column(TOUCHED, lit(false)))
        .map_err(df_err)?;
    let fresh = ctx
        .table(DELTA_TABLE)
        .await
        .and_then(|d| d.with_column(TOUCHED, lit(true)))
        .map_err(df_err)?;
    let (merge_groups, mut merged) = split.merge_exprs(&partial_types);
    merged.push(bool_or(col(TOUCHED)).alias(TOUCHED));
    let merge = held
        .union(fresh)
        .and_then(|d| d.aggregate(merge_groups, merged))
        .map_err(df_err)?
        .create_physical_plan()
        .await
        .map_err(df_err)?;
    let merged_schema = nullable(&merge.schema());

    // 3. output
    register(ctx, MERGED_TABLE, &merged_schema, &merged_slot)?;
    let mut out = ctx.table(MERGED_TABLE).await.map_err(df_err)?;
    if mode != OutputMode::Complete {
        // update: the groups the batch touched; append: the groups the watermark finalised
        // (the flag is set to that before the output runs).
        out = out.filter(col(TOUCHED)).map_err(df_err)?;
    }
    let final_types: Vec<_> = agg
        .schema
        .fields()
        .iter()
        .skip(n_groups)
        .map(|f| f.data_type().clone())
        .collect();
    let mut select = Vec::new();
    for i in 0..n_groups {
        let (qualifier, field) = agg.schema.qualified_field(i);
        select
            .push(col(rewrite::group_column(i)).alias_qualified(qualifier.cloned(), field.name()));
    }
    for (k, e) in split.final_exprs(&final_types)?.into_iter().enumerate() {
        let (qualifier, field) = agg.schema.qualified_field(n_groups + k);
        select.push(e.alias_qualified(qualifier.cloned(), field.name()));
    }
    let mut rebuilt = out.select(select).map_err(df_err)?.into_unoptimized_plan();
    for node in upper.iter().rev() {
        rebuilt = node
            .with_new_exprs(node.expressions(), vec![rebuilt])
            .map_err(df_err)?;
    }
    let output = DataFrame::new(state, rebuilt)
        .create_physical_plan()
        .await
        .map_err(df_err)?;
    let shape = OutputShape {
        mode,
        key: update_key(&upper, agg, &output.schema()),
    };
    let spill = match on_disk {
        true => Some(spill::SpilledGroups::new(
            &state_schema,
            n_groups,
            watermark.as_ref().and_then(|w| w.expiry),
        )?),
        false => None,
    };
    Ok(Some(Aggregation::new(
        split,
        session,
        shape,
        watermark,
        aggregation::Plans {
            partial_copies: aggregation::partial_copies(&partial)?,
            partial,
            merge,
            output,
            task: ctx.task_ctx(),
        },
        aggregation::Slots {
            state: state_slot,
            delta: delta_slot,
            merged: merged_slot,
        },
        state_schema,
        merged_schema,
        spill,
    )))
}

fn disk_refused(why: &str) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!("[transform] stateStore.providerClass = \"disk\" holds an aggregation's groups and dropDuplicates' keys on local disk, but {why}"),
    )
    .with_context("option", STATE_STORE_OPTION)
}

fn session_refused(message: &str) -> Error {
    Error::new(ErrorCode::InvalidPipeline, format!("[transform] {message}"))
        .with_context("option", crate::error::SQL_OPTION)
        .with_context("operator", "session_window")
}

/// The index of the aggregation's `session_window` key, checked against Spark's rules: one
/// session window with a literal gap, beside at least one other key and no `window(...)`,
/// called nowhere else in the query, and not in `update` mode.
fn session_key(
    agg: &Aggregate,
    split: &rewrite::SplitAggregation,
    mode: Option<OutputMode>,
) -> Result<Option<usize>> {
    if session::used_in(&agg.input) {
        return Err(session_refused(
            "session_window can only be a GROUP BY key of the query's aggregation, not computed below it",
        ));
    }
    let keys: Vec<usize> = (0..split.groups.len())
        .filter(|&i| session::is_session(&split.groups[i]))
        .collect();
    let [i] = keys.as_slice() else {
        return match keys.len() {
            0 => Ok(None),
            _ => Err(session_refused(
                "a GROUP BY may hold one session_window; group by one session_window(ts, gap) and plain columns",
            )),
        };
    };
    session::literal_gap(&split.groups[*i]).map_err(|m| session_refused(&m))?;
    let windowed = split.groups.iter().any(|g| {
        matches!(rewrite::unalias(g), datafusion::logical_expr::Expr::ScalarFunction(f) if f.func.name() == window::WINDOW)
    });
    if windowed {
        return Err(session_refused(
            "session_window cannot be combined with window(...) in one GROUP BY",
        ));
    }
    if split.groups.len() < 2 {
        return Err(session_refused(SESSION_GLOBAL));
    }
    if mode == Some(OutputMode::Update) {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!("[transform] {SESSION_UPDATE}"),
        )
        .with_context("option", OUTPUT_MODE_OPTION)
        .with_context("operator", "session_window"));
    }
    Ok(Some(*i))
}

/// Spark's refusal of a session window as the only grouping key of a stream.
const SESSION_GLOBAL: &str = "Global aggregation with session window in streaming query is not supported; group by session_window(ts, gap) and at least one column";

/// Spark's refusal of a session window in update mode.
const SESSION_UPDATE: &str = "Invalid streaming output mode: update. This output mode is not supported for session window streaming aggregations on streaming DataFrames/DataSets; use outputMode = \"append\" (with a watermark: a session is emitted once, when the watermark passes its end) or \"complete\"";

/// The output columns that carry the grouping keys, in output order, when the query selects
/// every one of them unchanged (through aliases): what identifies a group's row across batches
/// for a sink that upserts. `None` when a key is dropped or computed on.
fn update_key(upper: &[&LogicalPlan], agg: &Aggregate, output: &SchemaRef) -> Option<Vec<String>> {
    let n_groups = agg.group_expr.len();
    let mut names: Vec<Option<String>> = (0..n_groups)
        .map(|i| Some(agg.schema.field(i).name().clone()))
        .collect();
    for node in upper.iter().rev() {
        let LogicalPlan::Projection(p) = node else {
            continue;
        };
        for name in names.iter_mut() {
            *name = name.take().and_then(|wanted| {
                p.expr
                    .iter()
                    .enumerate()
                    .find_map(|(j, e)| match rewrite::unalias(e) {
                        datafusion::logical_expr::Expr::Column(c) if c.name == wanted => {
                            Some(p.schema.field(j).name().clone())
                        }
                        _ => None,
                    })
            });
        }
    }
    let names: Vec<String> = names.into_iter().collect::<Option<_>>()?;
    let mut keyed: Vec<(usize, String)> = names
        .into_iter()
        .map(|n| output.index_of(&n).ok().map(|i| (i, n)))
        .collect::<Option<_>>()?;
    keyed.sort();
    keyed.dedup();
    Some(keyed.into_iter().map(|(_, n)| n).collect())
}

fn register(ctx: &SessionContext, name: &str, schema: &SchemaRef, slot: &BatchSlot) -> Result<()> {
    ctx.register_table(
        name,
        Arc::new(SourceTable::new(Arc::clone(schema), slot.clone())),
    )
    .map(|_| ())
    .map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            format!("[transform] registering {name}: {e}"),
        )
    })
}

/// The watermark of `spec`, checked: its column is a TIMESTAMP of `source`, and a grouping key
/// tells when a group is final (else only `update` may use it, to drop late rows and evict
/// nothing, which Spark allows; `complete` keeps every group, so a watermark there is refused
/// as ignored).
fn watermark(
    input: &SchemaRef,
    w: &crate::spec::Watermark,
    split: &rewrite::SplitAggregation,
    mode: Option<OutputMode>,
) -> Result<aggregation::WatermarkSpec> {
    let column = watermark_column(input, w)?;
    if mode == Some(OutputMode::Complete) {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            "[transform] a watermark has no effect in complete mode (every group is kept and emitted every batch), so it would be ignored; use outputMode = \"append\" or \"update\", or remove the watermark",
        )
        .with_context("option", "transform.watermark"));
    }
    let delay = watermark_delay(w)?;
    Ok(aggregation::WatermarkSpec {
        column,
        delay_ms: delay.as_millis().min(i64::MAX as u128) as i64,
        expiry: split.expiry(&w.event_time),
    })
}

/// The watermark's `delayThreshold`, parsed.
pub(crate) fn watermark_delay(w: &crate::spec::Watermark) -> Result<std::time::Duration> {
    window::parse_interval(&w.delay_threshold).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "[transform] watermark.delayThreshold '{}' is not an interval such as '10 seconds'",
                w.delay_threshold
            ),
        )
        .with_context("option", "transform.watermark.delayThreshold")
    })
}

/// The index of the watermark's column in `input`, checked to be a TIMESTAMP.
pub(crate) fn watermark_column(input: &SchemaRef, w: &crate::spec::Watermark) -> Result<usize> {
    let option = |o: &str| format!("transform.watermark.{o}");
    let Some((column, field)) = input.column_with_name(&w.event_time) else {
        let names: Vec<&str> = input.fields().iter().map(|f| f.name().as_str()).collect();
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "[transform] watermark.eventTime '{}' is not a column of source (columns: {})",
                w.event_time,
                names.join(", ")
            ),
        )
        .with_context("option", option("eventTime")));
    };
    if !matches!(field.data_type(), arrow_schema::DataType::Timestamp(_, _)) {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "[transform] watermark.eventTime '{}' is {}, not a TIMESTAMP",
                w.event_time,
                field.data_type()
            ),
        )
        .with_context("option", option("eventTime")));
    }
    Ok(column)
}
