//! The one sink dispatch: every sink of a pipeline written through the SDK's one protocol
//! ([`tributary_sdk::SinkWriter`]: begin, write parts, finish, commit).
//!
//! The shape each sink is written in (whole batch, part writer, stager, streaming) is chosen
//! once, when the set is made, from the [`WriteMode`] the pipeline runs in; nothing else in the
//! runtime asks a sink which shapes it has.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use tributary_sdk::{
    Ack, Delivery, Error, ErrorCode, PartAck, Result, Sink, SinkLedger, SinkWriter, StagedOutput,
    WriteMode, WriteShape,
};

/// A pipeline's sinks, by connector name, in the pipeline's order.
#[derive(Debug)]
pub(crate) struct SinkSet {
    sinks: Vec<(String, SinkWriter)>,
}

/// The refusal of a sink that executors cannot write.
pub(crate) fn no_stager(name: &str) -> Error {
    Error::new(
        ErrorCode::InvalidPipeline,
        format!("sink '{name}' cannot run on engine kind \"ballista\": it has no staged write (parquet and delta have one)"),
    )
    .with_context("option", "engine.kind")
}

impl SinkSet {
    /// Wraps every sink for `mode` (a sink that cannot be written in it is refused by name).
    pub(crate) fn new(sinks: Vec<(String, Box<dyn Sink>)>, mode: WriteMode) -> Result<Self> {
        let mut set = Vec::with_capacity(sinks.len());
        for (name, sink) in sinks {
            let writer = SinkWriter::new(sink, mode).map_err(|e| match mode {
                WriteMode::Partition => no_stager(&name),
                _ => e,
            })?;
            set.push((name, writer));
        }
        Ok(SinkSet { sinks: set })
    }

    /// The sinks' names, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.sinks.iter().map(|(n, _)| n.as_str())
    }

    /// How many sinks.
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.sinks.len()
    }

    /// True when no sink acknowledges records before the commit: a record is delivered when
    /// its batch commits.
    pub(crate) fn all_staged(&self) -> bool {
        self.sinks
            .iter()
            .all(|(_, w)| w.shape() != WriteShape::Streaming)
    }

    /// True when every sink acknowledges records as they come (none stages until the commit):
    /// the acknowledged records are all a batch holds, so it can commit at its acknowledged
    /// frontier.
    pub(crate) fn none_staged(&self) -> bool {
        self.sinks
            .iter()
            .all(|(_, w)| w.shape() == WriteShape::Streaming)
    }

    /// Exactly-once only when every sink's writes are.
    pub(crate) fn delivery(&self) -> Delivery {
        if self
            .sinks
            .iter()
            .all(|(_, w)| w.delivery() == Delivery::ExactlyOnce)
        {
            Delivery::ExactlyOnce
        } else {
            Delivery::AtLeastOnce
        }
    }

    /// Opens every sink with the schema it will receive.
    pub(crate) async fn open(&mut self, schema: &SchemaRef) -> Result<()> {
        for (_, w) in &mut self.sinks {
            w.sink_mut().open(schema.clone()).await?;
        }
        Ok(())
    }

    /// Every sink's own record of what was committed to it (see [`Sink::ledger`]), labelled
    /// `sink '<name>'` (with its position when two sinks share a connector).
    pub(crate) async fn ledgers(&mut self) -> Result<Vec<(String, SinkLedger)>> {
        let mut out = Vec::new();
        let names: Vec<String> = self.sinks.iter().map(|(n, _)| n.clone()).collect();
        for (i, (name, w)) in self.sinks.iter_mut().enumerate() {
            if let Some(ledger) = w.sink_mut().ledger().await? {
                let label = if names.iter().filter(|n| *n == name).count() > 1 {
                    format!("sink '{name}' (sink {})", i + 1)
                } else {
                    format!("sink '{name}'")
                };
                out.push((label, ledger));
            }
        }
        Ok(out)
    }

    /// Step 1 for every sink.
    pub(crate) async fn begin(
        &mut self,
        batch_id: u64,
        partition: usize,
        schema: &SchemaRef,
    ) -> Result<()> {
        for (_, w) in &mut self.sinks {
            w.begin(batch_id, partition, schema.clone()).await?;
        }
        Ok(())
    }

    /// Step 2: one part to every sink; returns the acknowledgements of the sinks that
    /// acknowledge records as they come.
    pub(crate) async fn write(&mut self, part: &RecordBatch) -> Result<Vec<Ack>> {
        let mut acks = Vec::new();
        for (_, w) in &mut self.sinks {
            if let PartAck::Pending(ack) = w.write(part).await? {
                acks.push(ack);
            }
        }
        Ok(acks)
    }

    /// Step 3: what every sink staged, in sink order.
    pub(crate) async fn finish(&mut self) -> Result<Vec<StagedOutput>> {
        let mut outputs = Vec::with_capacity(self.sinks.len());
        for (_, w) in &mut self.sinks {
            outputs.push(w.finish().await?);
        }
        Ok(outputs)
    }

    /// Step 4: publishes batch `batch_id`; `outputs[i]` are sink `i`'s staged outputs (one
    /// per partition, or the one of a local batch).
    pub(crate) async fn commit(
        &mut self,
        batch_id: u64,
        outputs: Vec<Vec<StagedOutput>>,
    ) -> Result<()> {
        if outputs.len() != self.sinks.len() {
            return Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "batch {batch_id} has staged outputs for {} sinks, the pipeline has {}",
                    outputs.len(),
                    self.sinks.len()
                ),
            ));
        }
        for ((_, w), staged) in self.sinks.iter_mut().zip(outputs) {
            w.commit(batch_id, staged).await?;
        }
        Ok(())
    }

    /// Stops every sink; the first error wins, every sink is stopped.
    pub(crate) async fn stop(&mut self) -> Result<()> {
        let mut result = Ok(());
        for (_, w) in &mut self.sinks {
            if let Err(e) = w.sink_mut().stop().await {
                if result.is_ok() {
                    result = Err(e);
                }
            }
        }
        result
    }
}

/// The outputs of one local batch (one per sink) as [`SinkSet::commit`] takes them.
pub(crate) fn local_outputs(outputs: Vec<StagedOutput>) -> Vec<Vec<StagedOutput>> {
    outputs.into_iter().map(|o| vec![o]).collect()
}
