//! The plugin side of the functions extension: [`FfiFunctionTable`], exported by
//! [`crate::export_plugin!`] as [`crate::plugin::abi::FUNCTIONS_SYMBOL`].
//!
//! The functions are the definition's ([`crate::plugin::PluginDefinition::functions`]). A call
//! runs the function on the host's calling thread (no runtime hop: a scalar function is plain
//! computation); its arguments arrive as one struct array whose buffers stay the host's, and
//! its result leaves as a one-column batch whose buffers stay the plugin's. A panic becomes an
//! `INTERNAL_ERROR` naming the plugin and the function.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};

use crate::error::{Error, ErrorCode, Result};
use crate::function::ScalarFunction;
use crate::plugin::abi::{
    FFI_ArrowSchema, FfiBatch, FfiBytes, FfiFunctionTable, FfiStatus, FUNCTIONS_VERSION,
    STATUS_ERROR, STATUS_OK,
};
use crate::plugin::batches::{export_batch, export_schema, import_batch};
use crate::plugin::guest::{definition, error_bytes, guard, to_json_bytes, write_out};

/// The table [`crate::export_plugin!`] exports.
pub static FUNCTIONS_TABLE: FfiFunctionTable = FfiFunctionTable {
    version: FUNCTIONS_VERSION,
    count,
    describe,
    invoke,
};

/// The body of the generated functions symbol.
pub fn functions_entry() -> *const FfiFunctionTable {
    &FUNCTIONS_TABLE
}

/// The name of the field carrying the return type in [`FfiFunctionTable::describe`]'s schema.
pub const RETURN_FIELD: &str = "return";

fn function(index: usize) -> Result<&'static Arc<dyn ScalarFunction>> {
    definition()?.functions.get(index).ok_or_else(|| {
        Error::new(
            ErrorCode::Plugin,
            format!("the plugin has no function number {index}"),
        )
    })
}

/// The signature schema: one field per argument (`0`, `1`, ...), then [`RETURN_FIELD`].
pub fn signature_schema(f: &dyn ScalarFunction) -> Schema {
    let mut fields: Vec<Field> = f
        .arg_types()
        .into_iter()
        .enumerate()
        .map(|(i, t)| Field::new(i.to_string(), t, true))
        .collect();
    fields.push(Field::new(RETURN_FIELD, f.return_type(), true));
    Schema::new(fields)
}

unsafe extern "C" fn count() -> usize {
    guard("functions", || Ok(definition()?.functions.len())).unwrap_or(0)
}

unsafe extern "C" fn describe(
    index: usize,
    json: *mut FfiBytes,
    schema: *mut FFI_ArrowSchema,
) -> FfiStatus {
    let result = guard("describe function", || {
        let f = function(index)?;
        let ffi = export_schema(&signature_schema(f.as_ref()))?;
        let meta = serde_json::json!({
            "name": f.name(),
            "description": f.description(),
            "deterministic": f.deterministic(),
        });
        Ok((to_json_bytes(&meta)?, ffi))
    });
    match result {
        Ok((meta, ffi)) => {
            // SAFETY: `schema` is the caller's out-parameter, written once without dropping
            // its (empty) previous value.
            unsafe { std::ptr::write(schema, ffi) };
            // SAFETY: as above.
            unsafe { write_out(json, Ok(meta)) }
        }
        // SAFETY: as above.
        Err(e) => unsafe { write_out(json, Err(e)) },
    }
}

unsafe extern "C" fn invoke(
    index: usize,
    args: *mut FfiBatch,
    out: *mut FfiBatch,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: the host lends `args` for this call; moving it out leaves an empty batch for the
    // host to drop.
    let args = unsafe { std::ptr::replace(args, FfiBatch::empty()) };
    let result = guard("a function call", || {
        let f = function(index)?;
        // SAFETY: the host exported `args` with the C Data Interface.
        let batch = unsafe { import_batch(args, None) }?;
        let rows = batch.num_rows();
        let columns: Vec<ArrayRef> = batch.columns().to_vec();
        let result = f
            .invoke(&columns, rows)
            .map_err(|e| e.with_context("function", f.name()))?;
        let schema = Arc::new(Schema::new(vec![Field::new(
            RETURN_FIELD,
            result.data_type().clone(),
            true,
        )]));
        let batch = RecordBatch::try_new(schema, vec![result]).map_err(|e| {
            Error::new(
                ErrorCode::Plugin,
                format!("function '{}' returned an invalid column", f.name()),
            )
            .with_cause(e)
        })?;
        export_batch(&batch)
    });
    match result {
        Ok(batch) => {
            // SAFETY: `out` is the caller's out-parameter (an empty batch), written once.
            unsafe { std::ptr::write(out, batch) };
            // SAFETY: `err` is the caller's out-parameter.
            unsafe { std::ptr::write(err, FfiBytes::empty()) };
            STATUS_OK
        }
        Err(e) => {
            // SAFETY: as above.
            unsafe { std::ptr::write(err, error_bytes(&e)) };
            STATUS_ERROR
        }
    }
}
