//! One micro-batch's read and write: the source's parts go through the stages to the sinks.
//!
//! The source yields `[start, end)` as a stream of parts ([`Source::read_stream`]). Sinks with a
//! [`tributary_sdk::PartWriter`] stage each part as it arrives, so a batch that reads a 2 GB
//! file holds one part in memory, not the file. Sinks without one receive the whole batch in
//! one [`Sink::write`]; only then are the parts collected, and only for them.

use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use futures::StreamExt;
use tributary_sdk::{Offset, Result, Sink, Source, Stage};

/// What one batch moved, and where its time went.
#[derive(Debug, Default)]
pub(crate) struct BatchIo {
    /// Rows after the stages (what every sink received).
    pub rows: u64,
    /// Time spent reading and in the stages.
    pub read: Duration,
    /// Time spent in the sinks.
    pub write: Duration,
}

/// Reads `[start, end)` and writes it as batch `batch_id` to every sink (see the module docs).
pub(crate) async fn read_and_write(
    source: &mut dyn Source,
    stages: &mut [Box<dyn Stage>],
    sinks: &mut [(String, Box<dyn Sink>)],
    schema: &SchemaRef,
    batch_id: u64,
    start: &Offset,
    end: &Offset,
) -> Result<BatchIo> {
    let mut io = BatchIo::default();
    let whole: Vec<bool> = sinks
        .iter_mut()
        .map(|(_, s)| s.as_part_writer().is_none())
        .collect();
    let t = Instant::now();
    for (_, sink) in sinks.iter_mut() {
        if let Some(w) = sink.as_part_writer() {
            w.begin_batch(batch_id, schema.clone()).await?;
        }
    }
    io.write += t.elapsed();

    let mut collected: Vec<RecordBatch> = Vec::new();
    let t = Instant::now();
    let mut parts = source.read_stream(start, end).await?;
    io.read += t.elapsed();
    loop {
        let t = Instant::now();
        let Some(part) = parts.next().await else {
            io.read += t.elapsed();
            break;
        };
        let mut part = part?;
        for stage in stages.iter_mut() {
            part = stage.apply(&part)?;
        }
        io.read += t.elapsed();
        io.rows += part.num_rows() as u64;
        let t = Instant::now();
        for (_, sink) in sinks.iter_mut() {
            if let Some(w) = sink.as_part_writer() {
                w.write_part(&part).await?;
            }
        }
        io.write += t.elapsed();
        if whole.iter().any(|w| *w) {
            collected.push(part);
        }
    }
    drop(parts);

    let t = Instant::now();
    for (_, sink) in sinks.iter_mut() {
        match sink.as_part_writer() {
            Some(w) => w.commit_batch().await?,
            None => sink.write(batch_id, &collected).await?,
        }
    }
    io.write += t.elapsed();
    Ok(io)
}
