//! `mask_email(email)`: the plugin's SQL function (the functions extension), the kind of
//! masking an ingestion job applies before records land: `alice@example.com` becomes
//! `a***@example.com`. A value without `@` is not an address and becomes null, as does null.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, StringArray};
use arrow_schema::DataType;
use tributary_sdk::function::{arg, ScalarFunction};
use tributary_sdk::Result;

/// `mask_email(Utf8) -> Utf8`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MaskEmail;

impl ScalarFunction for MaskEmail {
    fn name(&self) -> &str {
        "mask_email"
    }

    fn description(&self) -> &str {
        "masks an e-mail address's local part: alice@example.com -> a***@example.com"
    }

    fn arg_types(&self) -> Vec<DataType> {
        vec![DataType::Utf8]
    }

    fn return_type(&self) -> DataType {
        DataType::Utf8
    }

    fn invoke(&self, args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
        let input = arg::<StringArray>(self, args, 0)?;
        let mut out = StringBuilder::with_capacity(rows, input.values().len() + 3 * rows);
        let mut buf = String::new();
        for v in input.iter() {
            match v.and_then(|e| e.split_once('@')) {
                Some((local, domain)) => {
                    buf.clear();
                    buf.push(local.chars().next().unwrap_or('*'));
                    buf.push_str("***@");
                    buf.push_str(domain);
                    out.append_value(&buf);
                }
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn masks_addresses_and_nulls_the_rest() {
        let input: ArrayRef = Arc::new(StringArray::from(vec![
            Some("alice@example.com"),
            Some("not an address"),
            None,
            Some("@bare.org"),
        ]));
        let out = MaskEmail.invoke(&[input], 4).expect("invoke");
        let out = out.as_any().downcast_ref::<StringArray>().expect("strings");
        assert_eq!(
            out.iter().collect::<Vec<_>>(),
            [Some("a***@example.com"), None, None, Some("****@bare.org")]
        );
    }
}
