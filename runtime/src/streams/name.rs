//! Three-part stream and table names: `catalog.schema.name`.
//!
//! Each part is 1 to 255 characters of ASCII letters, digits, `_` and `-`, starting with a
//! letter, a digit or `_`. Names are case-insensitive and kept in lower case (as Unity Catalog
//! does), so `Main.Sales.Orders` and `main.sales.orders` are the same stream. A name that breaks
//! a rule is refused with the rule it breaks.

use std::fmt;
use std::path::PathBuf;

use tributary_sdk::{Error, ErrorCode, Result};

/// The longest part of a name.
pub const MAX_PART_LEN: usize = 255;

/// A validated `catalog.schema.name`, lower case.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreePartName {
    /// The catalog.
    pub catalog: String,
    /// The schema within the catalog.
    pub schema: String,
    /// The stream or table within the schema.
    pub name: String,
}

impl ThreePartName {
    /// Parses and validates `catalog.schema.name`; `what` names the thing in errors
    /// (`stream name`, `option 'ingestion.table'`).
    pub fn parse(text: &str, what: &str) -> Result<ThreePartName> {
        let bad = |rule: String| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("{what} '{text}' is not a valid three-part name: {rule}"),
            )
            .with_context("name", text)
        };
        let parts: Vec<&str> = text.split('.').collect();
        if parts.len() != 3 {
            return Err(bad(format!(
                "it must have exactly three parts, catalog.schema.name, separated by '.', not {}",
                parts.len()
            )));
        }
        for (part, role) in parts.iter().zip(["catalog", "schema", "name"]) {
            validate_part(part, role).map_err(bad)?;
        }
        Ok(ThreePartName {
            catalog: parts[0].to_ascii_lowercase(),
            schema: parts[1].to_ascii_lowercase(),
            name: parts[2].to_ascii_lowercase(),
        })
    }

    /// `catalog/schema/name` below `root`.
    pub fn path_under(&self, root: &std::path::Path) -> PathBuf {
        root.join(&self.catalog).join(&self.schema).join(&self.name)
    }
}

/// Checks one part of a name (`role` is catalog, schema or name); the error is the rule.
pub fn validate_part(part: &str, role: &str) -> std::result::Result<(), String> {
    if part.is_empty() {
        return Err(format!("the {role} part is empty"));
    }
    if part.len() > MAX_PART_LEN {
        return Err(format!(
            "the {role} part has {} characters, more than {MAX_PART_LEN}",
            part.len()
        ));
    }
    if let Some(c) = part
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "the {role} part '{part}' contains '{c}'; use ASCII letters, digits, '_' and '-' only"
        ));
    }
    if part.starts_with('-') {
        return Err(format!(
            "the {role} part '{part}' starts with '-'; start with a letter, a digit or '_'"
        ));
    }
    Ok(())
}

impl fmt::Display for ThreePartName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.catalog, self.schema, self.name)
    }
}

impl std::str::FromStr for ThreePartName {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        ThreePartName::parse(s, "name")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_lower_cased_and_rules_are_named() {
        let n = ThreePartName::parse("Main.Sales.Orders_v2", "stream name").unwrap();
        assert_eq!(n.to_string(), "main.sales.orders_v2");
        for (text, rule) in [
            ("a.b", "exactly three parts"),
            ("a.b.c.d", "exactly three parts"),
            ("a..c", "schema part is empty"),
            ("a.b c.d", "contains ' '"),
            ("a.b.-c", "starts with '-'"),
            ("a/x.b.c", "contains '/'"),
        ] {
            let e = ThreePartName::parse(text, "stream name").unwrap_err();
            assert!(e.message().contains(rule), "{text}: {}", e.message());
        }
        let long = format!("a.b.{}", "x".repeat(256));
        assert!(ThreePartName::parse(&long, "n")
            .unwrap_err()
            .message()
            .contains("more than 255"));
    }
}
