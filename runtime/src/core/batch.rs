//! A batch's parts from the source, through the stages, into the sinks.
//!
//! [`push`] moves one part (the real-time driver calls it per chunk); [`pump`] moves every part
//! of a stream (micro-batches, an executor's partition, a replay). Memory is bounded by a part
//! and the acknowledgements in flight, except for sinks written as a whole batch, whose adapter
//! keeps the batch until it commits.

use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use futures::stream::{FuturesOrdered, StreamExt};
use tributary_sdk::{Ack, BatchStream, Result};

use super::sinks::SinkSet;
use super::stages::StageChain;

/// Acknowledgements awaited at once before the next part is read (back-pressure).
pub const IN_FLIGHT_ACKS: usize = 64;

/// What a batch (or a part) moved, and where its time went.
#[derive(Debug, Default, Clone)]
pub(crate) struct Moved {
    /// Rows read from the source (before the stages).
    pub rows_in: u64,
    /// Rows after the stages (what every sink received).
    pub rows: u64,
    /// Bytes of the parts read from the source ([`arrow_bytes`]).
    pub bytes_in: u64,
    /// Bytes of the parts every sink received ([`arrow_bytes`]).
    pub bytes: u64,
    /// Time spent reading and in the stages.
    pub read: Duration,
    /// Time spent in the sinks.
    pub write: Duration,
    /// Time spent in each stage, in the chain's order (a part of `read`).
    pub stages: Vec<Duration>,
}

impl Moved {
    /// Adds another batch's or task's counts and times (an executor's task to its batch).
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))]
    pub(crate) fn add(&mut self, other: &Moved) {
        self.rows_in += other.rows_in;
        self.rows += other.rows;
        self.bytes_in += other.bytes_in;
        self.bytes += other.bytes;
        self.read += other.read;
        self.write += other.write;
        if self.stages.len() < other.stages.len() {
            self.stages.resize(other.stages.len(), Duration::ZERO);
        }
        for (mine, theirs) in self.stages.iter_mut().zip(&other.stages) {
            *mine += *theirs;
        }
    }
}

/// The bytes of a part as Arrow holds them: every column's buffers, counting only the rows of
/// a sliced column. It is the measure every source and sink share (a Kafka record's key, value
/// and metadata columns; a file's decoded rows), not the bytes on the wire.
pub(crate) fn arrow_bytes(part: &RecordBatch) -> u64 {
    part.columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size()) as u64
        })
        .sum()
}

/// One part through the stages and into every sink (counted in `moved`); returns the
/// acknowledgements of the sinks that acknowledge as they go.
pub(crate) async fn push(
    stages: &mut StageChain,
    sinks: &mut SinkSet,
    part: RecordBatch,
    moved: &mut Moved,
) -> Result<Vec<Ack>> {
    moved.rows_in += part.num_rows() as u64;
    moved.bytes_in += arrow_bytes(&part);
    let t = Instant::now();
    let part = stages.apply(part, &mut moved.stages).await?;
    moved.read += t.elapsed();
    if part.num_rows() == 0 && stages.is_stateful() {
        // A stateful stage absorbs its parts and emits at the batch's end.
        return Ok(Vec::new());
    }
    write(sinks, part, moved).await
}

/// Real-time mode: one chunk through [`push`], then what the stateful stages emit for it
/// (their state moves on to the next chunk), into every sink.
pub(crate) async fn push_chunk(
    stages: &mut StageChain,
    sinks: &mut SinkSet,
    chunk: RecordBatch,
    moved: &mut Moved,
) -> Result<Vec<Ack>> {
    let mut acks = push(stages, sinks, chunk, moved).await?;
    if !stages.is_stateful() {
        return Ok(acks);
    }
    let t = Instant::now();
    let emitted = stages.end_chunk(&mut moved.stages).await?;
    moved.read += t.elapsed();
    for part in emitted {
        acks.extend(write(sinks, part, moved).await?);
    }
    Ok(acks)
}

/// One part after the stages into every sink (counted in `moved`).
async fn write(sinks: &mut SinkSet, part: RecordBatch, moved: &mut Moved) -> Result<Vec<Ack>> {
    moved.rows += part.num_rows() as u64;
    moved.bytes += arrow_bytes(&part);
    let t = Instant::now();
    let acks = sinks.write(&part).await?;
    moved.write += t.elapsed();
    Ok(acks)
}

/// Every part of `parts` through [`push`]; returns once every acknowledgement resolved.
pub(crate) async fn pump(
    mut parts: BatchStream<'_>,
    stages: &mut StageChain,
    sinks: &mut SinkSet,
) -> Result<Moved> {
    let mut moved = Moved::default();
    let mut in_flight: FuturesOrdered<Ack> = FuturesOrdered::new();
    loop {
        let t = Instant::now();
        let Some(part) = parts.next().await else {
            moved.read += t.elapsed();
            break;
        };
        moved.read += t.elapsed();
        let acks = push(stages, sinks, part?, &mut moved).await?;
        in_flight.extend(acks);
        let t = Instant::now();
        while in_flight.len() > IN_FLIGHT_ACKS {
            if let Some(done) = in_flight.next().await {
                done?;
            }
        }
        moved.write += t.elapsed();
    }
    drop(parts);
    // What stateful stages emit for the whole batch (nothing for a stateless chain).
    let t = Instant::now();
    let emitted = stages.end_batch(&mut moved.stages).await?;
    moved.read += t.elapsed();
    for part in emitted {
        in_flight.extend(write(sinks, part, &mut moved).await?);
    }
    let t = Instant::now();
    while let Some(done) = in_flight.next().await {
        done?;
    }
    moved.write += t.elapsed();
    Ok(moved)
}
