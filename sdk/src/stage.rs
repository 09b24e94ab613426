//! Pipeline stages: transformations applied to a source's batches before the sinks see them.
//!
//! Decoding a binary payload with a schema (the `tributary-decode` crate) is a stage, not code
//! in the engine loop. The host builds a stage for a source from its [`SourceDescription`]
//! (which column carries the payload, which streams name the registry subject), opens it once
//! per run with the source's schema, and applies it to every batch:
//!
//! 1. [`StageFactory::validate`] checks the stage's options against the source without I/O
//!    (`tributary check`).
//! 2. [`StageFactory::create`] resolves secrets and builds the stage.
//! 3. [`Stage::open`] runs once per run (a restart resolves registry schemas again) and returns
//!    the schema the sinks receive.
//! 4. [`Stage::apply`] transforms each batch; malformed input in permissive mode becomes nulls
//!    and counters ([`Stage::metrics`]), never an error.
//!
//! ## Stages with state
//!
//! A stage whose result depends on earlier batches (an aggregation) exposes its state through
//! [`Stage::state`]. The host then drives it with the batch's commit, the same way in every
//! driver that runs it:
//!
//! 1. when the run opens, [`StageState::restore`] loads the state as of the last committed
//!    batch (`None`: no batch committed yet), so a replayed batch starts from exactly the state
//!    its first attempt started from;
//! 2. every part goes through [`Stage::apply`] (which may return no rows: the state absorbs
//!    them);
//! 3. when the batch's parts are all applied, [`StageState::end_batch`] returns the rows the
//!    batch emits (in the query's output mode), which go through the later stages to the sinks;
//! 4. after the sinks published the batch and before `commits/<n>` is written,
//!    [`StageState::save`] makes state version `n` durable. A crash before `commits/<n>`
//!    replays batch `n` from version `n - 1`, so versions `n - 1` and `n` are kept.
//!
//! Under the `realTime` trigger a batch is a long batch of chunks that reach the sinks as they
//! arrive. After each chunk's parts the host calls [`StageState::end_chunk`] instead: the
//! chunk's rows are emitted at once and the state moves on in memory, and what the chunks
//! changed adds up until [`StageState::save`] makes the long batch's version durable. A stage
//! says whether it can run so with [`StageState::real_time_refusal`].

use std::fmt::Debug;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;

use crate::description::SourceDescription;
use crate::error::Result;
use crate::options::{OptionSpec, Options};
use crate::secret::SecretStore;
use crate::source::SourceMetrics;

/// A transformation of every batch of one source.
#[async_trait]
pub trait Stage: Send + Debug {
    /// Called once per run with the source's schema; returns the output schema.
    async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef>;

    /// Transforms one batch. Async, so a stage that plans a query (DataFusion) or awaits I/O
    /// runs on the host's runtime instead of blocking its thread.
    async fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch>;

    /// Counters reported with the source's metrics (malformed records by reason, ...).
    fn metrics(&self) -> SourceMetrics {
        SourceMetrics::new()
    }

    /// The stage's state across batches, when it keeps any (see the module docs); `None` for
    /// a stateless stage. Asked after [`Stage::open`].
    fn state(&mut self) -> Option<&mut dyn StageState> {
        None
    }
}

/// The state a stage keeps across batches, versioned by batch id (see the module docs).
#[async_trait]
pub trait StageState: Send {
    /// Loads the state as of the end of batch `version` from `dir` (the stage's own directory
    /// in the checkpoint); `None` starts empty. A state written by another query is refused
    /// naming what changed.
    async fn restore(&mut self, dir: &Path, version: Option<u64>) -> Result<()>;

    /// The batch's parts were all applied: the rows the batch emits, if any.
    async fn end_batch(&mut self) -> Result<Option<RecordBatch>>;

    /// Makes the state after batch `version` durable under `dir` (atomically: a crash leaves
    /// the previous versions intact); versions older than `version - 1` may be removed.
    async fn save(&mut self, dir: &Path, version: u64) -> Result<()>;

    /// Spark's `stateOperators` entries for the last batch, one per operator the stage holds
    /// (a deduplication under an aggregation is two), in the order they process rows.
    fn progress(&self) -> Vec<StateOperatorProgress>;

    /// Why the state cannot run under the `realTime` trigger, or `None` when it can (it
    /// implements [`StageState::end_chunk`]). The host refuses the pipeline at start with it.
    fn real_time_refusal(&self) -> Option<String> {
        Some("its state has no per-chunk processing (StageState::end_chunk)".to_string())
    }

    /// Real-time mode: the parts applied since the last call are one chunk of a long batch.
    /// Returns the rows the chunk emits; the state after the chunk becomes the one the next
    /// chunk starts from, and the changes of every chunk are saved together by
    /// [`StageState::save`] at the long batch's end.
    async fn end_chunk(&mut self) -> Result<Option<RecordBatch>> {
        Err(crate::error::Error::new(
            crate::error::ErrorCode::Internal,
            "end_chunk called on a stage state that refuses real-time mode",
        ))
    }

    /// Spark's `eventTime` block for the batch's progress event (the event times the batch
    /// read and the watermark it ran with), when the stage has a watermark.
    fn event_time(&self) -> Option<EventTimeProgress> {
        None
    }

    /// Whether a batch without input would change the state or the output (Spark's
    /// `noDataMicroBatches`: the watermark moved, so groups may now be final). The micro-batch
    /// driver then runs such a batch when the source has nothing new.
    fn needs_no_data_batch(&self) -> bool {
        false
    }
}

/// One stateful operator's part of a progress event (Spark's `StateOperatorProgress`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateOperatorProgress {
    /// The operator, as Spark names it: `stateStoreSave` (an aggregation), `dedupe`
    /// (`dropDuplicates`), `dedupeWithinWatermark`.
    pub operator_name: String,
    /// Keys held after the batch.
    pub num_rows_total: u64,
    /// Keys the batch changed or added.
    pub num_rows_updated: u64,
    /// Keys the batch removed (evicted by a watermark).
    pub num_rows_removed: u64,
    /// Input rows dropped because they were later than the watermark.
    pub num_rows_dropped_by_watermark: u64,
    /// The state's size in memory, as Arrow holds it.
    pub memory_used_bytes: u64,
    /// Milliseconds spent making the state durable.
    pub commit_time_ms: u64,
    /// The watermark after the batch, when the query has one (the next batch's
    /// `eventTime.watermark`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watermark: Option<String>,
    /// The operator's own counters, as Spark's `customMetrics` (`numDroppedDuplicateRows`
    /// for a deduplication).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub custom_metrics: std::collections::BTreeMap<String, u64>,
}

/// Spark's `eventTime` block of a progress event: the minimum, maximum and average event time
/// of the rows the batch read (absent for a batch without rows) and the watermark it ran with, as
/// ISO-8601 UTC timestamps.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventTimeProgress {
    /// The mean event time of the batch's rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg: Option<String>,
    /// The latest event time of the batch's rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<String>,
    /// The earliest event time of the batch's rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<String>,
    /// The watermark the batch ran with (the epoch before the first batch moved it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watermark: Option<String>,
}

/// Builds stages of one kind (the pipeline file names it: `[source].decode`).
pub trait StageFactory: Send + Sync + Debug {
    /// The key of the stage in the pipeline's `[source]` table (`decode`).
    fn name(&self) -> &str;

    /// Every option the stage accepts.
    fn options(&self) -> Vec<OptionSpec>;

    /// Checks the options against the source without I/O (no secret resolved).
    fn validate(&self, options: &Options, source: &SourceDescription) -> Result<()>;

    /// Whether a stage with these options is created and opened without I/O and without a
    /// secret (a decoder given its schemas as text, not a registry), so `tributary check` can
    /// plan what follows it against its output schema. `false` (the default) stops the plan
    /// at this stage.
    fn opens_without_io(&self, options: &Options) -> bool {
        let _ = options;
        false
    }

    /// Builds the stage for this source.
    fn create(
        &self,
        options: &Options,
        source: &SourceDescription,
        secrets: &dyn SecretStore,
    ) -> Result<Box<dyn Stage>>;
}
