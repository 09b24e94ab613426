//! Confluent schema references for Avro: a schema that names types registered under other
//! subjects is made self-contained by writing each referenced type's definition where the
//! schema first uses it (the same "dereferenced" schema the registry itself can serve).
//!
//! A reference's name is the referenced type's fully qualified name. Names resolve by the
//! Avro rules: a name without dots takes the enclosing namespace; a type defined earlier in
//! the document is used by name, not inlined again. An inlined definition keeps the namespace
//! it was registered with (an explicit empty namespace when it had none), so the enclosing
//! namespace does not change its name.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use tributary_sdk::error::{Error, ErrorCode, Result};

const PRIMITIVES: &[&str] = &[
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

/// How deep inlined references may nest (a guard against reference cycles).
const MAX_DEPTH: usize = 64;

/// `main` with every referenced type written out. `refs` are (type name, schema JSON) pairs,
/// the transitive references of `main`.
pub(crate) fn inline_references(main: &str, refs: &[(String, String)]) -> Result<String> {
    let bad = |what: &str, e: serde_json::Error| {
        Error::new(
            ErrorCode::Schema,
            format!("{what} is not valid Avro schema JSON: {e}"),
        )
    };
    let mut defs = HashMap::new();
    for (name, text) in refs {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| bad(&format!("referenced schema '{name}'"), e))?;
        defs.insert(name.clone(), v);
    }
    let mut schema: Value = serde_json::from_str(main).map_err(|e| bad("the schema", e))?;
    let mut inliner = Inliner {
        defs,
        defined: HashSet::new(),
    };
    inliner.walk(&mut schema, "", 0)?;
    Ok(schema.to_string())
}

struct Inliner {
    defs: HashMap<String, Value>,
    defined: HashSet<String>,
}

fn qualify(name: &str, namespace: &str) -> String {
    if name.contains('.') || namespace.is_empty() {
        name.trim_start_matches('.').to_string()
    } else {
        format!("{namespace}.{name}")
    }
}

fn namespace_of(full: &str) -> &str {
    full.rsplit_once('.').map_or("", |(ns, _)| ns)
}

impl Inliner {
    fn walk(&mut self, v: &mut Value, ns: &str, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::new(
                ErrorCode::Schema,
                "Avro schema references nest too deeply (a reference cycle?)",
            ));
        }
        match v {
            Value::String(name) => {
                if PRIMITIVES.contains(&name.as_str()) {
                    return Ok(());
                }
                // As in Avro Java: a name not found in the enclosing namespace is looked up in
                // the null namespace (shared types are often registered without one).
                let full = qualify(name, ns);
                let known = |k: &str| self.defined.contains(k) || self.defs.contains_key(k);
                let key = if known(&full) {
                    full
                } else if !name.contains('.') && known(name) {
                    name.clone()
                } else {
                    // Unknown names stay: the Avro parser refuses them by name.
                    return Ok(());
                };
                if self.defined.contains(&key) {
                    if !key.contains('.') && !ns.is_empty() {
                        // A leading dot keeps the null namespace inside a namespaced record.
                        *v = Value::String(format!(".{key}"));
                    }
                    return Ok(());
                }
                let Some(mut def) = self.defs.get(&key).cloned() else {
                    return Ok(());
                };
                if let Value::Object(o) = &mut def {
                    let dotted = o
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| n.contains('.'));
                    if !dotted && !o.contains_key("namespace") {
                        o.insert("namespace".into(), Value::String(String::new()));
                    }
                }
                self.walk(&mut def, "", depth + 1)?;
                *v = def;
            }
            Value::Array(branches) => {
                for b in branches {
                    self.walk(b, ns, depth)?;
                }
            }
            Value::Object(o) => self.walk_object(o, ns, depth)?,
            _ => {}
        }
        Ok(())
    }

    fn walk_object(&mut self, o: &mut Map<String, Value>, ns: &str, depth: usize) -> Result<()> {
        let kind = o.get("type").and_then(Value::as_str).map(str::to_string);
        match kind.as_deref() {
            Some("record" | "error" | "enum" | "fixed") => {
                let own_ns = o.get("namespace").and_then(Value::as_str).unwrap_or(ns);
                let name = o.get("name").and_then(Value::as_str).unwrap_or_default();
                let full = qualify(name, own_ns);
                let child_ns = namespace_of(&full).to_string();
                self.defined.insert(full);
                if let Some(Value::Array(fields)) = o.get_mut("fields") {
                    for f in fields {
                        if let Some(t) = f.get_mut("type") {
                            self.walk(t, &child_ns, depth)?;
                        }
                    }
                }
            }
            Some("array") => {
                if let Some(items) = o.get_mut("items") {
                    self.walk(items, ns, depth)?;
                }
            }
            Some("map") => {
                if let Some(values) = o.get_mut("values") {
                    self.walk(values, ns, depth)?;
                }
            }
            // A primitive with a logical type, or `{"type": <schema>}`.
            _ => {
                if let Some(t) = o.get_mut("type") {
                    self.walk(t, ns, depth)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUSTOMER: &str = r#"{"type":"record","name":"Customer","namespace":"com.shared","fields":[{"name":"name","type":"string"},{"name":"address","type":"com.shared.Address"}]}"#;
    const ADDRESS: &str = r#"{"type":"record","name":"Address","namespace":"com.shared","fields":[{"name":"city","type":"string"}]}"#;
    const STATUS: &str = r#"{"type":"enum","name":"Status","symbols":["NEW","PAID"]}"#;

    fn refs() -> Vec<(String, String)> {
        vec![
            ("com.shared.Customer".into(), CUSTOMER.into()),
            ("com.shared.Address".into(), ADDRESS.into()),
            ("Status".into(), STATUS.into()),
        ]
    }

    #[test]
    fn references_are_written_out_once_transitively() {
        let main = r#"{"type":"record","name":"Order","namespace":"com.shop","fields":[
            {"name":"buyer","type":"com.shared.Customer"},
            {"name":"seller","type":["null","com.shared.Customer"]},
            {"name":"ship_to","type":"com.shared.Address"},
            {"name":"status","type":"Status"},
            {"name":"previous","type":["null","Status"]}]}"#;
        let text = inline_references(main, &refs()).unwrap();
        let (dt, _) = super::super::compile(&text).unwrap();
        let s = dt.to_string();
        assert!(
            s.contains("buyer") && s.contains("city") && s.contains("status"),
            "{s}"
        );
        // Customer and Address are defined once, used by name afterwards.
        assert_eq!(text.matches(r#""name":"Customer""#).count(), 1, "{text}");
        assert_eq!(text.matches(r#""name":"Address""#).count(), 1, "{text}");
        // `Status` had no namespace: inside com.shop it must not become com.shop.Status.
        let parsed = apache_avro::Schema::parse_str(&text).unwrap();
        assert!(format!("{parsed:?}").contains("Status"));
        assert!(!text.contains("com.shop.Status"));
        assert!(text.contains(r#"".Status""#), "{text}");
    }

    #[test]
    fn a_missing_reference_is_refused_by_name() {
        let main =
            r#"{"type":"record","name":"Order","fields":[{"name":"c","type":"com.shared.Nope"}]}"#;
        let text = inline_references(main, &refs()).unwrap();
        let e = super::super::compile(&text).unwrap_err();
        assert!(e.message().contains("com.shared.Nope"), "{}", e.message());
    }

    #[test]
    fn bad_reference_json_names_the_reference() {
        let e = inline_references("\"string\"", &[("x.Y".into(), "{oops".into())]).unwrap_err();
        assert!(e.message().contains("'x.Y'"), "{}", e.message());
    }
}
