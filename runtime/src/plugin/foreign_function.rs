//! A plugin's scalar functions on the host side: each one an ordinary
//! [`tributary_sdk::ScalarFunction`] that calls across the C ABI (the functions extension,
//! [`FUNCTIONS_SYMBOL`]).
//!
//! At load the host reads every function's signature once ([`read_functions`]); a call exports
//! the argument columns as one struct array (no copy: the plugin reads the host's buffers),
//! and imports the one-column result (no copy either: the host's array keeps the plugin's
//! buffers and release callback). A plugin without the extension, or with a table of another
//! version, loads with no function and `plugins inspect` says why.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema};
use libloading::Library;
use serde::Serialize;
use tributary_sdk::plugin::abi::{
    FFI_ArrowSchema, FfiBatch, FfiBytes, FfiFunctionTable, FUNCTIONS_SYMBOL, FUNCTIONS_VERSION,
    STATUS_OK,
};
use tributary_sdk::plugin::batches::{export_batch, import_batch, import_schema};
use tributary_sdk::plugin::error_from_bytes;
use tributary_sdk::plugin::export_functions::RETURN_FIELD;
use tributary_sdk::{Error, ErrorCode, Result, ScalarFunction};

/// A pointer to a plugin's static functions table (its version already checked).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FunctionsRef(*const FfiFunctionTable);

// SAFETY: the table is immutable static data of a library that is never unloaded.
unsafe impl Send for FunctionsRef {}
// SAFETY: see above.
unsafe impl Sync for FunctionsRef {}

impl FunctionsRef {
    fn get(&self) -> &FfiFunctionTable {
        // SAFETY: non-null and of the host's version (checked at load), static in a pinned
        // library.
        unsafe { &*self.0 }
    }
}

/// One function as `plugins inspect` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionInfo {
    /// The name SQL calls.
    pub name: String,
    /// `mask_email(Utf8) -> Utf8`.
    pub signature: String,
    /// Its one-line description.
    pub description: String,
    /// Equal arguments give equal results.
    pub deterministic: bool,
}

impl FunctionInfo {
    /// What `f` declares.
    pub fn of(f: &dyn ScalarFunction) -> Self {
        let args: Vec<String> = f.arg_types().iter().map(|t| t.to_string()).collect();
        FunctionInfo {
            name: f.name().to_string(),
            signature: format!("{}({}) -> {}", f.name(), args.join(", "), f.return_type()),
            description: f.description().to_string(),
            deterministic: f.deterministic(),
        }
    }
}

/// A plugin's function, callable like a native one.
#[derive(Debug)]
pub struct ForeignFunction {
    plugin: String,
    table: FunctionsRef,
    index: usize,
    name: String,
    description: String,
    deterministic: bool,
    args: Vec<DataType>,
    returns: DataType,
    // Keeps the library mapped as long as the function is registered anywhere.
    _library: Arc<Library>,
}

/// The functions table of `library`, or why it has none.
pub(crate) fn functions_table(library: &Library) -> std::result::Result<FunctionsRef, String> {
    crate::plugin::loader::extension_table::<FfiFunctionTable>(
        library,
        FUNCTIONS_SYMBOL,
        FUNCTIONS_VERSION,
        "functions",
        || {
            format!(
                "exports no functions (no {FUNCTIONS_SYMBOL}: built before the functions \
                 extension, tributary-sdk {} has it)",
                tributary_sdk::SDK_VERSION
            )
        },
        "returned no functions table",
    )
    .map(FunctionsRef)
}

/// The most functions a plugin may export (a larger count is refused before any is read).
pub const MAX_FUNCTIONS: usize = 4096;

/// Reads every function's signature from the table.
pub(crate) fn read_functions(
    plugin: &str,
    table: FunctionsRef,
    library: &Arc<Library>,
) -> Result<Vec<Arc<ForeignFunction>>> {
    let t = table.get();
    // SAFETY: the table's entries follow the extension's contract; `count` catches panics.
    let count = unsafe { (t.count)() };
    if count > MAX_FUNCTIONS {
        return Err(Error::new(
            ErrorCode::Plugin,
            format!(
                "plugin '{plugin}' declares {count} functions, more than the {MAX_FUNCTIONS} a plugin may export"
            ),
        ));
    }
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let mut json = FfiBytes::empty();
        let mut schema = FFI_ArrowSchema::empty();
        // SAFETY: both out-parameters are valid, empty values the plugin overwrites.
        let status = unsafe { (t.describe)(index, &mut json, &mut schema) };
        // SAFETY: `json` was written by the plugin with its own release.
        let bytes = unsafe { json.take() };
        if status != STATUS_OK {
            return Err(error_from_bytes(&bytes).with_context("plugin", plugin));
        }
        let bad = |why: String| {
            Error::new(
                ErrorCode::Plugin,
                format!("plugin '{plugin}' describes its function {index} badly: {why}"),
            )
        };
        let meta: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        let name = meta["name"]
            .as_str()
            .ok_or_else(|| bad("no name".into()))?
            .to_string();
        tributary_sdk::function::check_name(&name).map_err(|e| bad(e.message().to_string()))?;
        let signature = import_schema(&schema)?;
        let Some((ret, args)) = signature.fields().split_last() else {
            return Err(bad("an empty signature".into()));
        };
        if ret.name() != RETURN_FIELD {
            return Err(bad(format!(
                "its last field is '{}', not '{RETURN_FIELD}'",
                ret.name()
            )));
        }
        out.push(Arc::new(ForeignFunction {
            plugin: plugin.to_string(),
            table,
            index,
            name,
            description: meta["description"].as_str().unwrap_or_default().to_string(),
            deterministic: meta["deterministic"].as_bool().unwrap_or(true),
            args: args.iter().map(|f| f.data_type().clone()).collect(),
            returns: ret.data_type().clone(),
            _library: library.clone(),
        }));
    }
    Ok(out)
}

impl ScalarFunction for ForeignFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn arg_types(&self) -> Vec<DataType> {
        self.args.clone()
    }

    fn return_type(&self) -> DataType {
        self.returns.clone()
    }

    fn deterministic(&self) -> bool {
        self.deterministic
    }

    fn invoke(&self, args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
        let fields: Vec<Field> = args
            .iter()
            .enumerate()
            .map(|(i, a)| Field::new(i.to_string(), a.data_type().clone(), true))
            .collect();
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            args.to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("the arguments of function '{}'", self.name),
            )
            .with_cause(e)
        })?;
        let mut input = export_batch(&batch)?;
        let mut output = FfiBatch::empty();
        let mut err = FfiBytes::empty();
        // SAFETY: the table follows the extension's contract: it moves `input` out, writes
        // `output` on success and `err` either way.
        let status =
            unsafe { (self.table.get().invoke)(self.index, &mut input, &mut output, &mut err) };
        // SAFETY: `err` was written by the plugin (or is still empty).
        let bytes = unsafe { err.take() };
        if status != STATUS_OK {
            return Err(error_from_bytes(&bytes)
                .with_context("plugin", &self.plugin)
                .with_context("function", &self.name));
        }
        // SAFETY: the plugin exported `output` with the C Data Interface.
        let result = unsafe { import_batch(output, None) }?;
        let column = result.columns().first().cloned().ok_or_else(|| {
            Error::new(
                ErrorCode::Plugin,
                format!(
                    "function '{}' of plugin '{}' returned no column",
                    self.name, self.plugin
                ),
            )
        })?;
        tributary_sdk::function::check_output(self, &column, rows)?;
        Ok(column)
    }
}
