//! The physical plan of a batch: one task per input partition.
//!
//! Ballista 55 gives each task a slice of a stage's partitions and, before shipping the plan,
//! restricts the plan's *leaves* to that slice; it knows how to restrict in-memory and file
//! scans, not a custom leaf (which every task would then run whole). So the batch's input
//! partitions are the rows of an in-memory scan — partition `i` holds one row, the index `i` —
//! and [`TaskExec`] sits on top of it: for every index its child yields, it runs the
//! executor's [`TaskHandler`] on input partition `i` and yields one row of
//! [`crate::job::result_schema`]. The scheduler places and retries tasks like any other.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, RecordBatch, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use crate::handler::{ExecutorIdentity, TaskHandler};
use crate::job::{result_batch, result_schema, JobSpec, TaskResult};

/// The schema of the scan under [`TaskExec`]: one input partition index per row.
pub fn index_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "partition",
        DataType::UInt32,
        false,
    )]))
}

/// The in-memory scan of `job`'s partition indexes: partition `i` holds the row `i`.
pub fn index_scan(job: &JobSpec) -> DfResult<Arc<dyn ExecutionPlan>> {
    let schema = index_schema();
    let mut partitions = Vec::with_capacity(job.partitions.len());
    for p in &job.partitions {
        let row = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(UInt32Array::from(vec![p.index as u32]))],
        )?;
        partitions.push(vec![row]);
    }
    Ok(MemorySourceConfig::try_new_exec(&partitions, schema, None)?)
}

/// Runs a job's tasks (see the module docs).
#[derive(Debug)]
pub struct TaskExec {
    job: Arc<JobSpec>,
    input: Arc<dyn ExecutionPlan>,
    /// Set where the plan was decoded by an executor; the scheduler never executes.
    runner: Option<(Arc<dyn TaskHandler>, ExecutorIdentity)>,
    properties: Arc<PlanProperties>,
}

impl TaskExec {
    /// The plan of `job` over `input` (see [`index_scan`]), executable where `runner` is given.
    pub fn new(
        job: Arc<JobSpec>,
        input: Arc<dyn ExecutionPlan>,
        runner: Option<(Arc<dyn TaskHandler>, ExecutorIdentity)>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(result_schema()),
            Partitioning::UnknownPartitioning(
                input.properties().output_partitioning().partition_count(),
            ),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        TaskExec {
            job,
            input,
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
        vec![&self.input]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
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
        let [input] = <[_; 1]>::try_from(children).map_err(|c| {
            DataFusionError::Internal(format!(
                "TributaryTaskExec takes one input, got {}",
                c.len()
            ))
        })?;
        Ok(Arc::new(TaskExec::new(
            self.job.clone(),
            input,
            self.runner.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let Some((handler, me)) = self.runner.clone() else {
            return Err(DataFusionError::Execution(
                "this process cannot run Tributary tasks: start executors with `tributary executor`"
                    .into(),
            ));
        };
        let job = self.job.clone();
        let indexes = self.input.execute(partition, context)?;
        let rows = indexes
            .map_ok(|b| {
                let col = b.column(0).as_any().downcast_ref::<UInt32Array>().cloned();
                futures::stream::iter(
                    (0..b.num_rows())
                        .map(move |i| match &col {
                            Some(c) if !c.is_null(i) => Ok(c.value(i) as usize),
                            _ => Err(DataFusionError::Internal(
                                "a Tributary task's input is not a partition index".into(),
                            )),
                        })
                        .collect::<Vec<_>>(),
                )
            })
            .try_flatten();
        let tasks = rows.and_then(move |index| {
            let (job, handler, me) = (job.clone(), handler.clone(), me.clone());
            async move { run_one(&job, handler.as_ref(), &me, index).await }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            result_schema(),
            tasks.boxed(),
        )))
    }
}

/// Runs input partition `index` of `job` and returns its result row.
async fn run_one(
    job: &JobSpec,
    handler: &dyn TaskHandler,
    me: &ExecutorIdentity,
    index: usize,
) -> DfResult<RecordBatch> {
    let input = job.partitions.get(index).ok_or_else(|| {
        DataFusionError::Internal(format!(
            "{} has no input partition {index} ({} planned)",
            job.name,
            job.partitions.len()
        ))
    })?;
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let t = Instant::now();
    let output = handler.run_task(job, input).await.map_err(|e| {
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
        started_ms,
        output,
    })
    .map_err(|e| DataFusionError::Execution(e.to_string()))
}
