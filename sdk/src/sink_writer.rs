//! The one sink protocol: how every host writes every sink.
//!
//! A sink implements the write shape that fits it — a whole batch ([`Sink::write`]), parts of a
//! batch ([`crate::PartWriter`]), partitions staged on executors and published by a driver
//! ([`crate::PartitionStager`]), or records acknowledged as they arrive
//! ([`crate::StreamingSink`]). A host never picks among them itself: it wraps each sink in a
//! [`SinkWriter`] for the [`WriteMode`] it runs in, and drives the same four steps whatever
//! the shape:
//!
//! 1. [`SinkWriter::begin`] starts batch `n` (in [`WriteMode::Partition`], one input partition
//!    of it) with the schema the parts have.
//! 2. [`SinkWriter::write`] hands each part, in order, and returns its [`PartAck`]: either
//!    [`PartAck::Staged`] (the part becomes visible at step 4) or [`PartAck::Pending`] (an
//!    [`Ack`] that resolves once the records are durable as far as the sink's
//!    [`crate::Delivery`] goes, before the batch is committed).
//! 3. [`SinkWriter::finish`] says no part follows and returns what was staged (a
//!    [`StagedOutput`]; an executor hands it to the driver).
//! 4. [`SinkWriter::commit`] publishes batch `n` from the outputs of step 3 — one per
//!    partition, or the single one of a local batch — idempotently per batch id.
//!
//! Which shape serves a mode (the first the sink offers):
//!
//! | mode | shapes, in order of preference |
//! |---|---|
//! | [`WriteMode::MicroBatch`] | part writer, whole batch |
//! | [`WriteMode::RealTime`] | streaming, part writer, whole batch |
//! | [`WriteMode::Partition`] | stager (a sink without one cannot run there) |
//!
//! The whole-batch adapter keeps the parts until step 4 (memory bounded by the batch); every
//! other shape holds one part at a time. An error at any step fails the batch: the host replays
//! it from its offset log, starting again at step 1, and every shape discards what an unfinished
//! attempt left.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::error::{Error, ErrorCode, Result};
use crate::sink::{Delivery, Sink};
use crate::stager::StagedOutput;
use crate::streaming::Ack;

/// Who drives the writer, which decides the shape (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Micro-batches read and written in one process.
    MicroBatch,
    /// Long real-time batches whose records reach the sinks as they arrive.
    RealTime,
    /// Input partitions staged by executors (and the driver that commits them).
    Partition,
}

/// The sink's write shape a [`SinkWriter`] adapts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteShape {
    /// [`Sink::write`] with the batch's parts, at commit.
    WholeBatch,
    /// [`crate::PartWriter`]: parts staged as they come, published at commit.
    Parts,
    /// [`crate::PartitionStager`]: partitions staged, published once by the driver.
    Staged,
    /// [`crate::StreamingSink`]: records acknowledged as they arrive, flushed at commit.
    Streaming,
}

impl WriteShape {
    /// The shape's name in messages (`part writer`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            WriteShape::WholeBatch => "whole batch",
            WriteShape::Parts => "part writer",
            WriteShape::Staged => "stager",
            WriteShape::Streaming => "streaming",
        }
    }
}

/// The acknowledgement of one [`SinkWriter::write`].
pub enum PartAck {
    /// Staged: the records become visible (and durable) when the batch is committed.
    Staged,
    /// Resolves once the records are durable as far as the sink's delivery goes.
    Pending(Ack),
}

impl std::fmt::Debug for PartAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PartAck::Staged => "Staged",
            PartAck::Pending(_) => "Pending",
        })
    }
}

/// A sink wrapped in the one write protocol (see the module docs).
#[derive(Debug)]
pub struct SinkWriter {
    sink: Box<dyn Sink>,
    shape: WriteShape,
    /// The batch (and partition) between `begin` and `finish`.
    current: Option<(u64, usize)>,
    rows: u64,
    /// The whole-batch adapter's parts.
    kept: Vec<RecordBatch>,
}

fn shape_missing(what: &str) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("the sink no longer offers the {what} it offered when its writer was made"),
    )
}

fn not_begun() -> Error {
    Error::new(
        ErrorCode::Internal,
        "a sink writer was written to outside a batch (write before begin, or after finish)",
    )
}

impl SinkWriter {
    /// Wraps `sink` for `mode`. [`WriteMode::Partition`] needs a stager; without one the error
    /// says so (the host adds the sink's name and the option that chose the mode).
    pub fn new(mut sink: Box<dyn Sink>, mode: WriteMode) -> Result<SinkWriter> {
        let shape = match mode {
            WriteMode::Partition => {
                if sink.as_stager().is_none() {
                    return Err(Error::new(
                        ErrorCode::InvalidPipeline,
                        "the sink has no staged write, so executors cannot write it",
                    ));
                }
                WriteShape::Staged
            }
            WriteMode::RealTime if sink.as_streaming().is_some() => WriteShape::Streaming,
            WriteMode::RealTime | WriteMode::MicroBatch => {
                if sink.as_part_writer().is_some() {
                    WriteShape::Parts
                } else {
                    WriteShape::WholeBatch
                }
            }
        };
        Ok(SinkWriter {
            sink,
            shape,
            current: None,
            rows: 0,
            kept: Vec::new(),
        })
    }

    /// The shape chosen for the mode.
    pub fn shape(&self) -> WriteShape {
        self.shape
    }

    /// The guarantee of the writes under replay: a streaming write acknowledges records before
    /// the batch commits, so a replayed batch delivers them again (at-least-once).
    pub fn delivery(&self) -> Delivery {
        match self.shape {
            WriteShape::Streaming => Delivery::AtLeastOnce,
            _ => self.sink.delivery(),
        }
    }

    /// The sink itself (open, stop, metrics).
    pub fn sink_mut(&mut self) -> &mut dyn Sink {
        self.sink.as_mut()
    }

    /// The sink, unwrapped.
    pub fn into_sink(self) -> Box<dyn Sink> {
        self.sink
    }

    /// Step 1: batch `batch_id` starts (`partition` is its input partition in
    /// [`WriteMode::Partition`], 0 otherwise). A replayed batch id discards what an unfinished
    /// attempt staged.
    pub async fn begin(
        &mut self,
        batch_id: u64,
        partition: usize,
        schema: SchemaRef,
    ) -> Result<()> {
        self.current = Some((batch_id, partition));
        self.rows = 0;
        self.kept.clear();
        match self.shape {
            WriteShape::WholeBatch | WriteShape::Streaming => Ok(()),
            WriteShape::Parts => {
                self.sink
                    .as_part_writer()
                    .ok_or_else(|| shape_missing("part writer"))?
                    .begin_batch(batch_id, schema)
                    .await
            }
            WriteShape::Staged => {
                self.sink
                    .as_stager()
                    .ok_or_else(|| shape_missing("stager"))?
                    .begin_partition(batch_id, partition, schema)
                    .await
            }
        }
    }

    /// Step 2: one part of the current batch (parts may be empty).
    pub async fn write(&mut self, part: &RecordBatch) -> Result<PartAck> {
        let (batch_id, _) = self.current.ok_or_else(not_begun)?;
        self.rows += part.num_rows() as u64;
        match self.shape {
            WriteShape::WholeBatch => {
                self.kept.push(part.clone());
                Ok(PartAck::Staged)
            }
            WriteShape::Parts => {
                self.sink
                    .as_part_writer()
                    .ok_or_else(|| shape_missing("part writer"))?
                    .write_part(part)
                    .await?;
                Ok(PartAck::Staged)
            }
            WriteShape::Staged => {
                self.sink
                    .as_stager()
                    .ok_or_else(|| shape_missing("stager"))?
                    .stage_part(part)
                    .await?;
                Ok(PartAck::Staged)
            }
            WriteShape::Streaming => Ok(PartAck::Pending(
                self.sink
                    .as_streaming()
                    .ok_or_else(|| shape_missing("streaming write"))?
                    .write_records(batch_id, part)
                    .await?,
            )),
        }
    }

    /// Step 3: no part follows; what was staged.
    pub async fn finish(&mut self) -> Result<StagedOutput> {
        let (batch_id, partition) = self.current.take().ok_or_else(not_begun)?;
        match self.shape {
            WriteShape::Staged => {
                self.sink
                    .as_stager()
                    .ok_or_else(|| shape_missing("stager"))?
                    .finish_partition()
                    .await
            }
            _ => Ok(StagedOutput {
                batch_id,
                partition,
                rows: self.rows,
                bytes: 0,
                manifest: serde_json::Value::Null,
            }),
        }
    }

    /// Step 4: publishes batch `batch_id` from the outputs of step 3 (idempotent per batch id).
    pub async fn commit(&mut self, batch_id: u64, outputs: Vec<StagedOutput>) -> Result<()> {
        match self.shape {
            WriteShape::WholeBatch => {
                let kept = std::mem::take(&mut self.kept);
                self.sink.write(batch_id, &kept).await
            }
            WriteShape::Parts => {
                self.sink
                    .as_part_writer()
                    .ok_or_else(|| shape_missing("part writer"))?
                    .commit_batch()
                    .await
            }
            WriteShape::Staged => {
                self.sink
                    .as_stager()
                    .ok_or_else(|| shape_missing("stager"))?
                    .commit_staged(batch_id, outputs)
                    .await
            }
            WriteShape::Streaming => {
                self.sink
                    .as_streaming()
                    .ok_or_else(|| shape_missing("streaming write"))?
                    .end_batch(batch_id)
                    .await
            }
        }
    }

    /// Steps 1–4 for a batch already in memory (one process, one call).
    pub async fn write_batch(
        &mut self,
        batch_id: u64,
        schema: SchemaRef,
        parts: &[RecordBatch],
    ) -> Result<()> {
        self.begin(batch_id, 0, schema).await?;
        let mut acks = Vec::new();
        for part in parts {
            if let PartAck::Pending(ack) = self.write(part).await? {
                acks.push(ack);
            }
        }
        let output = self.finish().await?;
        futures::future::try_join_all(acks).await?;
        self.commit(batch_id, vec![output]).await
    }
}
