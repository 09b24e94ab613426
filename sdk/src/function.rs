//! User-defined scalar functions for the `[transform]` SQL, written against Arrow alone.
//!
//! A [`ScalarFunction`] takes columns and returns one column of the same length. A crate that
//! embeds the runtime registers one with the runtime's registry; a plugin exports it with
//! `export_plugin! { ..., functions: [MaskEmail] }` and the host calls it across the C ABI
//! through the Arrow C Data Interface (no copy of the columns). Either way the SQL calls it by
//! name (`SELECT mask_email(email) FROM source`), with exactly the declared argument types (cast
//! in SQL otherwise), and the host checks what it returns ([`check_output`]).
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{Array, ArrayRef, StringArray};
//! use arrow_schema::DataType;
//! use tributary_sdk::{function::ScalarFunction, Result};
//!
//! #[derive(Debug)]
//! struct Shout;
//!
//! impl ScalarFunction for Shout {
//!     fn name(&self) -> &str { "shout" }
//!     fn arg_types(&self) -> Vec<DataType> { vec![DataType::Utf8] }
//!     fn return_type(&self) -> DataType { DataType::Utf8 }
//!     fn invoke(&self, args: &[ArrayRef], _rows: usize) -> Result<ArrayRef> {
//!         let s = tributary_sdk::function::arg::<StringArray>(self, args, 0)?;
//!         Ok(Arc::new(s.iter().map(|v| v.map(str::to_uppercase)).collect::<StringArray>()))
//!     }
//! }
//! let out = Shout.invoke(&[Arc::new(StringArray::from(vec!["a"])) as ArrayRef], 1).unwrap();
//! assert_eq!(out.len(), 1);
//! ```

use std::fmt::Debug;

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::error::{Error, ErrorCode, Result};

/// A scalar function: columns in, one column of as many rows out.
pub trait ScalarFunction: Send + Sync + Debug {
    /// The name SQL calls it by (lower case; `mask_email`).
    fn name(&self) -> &str;

    /// One line for `tributary plugins inspect`.
    fn description(&self) -> &str {
        ""
    }

    /// The argument types, exactly (the SQL casts to them or is refused at planning).
    fn arg_types(&self) -> Vec<DataType>;

    /// The type of the returned column.
    fn return_type(&self) -> DataType;

    /// True (the default) when equal arguments always give equal results, so the planner may
    /// fold calls on literals.
    fn deterministic(&self) -> bool {
        true
    }

    /// Evaluates the function on `args` (one array per declared argument, each `rows` long;
    /// `rows` also counts rows for a function without arguments). Returns `rows` values of
    /// [`Self::return_type`]. An error fails the batch; a value it cannot compute is a null.
    fn invoke(&self, args: &[ArrayRef], rows: usize) -> Result<ArrayRef>;
}

/// Argument `i` of `args` as the concrete array type the function declared.
pub fn arg<'a, T: Array + 'static>(
    f: &dyn ScalarFunction,
    args: &'a [ArrayRef],
    i: usize,
) -> Result<&'a T> {
    args.get(i)
        .and_then(|a| a.as_any().downcast_ref::<T>())
        .ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                format!(
                    "function '{}' got {} argument(s), argument {i} not of its declared type {}",
                    f.name(),
                    args.len(),
                    f.arg_types()
                        .get(i)
                        .map(|t| t.to_string())
                        .unwrap_or_else(|| "(none)".into())
                ),
            )
        })
}

/// Checks a function's output: `rows` values of its declared return type.
pub fn check_output(f: &dyn ScalarFunction, out: &ArrayRef, rows: usize) -> Result<()> {
    let want = f.return_type();
    if out.data_type() != &want {
        return Err(Error::new(
            ErrorCode::Schema,
            format!(
                "function '{}' returned {} values, it declares {want}",
                f.name(),
                out.data_type()
            ),
        )
        .with_context("function", f.name()));
    }
    if out.len() != rows {
        return Err(Error::new(
            ErrorCode::Schema,
            format!(
                "function '{}' returned {} values for {rows} rows",
                f.name(),
                out.len()
            ),
        )
        .with_context("function", f.name()));
    }
    Ok(())
}

/// A function name SQL can call unquoted: lower-case ASCII letters, digits and `_`, not
/// starting with a digit.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "function name '{name}' is not a plain SQL name (lower-case letters, digits and _, not starting with a digit)"
            ),
        )
        .with_context("function", name))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};

    use super::*;

    #[derive(Debug)]
    struct Len;

    impl ScalarFunction for Len {
        fn name(&self) -> &str {
            "len"
        }
        fn arg_types(&self) -> Vec<DataType> {
            vec![DataType::Utf8]
        }
        fn return_type(&self) -> DataType {
            DataType::Int64
        }
        fn invoke(&self, args: &[ArrayRef], _rows: usize) -> Result<ArrayRef> {
            let s = arg::<StringArray>(self, args, 0)?;
            Ok(Arc::new(
                s.iter()
                    .map(|v| v.map(|v| v.len() as i64))
                    .collect::<Int64Array>(),
            ))
        }
    }

    #[test]
    fn outputs_are_checked_for_type_and_length() {
        let input: ArrayRef = Arc::new(StringArray::from(vec![Some("ab"), None]));
        let out = Len.invoke(std::slice::from_ref(&input), 2).unwrap();
        check_output(&Len, &out, 2).unwrap();
        let e = check_output(&Len, &out, 3).unwrap_err();
        assert!(e.message().contains("returned 2 values for 3 rows"), "{e}");
        let e = check_output(&Len, &input, 2).unwrap_err();
        assert!(
            e.message()
                .contains("returned Utf8 values, it declares Int64"),
            "{e}"
        );
        let e = Len.invoke(&[out], 2).unwrap_err();
        assert!(
            e.message()
                .contains("argument 0 not of its declared type Utf8"),
            "{e}"
        );
    }

    #[test]
    fn names_are_plain_sql_names() {
        check_name("mask_email").unwrap();
        check_name("f2").unwrap();
        for bad in ["", "Mask", "2f", "a-b", "a b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
