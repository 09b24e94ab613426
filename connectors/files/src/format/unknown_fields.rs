//! JSON fields that are not columns of the stream, at any depth of struct columns.
//!
//! A field missing from the schema at the top level or inside a struct column is "unknown": its
//! value is rescued (as a JSON object with the same nesting, `{"a":{"new":1}}`) or, with schema
//! evolution, collected as a sample from which the new columns' types are inferred. Fields
//! inside list elements are not inspected.

use arrow_schema::{DataType, Fields};
use serde_json::{Map, Value};

/// The fields of `record` that `fields` does not have, keeping the nesting of struct columns.
pub(crate) fn unknown_fields(record: &Map<String, Value>, fields: &Fields) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, value) in record {
        match fields.find(name) {
            None => {
                out.insert(name.clone(), value.clone());
            }
            Some((_, field)) => {
                if let (DataType::Struct(children), Value::Object(inner)) =
                    (field.data_type(), value)
                {
                    let nested = unknown_fields(inner, children);
                    if !nested.is_empty() {
                        out.insert(name.clone(), Value::Object(nested));
                    }
                }
            }
        }
    }
    out
}

/// Adds `extra` to the sample of unknown fields: objects merge field by field, and a non-null
/// value replaces a null (a null says nothing of the type).
pub(crate) fn merge_sample(seen: &mut Map<String, Value>, extra: Map<String, Value>) {
    for (name, value) in extra {
        match (seen.get_mut(&name), value) {
            (Some(Value::Object(old)), Value::Object(new)) => merge_sample(old, new),
            (Some(old), new) if old.is_null() => *old = new,
            (Some(_), _) => {}
            (None, new) => {
                seen.insert(name, new);
            }
        }
    }
}

/// The dotted paths of the unknown leaves, sorted: `a.new` for a field new inside struct `a`,
/// `b.x` for a new column `b` holding an object.
pub(crate) fn paths(sample: &Map<String, Value>) -> Vec<String> {
    fn walk(prefix: &str, map: &Map<String, Value>, out: &mut Vec<String>) {
        for (name, value) in map {
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            match value {
                Value::Object(inner) if !inner.is_empty() => walk(&path, inner, out),
                _ => out.push(path),
            }
        }
    }
    let mut out = Vec::new();
    walk("", sample, &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;

    fn schema() -> Fields {
        Fields::from(vec![
            Field::new("id", DataType::Int64, true),
            Field::new(
                "a",
                DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int64, true)])),
                true,
            ),
        ])
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn nested_unknown_fields_keep_their_nesting() {
        let rec = obj(serde_json::json!({"id": 1, "a": {"x": 2, "new": 3}, "top": true}));
        let u = unknown_fields(&rec, &schema());
        assert_eq!(
            Value::Object(u.clone()),
            serde_json::json!({"a": {"new": 3}, "top": true})
        );
        assert_eq!(paths(&u), ["a.new", "top"]);
        let known = obj(serde_json::json!({"id": 1, "a": {"x": 2}}));
        assert!(unknown_fields(&known, &schema()).is_empty());
    }

    #[test]
    fn samples_merge_deeply_and_nulls_give_way() {
        let mut seen = obj(serde_json::json!({"a": {"new": null}, "top": null}));
        merge_sample(
            &mut seen,
            obj(serde_json::json!({"a": {"new": 1, "other": "s"}, "top": false})),
        );
        assert_eq!(
            Value::Object(seen),
            serde_json::json!({"a": {"new": 1, "other": "s"}, "top": false})
        );
    }
}
