//! The source contract: a micro-batch stream with replay.
//!
//! The runtime drives a [`Source`] the way Spark drives a `MicroBatchStream`:
//!
//! 1. [`Source::initial_offset`] resolves the starting position (`startingOffsets`) for a new
//!    checkpoint. A restart never calls it; it resumes from the checkpoint.
//! 2. [`Source::latest_offset`] says where the next batch ends, honouring a [`ReadLimit`].
//!    Returning `start` itself means "no new data".
//! 3. [`Source::read_stream`] yields the records in `[start, end)` as a stream of parts. It is
//!    the primitive every source implements, and it is deterministic: the same range read again
//!    (after a crash) yields the same records, in the same order within each of the source's
//!    own pieces (a partition, a shard, a file). Exactly-once depends on this. A source keeps
//!    memory bounded by a part, not by the range (a 2 GB file, a million Kafka records), and
//!    sinks with a [`crate::PartWriter`] stage each part as it comes.
//!    [`Source::read`] is derived from it: the parts collected, for callers that want the whole
//!    range at once (tests, small ranges). Sources do not override it.
//! 4. [`Source::commit`] says everything up to `end` is durable downstream.
//! 5. [`Source::stop`] releases what the source holds.
//!
//! A scaled-out pipeline splits a range with [`Source::plan_partitions`] and reads each piece
//! with [`Source::read_partition`], also a stream of parts.
//!
//! A source that also supports real-time mode implements [`crate::StreamingSource`] and returns
//! it from [`Source::as_streaming`]; the micro-batch contract above still replays its batches.
//!
//! Sources are object-safe and used as `Box<dyn Source>` by the runtime, the conformance suite and
//! the plugin boundary alike.

use std::collections::BTreeMap;
use std::fmt::Debug;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;

use crate::error::Result;
use crate::input_partition::InputPartition;
use crate::offset::Offset;
use crate::read_limit::ReadLimit;

/// The parts of one range, in order (see [`Source::read_stream`]).
pub type BatchStream<'a> = futures::stream::BoxStream<'a, Result<RecordBatch>>;

/// A range already in memory as a [`BatchStream`]: for sources whose parts are small by
/// construction (a planned batch held within a byte budget, a plugin's answer).
pub fn batch_stream(parts: Vec<RecordBatch>) -> BatchStream<'static> {
    Box::pin(futures::stream::iter(parts.into_iter().map(Ok)))
}

/// `parts` with an error that comes before the first part returned as the call's error: a
/// range that cannot be read at all (data loss at its start, a refused connection) fails the
/// `read_stream` / `read_partition` call itself, as it did before any part was read.
pub async fn fail_before_first_part(parts: BatchStream<'_>) -> Result<BatchStream<'_>> {
    use futures::StreamExt;
    let mut parts = parts.peekable();
    if let Some(Err(_)) = std::pin::Pin::new(&mut parts).peek().await {
        if let Some(Err(e)) = parts.next().await {
            return Err(e);
        }
    }
    Ok(Box::pin(parts))
}

/// Per-source metrics reported in progress events (`numFilesOutstanding`, `avgMsBehindLatest`, ...).
pub type SourceMetrics = BTreeMap<String, serde_json::Value>;

/// A stable description of what a source reads, stored in the checkpoint. A checkpoint written for
/// one identity is refused for another (a different connector, path, topic set, ...).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceIdentity {
    /// The connector name (`files`, `kafka`, ...).
    pub connector: String,
    /// What it reads, canonical: a path, a subscription; never a secret.
    pub target: String,
}

/// A micro-batch source with deterministic replay.
#[async_trait]
pub trait Source: Send + Debug {
    /// The Arrow schema of the parts [`Source::read_stream`] yields.
    fn schema(&self) -> SchemaRef;

    /// What this source reads, for checkpoint compatibility checks.
    fn identity(&self) -> SourceIdentity;

    /// The limit the source's own options ask for (`maxOffsetsPerTrigger`, `maxFilesPerTrigger`).
    fn default_read_limit(&self) -> ReadLimit {
        ReadLimit::All
    }

    /// The first position of a new query (from `startingOffsets` and similar options).
    async fn initial_offset(&mut self) -> Result<Offset>;

    /// Called once before an `availableNow` run: the source fixes the data it will read in this run
    /// (later [`Source::latest_offset`] calls never go past that snapshot). It may go on
    /// discovering that data after this returns, handing out what it found so far, as long as
    /// nothing that arrived after the call is handed out (the files source walks a directory
    /// while the first batches are read, leaving out files modified after the call; file times
    /// come from the kernel's coarse clock, so it first waits for that clock to pass the start).
    async fn prepare_available_now(&mut self) -> Result<()> {
        Ok(())
    }

    /// The end of the next batch starting at `start`, at most `limit` away. `start` means no data.
    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset>;

    /// The records in `[start, end)` as a stream of parts (see the module docs, step 3): the
    /// same range always yields the same records. Memory should be bounded by a part, however
    /// large the range.
    async fn read_stream<'a>(&'a mut self, start: &Offset, end: &Offset)
        -> Result<BatchStream<'a>>;

    /// The records in `[start, end)` at once: [`Source::read_stream`]'s parts, collected.
    async fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>> {
        use futures::TryStreamExt;
        self.read_stream(start, end).await?.try_collect().await
    }

    /// Everything up to `end` is durable downstream.
    async fn commit(&mut self, end: &Offset) -> Result<()>;

    /// Metrics for the last planned batch (lag, outstanding files, data-loss counts).
    fn metrics(&self) -> SourceMetrics {
        SourceMetrics::new()
    }

    /// Releases connections, consumers and other resources.
    async fn stop(&mut self) -> Result<()>;

    /// Splits `[start, end)` into input partitions that a source built elsewhere from the same
    /// connector and options reads with [`Source::read_partition`] (see
    /// [`crate::input_partition`]). Deterministic: the same range and `parallelism` give the
    /// same partitions. `parallelism` is the engine's task slots (Spark's
    /// `defaultParallelism`): a source whose pieces are not fixed (groups of files) aims for
    /// about that many; one whose pieces are (Kafka partitions) may ignore it.
    /// `Ok(None)` (the default) keeps the range whole, read on the driver.
    async fn plan_partitions(
        &mut self,
        start: &Offset,
        end: &Offset,
        parallelism: usize,
    ) -> Result<Option<Vec<InputPartition>>> {
        let _ = (start, end, parallelism);
        Ok(None)
    }

    /// Reads one partition planned by [`Source::plan_partitions`], usually on another machine.
    /// The source was built from the same options but never asked to plan or commit.
    async fn read_partition<'a>(
        &'a mut self,
        partition: &InputPartition,
    ) -> Result<BatchStream<'a>> {
        Err(crate::error::Error::new(
            crate::error::ErrorCode::Internal,
            format!(
                "{} does not read input partitions (asked for partition {}: {})",
                self.identity().connector,
                partition.index,
                partition.label
            ),
        ))
    }

    /// The streaming read of real-time mode, for sources that support it (see
    /// [`crate::streaming`]); `None` (the default) keeps the source micro-batch only.
    fn as_streaming(&mut self) -> Option<&mut dyn crate::streaming::StreamingSource> {
        None
    }
}
