//! User-defined scalar functions ([`tributary_sdk::ScalarFunction`]) as DataFusion UDFs.
//!
//! Each function becomes a `ScalarUDF` with an exact signature (its declared argument types;
//! DataFusion inserts the casts SQL allows, or refuses the call at planning) and its declared
//! return type. Literal arguments are expanded to full columns, so a function sees arrays only;
//! what it returns is checked ([`tributary_sdk::function::check_output`]). A function may not
//! take the name of one of DataFusion's own functions: a query's meaning never depends on which
//! plugins are loaded.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use datafusion::common::{exec_datafusion_err, Result as DfResult};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use tributary_sdk::{Error, ErrorCode, Result, ScalarFunction};

/// A [`ScalarFunction`] as a DataFusion UDF.
#[derive(Debug)]
struct Udf {
    function: Arc<dyn ScalarFunction>,
    name: String,
    signature: Signature,
    returns: DataType,
}

impl PartialEq for Udf {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.function, &other.function)
    }
}

impl Eq for Udf {}

impl Hash for Udf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for Udf {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(self.returns.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<DfResult<Vec<ArrayRef>>>()?;
        let f = self.function.as_ref();
        let out = f
            .invoke(&arrays, rows)
            .and_then(|out| tributary_sdk::function::check_output(f, &out, rows).map(|_| out))
            .map_err(|e| exec_datafusion_err!("{e}"))?;
        Ok(ColumnarValue::Array(out))
    }
}

/// Registers `functions` with `ctx`; a name DataFusion already knows is refused.
pub(crate) fn register(ctx: &SessionContext, functions: &[Arc<dyn ScalarFunction>]) -> Result<()> {
    for f in functions {
        let name = f.name().to_ascii_lowercase();
        tributary_sdk::function::check_name(&name)?;
        if ctx.udf(&name).is_ok() || ctx.udaf(&name).is_ok() || ctx.udwf(&name).is_ok() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "[transform] function '{name}' (registered by the program or a plugin) has the name of a built-in SQL function; rename it"
                ),
            )
            .with_context("function", name));
        }
        let volatility = if f.deterministic() {
            Volatility::Immutable
        } else {
            Volatility::Volatile
        };
        let args = f.arg_types();
        let signature = if args.is_empty() {
            Signature::nullary(volatility)
        } else {
            Signature::exact(args, volatility)
        };
        ctx.register_udf(ScalarUDF::new_from_impl(Udf {
            function: Arc::clone(f),
            name,
            signature,
            returns: f.return_type(),
        }));
    }
    Ok(())
}
