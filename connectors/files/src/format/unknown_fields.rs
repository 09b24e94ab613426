//! JSON fields that are not columns of the stream, at any depth of struct columns.
//!
//! A field missing from the schema at the top level or inside a struct column is "unknown": its
//! value is rescued (as a JSON object with the same nesting, `{"a":{"new":1}}`) or, with schema
//! evolution, collected as a sample from which the new columns' types are inferred.
//!
//! Rescue ([`rescued_fields`]) looks at every depth, also inside the elements of array columns
//! and the values of map columns: an array keeps its positions (`{"items":[null,{"new":1}]}`:
//! the second element had a field `new`, the first nothing rescued) and a map its keys
//! (`{"m":{"k":{"new":1}}}`). Schema evolution ([`unknown_fields`]) only adds columns at the top
//! level and inside struct columns, so its samples stop at lists and maps.

use arrow_schema::{DataType, Fields};
use serde_json::{Map, Value};

/// The fields of `record` that `fields` does not have, keeping the nesting of struct columns
/// (the samples of schema evolution).
pub(crate) fn unknown_fields(record: &Map<String, Value>, fields: &Fields) -> Map<String, Value> {
    walk_struct(record, fields, false)
}

/// The fields of `record` that `fields` does not have at any depth, also inside array elements
/// and map values (the rescued data column).
pub(crate) fn rescued_fields(record: &Map<String, Value>, fields: &Fields) -> Map<String, Value> {
    walk_struct(record, fields, true)
}

fn walk_struct(record: &Map<String, Value>, fields: &Fields, all: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, value) in record {
        match fields.find(name) {
            None => {
                out.insert(name.clone(), value.clone());
            }
            Some((_, field)) => {
                if let Some(nested) = walk_value(field.data_type(), value, all) {
                    out.insert(name.clone(), nested);
                }
            }
        }
    }
    out
}

/// What `value` (of a column of type `dt`) holds that the type has no place for, if anything.
fn walk_value(dt: &DataType, value: &Value, all: bool) -> Option<Value> {
    match (dt, value) {
        (DataType::Struct(children), Value::Object(inner)) => {
            let nested = walk_struct(inner, children, all);
            (!nested.is_empty()).then_some(Value::Object(nested))
        }
        (
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _),
            Value::Array(elements),
        ) if all => {
            let nested: Vec<Value> = elements
                .iter()
                .map(|e| walk_value(item.data_type(), e, all).unwrap_or(Value::Null))
                .collect();
            nested
                .iter()
                .any(|v| !v.is_null())
                .then_some(Value::Array(nested))
        }
        (DataType::Map(entries, _), Value::Object(inner)) if all => {
            let DataType::Struct(kv) = entries.data_type() else {
                return None;
            };
            let value_type = kv.get(1)?.data_type();
            let nested: Map<String, Value> = inner
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), walk_value(value_type, v, all)?)))
                .collect();
            (!nested.is_empty()).then_some(Value::Object(nested))
        }
        _ => None,
    }
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
    fn rescue_looks_inside_array_elements_and_map_values() {
        let item = DataType::Struct(Fields::from(vec![Field::new("k", DataType::Int64, true)]));
        let fields = Fields::from(vec![
            Field::new_list("items", Field::new_list_field(item.clone(), true), true),
            Field::new_map(
                "m",
                "entries",
                Field::new("key", DataType::Utf8, false),
                Field::new("value", item, true),
                false,
                true,
            ),
        ]);
        let rec = obj(serde_json::json!({
            "items": [{"k": 1}, {"k": 2, "new": "z"}],
            "m": {"p": {"k": 1}, "q": {"k": 2, "more": [1]}},
        }));
        assert_eq!(
            Value::Object(rescued_fields(&rec, &fields)),
            serde_json::json!({"items": [null, {"new": "z"}], "m": {"q": {"more": [1]}}})
        );
        // Schema evolution's samples stop at lists and maps, as before.
        assert!(unknown_fields(&rec, &fields).is_empty());
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
