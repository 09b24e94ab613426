//! [`StatefulQuery`]: the stateful operators of one `[transform]`, in the order rows meet
//! them: a deduplication of `source` ([`Dedup`], `dropDuplicates`), then the query, which is
//! either stateless (executed again for each part) or an aggregation ([`Aggregation`]).
//!
//! It is the stage's one [`StageState`]: restored, ended and saved as a whole, each operator's
//! state in its own place under the stage's directory (the aggregation's versions directly,
//! the deduplication's under `dedup/`), both with the same batch id, so a replay starts every
//! operator from the same committed batch. The watermark is the whole input's: the
//! deduplication tells the aggregation the latest event time of each part before dropping
//! rows, as Spark's `withWatermark` sits below both.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use tributary_sdk::{Result, StageState, StateOperatorProgress};

use super::dedup::Dedup;
use super::Aggregation;
use crate::source_table::BatchSlot;
use crate::transform::collect;

/// The deduplication's directory under the stage's.
const DEDUP_DIR: &str = "dedup";

/// What runs after the deduplication.
pub(crate) enum Body {
    /// A stateless query, executed again for each part.
    Stateless {
        plan: Arc<dyn ExecutionPlan>,
        task: Arc<TaskContext>,
    },
    /// An aggregation: each part is absorbed, rows are emitted at the end of the batch.
    Aggregating(Box<Aggregation>),
}

/// A query with state across batches.
pub(crate) struct StatefulQuery {
    pub(crate) dedup: Option<Dedup>,
    pub(crate) body: Body,
    /// With a watermark: the event times of the batch's input, for the progress event.
    pub(crate) event_times: Option<super::event_time::EventTimes>,
}

impl std::fmt::Debug for StatefulQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("StatefulQuery");
        if let Some(dedup) = &self.dedup {
            d.field("dedup", dedup);
        }
        match &self.body {
            Body::Stateless { plan, .. } => d.field(
                "query",
                &datafusion::physical_plan::displayable(plan.as_ref())
                    .indent(false)
                    .to_string(),
            ),
            Body::Aggregating(a) => d.field("aggregation", a),
        };
        d.finish()
    }
}

impl StatefulQuery {
    /// The watermark the batch (or chunk) runs with, as Spark's `eventTime.watermark` shows it:
    /// the one the previous batch left (the epoch before any).
    fn batch_watermark(&self) -> String {
        let agg = match &self.body {
            Body::Aggregating(agg) => agg.batch_watermark(),
            Body::Stateless { .. } => None,
        };
        let wm = agg.or_else(|| self.dedup.as_ref().and_then(Dedup::batch_watermark));
        super::clock::format_ms(wm.unwrap_or(0))
    }

    /// The event-time block after a batch or chunk that ran with `watermark`.
    fn finish_event_times(&mut self, watermark: String) {
        if let Some(e) = &mut self.event_times {
            e.finish(Some(watermark));
        }
    }

    /// Runs one part through the operators, the query reading it from `slot`: the stateless
    /// query's rows, or none until the batch ends for an aggregation.
    pub(crate) async fn apply(
        &mut self,
        slot: &BatchSlot,
        part: &RecordBatch,
        output: &SchemaRef,
    ) -> Result<RecordBatch> {
        if let Some(e) = &mut self.event_times {
            e.observe(part.column(e.column))?;
        }
        let (part, max_ms) = match &mut self.dedup {
            Some(d) => d.filter(part)?,
            None => (part.clone(), None),
        };
        match &mut self.body {
            Body::Stateless { plan, task } => {
                slot.set(part);
                let out = collect(plan, task, output).await;
                slot.clear();
                out
            }
            Body::Aggregating(agg) => {
                if let Some(m) = max_ms {
                    agg.observe(m);
                }
                agg.absorb(slot, &part).await?;
                Ok(RecordBatch::new_empty(Arc::clone(output)))
            }
        }
    }

    /// Primes the plans on empty input (see `SqlTransform`'s `open`).
    pub(crate) async fn prime(
        &mut self,
        slot: &BatchSlot,
        input: &SchemaRef,
        output: &SchemaRef,
    ) -> Result<()> {
        match &mut self.body {
            Body::Stateless { plan, task } => {
                slot.set(RecordBatch::new_empty(Arc::clone(input)));
                let primed = collect(plan, task, output).await;
                slot.clear();
                primed.map(|_| ())
            }
            Body::Aggregating(agg) => agg.prime().await,
        }
    }
}

#[async_trait]
impl StageState for StatefulQuery {
    async fn restore(&mut self, dir: &Path, version: Option<u64>) -> Result<()> {
        if let Some(d) = &mut self.dedup {
            d.restore(&dir.join(DEDUP_DIR), version)?;
        }
        if let Body::Aggregating(agg) = &mut self.body {
            agg.restore(dir, version).await?;
        }
        Ok(())
    }

    async fn end_batch(&mut self) -> Result<Option<RecordBatch>> {
        let watermark = self.batch_watermark();
        if let Some(d) = &mut self.dedup {
            d.end_batch()?;
        }
        let out = match &mut self.body {
            Body::Aggregating(agg) => agg.end_batch().await,
            Body::Stateless { .. } => Ok(None),
        };
        self.finish_event_times(watermark);
        out
    }

    async fn save(&mut self, dir: &Path, version: u64) -> Result<()> {
        if let Some(d) = &mut self.dedup {
            d.save(&dir.join(DEDUP_DIR), version)?;
        }
        if let Body::Aggregating(agg) = &mut self.body {
            agg.save(dir, version).await?;
        }
        if let Some(e) = &mut self.event_times {
            e.reset();
        }
        Ok(())
    }

    fn real_time_refusal(&self) -> Option<String> {
        match &self.body {
            Body::Aggregating(agg) => agg.real_time_refusal(),
            Body::Stateless { .. } => None,
        }
    }

    async fn end_chunk(&mut self) -> Result<Option<RecordBatch>> {
        let watermark = self.batch_watermark();
        if let Some(d) = &mut self.dedup {
            d.end_chunk()?;
        }
        let out = match &mut self.body {
            Body::Aggregating(agg) => agg.end_chunk().await,
            Body::Stateless { .. } => Ok(None),
        };
        self.finish_event_times(watermark);
        out
    }

    fn event_time(&self) -> Option<tributary_sdk::EventTimeProgress> {
        self.event_times.as_ref().and_then(|e| e.last())
    }

    fn progress(&self) -> Vec<StateOperatorProgress> {
        let mut out: Vec<StateOperatorProgress> = self.dedup.iter().map(Dedup::progress).collect();
        if let Body::Aggregating(agg) = &self.body {
            out.extend(agg.progress());
        }
        out
    }

    fn needs_no_data_batch(&self) -> bool {
        self.dedup.as_ref().is_some_and(Dedup::needs_no_data_batch)
            || matches!(&self.body, Body::Aggregating(a) if a.needs_no_data_batch())
    }
}
