//! The physical plan of a batch: one task per input partition.
//!
//! [`TaskExec`] has as many output partitions as the job has input partitions; executing
//! partition `i` runs the executor's [`TaskHandler`] on input partition `i` and yields one row
//! (see [`crate::job::result_schema`]). The scheduler places each partition on an executor like
//! any DataFusion leaf; it retries a task whose executor died.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};

use crate::handler::{ExecutorIdentity, TaskHandler};
use crate::job::{result_batch, result_schema, JobSpec, TaskResult};

/// Runs a job's tasks (see the module docs).
#[derive(Debug)]
pub struct TaskExec {
    job: Arc<JobSpec>,
    /// Set where the plan was decoded by an executor; the scheduler never executes.
    runner: Option<(Arc<dyn TaskHandler>, ExecutorIdentity)>,
    properties: Arc<PlanProperties>,
}

impl TaskExec {
    /// The plan of `job`, executable where `runner` is given.
    pub fn new(
        job: Arc<JobSpec>,
        runner: Option<(Arc<dyn TaskHandler>, ExecutorIdentity)>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(result_schema()),
            Partitioning::UnknownPartitioning(job.partitions.len().max(1)),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        TaskExec {
            job,
            runner,
            properties,
        }
    }

    /// The job this plan runs.
    pub fn job(&self) -> &Arc<JobSpec> {
        &self.job
    }
}

impl DisplayAs for TaskExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "TributaryTaskExec: job={}, partitions={}",
            self.job.name,
            self.job.partitions.len()
        )
    }
}

impl ExecutionPlan for TaskExec {
    fn name(&self) -> &str {
        "TributaryTaskExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let Some((handler, me)) = self.runner.clone() else {
            return Err(DataFusionError::Execution(
                "this process cannot run Tributary tasks: start executors with `tributary executor`"
                    .into(),
            ));
        };
        let job = self.job.clone();
        let task = async move {
            // A job with no input partitions still has one (empty) task: no row.
            let Some(input) = job.partitions.get(partition).cloned() else {
                return Ok(RecordBatch::new_empty(result_schema()));
            };
            let t = Instant::now();
            let output = handler.run_task(&job, &input).await.map_err(|e| {
                DataFusionError::Execution(format!(
                    "{} partition {} ({}) failed on executor {}: {e}",
                    job.name, input.index, input.label, me.id
                ))
            })?;
            result_batch(&TaskResult {
                partition: input.index,
                executor: me.id.clone(),
                host: me.host.clone(),
                millis: t.elapsed().as_millis() as u64,
                output,
            })
            .map_err(|e| DataFusionError::Execution(e.to_string()))
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            result_schema(),
            futures::stream::once(task),
        )))
    }
}
