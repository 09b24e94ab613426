//! The logical side of a batch: a table whose scan is the batch's tasks.
//!
//! The driver submits `SELECT * FROM <job>` to the scheduler as a logical plan; [`JobTable`]
//! travels in it through [`crate::codec::TributaryLogicalCodec`], and its scan on the
//! scheduler is a [`crate::exec::TaskExec`].

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::Result as DfResult;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use crate::exec::{index_scan, TaskExec};
use crate::job::{result_schema, JobSpec};

/// One batch as a table (see the module docs).
#[derive(Debug)]
pub struct JobTable {
    job: Arc<JobSpec>,
}

impl JobTable {
    /// The table of `job`.
    pub fn new(job: Arc<JobSpec>) -> Self {
        JobTable { job }
    }

    /// The job.
    pub fn job(&self) -> &Arc<JobSpec> {
        &self.job
    }
}

#[async_trait]
impl TableProvider for JobTable {
    fn schema(&self) -> SchemaRef {
        result_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let input = index_scan(&self.job)?;
        Ok(Arc::new(TaskExec::new(self.job.clone(), input, None)))
    }
}
