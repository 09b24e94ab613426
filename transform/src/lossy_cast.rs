//! `CAST(binary AS STRING)` with Spark's semantics: it never fails.
//!
//! DataFusion's cast of a binary column to a string validates UTF-8 and fails the whole batch on
//! one bad key; Spark reinterprets the bytes, and what it prints for an invalid sequence is the
//! replacement character. The analyzer rule [`LossyBinaryCast`] rewrites every `CAST(<binary>
//! AS <string type>)` in the query into [`BINARY_TO_STRING`], which keeps valid UTF-8 as it is
//! (arrow's cast, no copy of the bytes when the whole column is valid) and replaces invalid
//! sequences with U+FFFD. `TRY_CAST` keeps DataFusion's behaviour (NULL for invalid UTF-8).
//! Hand-written because neither DataFusion nor arrow has a lossy binary-to-string cast.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::expr::Cast;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

/// The function casts of binary to string become (visible in EXPLAIN).
pub(crate) const BINARY_TO_STRING: &str = "binary_to_string_lossy";

/// Rewrites `CAST(<binary> AS <string>)` into [`BINARY_TO_STRING`] (see the module docs).
#[derive(Debug)]
pub(crate) struct LossyBinaryCast {
    udf: Arc<ScalarUDF>,
}

impl LossyBinaryCast {
    pub(crate) fn new() -> Self {
        LossyBinaryCast {
            udf: Arc::new(ScalarUDF::new_from_impl(BinaryToString::new())),
        }
    }

    fn rewrite_node(&self, plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
        let schema = merge_schema(&plan.inputs());
        let names = NamePreserver::new(&plan);
        plan.map_expressions(|expr| {
            let saved = names.save(&expr);
            let rewritten = expr.transform_up(|e| self.rewrite_expr(e, &schema))?;
            Ok(if rewritten.transformed {
                rewritten.update_data(|e| saved.restore(e))
            } else {
                rewritten
            })
        })
    }

    fn rewrite_expr(
        &self,
        expr: Expr,
        schema: &datafusion::common::DFSchema,
    ) -> Result<Transformed<Expr>> {
        let Expr::Cast(Cast { expr: inner, field }) = &expr else {
            return Ok(Transformed::no(expr));
        };
        if !is_string(field.data_type()) {
            return Ok(Transformed::no(expr));
        }
        let Ok(from) = inner.get_type(schema) else {
            return Ok(Transformed::no(expr));
        };
        if !is_binary(&from) {
            return Ok(Transformed::no(expr));
        }
        let lossy = self.udf.call(vec![(**inner).clone()]);
        Ok(Transformed::yes(match field.data_type() {
            DataType::Utf8 => lossy,
            _ => Expr::Cast(Cast {
                expr: Box::new(lossy),
                field: Arc::clone(field),
            }),
        }))
    }
}

impl AnalyzerRule for LossyBinaryCast {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| self.rewrite_node(p))
            .data()
    }

    fn name(&self) -> &str {
        "tributary_lossy_binary_cast"
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

/// Binary to utf8, invalid sequences replaced by U+FFFD.
#[derive(Debug, PartialEq, Eq, Hash)]
struct BinaryToString {
    signature: Signature,
}

impl BinaryToString {
    fn new() -> Self {
        BinaryToString {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BinaryToString {
    fn name(&self) -> &str {
        BINARY_TO_STRING
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let nullable = args.arg_fields.first().is_none_or(|f| f.is_nullable());
        Ok(Arc::new(Field::new(self.name(), DataType::Utf8, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return exec_err!("{BINARY_TO_STRING} takes one argument");
        };
        match arg {
            ColumnarValue::Array(a) => Ok(ColumnarValue::Array(lossy_utf8(a)?)),
            ColumnarValue::Scalar(s) => {
                let a = lossy_utf8(&s.to_array_of_size(1)?)?;
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&a, 0)?))
            }
        }
    }
}

/// Valid columns go through arrow's cast (buffers reused); a column with an invalid sequence is
/// rebuilt value by value.
pub(crate) fn lossy_utf8(a: &ArrayRef) -> Result<ArrayRef> {
    let strict = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    if let Ok(valid) = cast_with_options(a, &DataType::Utf8, &strict) {
        return Ok(valid);
    }
    let mut out = StringBuilder::with_capacity(a.len(), a.get_array_memory_size());
    let mut push = |v: Option<&[u8]>| match v {
        Some(bytes) => out.append_value(String::from_utf8_lossy(bytes)),
        None => out.append_null(),
    };
    match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().iter().for_each(&mut push),
        DataType::LargeBinary => a.as_binary::<i64>().iter().for_each(&mut push),
        DataType::BinaryView => a.as_binary_view().iter().for_each(&mut push),
        DataType::FixedSizeBinary(_) => a.as_fixed_size_binary().iter().for_each(&mut push),
        other => return exec_err!("{BINARY_TO_STRING} of {other}"),
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use datafusion::arrow::array::{BinaryArray, StringArray};

    #[test]
    fn invalid_sequences_become_replacement_characters() {
        let a: ArrayRef = Arc::new(BinaryArray::from_iter([
            Some(&b"ok"[..]),
            None,
            Some(&[0x66, 0xff, 0x6f][..]),
        ]));
        let out = lossy_utf8(&a).unwrap();
        let out = out.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(out.value(0), "ok");
        assert!(out.is_null(1));
        assert_eq!(out.value(2), "f\u{fffd}o");
    }
}
