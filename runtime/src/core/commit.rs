//! The commit sequence of a batch, the same for every driver:
//!
//! 1. [`log`]: `offsets/<n>` = `[start, end)` is written atomically — before the batch is read
//!    (micro-batches) or once its end is known (real-time long batches).
//! 2. [`commit`]: every sink publishes batch `n` ([`SinkSet::commit`], idempotent per batch
//!    id) while the stateful stages save state version `n` (side by side: neither needs the
//!    other, and a crash before `commits/<n>` replays the batch from state version `n - 1`
//!    whichever of the two finished), then `commits/<n>` is written, then the source is told
//!    `end` is durable.
//!
//! A crash between the two replays batch `n` with exactly the logged range, from state version
//! `n - 1`.

use std::time::{Duration, Instant};

use tributary_sdk::{Offset, Result, Source, StagedOutput};

use super::sinks::SinkSet;
use super::stages::StageChain;
use crate::checkpoint::Checkpoint;

/// Where the commit's time went (the sinks' publish and the state save overlap: each is its
/// own time, their sum more than the commit's).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CommitTimes {
    /// Publishing the batch in the sinks.
    pub sinks: Duration,
    /// Saving the stages' state and writing `commits/<n>`.
    pub wal: Duration,
}

/// Step 1: logs batch `batch_id`'s range; returns the time it took.
pub(crate) fn log(
    checkpoint: &Checkpoint,
    batch_id: u64,
    start: &Offset,
    end: &Offset,
) -> Result<Duration> {
    let t = Instant::now();
    checkpoint.write_offsets(batch_id, start, end)?;
    Ok(t.elapsed())
}

/// Step 2: sinks publish, the stages' state is saved, `commits/<n>`, the source commits.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn commit(
    checkpoint: &Checkpoint,
    source: &mut dyn Source,
    sinks: &mut SinkSet,
    stages: &mut StageChain,
    batch_id: u64,
    end: &Offset,
    rows: u64,
    outputs: Vec<Vec<StagedOutput>>,
) -> Result<CommitTimes> {
    // the sinks are polled first: while one waits on its system, the state is written
    let published = async {
        let t = Instant::now();
        sinks.commit(batch_id, outputs).await.map(|()| t.elapsed())
    };
    let saved = async {
        let t = Instant::now();
        if stages.is_stateful() {
            stages.save(&checkpoint.stage_state_dir(), batch_id).await?;
        }
        Ok::<_, tributary_sdk::Error>(t.elapsed())
    };
    let (published, saved) = futures::join!(published, saved);
    // a sink's error first: it is the one the batch is retried for
    let sink_time = published?;
    let save_time = saved?;
    let t = Instant::now();
    checkpoint.write_commit(batch_id, rows)?;
    let wal = save_time + t.elapsed();
    source.commit(end).await?;
    tracing::info!(rows, end = %end.to_json_string(), "batch {batch_id} committed");
    Ok(CommitTimes {
        sinks: sink_time,
        wal,
    })
}
