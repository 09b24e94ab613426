//! The stream as the table `source`: a [`TableProvider`] whose scan reads the batch currently
//! being transformed.
//!
//! The physical plan is built once; [`SourceExec::execute`] reads the shared [`BatchSlot`] each
//! time the plan is executed, so feeding a new batch is one pointer swap, not a new plan. The
//! scan reports a very large inexact size so that DataFusion's join selection always broadcasts
//! the static table (the build side, collected once) and probes it with the stream; the plan
//! checks in `crate::allowlist` verify that this held.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result as DfResult, Statistics};
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

/// The size the stream pretends to have (rows and bytes) so that every static table is the
/// smaller, broadcast side of a join. Far below `usize::MAX` so estimates built on it do not
/// overflow.
pub(crate) const STREAM_SIZE_HINT: usize = 1 << 50;

/// The batch the plan reads on its next execution, shared by every scan of `source`.
#[derive(Debug, Clone)]
pub(crate) struct BatchSlot(Arc<Mutex<Option<RecordBatch>>>);

impl BatchSlot {
    pub(crate) fn new() -> Self {
        BatchSlot(Arc::new(Mutex::new(None)))
    }

    /// Makes `batch` the one the next execution reads.
    pub(crate) fn set(&self, batch: RecordBatch) {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *guard = Some(batch);
    }

    /// Drops the batch (so the slot does not keep the last batch's memory alive).
    pub(crate) fn clear(&self) {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *guard = None;
    }

    fn get(&self) -> Option<RecordBatch> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The table `source`.
#[derive(Debug)]
pub(crate) struct SourceTable {
    schema: SchemaRef,
    slot: BatchSlot,
}

impl SourceTable {
    pub(crate) fn new(schema: SchemaRef, slot: BatchSlot) -> Self {
        SourceTable { schema, slot }
    }
}

#[async_trait]
impl TableProvider for SourceTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(SourceExec::new(
            Arc::clone(&self.schema),
            projection.cloned(),
            self.slot.clone(),
        )?))
    }
}

/// Scans the batch in the [`BatchSlot`]: one partition, one batch (projected).
#[derive(Debug)]
pub(crate) struct SourceExec {
    projection: Option<Vec<usize>>,
    slot: BatchSlot,
    properties: Arc<PlanProperties>,
}

impl SourceExec {
    fn new(schema: SchemaRef, projection: Option<Vec<usize>>, slot: BatchSlot) -> DfResult<Self> {
        let schema = match &projection {
            Some(p) => Arc::new(schema.project(p)?),
            None => schema,
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(SourceExec {
            projection,
            slot,
            properties: Arc::new(properties),
        })
    }
}

impl DisplayAs for SourceExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "SourceExec: projection={:?}", self.projection)
    }
}

impl ExecutionPlan for SourceExec {
    fn name(&self) -> &str {
        "SourceExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "SourceExec has no children".to_string(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "SourceExec has one partition, asked for {partition}"
            )));
        }
        let schema = self.schema();
        let batches = match self.slot.get() {
            Some(batch) => {
                let batch = match &self.projection {
                    Some(p) => batch.project(p)?,
                    None => batch,
                };
                vec![batch]
            }
            None => Vec::new(),
        };
        Ok(Box::pin(MemoryStream::try_new(batches, schema, None)?))
    }

    #[allow(deprecated)]
    fn partition_statistics(&self, _partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let mut stats = Statistics::new_unknown(&self.schema());
        stats.num_rows = Precision::Inexact(STREAM_SIZE_HINT);
        stats.total_byte_size = Precision::Inexact(STREAM_SIZE_HINT);
        Ok(Arc::new(stats))
    }
}

/// True when `plan` is a scan of `source`.
pub(crate) fn is_source_scan(plan: &dyn ExecutionPlan) -> bool {
    plan.is::<SourceExec>()
}

/// A copy of `plan` whose scans of `source` read `slot` instead: a plan that runs beside the
/// original on another part of the batch.
pub(crate) fn reading(
    plan: &Arc<dyn ExecutionPlan>,
    slot: &BatchSlot,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    Arc::clone(plan)
        .transform_up(|node| match node.downcast_ref::<SourceExec>() {
            Some(s) => Ok(Transformed::yes(Arc::new(SourceExec {
                projection: s.projection.clone(),
                slot: slot.clone(),
                properties: Arc::clone(&s.properties),
            }) as Arc<dyn ExecutionPlan>)),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
}
