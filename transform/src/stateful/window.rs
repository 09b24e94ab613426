//! Spark's `window(timeColumn, windowDuration)`: the tumbling event-time window a timestamp
//! falls in, as a struct `{start, end}` of the column's own timestamp type (start inclusive,
//! end exclusive; windows start at multiples of the duration since the epoch, as Spark's with
//! no `startTime`). Grouping by it counts per window; with a watermark on the same column an
//! aggregation can run in `append` mode (a window is final once the watermark passes its end).
//!
//! Sliding windows, `window(ts, '1 minute', '10 seconds')`: a row falls in every window whose
//! start is a multiple of the slide and that contains it (`size / slide` windows, as Spark's).
//! As a grouping key of an aggregation the row is expanded into its windows first
//! ([`windows_udf`], unnested) and grouped by each; anywhere else the sliding form is refused.
//! `session_window` is [`super::session`].

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, ArrayRef, Int64Array, StructArray};
use arrow_schema::{DataType, Field, Fields, TimeUnit};
use datafusion::arrow::compute::cast;
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The function's name in SQL.
pub(crate) const WINDOW: &str = "window";

/// `window(ts, '1 minute')`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Window {
    signature: Signature,
}

/// The UDF to register in a session.
pub(crate) fn udf() -> ScalarUDF {
    ScalarUDF::from(Window {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

/// Parses Spark's interval text (`1 minute`, `10 seconds`, `interval 2 hours`).
pub(crate) fn parse_interval(text: &str) -> Option<Duration> {
    // parse_duration takes Spark's interval strings, `interval` prefix included
    tributary_sdk::options::parse_duration(text).filter(|d| !d.is_zero())
}

/// The struct type of a window over timestamps of type `ts`.
pub(crate) fn window_type(ts: &DataType) -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("start", ts.clone(), true),
        Field::new("end", ts.clone(), true),
    ]))
}

/// A duration in the timestamp's unit.
pub(crate) fn in_unit(d: Duration, unit: &TimeUnit) -> i64 {
    let n = match unit {
        TimeUnit::Second => d.as_secs() as i128,
        TimeUnit::Millisecond => d.as_millis() as i128,
        TimeUnit::Microsecond => d.as_micros() as i128,
        TimeUnit::Nanosecond => d.as_nanos() as i128,
    };
    n.clamp(1, i64::MAX as i128) as i64
}

impl ScalarUDFImpl for Window {
    fn name(&self) -> &str {
        WINDOW
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        match args {
            [ts @ DataType::Timestamp(_, _), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8] => {
                Ok(window_type(ts))
            }
            [ts @ DataType::Timestamp(_, _), _, _] => Ok(window_type(ts)),
            [_, _, _, _] => plan_err!(
                "window(timeColumn, windowDuration, slideDuration, startTime): startTime is not supported; use window(timeColumn, windowDuration[, slideDuration])"
            ),
            [other, _] => plan_err!(
                "window(timeColumn, windowDuration) needs a TIMESTAMP column, not {other}; CAST it AS TIMESTAMP"
            ),
            _ => plan_err!("window takes (timeColumn, windowDuration), e.g. window(ts, '1 minute')"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [ts, size] = args.args.as_slice() else {
            return exec_err!(
                "a sliding window(timeColumn, windowDuration, slideDuration) can only be a GROUP BY key of the query's aggregation"
            );
        };
        let size = literal_interval(size, WINDOW, "duration")?;
        let ts = ts.to_array(args.number_rows)?;
        let (raw, ts_type, unit) = timestamps(&ts, WINDOW)?;
        let step = in_unit(size, &unit);
        let starts: Int64Array = raw
            .iter()
            .map(|v| v.map(|v| v.div_euclid(step) * step))
            .collect();
        let ends: Int64Array = starts
            .iter()
            .map(|v| v.map(|v| v.saturating_add(step)))
            .collect();
        let starts: ArrayRef = cast(&starts, &ts_type)?;
        let ends: ArrayRef = cast(&ends, &ts_type)?;
        let DataType::Struct(fields) = window_type(&ts_type) else {
            return exec_err!("window type");
        };
        let nulls = ts.logical_nulls();
        Ok(ColumnarValue::Array(Arc::new(StructArray::try_new(
            fields,
            vec![starts, ends],
            nulls,
        )?)))
    }
}

/// The name of the expanding form.
const WINDOWS: &str = "__tributary_sliding_windows";

/// `__tributary_sliding_windows(ts, size, slide)`: every sliding window containing `ts`, as a
/// list of window structs (unnested before grouping).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SlidingWindows {
    signature: Signature,
}

/// The expanding UDF.
pub(crate) fn windows_udf() -> ScalarUDF {
    ScalarUDF::from(SlidingWindows {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

/// Argument `what` of function `func`: a literal interval such as `'1 minute'`.
pub(crate) fn literal_interval(v: &ColumnarValue, func: &str, what: &str) -> DfResult<Duration> {
    let text = match v {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)),
        ) => s.clone(),
        _ => return exec_err!("{func}'s {what} must be a literal such as '1 minute'"),
    };
    parse_interval(&text).ok_or_else(|| {
        datafusion::error::DataFusionError::Execution(format!(
            "{func} {what} '{text}' is not an interval such as '10 seconds', '1 minute' or '2 hours'"
        ))
    })
}

/// A TIMESTAMP argument of `func` as its raw values, its type and its unit.
pub(crate) fn timestamps(ts: &ArrayRef, func: &str) -> DfResult<(Int64Array, DataType, TimeUnit)> {
    let ts_type = ts.data_type().clone();
    let DataType::Timestamp(unit, _) = &ts_type else {
        return exec_err!("{func} needs a TIMESTAMP column, not {ts_type}");
    };
    let unit = *unit;
    let raw = cast(ts, &DataType::Int64)?;
    let raw = raw
        .as_any()
        .downcast_ref::<Int64Array>()
        .cloned()
        .ok_or_else(|| datafusion::error::DataFusionError::Internal("timestamp as i64".into()))?;
    Ok((raw, ts_type, unit))
}

impl ScalarUDFImpl for SlidingWindows {
    fn name(&self) -> &str {
        WINDOWS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        match args {
            [ts @ DataType::Timestamp(_, _), _, _] => Ok(DataType::List(Arc::new(Field::new(
                "item",
                window_type(ts),
                true,
            )))),
            _ => plan_err!(
                "window(timeColumn, windowDuration, slideDuration) needs a TIMESTAMP column"
            ),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [ts, size, slide] = args.args.as_slice() else {
            return exec_err!("sliding windows take three arguments");
        };
        let (size, slide) = (
            literal_interval(size, WINDOW, "duration")?,
            literal_interval(slide, WINDOW, "slide")?,
        );
        if slide > size {
            return exec_err!("window slide ({slide:?}) must not exceed its duration ({size:?})");
        }
        let ts = ts.to_array(args.number_rows)?;
        let (raw, ts_type, unit) = timestamps(&ts, WINDOW)?;
        let (size, slide) = (in_unit(size, &unit), in_unit(slide, &unit));
        let mut offsets = vec![0i32];
        let (mut starts, mut ends) = (Vec::new(), Vec::new());
        for v in raw.iter() {
            if let Some(t) = v {
                // Spark: the windows [s, s + size) with s a multiple of slide and s <= t < s + size
                let mut s = t.div_euclid(slide) * slide;
                while s > t.saturating_sub(size) {
                    starts.push(s);
                    ends.push(s.saturating_add(size));
                    s = s.saturating_sub(slide);
                }
            }
            let n = i32::try_from(starts.len()).map_err(|_| {
                datafusion::error::DataFusionError::Execution(
                    "too many sliding windows in one batch".into(),
                )
            })?;
            offsets.push(n);
        }
        let starts: ArrayRef = cast(&Int64Array::from(starts), &ts_type)?;
        let ends: ArrayRef = cast(&Int64Array::from(ends), &ts_type)?;
        let DataType::Struct(fields) = window_type(&ts_type) else {
            return exec_err!("window type");
        };
        let windows = StructArray::try_new(fields, vec![starts, ends], None)?;
        let list = arrow_array::ListArray::try_new(
            Arc::new(Field::new("item", window_type(&ts_type), true)),
            arrow_buffer_offsets(offsets),
            Arc::new(windows),
            ts.logical_nulls(),
        )?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}

fn arrow_buffer_offsets(offsets: Vec<i32>) -> datafusion::arrow::buffer::OffsetBuffer<i32> {
    datafusion::arrow::buffer::OffsetBuffer::new(datafusion::arrow::buffer::ScalarBuffer::from(
        offsets,
    ))
}

/// A grouping key `window(ts, size, slide)`: its arguments.
pub(crate) fn sliding_args(
    e: &datafusion::logical_expr::Expr,
) -> Option<Vec<datafusion::logical_expr::Expr>> {
    match e {
        datafusion::logical_expr::Expr::Alias(a) => sliding_args(&a.expr),
        datafusion::logical_expr::Expr::ScalarFunction(f)
            if f.func.name() == WINDOW && f.args.len() == 3 =>
        {
            Some(f.args.clone())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_interval_texts_parse() {
        assert_eq!(parse_interval("1 minute"), Some(Duration::from_secs(60)));
        assert_eq!(
            parse_interval("interval 10 seconds"),
            Some(Duration::from_secs(10))
        );
        assert_eq!(parse_interval("2 hours"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_interval("0 seconds"), None);
        assert_eq!(parse_interval("soon"), None);
    }
}
