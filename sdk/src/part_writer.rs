//! The incremental write of one micro-batch: memory bounded by a part, not by the batch.
//!
//! [`crate::Sink::write`] takes a whole batch, so a batch that reads a 2 GB file would sit in
//! memory before the sink sees it. A sink that can stage a batch piece by piece (a Parquet or
//! Delta sink writing files, the console printing rows) returns a [`PartWriter`] from
//! [`crate::Sink::as_part_writer`], and the host drives it with the parts of
//! [`crate::Source::read_stream`]:
//!
//! 1. [`PartWriter::begin_batch`] starts batch `n` with the batch's schema. A replayed `n`
//!    first discards whatever an unfinished attempt staged; a sink whose batch `n` is already
//!    durable ignores the parts that follow (the replay is skipped, as with `write`).
//! 2. [`PartWriter::write_part`] is called for each part, in order. Parts may be empty.
//! 3. [`PartWriter::commit_batch`] makes batch `n` visible, atomically for an exactly-once sink.
//!
//! An error in any step fails the batch; the host replays it from the offset log, which starts
//! again at step 1. Sinks that return `None` keep receiving whole batches through `write`.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;

use crate::error::Result;

/// The incremental write of one micro-batch (see the module docs).
#[async_trait]
pub trait PartWriter: Send {
    /// Starts batch `batch_id`; discards what an unfinished earlier attempt of it staged.
    async fn begin_batch(&mut self, batch_id: u64, schema: SchemaRef) -> Result<()>;

    /// Stages one part of the current batch.
    async fn write_part(&mut self, part: &RecordBatch) -> Result<()>;

    /// Makes the current batch visible (exactly once for an exactly-once sink).
    async fn commit_batch(&mut self) -> Result<()>;
}
