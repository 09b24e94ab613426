//! The one stage loop: a pipeline's ordered stages applied to every part of every batch.
//!
//! Every driver — micro-batch, real-time, an executor's task — sends each part through
//! [`StageChain::apply`], and nowhere else does a part meet a stage.

use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use tributary_sdk::{Result, SourceMetrics, Stage};

/// A pipeline's stages in order (decode, SQL, what a product adds), opened once per run.
#[derive(Debug, Default)]
pub(crate) struct StageChain {
    /// Each stage with the name its progress durations carry (`decode`, `sql`, ...).
    stages: Vec<(String, Box<dyn Stage>)>,
    output: Option<SchemaRef>,
}

impl StageChain {
    /// The chain of `stages`, in the order given.
    pub(crate) fn new(stages: Vec<(String, Box<dyn Stage>)>) -> Self {
        StageChain {
            stages,
            output: None,
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
}
