//! `tributary state <checkpoint>`: what a checkpoint holds, as the connector describes it.
//!
//! The runtime never looks inside an offset or a connector's state directory. It reads which
//! connector the checkpoint is bound to, gives that connector's factory the state directory and
//! the offsets log ([`StateRequest`]), and prints the table it answers with — for the files
//! source, every discovered file with its batch and commit state (Databricks'
//! `cloud_files_state`). A connector that keeps no state of its own gets the offsets log itself.

use tributary_sdk::{Error, ErrorCode, LoggedBatch, Result, StateReport, StateRequest};

use crate::checkpoint::Checkpoint;
use crate::registry::Registry;

/// The state report of a checkpoint.
pub fn state_report(checkpoint: &Checkpoint, registry: &Registry) -> Result<StateReport> {
    let meta = checkpoint.metadata()?.ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "{} is not a checkpoint a pipeline has run in (no metadata.json)",
                checkpoint.dir().display()
            ),
        )
    })?;
    let batches = checkpoint.logged_batches()?;
    let factory = registry.source(&meta.source.connector)?;
    let state_dir = checkpoint.source_state_dir();
    let request = StateRequest {
        state_dir: &state_dir,
        batches: &batches,
    };
    match factory.describe_state(&request)? {
        Some(report) => Ok(report),
        None => Ok(offsets_log(&batches)),
    }
}

/// The offsets log as a report: one row per batch.
pub fn offsets_log(batches: &[LoggedBatch]) -> StateReport {
    let columns = ["batchId", "startOffset", "endOffset", "committed"];
    StateReport {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: batches
            .iter()
            .map(|b| {
                let mut row = serde_json::Map::new();
                row.insert("batchId".into(), b.batch_id.into());
                row.insert("startOffset".into(), b.start.as_json().clone());
                row.insert("endOffset".into(), b.end.as_json().clone());
                row.insert("committed".into(), b.committed.into());
                row
            })
            .collect(),
        summary: Some(format!(
            "{} batches, {} committed",
            batches.len(),
            batches.iter().filter(|b| b.committed).count()
        )),
    }
}

/// The stateful operators of a checkpoint (`tributary state --operators`): per stage, the
/// version a restart resumes from (the last committed batch's), its groups, bytes, watermark
/// and the query it belongs to.
#[cfg(feature = "sql")]
pub fn operators_report(checkpoint: &Checkpoint) -> Result<StateReport> {
    // a version saved by a batch whose commit never came is not what a restart resumes from;
    // with no batch committed, a restart starts every operator empty
    let operators = match checkpoint.committed_ids()?.into_iter().max() {
        Some(c) => tributary_transform::describe_state(&checkpoint.stage_state_dir(), Some(c))?,
        None => Vec::new(),
    };
    let columns = [
        "stage",
        "operator",
        "version",
        "rows",
        "bytes",
        "watermark",
        "query",
    ];
    let rows = operators
        .iter()
        .map(|o| {
            let mut row = serde_json::Map::new();
            row.insert("stage".into(), o.stage.clone().into());
            row.insert("operator".into(), o.operator.clone().into());
            row.insert("version".into(), o.version.into());
            row.insert("rows".into(), o.rows.into());
            row.insert("bytes".into(), o.bytes.into());
            if let Some(w) = o
                .watermark_ms
                .and_then(chrono::DateTime::from_timestamp_millis)
            {
                row.insert(
                    "watermark".into(),
                    w.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                        .into(),
                );
            }
            row.insert("query".into(), o.signature.clone().into());
            row
        })
        .collect();
    Ok(StateReport {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        summary: Some(format!("{} stateful operators", operators.len())),
    })
}
