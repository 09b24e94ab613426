//! Codecs that carry a batch's plan between driver, scheduler and executors.
//!
//! Ballista serialises plans with DataFusion's protobuf codecs; nodes it does not know go
//! through extension codecs. Ours encode [`crate::table::JobTable`] (logical, driver →
//! scheduler) and [`crate::exec::TaskExec`] (physical, scheduler → executors) as a tag followed
//! by the [`JobSpec`]'s JSON, and hand every other node to Ballista's own codecs. A job holds
//! no secret (see [`crate::job`]), so nothing secret is ever serialised.
//!
//! The executor's physical codec carries its [`TaskHandler`]: the plans it decodes can run.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result as DfResult, TableReference};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use crate::exec::TaskExec;
use crate::handler::{ExecutorIdentity, TaskHandler};
use crate::job::JobSpec;
use crate::table::JobTable;

/// The tag in front of every node we encode.
const TAG: &[u8] = b"tributary.job.v1:";

fn encode_job(job: &JobSpec, buf: &mut Vec<u8>) -> DfResult<()> {
    buf.extend_from_slice(TAG);
    serde_json::to_writer(buf, job)
        .map_err(|e| DataFusionError::Internal(format!("cannot encode a Tributary job: {e}")))
}

/// The job in `buf`, or `None` when `buf` is not ours.
fn decode_job(buf: &[u8]) -> DfResult<Option<JobSpec>> {
    match buf.strip_prefix(TAG) {
        None => Ok(None),
        Some(json) => serde_json::from_slice(json).map(Some).map_err(|e| {
            DataFusionError::Internal(format!(
                "cannot decode a Tributary job (driver and executor of different versions?): {e}"
            ))
        }),
    }
}

/// The logical codec of driver and scheduler.
#[derive(Debug, Default)]
pub struct TributaryLogicalCodec {
    inner: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for TributaryLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        match decode_job(buf)? {
            Some(job) => Ok(Arc::new(JobTable::new(Arc::new(job)))),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        match node.downcast_ref::<JobTable>() {
            Some(t) => encode_job(t.job(), buf),
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DfResult<()> {
        self.inner.try_encode_file_format(buf, node)
    }
}

/// The physical codec of scheduler (no handler) and executors (with theirs).
#[derive(Debug, Default)]
pub struct TributaryPhysicalCodec {
    inner: BallistaPhysicalExtensionCodec,
    runner: Option<(Arc<dyn TaskHandler>, ExecutorIdentity)>,
}

impl TributaryPhysicalCodec {
    /// An executor's codec: plans it decodes run `handler`'s tasks as `me`.
    pub fn for_executor(handler: Arc<dyn TaskHandler>, me: ExecutorIdentity) -> Self {
        TributaryPhysicalCodec {
            inner: BallistaPhysicalExtensionCodec::default(),
            runner: Some((handler, me)),
        }
    }
}

impl PhysicalExtensionCodec for TributaryPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match decode_job(buf)? {
            Some(job) => {
                let [input] = inputs else {
                    return Err(DataFusionError::Internal(format!(
                        "a Tributary task plan takes one input, got {}",
                        inputs.len()
                    )));
                };
                Ok(Arc::new(TaskExec::new(
                    Arc::new(job),
                    input.clone(),
                    self.runner.clone(),
                )))
            }
            None => self.inner.try_decode(buf, inputs, ctx, proto_converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        match node.downcast_ref::<TaskExec>() {
            Some(t) => encode_job(t.job(), buf),
            None => self.inner.try_encode(node, buf, proto_converter),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tributary_sdk::InputPartition;

    #[test]
    fn jobs_round_trip_and_foreign_bytes_are_not_ours() {
        let job = JobSpec {
            name: "p batch 3".into(),
            batch_id: 3,
            payload: serde_json::json!({"source": "kafka"}),
            partitions: vec![InputPartition::new(
                0,
                "t-0 [0, 5)",
                serde_json::json!({"p": 0}),
            )],
        };
        let mut buf = Vec::new();
        encode_job(&job, &mut buf).unwrap();
        assert_eq!(decode_job(&buf).unwrap(), Some(job));
        assert_eq!(decode_job(b"\x0a\x03abc").unwrap(), None);
        let e = decode_job(b"tributary.job.v1:{").unwrap_err();
        assert!(e.to_string().contains("different versions"), "{e}");
    }
}
