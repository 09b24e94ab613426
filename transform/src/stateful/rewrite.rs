//! An aggregation split into what state can hold: each aggregate function as its *partial*
//! value over one batch, the *merge* of partials (state ∪ the batch's partials) and the *final*
//! value read from the merged partials.
//!
//! | function | partial | merge | final |
//! |---|---|---|---|
//! | `count(x)` | `count(x)` | `sum` | the partial |
//! | `sum(x)`, `min(x)`, `max(x)` | itself | itself | the partial |
//! | `bool_and(x)`, `bool_or(x)` | itself | itself | the partial |
//! | `avg(x)` | `sum(x)`, `count(x)` | `sum`, `sum` | `sum / count` (null when `count = 0`) |
//!
//! Every other aggregate function, `DISTINCT`, `FILTER (WHERE ...)`, an ordered aggregate and
//! `GROUPING SETS` / `ROLLUP` / `CUBE` are refused naming them: their partial values cannot be
//! merged from what one row per group holds.

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{bool_and, bool_or, count, max, min, sum};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Expr};
use datafusion::prelude::{cast, col, lit, when};
use tributary_sdk::{Error, ErrorCode, Result};

use crate::error::SQL_OPTION;

/// The functions whose partial values merge.
pub(crate) const SUPPORTED: &str = "count, sum, min, max, avg, bool_and, bool_or";

/// How two partial values of one group merge: the merge plan's function, and the group
/// table's in-place update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Merge {
    Sum,
    Min,
    Max,
    And,
    Or,
}

/// How one aggregate function is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Count,
    Same,
    Avg,
}

/// One aggregate function of the query, split.
#[derive(Debug, Clone)]
pub(crate) struct SplitAggregate {
    kind: Kind,
    /// How its partial columns merge.
    merge: Merge,
    /// Partial expressions over the query's input, one per state column (two for `avg`).
    pub(crate) partials: Vec<Expr>,
}

/// The grouping keys and aggregate functions of the query's aggregation, split.
#[derive(Debug, Clone)]
pub(crate) struct SplitAggregation {
    /// The grouping expressions over the input.
    pub(crate) groups: Vec<Expr>,
    /// The aggregate functions.
    pub(crate) aggregates: Vec<SplitAggregate>,
    /// What the state of this query means (`GROUP BY ...; AGGREGATE ...`): a state written by
    /// another query is refused with both.
    pub(crate) signature: String,
}

/// How a group is known to be final once the watermark passes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// Grouping key `i` is `window(eventTime, ...)` or `session_window(eventTime, ...)`: final
    /// once the window's end ≤ watermark.
    WindowEnd(usize),
    /// Grouping key `i` is the event-time column itself: final once it is ≤ watermark.
    Key(usize),
}

impl Expiry {
    /// Each row's expiry time in epoch milliseconds (null: never final), from the grouping
    /// key of a state (or partial) batch.
    pub(crate) fn millis(
        &self,
        state: &arrow_array::RecordBatch,
    ) -> Result<arrow_array::Int64Array> {
        let internal = |what: &str| {
            Error::new(
                ErrorCode::Internal,
                format!("[transform] aggregation state: the window key {what}"),
            )
        };
        let key = match *self {
            Expiry::WindowEnd(i) => {
                let column = state.column(i);
                let s = column
                    .as_any()
                    .downcast_ref::<arrow_array::StructArray>()
                    .ok_or_else(|| internal("is not a struct"))?;
                s.column_by_name("end")
                    .cloned()
                    .ok_or_else(|| internal("has no end"))?
            }
            Expiry::Key(i) => std::sync::Arc::clone(state.column(i)),
        };
        super::clock::millis(&key)
    }
}

impl SplitAggregation {
    /// Which grouping key tells when a group is final under a watermark on `event_time`.
    pub(crate) fn expiry(&self, event_time: &str) -> Option<Expiry> {
        let is_event_time = |e: &Expr| matches!(e, Expr::Column(c) if c.name == event_time);
        self.groups
            .iter()
            .enumerate()
            .find_map(|(i, g)| match unalias(g) {
                Expr::ScalarFunction(f)
                    if (f.func.name() == super::window::WINDOW
                        || f.func.name() == super::session::SESSION_WINDOW)
                        && f.args.first().is_some_and(&is_event_time) =>
                {
                    Some(Expiry::WindowEnd(i))
                }
                e if is_event_time(e) => Some(Expiry::Key(i)),
                _ => None,
            })
    }
}

/// The name of grouping column `i` in the state.
pub(crate) fn group_column(i: usize) -> String {
    format!("__g{i}")
}

/// The name of partial column `j` in the state.
pub(crate) fn partial_column(j: usize) -> String {
    format!("__p{j}")
}

/// Splits `agg` (see the module docs), or refuses it naming what cannot be kept.
pub(crate) fn split(agg: &Aggregate) -> Result<SplitAggregation> {
    for g in &agg.group_expr {
        if matches!(g, Expr::GroupingSet(_)) {
            return Err(refused(
                "GROUPING SETS, ROLLUP and CUBE are not supported on a stream; group by plain columns or expressions",
            ));
        }
    }
    let mut aggregates = Vec::new();
    for e in &agg.aggr_expr {
        aggregates.push(split_one(e)?);
    }
    let groups: Vec<String> = agg
        .group_expr
        .iter()
        .map(|e| e.human_display().to_string())
        .collect();
    let functions: Vec<String> = agg
        .aggr_expr
        .iter()
        .map(|e| unalias(e).human_display().to_string())
        .collect();
    Ok(SplitAggregation {
        groups: agg.group_expr.clone(),
        aggregates,
        signature: format!(
            "GROUP BY [{}] AGGREGATE [{}]",
            groups.join(", "),
            functions.join(", ")
        ),
    })
}

pub(crate) fn unalias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => unalias(&a.expr),
        other => other,
    }
}

fn split_one(e: &Expr) -> Result<SplitAggregate> {
    let Expr::AggregateFunction(AggregateFunction { func, params }) = unalias(e) else {
        return Err(refused(&format!(
            "the aggregate expression {} is not supported on a stream",
            e.human_display()
        )));
    };
    let shown = unalias(e).human_display().to_string();
    if params.distinct {
        return Err(refused(&format!(
            "{shown}: DISTINCT aggregates keep every distinct value and are not supported on a stream"
        )));
    }
    if params.filter.is_some() {
        return Err(refused(&format!(
            "{shown}: FILTER (WHERE ...) on an aggregate is not supported on a stream; filter the rows in WHERE"
        )));
    }
    if !params.order_by.is_empty() {
        return Err(refused(&format!(
            "{shown}: ordered aggregates (WITHIN GROUP / ORDER BY) are not supported on a stream"
        )));
    }
    let name = func.name().to_ascii_lowercase();
    let itself = unalias(e).clone();
    let (kind, merge, partials) = match name.as_str() {
        "count" => (Kind::Count, Merge::Sum, vec![itself]),
        "sum" => (Kind::Same, Merge::Sum, vec![itself]),
        "min" => (Kind::Same, Merge::Min, vec![itself]),
        "max" => (Kind::Same, Merge::Max, vec![itself]),
        "bool_and" => (Kind::Same, Merge::And, vec![itself]),
        "bool_or" => (Kind::Same, Merge::Or, vec![itself]),
        "avg" | "mean" => {
            let [arg] = params.args.as_slice() else {
                return Err(refused(&format!("{shown}: avg takes one argument")));
            };
            (
                Kind::Avg,
                Merge::Sum,
                vec![sum(arg.clone()), count(arg.clone())],
            )
        }
        other => {
            return Err(refused(&format!(
                "the aggregate function {other} ({shown}) cannot be kept as state across batches (its partial values do not merge); supported: {SUPPORTED}"
            )))
        }
    };
    Ok(SplitAggregate {
        kind,
        merge,
        partials,
    })
}

impl SplitAggregation {
    /// How each partial column merges, in partial-column order.
    pub(crate) fn merges(&self) -> Vec<Merge> {
        self.aggregates
            .iter()
            .flat_map(|a| a.partials.iter().map(|_| a.merge))
            .collect()
    }

    /// The aggregation over the batch: grouping columns `__g<i>`, partial columns `__p<j>`.
    pub(crate) fn partial_exprs(&self) -> (Vec<Expr>, Vec<Expr>) {
        let groups = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| g.clone().alias(group_column(i)))
            .collect();
        let partials = self
            .aggregates
            .iter()
            .flat_map(|a| a.partials.iter().cloned())
            .enumerate()
            .map(|(j, p)| p.alias(partial_column(j)))
            .collect();
        (groups, partials)
    }

    /// The merge of state and batch partials, grouped by `__g<i>`; each merged column cast back
    /// to its partial type (`types`, in partial-column order) so that the state keeps one schema.
    pub(crate) fn merge_exprs(&self, types: &[DataType]) -> (Vec<Expr>, Vec<Expr>) {
        let groups = (0..self.groups.len())
            .map(|i| col(group_column(i)))
            .collect();
        let mut merged = Vec::new();
        let mut j = 0;
        for a in &self.aggregates {
            for _ in &a.partials {
                let c = col(partial_column(j));
                let e = match a.merge {
                    Merge::Min => min(c),
                    Merge::Max => max(c),
                    Merge::And => bool_and(c),
                    Merge::Or => bool_or(c),
                    Merge::Sum => sum(c),
                };
                let e = match types.get(j) {
                    Some(t) => cast(e, t.clone()),
                    None => e,
                };
                merged.push(e.alias(partial_column(j)));
                j += 1;
            }
        }
        (groups, merged)
    }

    /// The final value of each aggregate function from the merged partials, cast to `types`
    /// (the aggregation's own output types, in function order).
    pub(crate) fn final_exprs(&self, types: &[DataType]) -> Result<Vec<Expr>> {
        let mut out = Vec::new();
        let mut j = 0;
        for (k, a) in self.aggregates.iter().enumerate() {
            let e = match a.kind {
                Kind::Count | Kind::Same => col(partial_column(j)),
                Kind::Avg => {
                    let (s, c) = (col(partial_column(j)), col(partial_column(j + 1)));
                    when(
                        c.clone().eq(lit(0i64)),
                        lit(datafusion::scalar::ScalarValue::Float64(None)),
                    )
                    .otherwise(cast(s, DataType::Float64) / cast(c, DataType::Float64))
                    .map_err(|e| {
                        Error::new(
                            ErrorCode::Internal,
                            format!("[transform] avg's final value: {e}"),
                        )
                    })?
                }
            };
            j += a.partials.len();
            out.push(match types.get(k) {
                Some(t) => cast(e, t.clone()),
                None => e,
            });
        }
        Ok(out)
    }
}

fn refused(message: &str) -> Error {
    Error::new(ErrorCode::InvalidPipeline, format!("[transform] {message}"))
        .with_context("option", SQL_OPTION)
        .with_context("operator", "aggregation")
}
