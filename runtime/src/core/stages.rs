//! The one stage loop: a pipeline's ordered stages applied to every part of every batch.
//!
//! Every driver — micro-batch, real-time, an executor's task — sends each part through
//! [`StageChain::apply`], and nowhere else does a part meet a stage. Stages with state
//! ([`tributary_sdk::StageState`]) are restored, ended and saved here too, each in its own
//! directory `state/<position in the chain>` of the checkpoint.

use std::path::Path;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use tributary_sdk::{Result, SourceMetrics, Stage, StateOperatorProgress};

/// A pipeline's stages in order (decode, SQL, what a product adds), opened once per run.
#[derive(Debug, Default)]
pub(crate) struct StageChain {
    /// Each stage with the name its progress durations carry (`decode`, `sql`, ...).
    stages: Vec<(String, Box<dyn Stage>)>,
    output: Option<SchemaRef>,
    /// Whether a stage keeps state (known once open).
    stateful: bool,
}

impl StageChain {
    /// The chain of `stages`, in the order given.
    pub(crate) fn new(stages: Vec<(String, Box<dyn Stage>)>) -> Self {
        StageChain {
            stages,
            output: None,
            stateful: false,
        }
    }

    /// Opens every stage with the schema its predecessor produces (a restart resolves registry
    /// schemas again); returns the schema the sinks receive.
    pub(crate) async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef> {
        let mut schema = input;
        for (_, stage) in &mut self.stages {
            schema = stage.open(schema).await?;
        }
        self.output = Some(schema.clone());
        self.stateful = self.stages.iter_mut().any(|(_, s)| s.state().is_some());
        Ok(schema)
    }

    /// The schema the sinks receive, once the chain is open.
    pub(crate) fn output_schema(&self) -> Option<SchemaRef> {
        self.output.clone()
    }

    /// The stages' names, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.stages.iter().map(|(n, _)| n.as_str())
    }

    /// One part through every stage, in order; each stage's time is added to `spent` (indexed
    /// like the chain).
    pub(crate) async fn apply(
        &mut self,
        part: RecordBatch,
        spent: &mut Vec<Duration>,
    ) -> Result<RecordBatch> {
        if spent.len() < self.stages.len() {
            spent.resize(self.stages.len(), Duration::ZERO);
        }
        let mut part = part;
        for ((_, stage), time) in self.stages.iter_mut().zip(spent.iter_mut()) {
            let t = Instant::now();
            part = stage.apply(&part).await?;
            *time += t.elapsed();
        }
        Ok(part)
    }

    /// The stages' counters (malformed records by reason, ...), merged.
    pub(crate) fn metrics(&self) -> SourceMetrics {
        let mut m = SourceMetrics::new();
        for (_, stage) in &self.stages {
            m.extend(stage.metrics());
        }
        m
    }

    /// Whether a stage keeps state across batches (after [`StageChain::open`]).
    pub(crate) fn is_stateful(&self) -> bool {
        self.stateful
    }

    /// Loads every stateful stage's state as of batch `version` (`None`: nothing committed).
    pub(crate) async fn restore(&mut self, dir: &Path, version: Option<u64>) -> Result<()> {
        for (i, (_, stage)) in self.stages.iter_mut().enumerate() {
            if let Some(state) = stage.state() {
                state.restore(&dir.join(i.to_string()), version).await?;
            }
        }
        Ok(())
    }

    /// The batch's parts were all applied: what the stateful stages emit, each through the
    /// stages after it (time added to `spent`, indexed like the chain).
    pub(crate) async fn end_batch(
        &mut self,
        spent: &mut Vec<Duration>,
    ) -> Result<Vec<RecordBatch>> {
        self.emit(spent, false).await
    }

    /// Real-time mode: the chunk's parts were all applied: what the stateful stages emit for
    /// it, each through the stages after it; their state moves on to the next chunk.
    pub(crate) async fn end_chunk(
        &mut self,
        spent: &mut Vec<Duration>,
    ) -> Result<Vec<RecordBatch>> {
        self.emit(spent, true).await
    }

    /// Why a stateful stage cannot run under the `realTime` trigger (its position and name
    /// with the reason), or `None`.
    pub(crate) fn real_time_refusal(&mut self) -> Option<String> {
        self.stages.iter_mut().find_map(|(name, s)| {
            let name = name.clone();
            s.state()
                .and_then(|st| st.real_time_refusal())
                .map(|why| format!("stage '{name}': {why}"))
        })
    }

    async fn emit(&mut self, spent: &mut Vec<Duration>, chunk: bool) -> Result<Vec<RecordBatch>> {
        if !self.stateful {
            return Ok(Vec::new());
        }
        if spent.len() < self.stages.len() {
            spent.resize(self.stages.len(), Duration::ZERO);
        }
        let mut emitted = Vec::new();
        for i in 0..self.stages.len() {
            let t = Instant::now();
            let out = match self.stages[i].1.state() {
                Some(state) if chunk => state.end_chunk().await?,
                Some(state) => state.end_batch().await?,
                None => None,
            };
            spent[i] += t.elapsed();
            let Some(mut part) = out else {
                continue;
            };
            for ((_, later), time) in self.stages.iter_mut().zip(spent.iter_mut()).skip(i + 1) {
                let t = Instant::now();
                part = later.apply(&part).await?;
                *time += t.elapsed();
            }
            if part.num_rows() > 0 {
                emitted.push(part);
            }
        }
        Ok(emitted)
    }

    /// Makes every stateful stage's state after batch `version` durable.
    pub(crate) async fn save(&mut self, dir: &Path, version: u64) -> Result<()> {
        for (i, (_, stage)) in self.stages.iter_mut().enumerate() {
            if let Some(state) = stage.state() {
                state.save(&dir.join(i.to_string()), version).await?;
            }
        }
        Ok(())
    }

    /// Whether a stateful stage would change with a batch of no input (Spark's
    /// `noDataMicroBatches`: a watermark moved).
    pub(crate) fn needs_no_data_batch(&mut self) -> bool {
        self.stateful
            && self
                .stages
                .iter_mut()
                .any(|(_, s)| s.state().is_some_and(|st| st.needs_no_data_batch()))
    }

    /// Spark's `stateOperators` of the last batch, every stateful stage's in stage order.
    /// The `eventTime` block of the first stage with a watermark.
    pub(crate) fn event_time(&mut self) -> Option<tributary_sdk::EventTimeProgress> {
        self.stages
            .iter_mut()
            .find_map(|(_, s)| s.state().and_then(|st| st.event_time()))
    }

    pub(crate) fn state_progress(&mut self) -> Vec<StateOperatorProgress> {
        self.stages
            .iter_mut()
            .filter_map(|(_, s)| s.state().map(|st| st.progress()))
            .flatten()
            .collect()
    }
}
