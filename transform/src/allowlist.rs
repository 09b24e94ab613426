//! Which queries may run on a stream: stateless operators only, in the spirit of Spark's
//! real-time mode allowlist.
//!
//! Two checks, both at start:
//!
//! 1. [`check_logical`] walks the query as written (before optimisation, subqueries included)
//!    and refuses, naming the operator, anything whose input is the stream and whose result
//!    depends on more than one batch: aggregations (GROUP BY, aggregate functions), window
//!    functions, DISTINCT, ORDER BY, LIMIT/OFFSET, recursive queries, a join of `source` with
//!    itself, a FULL join with a static table, an outer/semi/anti join that preserves the static
//!    side, a UNION of the stream with a static table, and a query that does not read `source`.
//!    Operators over static tables alone (an aggregate in a scalar subquery over a dimension
//!    table) are allowed: they run once.
//! 2. [`check_physical`] walks the physical plan DataFusion made of it: every operator above the
//!    stream's scan must be one that can be executed again for each batch without carrying
//!    state (projection, filter, unnest, union, batch coalescing, and joins whose build side, the
//!    one collected once and cached, is static). This catches what the optimiser introduced
//!    (a NOT IN that DataFusion cannot plan with the stream on the probe side).

use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::JoinType;
use datafusion::logical_expr::{Distinct, LogicalPlan};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{CrossJoinExec, HashJoinExec, NestedLoopJoinExec};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::unnest::UnnestExec;
use datafusion::physical_plan::ExecutionPlan;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::error::SQL_OPTION;
use crate::source_table::is_source_scan;
use crate::SOURCE_TABLE;

/// Refuses a query that keeps state across batches (see the module docs).
pub(crate) fn check_logical(plan: &LogicalPlan) -> Result<()> {
    if !reads_source(plan)? {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "[transform] sql does not read the stream: the query must select from the table '{SOURCE_TABLE}' (SELECT ... FROM {SOURCE_TABLE} ...)"
            ),
        )
        .with_context("option", SQL_OPTION));
    }
    Ok(())
}

/// Whether `plan` reads `source`; refuses the stateful operators above it on the way up.
fn reads_source(plan: &LogicalPlan) -> Result<bool> {
    let mut inputs = Vec::new();
    for input in plan.inputs() {
        inputs.push(reads_source(input)?);
    }
    let mut subqueries = Vec::new();
    plan.apply_subqueries(|sub| {
        subqueries.push(sub.clone());
        Ok(TreeNodeRecursion::Jump)
    })
    .map_err(|e| internal(format!("walking the query's subqueries: {e}")))?;
    let mut subquery_reads = false;
    for sub in &subqueries {
        subquery_reads |= reads_source(sub)?;
    }
    let input_reads = inputs.iter().any(|r| *r);

    if subquery_reads {
        return Err(if input_reads {
            stateful(
                "a subquery over source inside a query over source (a join of the stream with itself)",
                "subquery",
            )
        } else {
            stateful(
                "a subquery over source filtering or projecting a static table (the static table would be matched against each batch separately)",
                "subquery",
            )
        });
    }
    let reads = input_reads || subquery_reads;

    match plan {
        LogicalPlan::TableScan(scan) => {
            return Ok(
                scan.table_name.table() == SOURCE_TABLE && scan.table_name.schema().is_none()
            );
        }
        LogicalPlan::Projection(_)
        | LogicalPlan::Filter(_)
        | LogicalPlan::Subquery(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Repartition(_)
        | LogicalPlan::Unnest(_)
        | LogicalPlan::Values(_)
        | LogicalPlan::EmptyRelation(_) => {}
        _ if !reads => {}
        LogicalPlan::Aggregate(agg) => {
            let mut what = String::from("aggregation");
            if !agg.group_expr.is_empty() {
                let groups: Vec<String> = agg
                    .group_expr
                    .iter()
                    .map(|e| e.human_display().to_string())
                    .collect();
                what.push_str(&format!(" GROUP BY {}", groups.join(", ")));
            }
            if !agg.aggr_expr.is_empty() {
                let names: Vec<String> = agg
                    .aggr_expr
                    .iter()
                    .map(|e| e.human_display().to_string())
                    .collect();
                what.push_str(&format!(" with aggregate function {}", names.join(", ")));
            }
            return Err(stateful(&what, "aggregation"));
        }
        LogicalPlan::Window(w) => {
            let names: Vec<String> = w
                .window_expr
                .iter()
                .map(|e| e.human_display().to_string())
                .collect();
            return Err(stateful(
                &format!("window function {}", names.join(", ")),
                "window",
            ));
        }
        LogicalPlan::Distinct(Distinct::All(_)) => {
            return Err(stateful(
                "DISTINCT (to drop repeated rows across batches use [transform] dropDuplicates = [columns], Spark's dropDuplicates)",
                "distinct",
            ))
        }
        LogicalPlan::Distinct(Distinct::On(_)) => {
            return Err(stateful(
                "DISTINCT ON (to keep the first row per key across batches use [transform] dropDuplicates = [columns])",
                "distinct",
            ))
        }
        LogicalPlan::Sort(_) => {
            return Err(stateful(
                "ORDER BY (a stream has no order across batches)",
                "sort",
            ))
        }
        LogicalPlan::Limit(_) => {
            return Err(stateful(
                "LIMIT/OFFSET (a limit counts rows across batches)",
                "limit",
            ))
        }
        LogicalPlan::Join(join) => {
            if inputs.iter().all(|r| *r) {
                return Err(stateful(
                    "a join of source with itself (stream-stream join)",
                    "join",
                ));
            }
            check_join_side(join.join_type, inputs.first().copied().unwrap_or(false))?;
        }
        LogicalPlan::Union(_) => {
            if !inputs.iter().all(|r| *r) {
                return Err(stateful(
                    "UNION of source with a static table (the static rows would be emitted with every batch)",
                    "union",
                ));
            }
        }
        LogicalPlan::RecursiveQuery(_) => {
            return Err(stateful("a recursive query (WITH RECURSIVE)", "recursive"))
        }
        other => {
            return Err(stateful(
                &format!("the operator {}", other.display()),
                "unsupported",
            ))
        }
    }
    Ok(reads)
}

/// Stream-static joins Spark allows: inner, and outer/semi/anti joins that preserve the stream.
fn check_join_side(join_type: JoinType, stream_is_left: bool) -> Result<()> {
    let ok = match join_type {
        JoinType::Inner => true,
        JoinType::Left | JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => {
            stream_is_left
        }
        JoinType::Right | JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => {
            !stream_is_left
        }
        JoinType::Full => false,
    };
    if ok {
        return Ok(());
    }
    let what = if join_type == JoinType::Full {
        "a FULL OUTER JOIN of source with a static table (unmatched static rows are only known when the stream ends)".to_string()
    } else {
        format!(
            "a {join_type} join that keeps the static table's rows (unmatched static rows are only known when the stream ends; put source on the {} side)",
            if stream_is_left { "right" } else { "left" }
        )
    };
    Err(stateful(&what, "join"))
}

/// Refuses a physical plan with state across executions (see the module docs); returns whether
/// `plan` reads the stream.
pub(crate) fn check_physical(plan: &Arc<dyn ExecutionPlan>) -> Result<bool> {
    if is_source_scan(plan.as_ref()) {
        return Ok(true);
    }
    let mut reads = Vec::new();
    for child in plan.children() {
        reads.push(check_physical(child)?);
    }
    if !reads.iter().any(|r| *r) {
        return Ok(false);
    }
    let node = plan.as_ref();
    let build_side_static = || !reads.first().copied().unwrap_or(false);
    let ok = if node.is::<ProjectionExec>()
        || node.is::<FilterExec>()
        || node.is::<CoalescePartitionsExec>()
        || node.is::<CooperativeExec>()
        || node.is::<UnnestExec>()
        || node.is::<UnionExec>()
    {
        true
    } else if let Some(join) = node.downcast_ref::<HashJoinExec>() {
        if !build_side_static() {
            return Err(stateful(
                &format!(
                    "a {} join that DataFusion can only plan with the stream as the build side (NOT IN (subquery) is one: write NOT EXISTS instead)",
                    join.join_type()
                ),
                "join",
            ));
        }
        true
    } else if node.is::<NestedLoopJoinExec>() || node.is::<CrossJoinExec>() {
        if !build_side_static() {
            return Err(stateful(
                "a non-equi join that DataFusion plans with the stream as the build side",
                "join",
            ));
        }
        true
    } else {
        node.name() == "ScalarSubqueryExec" && reads.iter().skip(1).all(|r| !*r)
    };
    if ok {
        Ok(true)
    } else {
        Err(stateful(
            &format!(
                "the physical operator {} over the stream, which keeps state across batches",
                node.name()
            ),
            "unsupported",
        ))
    }
}

fn stateful(what: &str, operator: &str) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!(
            "[transform] sql uses {what}, which is not allowed on a stream: a transform runs on each batch on its own, so only stateless operators are allowed (projections, casts, filters, UNNEST, UNION ALL of source with itself, and joins of source with static tables)"
        ),
    )
    .with_context("option", SQL_OPTION)
    .with_context("operator", operator)
}

fn internal(message: String) -> Error {
    Error::new(ErrorCode::Internal, format!("[transform] {message}"))
}
