//! Spark's `window(timeColumn, windowDuration)`: the tumbling event-time window a timestamp
//! falls in, as a struct `{start, end}` of the column's own timestamp type (start inclusive,
//! end exclusive; windows start at multiples of the duration since the epoch, as Spark's with
//! no `startTime`). Grouping by it counts per window; with a watermark on the same column an
//! aggregation can run in `append` mode (a window is final once the watermark passes its end).
//!
//! Sliding windows (`window(ts, size, slide)`) and `session_window` are refused naming them.

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
    let t = text.trim();
    let t = t
        .strip_prefix("interval ")
        .or_else(|| t.strip_prefix("INTERVAL "))
        .unwrap_or(t);
    tributary_sdk::options::parse_duration(t).filter(|d| !d.is_zero())
}

/// The struct type of a window over timestamps of type `ts`.
pub(crate) fn window_type(ts: &DataType) -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("start", ts.clone(), true),
        Field::new("end", ts.clone(), true),
    ]))
}

/// A duration in the timestamp's unit.
fn in_unit(d: Duration, unit: &TimeUnit) -> i64 {
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
            [_, _, _] | [_, _, _, _] => plan_err!(
                "window(timeColumn, windowDuration, slideDuration): sliding windows are not supported on a stream yet; use a tumbling window(timeColumn, windowDuration)"
            ),
            [other, _] => plan_err!(
                "window(timeColumn, windowDuration) needs a TIMESTAMP column, not {other}; CAST it AS TIMESTAMP"
            ),
            _ => plan_err!("window takes (timeColumn, windowDuration), e.g. window(ts, '1 minute')"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [ts, size] = args.args.as_slice() else {
            return exec_err!("window takes two arguments");
        };
        let size = match size {
            ColumnarValue::Scalar(
                ScalarValue::Utf8(Some(s))
                | ScalarValue::Utf8View(Some(s))
                | ScalarValue::LargeUtf8(Some(s)),
            ) => s.clone(),
            _ => return exec_err!("window's duration must be a literal such as '1 minute'"),
        };
        let Some(size) = parse_interval(&size) else {
            return exec_err!(
                "window duration '{size}' is not an interval such as '10 seconds', '1 minute' or '2 hours'"
            );
        };
        let ts = ts.to_array(args.number_rows)?;
        let ts_type = ts.data_type().clone();
        let DataType::Timestamp(unit, _) = &ts_type else {
            return exec_err!("window needs a TIMESTAMP column, not {ts_type}");
        };
        let step = in_unit(size, unit);
        let raw = cast(&ts, &DataType::Int64)?;
        let raw = raw.as_any().downcast_ref::<Int64Array>().ok_or_else(|| {
            datafusion::error::DataFusionError::Internal("timestamp as i64".into())
        })?;
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
