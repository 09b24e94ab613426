//! The sink contract: idempotent writes keyed by batch id.
//!
//! The runtime writes batch `n` only after `offsets/n` is durable in the checkpoint, and may write
//! the same batch again after a crash (with exactly the same records). A sink that makes
//! [`Sink::write`] idempotent per batch id gives exactly-once end to end and says so with
//! [`Delivery::ExactlyOnce`]; one that cannot (a Kafka topic) says [`Delivery::AtLeastOnce`].

use std::fmt::Debug;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;

use crate::error::Result;

/// The end-to-end guarantee a sink gives when its batches are replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Delivery {
    /// A replayed batch replaces the earlier attempt: no duplicate.
    ExactlyOnce,
    /// A replayed batch may be written twice.
    AtLeastOnce,
}

/// What a sink's own records say about the checkpoint that writes it (see [`Sink::ledger`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SinkLedger {
    /// The checkpoint id the output records as its owner (the
    /// [`crate::ConnectorContext::checkpoint_id`] of the pipeline that first wrote it); `None`
    /// when the sink records no owner.
    pub owner: Option<String>,
    /// The highest batch id the output holds as committed (for this checkpoint, when the sink
    /// keeps batches per writer as Delta's `txn` does); `None` when it holds none.
    pub last_batch: Option<u64>,
}

/// A destination for record batches.
#[async_trait]
pub trait Sink: Send + Debug {
    /// The guarantee this sink gives under replay.
    fn delivery(&self) -> Delivery;

    /// Called once before the first write with the schema the batches will have.
    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        let _ = schema;
        Ok(())
    }

    /// Writes one micro-batch. Writing the same `batch_id` again replaces the earlier attempt
    /// when [`Sink::delivery`] is [`Delivery::ExactlyOnce`].
    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()>;

    /// Flushes and releases resources.
    async fn stop(&mut self) -> Result<()>;

    /// The sink's own record of what the pipeline committed to it, read after [`Sink::open`]
    /// and checked against the checkpoint before the first batch: an output owned by another
    /// checkpoint, or holding a batch beyond the checkpoint's offsets log, is refused (the
    /// checkpoint was replaced or lost its log, and resuming would duplicate or overwrite rows).
    /// A sink that records an owner claims an output without one here. `None` (the default)
    /// when the sink keeps no such record.
    async fn ledger(&mut self) -> Result<Option<SinkLedger>> {
        Ok(None)
    }

    /// The acknowledged write of real-time mode (see [`crate::streaming`]). Sinks that return
    /// `None` (the default) receive a long batch in one [`Sink::write`] at its checkpoint.
    fn as_streaming(&mut self) -> Option<&mut dyn crate::streaming::StreamingSink> {
        None
    }

    /// The incremental write of a micro-batch (see [`crate::part_writer`]). Sinks that return
    /// `None` (the default) receive each batch whole through [`Sink::write`].
    fn as_part_writer(&mut self) -> Option<&mut dyn crate::part_writer::PartWriter> {
        None
    }

    /// The staged write of a distributed batch (see [`crate::stager`]). Sinks that return
    /// `None` (the default) cannot be written by a distributed engine's executors.
    fn as_stager(&mut self) -> Option<&mut dyn crate::stager::PartitionStager> {
        None
    }
}
