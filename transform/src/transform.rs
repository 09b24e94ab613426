//! [`SqlTransform`]: the query planned once at start and executed again for every batch.
//!
//! 1. [`SqlTransform::new`] checks the spec without I/O ([`TransformSpec::validate`]).
//! 2. [`Stage::open`] (once per run, with the source's schema): a DataFusion session with one
//!    partition, the stream registered as the table `source`, the static tables read into
//!    memory; the query is planned (logical, optimised, physical), checked against the stateless
//!    allowlist, and executed once on an empty batch so that the broadcast sides of its joins
//!    are collected and hashed now, not on the first record.
//! 3. [`Stage::apply`] puts the batch in the `source` slot and executes the same physical plan
//!    again, awaited on the host's runtime (every operator left in the plan is in-memory CPU
//!    work; DataFusion's cooperative yielding returns to the scheduler between batches).
//!
//! [`SqlTransform::plan`] does steps 1-2 without reading the static tables' rows (their
//! schemas only) and without executing: `tributary check` with a known source schema.

use std::fmt;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::arrow::compute::concat_batches;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use futures::StreamExt;
use tributary_sdk::{Error, ErrorCode, Result, ScalarFunction, Stage, StageState};

use crate::allowlist::{check_logical, check_physical};
use crate::error::{execution_error, sql_error};
use crate::lossy_cast::LossyBinaryCast;
use crate::source_table::{BatchSlot, SourceTable, STREAM_SIZE_HINT};
use crate::spec::TransformSpec;
use crate::stateful::dedup::Dedup;
use crate::stateful::query::{Body, StatefulQuery};
use crate::stateful::{self};
use crate::static_tables;
use crate::SOURCE_TABLE;

/// A stateless SQL query applied to every batch of a source (`[transform] sql`).
pub struct SqlTransform {
    spec: TransformSpec,
    slot: BatchSlot,
    planned: Option<Planned>,
    functions: Vec<Arc<dyn ScalarFunction>>,
}

/// The state made at `open`.
struct Planned {
    input: SchemaRef,
    output: SchemaRef,
    kind: Kind,
}

/// What the query is.
enum Kind {
    /// Executed again for each part.
    Stateless {
        plan: Arc<dyn ExecutionPlan>,
        task: Arc<TaskContext>,
    },
    /// A query keeping state across batches: a deduplication, an aggregation, or both
    /// ([`crate::stateful`]).
    Stateful(Box<StatefulQuery>),
}

/// The query as planned by [`SqlTransform::build`].
struct Built {
    dedup: Option<Dedup>,
    body: Body,
}

impl Built {
    fn schema(&self) -> SchemaRef {
        match &self.body {
            Body::Stateless { plan, .. } => plan.schema(),
            Body::Aggregating(a) => a.output_schema(),
        }
    }
}

impl fmt::Debug for SqlTransform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlTransform")
            .field("sql", &self.spec.sql)
            .field("tables", &self.spec.tables)
            .field(
                "functions",
                &self.functions.iter().map(|f| f.name()).collect::<Vec<_>>(),
            )
            .field("opened", &self.planned.is_some())
            .finish()
    }
}

impl SqlTransform {
    /// Builds the transform; checks the spec without I/O ([`TransformSpec::validate`]).
    pub fn new(spec: TransformSpec) -> Result<Self> {
        spec.validate()?;
        Ok(SqlTransform {
            spec,
            slot: BatchSlot::new(),
            planned: None,
            functions: Vec::new(),
        })
    }

    /// Adds user-defined scalar functions the query may call (registered by an embedding
    /// program or exported by plugins), checked against DataFusion's own function names.
    pub fn with_functions(mut self, functions: Vec<Arc<dyn ScalarFunction>>) -> Self {
        self.functions = functions;
        self
    }

    /// The spec this transform runs.
    pub fn spec(&self) -> &TransformSpec {
        &self.spec
    }

    /// Plans the query against `input` without loading the static tables' rows and without
    /// executing anything; returns the output schema. SQL errors carry their position, stateful
    /// operators are refused ([`crate`] docs). Reads the static tables' metadata (schemas).
    pub async fn plan(&self, input: SchemaRef) -> Result<SchemaRef> {
        let (built, _) = self.build(input, false).await?;
        Ok(built.schema())
    }

    /// Whether the opened query keeps state across batches (an aggregation, a
    /// deduplication).
    pub fn is_stateful(&self) -> bool {
        matches!(
            self.planned.as_ref().map(|p| &p.kind),
            Some(Kind::Stateful(_))
        )
    }

    /// The physical plan, indented (after [`Stage::open`]); for logs and tests.
    pub fn explain(&self) -> Option<String> {
        self.planned.as_ref().map(|p| match &p.kind {
            Kind::Stateless { plan, .. } => datafusion::physical_plan::displayable(plan.as_ref())
                .indent(false)
                .to_string(),
            Kind::Stateful(q) => format!("{q:?}"),
        })
    }

    fn planned(&mut self, batch: &RecordBatch) -> Result<&mut Planned> {
        let planned = self.planned.as_mut().ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "the SQL transform was applied before it was opened",
            )
        })?;
        let schema = batch.schema();
        if !Arc::ptr_eq(&schema, &planned.input) && schema.fields() != planned.input.fields() {
            return Err(Error::new(
                ErrorCode::Schema,
                format!(
                    "[transform] a batch's schema differs from the one the query was planned with (planned: {}; batch: {})",
                    planned.input, schema
                ),
            ));
        }
        Ok(planned)
    }

    /// A session, the tables, the query planned and checked.
    async fn build(&self, input: SchemaRef, load: bool) -> Result<(Built, SessionContext)> {
        let ctx = SessionContext::new_with_config(session_config());
        ctx.add_analyzer_rule(Arc::new(LossyBinaryCast::new()));
        ctx.register_udf(stateful::window::udf());
        ctx.register_udf(stateful::session::udf());
        crate::udf::register(&ctx, &self.functions)?;
        ctx.register_table(
            SOURCE_TABLE,
            Arc::new(SourceTable::new(Arc::clone(&input), self.slot.clone())),
        )
        .map_err(|e| internal(&e))?;
        for table in &self.spec.tables {
            static_tables::register(&ctx, table, load).await?;
        }
        let sql = self.spec.sql.as_str();
        let options = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false);
        let frame = ctx
            .sql_with_options(sql, options)
            .await
            .map_err(|e| sql_error(&e, sql))?;
        let logical: &LogicalPlan = frame.logical_plan();
        let dedup = stateful::dedup::plan(&input, &self.spec)?;
        if let Some(agg) = stateful::plan(&ctx, logical, &input, &self.spec).await? {
            let body = Body::Aggregating(Box::new(agg));
            return Ok((Built { dedup, body }, ctx));
        }
        check_logical(logical)?;
        let plan = frame
            .create_physical_plan()
            .await
            .map_err(|e| sql_error(&e, sql))?;
        check_physical(&plan)?;
        let body = Body::Stateless {
            plan,
            task: ctx.task_ctx(),
        };
        Ok((Built { dedup, body }, ctx))
    }
}

/// One partition (no repartitioning: a re-executed plan must not hold exchange state), joins
/// broadcast whatever the static table's size, no dynamic filters (the stream's scan has no use
/// for them, and their state would live across executions), positions on SQL errors.
pub(crate) fn session_config() -> SessionConfig {
    let mut config = SessionConfig::new()
        .with_target_partitions(1)
        .with_repartition_joins(false)
        .with_repartition_aggregations(false)
        .with_repartition_windows(false)
        .with_repartition_sorts(false)
        .with_repartition_file_scans(false);
    let options = config.options_mut();
    options.sql_parser.collect_spans = true;
    // STRING is utf8 and static tables keep their string types: sinks get the classic Arrow
    // types the sources produce, not DataFusion's view types.
    options.sql_parser.map_string_types_to_utf8view = false;
    options.execution.parquet.schema_force_view_types = false;
    options.optimizer.enable_dynamic_filter_pushdown = false;
    options.optimizer.enable_join_dynamic_filter_pushdown = false;
    options.optimizer.enable_topk_dynamic_filter_pushdown = false;
    options.optimizer.enable_aggregate_dynamic_filter_pushdown = false;
    options.optimizer.hash_join_single_partition_threshold = STREAM_SIZE_HINT / 2;
    options.optimizer.hash_join_single_partition_threshold_rows = STREAM_SIZE_HINT / 2;
    config
}

/// Executes every output partition of `plan` (on what its slots hold) and concatenates.
pub(crate) async fn collect(
    plan: &Arc<dyn ExecutionPlan>,
    task: &Arc<TaskContext>,
    output: &SchemaRef,
) -> Result<RecordBatch> {
    let mut batches = Vec::new();
    for partition in 0..plan.output_partitioning().partition_count() {
        let mut stream = plan
            .execute(partition, Arc::clone(task))
            .map_err(|e| execution_error(&e))?;
        while let Some(batch) = stream.next().await {
            batches.push(batch.map_err(|e| execution_error(&e))?);
        }
    }
    match batches.len() {
        0 => Ok(RecordBatch::new_empty(Arc::clone(output))),
        1 => Ok(batches.swap_remove(0)),
        _ => concat_batches(output, &batches).map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("[transform] concatenating the query's output: {e}"),
            )
        }),
    }
}

fn internal(e: &dyn fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, format!("[transform] {e}"))
}

#[async_trait]
impl Stage for SqlTransform {
    async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef> {
        self.planned = None;
        let (built, _ctx) = self.build(Arc::clone(&input), true).await?;
        let output = built.schema();
        // Collects and hashes the broadcast sides of the joins now (an empty batch).
        let event_times = match &self.spec.watermark {
            Some(w) => Some(stateful::event_time::EventTimes::new(
                stateful::watermark_column(&input, w)?,
            )),
            None => None,
        };
        let mut query = StatefulQuery {
            dedup: built.dedup,
            body: built.body,
            event_times,
        };
        query.prime(&self.slot, &input, &output).await?;
        let kind = match query {
            StatefulQuery {
                dedup: None,
                body: Body::Stateless { plan, task },
                ..
            } => Kind::Stateless { plan, task },
            query => Kind::Stateful(Box::new(query)),
        };
        self.planned = Some(Planned {
            input,
            output: Arc::clone(&output),
            kind,
        });
        Ok(output)
    }

    async fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let slot = self.slot.clone();
        let planned = self.planned(batch)?;
        if matches!(planned.kind, Kind::Stateless { .. }) {
            slot.set(batch.clone());
        }
        // Awaited on the host's runtime: DataFusion's cooperative yielding (tokio's task
        // budget) returns to the scheduler instead of spinning a blocked thread.
        let out = match &mut planned.kind {
            Kind::Stateless { plan, task } => collect(plan, task, &planned.output).await,
            Kind::Stateful(query) => query.apply(&slot, batch, &planned.output).await,
        };
        slot.clear();
        out
    }

    fn state(&mut self) -> Option<&mut dyn StageState> {
        match self.planned.as_mut().map(|p| &mut p.kind) {
            Some(Kind::Stateful(query)) => Some(query.as_mut()),
            _ => None,
        }
    }
}
