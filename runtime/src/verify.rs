//! `tributary checkpoint verify <dir>`: the checks a pipeline runs before it resumes
//! ([`crate::checkpoint::verify`]), on demand and without running anything.
//!
//! Without a pipeline file it checks what the checkpoint alone can prove: `metadata.json`, the
//! continuity of the offsets and commits logs, and the source's own state against them (the
//! source connector is named by `metadata.json`). With `--pipeline` it also builds the
//! pipeline's sinks and checks each one's own record (its owner, its last batch) against the
//! logs, exactly as `run` does before its first batch.

use std::path::Path;

use tributary_sdk::{Error, ErrorCode, Result, SecretStore};

use crate::checkpoint::verify;
use crate::checkpoint::Checkpoint;
use crate::core::{verify_source_state, Pipeline};
use crate::pipeline::PipelineSpec;
use crate::registry::Registry;

/// What a verification checked, for the line printed when nothing is damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Batches in the offsets log.
    pub planned: Option<u64>,
    /// The last committed batch.
    pub committed: Option<u64>,
    /// The source connector whose state was checked.
    pub source: String,
    /// The sinks checked (with `--pipeline`).
    pub sinks: Vec<String>,
}

impl std::fmt::Display for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let upto = |b: Option<u64>| b.map_or("none".to_string(), |b| format!("0..={b}"));
        write!(
            f,
            "checkpoint is whole: metadata.json, offsets {}, commits {}, the state of source '{}'",
            upto(self.planned),
            upto(self.committed),
            self.source
        )?;
        if self.sinks.is_empty() {
            write!(f, " (sinks not checked: give --pipeline)")
        } else {
            write!(f, ", sinks {}", self.sinks.join(", "))
        }
    }
}

/// Verifies the checkpoint at `dir` (and, with `pipeline`, its sinks): `Ok` with what was
/// checked, or one `CHECKPOINT_DAMAGED` error naming every damaged part.
pub async fn verify_checkpoint(
    dir: &Path,
    registry: &Registry,
    pipeline: Option<(&PipelineSpec, std::sync::Arc<dyn SecretStore>)>,
) -> Result<Verified> {
    let inspection = verify::inspect(dir)?;
    if !inspection.logs.has_metadata && inspection.damages.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidPipeline,
            format!(
                "{} is not a checkpoint (no metadata.json, no logged batch)",
                dir.display()
            ),
        )
        .with_context("path", dir.display()));
    }
    let verify::Inspection { logs, damages } = inspection;
    let checkpoint = Checkpoint::open_existing(dir).ok();
    let meta = match &checkpoint {
        Some(ck) => ck.metadata().ok().flatten(),
        None => None,
    };
    let source = meta
        .as_ref()
        .map(|m| m.source.connector.clone())
        .unwrap_or_default();
    if !damages.is_empty() {
        return Err(verify::damaged(dir, &damages));
    }
    // The source's own check names its part and the remedy itself.
    if let Some(ck) = &checkpoint {
        verify_source_state(ck, registry, &source, &logs.batches)?;
    }
    let mut sinks = Vec::new();
    if let Some((spec, secrets)) = pipeline {
        if spec.checkpoint != dir {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "the pipeline's checkpoint is {}, not {}",
                    spec.checkpoint.display(),
                    dir.display()
                ),
            )
            .with_context("option", "checkpoint"));
        }
        let mut p = Pipeline::build(spec, registry, secrets)?;
        sinks = spec.sinks.iter().map(|(n, _)| n.clone()).collect();
        p.verify_only().await?;
    }
    Ok(Verified {
        planned: logs.last_planned,
        committed: logs.last_committed,
        source,
        sinks,
    })
}
