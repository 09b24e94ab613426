//! Staged writes: executors stage a batch's partitions, the driver commits them once.
//!
//! When a batch's input partitions are read on several machines (see
//! [`crate::input_partition`]), each task writes its partition's output where the sink can
//! later publish it, without publishing it: a Parquet file under the sink's staging directory,
//! Delta data files not yet in the log. The task returns a [`StagedOutput`] (a manifest). Once
//! every task of the batch has succeeded, the driver hands all manifests to
//! [`PartitionStager::commit_staged`], which publishes them atomically and idempotently per
//! batch id (Delta: one transaction carrying the batch's `txn`). So a task retried after its
//! executor died, or a whole batch replayed after the driver died, never duplicates a row:
//! only the manifests of the attempt the driver collected are committed, and a batch already
//! committed is skipped.
//!
//! The same sink object serves both sides: executors call `begin_partition` / `stage_part` /
//! `finish_partition`, the driver calls `commit_staged`. Sinks that return `None` from
//! [`crate::Sink::as_stager`] cannot run on a distributed engine; the pipeline is refused
//! when it starts, naming the sink.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;

use crate::error::Result;

/// What one task staged for one sink: returned by the executor, committed by the driver.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StagedOutput {
    /// The batch the output belongs to.
    pub batch_id: u64,
    /// The input partition it was read from.
    pub partition: usize,
    /// Rows staged.
    pub rows: u64,
    /// Bytes staged (files written), when the sink knows it.
    pub bytes: u64,
    /// The sink's own manifest (file paths, Delta add actions); never a secret.
    pub manifest: serde_json::Value,
}

/// The staged write of a sink (see the module docs).
#[async_trait]
pub trait PartitionStager: Send {
    /// Starts staging partition `partition` of batch `batch_id` (executor side). Each attempt
    /// stages under names of its own, so a retried task never overwrites what another wrote.
    async fn begin_partition(
        &mut self,
        batch_id: u64,
        partition: usize,
        schema: SchemaRef,
    ) -> Result<()>;

    /// Stages one part of the current partition.
    async fn stage_part(&mut self, part: &RecordBatch) -> Result<()>;

    /// Finishes the partition and says what was staged.
    async fn finish_partition(&mut self) -> Result<StagedOutput>;

    /// Publishes batch `batch_id` from the manifests of its partitions, one per partition
    /// (driver side). Idempotent per batch id: a batch already committed is skipped, and
    /// staged outputs no manifest names (failed attempts) are removed or never published.
    async fn commit_staged(&mut self, batch_id: u64, outputs: Vec<StagedOutput>) -> Result<()>;
}
