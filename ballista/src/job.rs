//! What the driver sends for one batch, and what each task sends back.
//!
//! A [`JobSpec`] is one batch of one pipeline: its input partitions and an opaque payload the
//! host's [`crate::TaskHandler`] understands (the pipeline's connectors, options and stages).
//! It travels inside the plan, so it never holds a secret: options that are secrets are
//! references (`{{secrets/scope/key}}`) that each executor resolves itself.
//!
//! Every task answers with one row of [`result_schema`], decoded by the driver into a
//! [`TaskResult`]: where the task ran, how long it took, and the handler's output (the sinks'
//! manifests).

use std::sync::Arc;

use arrow::array::{Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::{Error, ErrorCode, InputPartition, Result};

/// One batch of one pipeline, as the executors see it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobSpec {
    /// A name for logs and the scheduler's job list (`<pipeline> batch <n>`).
    pub name: String,
    /// The batch id (the offset log's `n`).
    pub batch_id: u64,
    /// The host's description of the work; opaque to this crate, never a secret.
    pub payload: serde_json::Value,
    /// The batch's input partitions; task `i` reads partition `i`.
    pub partitions: Vec<InputPartition>,
}

/// What one task did, as the driver reads it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskResult {
    /// The input partition the task read.
    pub partition: usize,
    /// The executor's id (`--id` of `tributary executor`).
    pub executor: String,
    /// The executor's host.
    pub host: String,
    /// Milliseconds the task took on the executor.
    pub millis: u64,
    /// When the task started on the executor (Unix epoch milliseconds, the executor's clock).
    pub started_ms: u64,
    /// The handler's output (the sinks' manifests).
    pub output: serde_json::Value,
}

/// The schema of the rows tasks return.
pub fn result_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::UInt32, false),
        Field::new("executor", DataType::Utf8, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("millis", DataType::UInt64, false),
        Field::new("started_ms", DataType::UInt64, false),
        Field::new("output", DataType::Utf8, false),
    ]))
}

/// One task's row.
pub(crate) fn result_batch(r: &TaskResult) -> Result<RecordBatch> {
    let output = serde_json::to_string(&r.output).map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            format!("task output is not serialisable: {e}"),
        )
    })?;
    RecordBatch::try_new(
        result_schema(),
        vec![
            Arc::new(UInt32Array::from(vec![r.partition as u32])),
            Arc::new(StringArray::from(vec![r.executor.as_str()])),
            Arc::new(StringArray::from(vec![r.host.as_str()])),
            Arc::new(UInt64Array::from(vec![r.millis])),
            Arc::new(UInt64Array::from(vec![r.started_ms])),
            Arc::new(StringArray::from(vec![output])),
        ],
    )
    .map_err(|e| Error::new(ErrorCode::Internal, format!("task result row: {e}")))
}

/// Decodes the rows the job returned.
pub(crate) fn decode_results(batches: &[RecordBatch]) -> Result<Vec<TaskResult>> {
    let bad = |what: &str| {
        Error::new(
            ErrorCode::Internal,
            format!("a task result has no valid '{what}' column"),
        )
    };
    let mut out = Vec::new();
    for b in batches {
        let col = |name: &str| b.column_by_name(name).ok_or_else(|| bad(name));
        let partition = col("partition")?
            .as_any()
            .downcast_ref::<UInt32Array>()
            .ok_or_else(|| bad("partition"))?;
        let executor = col("executor")?
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| bad("executor"))?;
        let host = col("host")?
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| bad("host"))?;
        let millis = col("millis")?
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| bad("millis"))?;
        let started = col("started_ms")?
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| bad("started_ms"))?;
        let output = col("output")?
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| bad("output"))?;
        for i in 0..b.num_rows() {
            if output.is_null(i) {
                return Err(bad("output"));
            }
            out.push(TaskResult {
                partition: partition.value(i) as usize,
                executor: executor.value(i).to_string(),
                host: host.value(i).to_string(),
                millis: millis.value(i),
                started_ms: started.value(i),
                output: serde_json::from_str(output.value(i)).map_err(|e| {
                    Error::new(ErrorCode::Internal, format!("task output is not JSON: {e}"))
                })?,
            });
        }
    }
    out.sort_by_key(|r| r.partition);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_round_trip_through_rows() {
        let r = TaskResult {
            partition: 3,
            executor: "exec-a".into(),
            host: "127.0.0.1".into(),
            millis: 12,
            started_ms: 1_700_000_000_000,
            output: serde_json::json!({"sinks": [{"rows": 5}]}),
        };
        let b = result_batch(&r).unwrap();
        assert_eq!(decode_results(&[b]).unwrap(), vec![r]);
    }
}
