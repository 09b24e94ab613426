//! The one stage loop: a pipeline's ordered stages applied to every part of every batch.
//!
//! Every driver — micro-batch, real-time, an executor's task — sends each part through
//! [`StageChain::apply`], and nowhere else does a part meet a stage.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use tributary_sdk::{Result, SourceMetrics, Stage};

/// A pipeline's stages in order (decode, SQL, what a product adds), opened once per run.
#[derive(Debug, Default)]
pub(crate) struct StageChain {
    stages: Vec<Box<dyn Stage>>,
    output: Option<SchemaRef>,
}

impl StageChain {
    /// The chain of `stages`, in the order given.
    pub(crate) fn new(stages: Vec<Box<dyn Stage>>) -> Self {
        StageChain {
            stages,
            output: None,
        }
    }

    /// Opens every stage with the schema its predecessor produces (a restart resolves registry
    /// schemas again); returns the schema the sinks receive.
    pub(crate) async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef> {
        let mut schema = input;
        for stage in &mut self.stages {
            schema = stage.open(schema).await?;
        }
        self.output = Some(schema.clone());
        Ok(schema)
    }

    /// The schema the sinks receive, once the chain is open.
    pub(crate) fn output_schema(&self) -> Option<SchemaRef> {
        self.output.clone()
    }

    /// One part through every stage, in order.
    pub(crate) async fn apply(&mut self, part: RecordBatch) -> Result<RecordBatch> {
        let mut part = part;
        for stage in &mut self.stages {
            part = stage.apply(&part).await?;
        }
        Ok(part)
    }

    /// The stages' counters (malformed records by reason, ...), merged.
    pub(crate) fn metrics(&self) -> SourceMetrics {
        let mut m = SourceMetrics::new();
        for stage in &self.stages {
            m.extend(stage.metrics());
        }
        m
    }
}
