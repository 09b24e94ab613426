//! Spark's `session_window(timeColumn, gapDuration)`: a window per key that starts at its first
//! event and ends `gap` after its last, so events closer than `gap` to each other fall in one
//! session. It yields Spark's `{start, end}` struct, like [`super::window`].
//!
//! As a grouping key of a stream's aggregation, each row first gets its own session
//! `{ts, ts + gap}` (the UDF), the batch's rows are aggregated by those, and at the merge the
//! state's sessions and the batch's are [`sessionize`]d: sorted by the other keys and the start,
//! overlapping sessions of the same key become one (`next.start <= current.end`, as Spark's
//! `MergingSessionsIterator`), and the merge groups by the merged sessions. A session is final
//! once the watermark passes its end. As in Spark, a session window needs another grouping key,
//! runs in `append` or `complete` mode, not in `update`, and not under the `realTime` trigger.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, StructArray};
use arrow_schema::DataType;
use datafusion::arrow::compute::cast;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use tributary_sdk::{Error, ErrorCode, Result};

use super::window::{in_unit, literal_interval, parse_interval, timestamps, window_type};

/// The function's name in SQL.
pub(crate) const SESSION_WINDOW: &str = "session_window";

/// `session_window(ts, '5 minutes')`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SessionWindow {
    signature: Signature,
}

/// The UDF to register in a session.
pub(crate) fn udf() -> ScalarUDF {
    ScalarUDF::from(SessionWindow {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

impl ScalarUDFImpl for SessionWindow {
    fn name(&self) -> &str {
        SESSION_WINDOW
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        match args {
            [ts @ DataType::Timestamp(_, _), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8] => {
                Ok(window_type(ts))
            }
            [other, _] => plan_err!(
                "session_window(timeColumn, gapDuration) needs a TIMESTAMP column, not {other}; CAST it AS TIMESTAMP"
            ),
            _ => plan_err!(
                "session_window takes (timeColumn, gapDuration), e.g. session_window(ts, '5 minutes')"
            ),
        }
    }

    /// Each row's own session, `{ts, ts + gap}`; the merge across rows is [`sessionize`].
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [ts, gap] = args.args.as_slice() else {
            return exec_err!("session_window takes (timeColumn, gapDuration)");
        };
        let gap = literal_interval(gap, SESSION_WINDOW, "gap")?;
        let ts = ts.to_array(args.number_rows)?;
        let (raw, ts_type, unit) = timestamps(&ts, SESSION_WINDOW)?;
        let gap = in_unit(gap, &unit);
        let ends: Int64Array = raw
            .iter()
            .map(|v| v.map(|v| v.saturating_add(gap)))
            .collect();
        let DataType::Struct(fields) = window_type(&ts_type) else {
            return exec_err!("session window type");
        };
        let (starts, ends) = (cast(&ts, &ts_type)?, cast(&ends, &ts_type)?);
        Ok(ColumnarValue::Array(Arc::new(StructArray::try_new(
            fields,
            vec![starts, ends],
            ts.logical_nulls(),
        )?)))
    }
}

/// Whether `e` (a grouping key) is `session_window(...)`.
pub(crate) fn is_session(e: &Expr) -> bool {
    match e {
        Expr::Alias(a) => is_session(&a.expr),
        Expr::ScalarFunction(f) => f.func.name() == SESSION_WINDOW,
        _ => false,
    }
}

/// The gap of a `session_window(ts, gap)` key, when it is a literal interval; the message
/// otherwise (Spark's per-row gap expressions are not supported).
pub(crate) fn literal_gap(e: &Expr) -> std::result::Result<std::time::Duration, String> {
    match e {
        Expr::Alias(a) => literal_gap(&a.expr),
        Expr::ScalarFunction(f) => match f.args.get(1) {
            Some(Expr::Literal(
                ScalarValue::Utf8(Some(t))
                | ScalarValue::Utf8View(Some(t))
                | ScalarValue::LargeUtf8(Some(t)),
                _,
            )) => parse_interval(t).ok_or_else(|| {
                format!("session_window gap '{t}' is not an interval such as '30 seconds' or '5 minutes'")
            }),
            _ => Err("session_window's gap must be a literal interval such as '5 minutes' (a gap computed per row is not supported)".into()),
        },
        _ => Err("not a session_window".into()),
    }
}

/// Whether any expression of `plan` (any node) calls `session_window`.
pub(crate) fn used_in(plan: &datafusion::logical_expr::LogicalPlan) -> bool {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let mut found = false;
    let _ = plan.apply(|node| {
        for e in node.expressions() {
            let _ = e.apply(|x| {
                if matches!(x, Expr::ScalarFunction(f) if f.func.name() == SESSION_WINDOW) {
                    found = true;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            });
        }
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] session windows: {what}: {e}"),
    )
}

/// The sessions after merging: `keys` are the grouping columns of state and batch rows
/// together, `session` the index of the session struct among them. Returns the session column
/// with every row's merged session, and which rows' sessions changed. Rows with a null session
/// stay as they are.
pub(crate) fn sessionize(keys: &[ArrayRef], session: usize) -> Result<(ArrayRef, BooleanArray)> {
    let column = keys
        .get(session)
        .ok_or_else(|| internal("the session key", "is missing"))?;
    let sessions = column
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| internal("the session key", "is not a struct"))?;
    let (start_col, end_col) = (
        sessions
            .column_by_name("start")
            .ok_or_else(|| internal("the session key", "has no start"))?,
        sessions
            .column_by_name("end")
            .ok_or_else(|| internal("the session key", "has no end"))?,
    );
    let ts_type = start_col.data_type().clone();
    let as_i64 = |c: &ArrayRef| -> Result<Int64Array> {
        cast(c, &DataType::Int64)
            .map_err(|e| internal("a session bound", e))?
            .as_any()
            .downcast_ref::<Int64Array>()
            .cloned()
            .ok_or_else(|| internal("a session bound", "is not an integer"))
    };
    let (starts, ends) = (as_i64(start_col)?, as_i64(end_col)?);
    let others: Vec<ArrayRef> = keys
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != session)
        .map(|(_, c)| Arc::clone(c))
        .collect();
    let n = column.len();
    let rows = if others.is_empty() {
        None
    } else {
        let converter = RowConverter::new(
            others
                .iter()
                .map(|c| SortField::new(c.data_type().clone()))
                .collect(),
        )
        .map_err(|e| internal("the other keys", e))?;
        Some(
            converter
                .convert_columns(&others)
                .map_err(|e| internal("encoding the other keys", e))?,
        )
    };
    let valid = |i: usize| sessions.is_valid(i) && starts.is_valid(i) && ends.is_valid(i);
    let mut order: Vec<usize> = (0..n).filter(|&i| valid(i)).collect();
    order.sort_unstable_by(|&a, &b| {
        let by_key = match &rows {
            Some(r) => r.row(a).cmp(&r.row(b)),
            None => std::cmp::Ordering::Equal,
        };
        by_key.then(starts.value(a).cmp(&starts.value(b)))
    });
    // one sweep: consecutive rows of the same key whose start is within the current session
    let (mut new_start, mut new_end) = (starts.values().to_vec(), ends.values().to_vec());
    let mut run: Vec<usize> = Vec::new();
    let (mut cur_start, mut cur_end) = (0i64, 0i64);
    let flush = |run: &mut Vec<usize>, s: i64, e: i64, ns: &mut [i64], ne: &mut [i64]| {
        for &i in run.iter() {
            ns[i] = s;
            ne[i] = e;
        }
        run.clear();
    };
    for &i in &order {
        let same_key = run.last().is_some_and(|&last| match &rows {
            Some(r) => r.row(last) == r.row(i),
            None => true,
        });
        if same_key && starts.value(i) <= cur_end {
            cur_end = cur_end.max(ends.value(i));
        } else {
            flush(&mut run, cur_start, cur_end, &mut new_start, &mut new_end);
            (cur_start, cur_end) = (starts.value(i), ends.value(i));
        }
        run.push(i);
    }
    flush(&mut run, cur_start, cur_end, &mut new_start, &mut new_end);
    let changed: BooleanArray = (0..n)
        .map(|i| Some(valid(i) && (new_start[i] != starts.value(i) || new_end[i] != ends.value(i))))
        .collect();
    let (s, e): (ArrayRef, ArrayRef) = (
        Arc::new(Int64Array::new(new_start.into(), starts.nulls().cloned())),
        Arc::new(Int64Array::new(new_end.into(), ends.nulls().cloned())),
    );
    let (s, e) = (
        cast(&s, &ts_type).map_err(|err| internal("a session start", err))?,
        cast(&e, &ts_type).map_err(|err| internal("a session end", err))?,
    );
    let merged = StructArray::try_new(
        sessions.fields().clone(),
        vec![s, e],
        sessions.nulls().cloned(),
    )
    .map_err(|err| internal("the merged sessions", err))?;
    Ok((Arc::new(merged), changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{StringArray, TimestampSecondArray};
    use arrow_schema::{Fields, TimeUnit};

    fn sessions(bounds: &[(i64, i64)]) -> ArrayRef {
        let ts = DataType::Timestamp(TimeUnit::Second, None);
        let DataType::Struct(fields) = window_type(&ts) else {
            unreachable!()
        };
        let s: ArrayRef = Arc::new(TimestampSecondArray::from(
            bounds.iter().map(|b| b.0).collect::<Vec<_>>(),
        ));
        let e: ArrayRef = Arc::new(TimestampSecondArray::from(
            bounds.iter().map(|b| b.1).collect::<Vec<_>>(),
        ));
        Arc::new(StructArray::new(
            Fields::from(fields.to_vec()),
            vec![s, e],
            None,
        ))
    }

    fn bounds(a: &ArrayRef) -> Vec<(i64, i64)> {
        let s = a.as_any().downcast_ref::<StructArray>().unwrap();
        let get = |c: &ArrayRef| {
            c.as_any()
                .downcast_ref::<TimestampSecondArray>()
                .unwrap()
                .values()
                .to_vec()
        };
        let (st, en) = (get(s.column(0)), get(s.column(1)));
        st.into_iter().zip(en).collect()
    }

    #[test]
    fn overlapping_sessions_of_one_key_merge_and_others_stay() {
        // a: [0,10) [25,35) held; [8,18) bridges nothing to 25, [18,28) bridges 18 → 25
        // b: [5,15) apart from a's
        let keys: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["a", "a", "b", "a", "a"])),
            sessions(&[(0, 10), (25, 35), (5, 15), (8, 18), (18, 28)]),
        ];
        let (merged, changed) = sessionize(&keys, 1).unwrap();
        assert_eq!(
            bounds(&merged),
            vec![(0, 35), (0, 35), (5, 15), (0, 35), (0, 35)]
        );
        assert_eq!(
            changed.iter().map(|c| c.unwrap()).collect::<Vec<_>>(),
            vec![true, true, false, true, true]
        );
        // an event exactly at a session's end joins it (start <= end)
        let keys: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["a", "a"])),
            sessions(&[(0, 10), (10, 20)]),
        ];
        assert_eq!(
            bounds(&sessionize(&keys, 1).unwrap().0),
            vec![(0, 20), (0, 20)]
        );
    }
}
