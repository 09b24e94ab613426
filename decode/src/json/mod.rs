//! JSON Schema to Arrow, and the JSON decoder.
//!
//! Mapping (the subset of JSON Schema used to describe records): `object` with `properties` ->
//! struct (every field nullable; fields not in the schema are ignored), `string` -> utf8
//! (`format: date-time` -> timestamp(us, UTC), `format: date` -> date32), `integer` -> int64,
//! `number` -> float64, `boolean` -> boolean, `array` -> list, `object` with only
//! `additionalProperties` -> map<utf8, T>. `["null", T]` and `anyOf: [{type: null}, T]` -> nullable T.
//! Local `$ref`s (`#/definitions/..`, `#/$defs/..`) are followed; recursive ones are refused.
//! Values whose schema is open (`{}`, several types, `object` without properties) become utf8
//! holding their JSON text. The root must be an object.

mod parser;

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use serde_json::Value;

use tributary_sdk::error::{Error, ErrorCode, Result};

pub(crate) use parser::JsonDecoder;

/// How one JSON value is read.
#[derive(Debug, Clone)]
pub(crate) enum JNode {
    Bool,
    Int,
    Num,
    Str,
    Timestamp,
    Date,
    List(Box<JNode>),
    Obj(JObj),
    Map(Box<JNode>),
    /// Open schema: the JSON text (a string's content for strings).
    Raw,
}

/// An object's known properties, in schema order.
#[derive(Debug, Clone)]
pub(crate) struct JObj {
    pub names: Vec<Box<[u8]>>,
    pub nodes: Vec<JNode>,
}

fn refuse(path: &str, msg: impl std::fmt::Display) -> Error {
    let at = if path.is_empty() { "<root>" } else { path };
    Error::new(
        ErrorCode::Schema,
        format!("JSON Schema field '{at}': {msg}"),
    )
    .with_context("field", at)
}

/// Parses JSON Schema text into the Arrow fields of the decoded struct and the reading plan.
pub(crate) fn compile(text: &str) -> Result<(Fields, JObj)> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            format!("json_schema is not valid JSON: {e}"),
        )
    })?;
    let mut c = Compiler {
        root: &root,
        refs: Vec::new(),
    };
    let (dt, node) = c.node(&root, "")?;
    match (dt, node) {
        (DataType::Struct(fields), JNode::Obj(obj)) => Ok((fields, obj)),
        (dt, _) => Err(refuse(
            "",
            format!("the root of a JSON Schema must be an object with properties (found {dt})"),
        )),
    }
}

struct Compiler<'a> {
    root: &'a Value,
    refs: Vec<String>,
}

impl<'a> Compiler<'a> {
    fn resolve(&self, reference: &str, path: &str) -> Result<&'a Value> {
        let pointer = reference.strip_prefix('#').ok_or_else(|| {
            refuse(
                path,
                format!("only local $ref (starting with '#') are supported, found '{reference}'"),
            )
        })?;
        self.root
            .pointer(pointer)
            .ok_or_else(|| refuse(path, format!("$ref '{reference}' points nowhere")))
    }

    fn node(&mut self, schema: &'a Value, path: &str) -> Result<(DataType, JNode)> {
        let obj = match schema {
            Value::Bool(true) => return Ok((DataType::Utf8, JNode::Raw)),
            Value::Object(o) => o,
            _ => return Err(refuse(path, "a schema must be an object or `true`")),
        };
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            if self.refs.iter().any(|x| x == r) {
                return Err(refuse(
                    path,
                    format!("recursive $ref '{r}' cannot be represented as Arrow columns"),
                ));
            }
            let target = self.resolve(r, path)?;
            self.refs.push(r.to_string());
            let out = self.node(target, path);
            self.refs.pop();
            return out;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(alts)) = obj.get(key) {
                let non_null: Vec<&Value> = alts
                    .iter()
                    .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                return match non_null.as_slice() {
                    [one] => self.node(one, path),
                    _ => Ok((DataType::Utf8, JNode::Raw)),
                };
            }
        }
        let ty = match obj.get("type") {
            Some(Value::String(t)) => Some(t.as_str()),
            Some(Value::Array(ts)) => {
                let non_null: Vec<&str> = ts
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|t| *t != "null")
                    .collect();
                match non_null.as_slice() {
                    [one] => Some(*one),
                    _ => return Ok((DataType::Utf8, JNode::Raw)),
                }
            }
            Some(_) => return Err(refuse(path, "'type' must be a string or an array")),
            None if obj.contains_key("properties") => Some("object"),
            None if obj.contains_key("items") => Some("array"),
            None => None,
        };
        Ok(match ty {
            None => (DataType::Utf8, JNode::Raw),
            Some("string") => match obj.get("format").and_then(Value::as_str) {
                Some("date-time") => (
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                    JNode::Timestamp,
                ),
                Some("date") => (DataType::Date32, JNode::Date),
                _ => (DataType::Utf8, JNode::Str),
            },
            Some("integer") => (DataType::Int64, JNode::Int),
            Some("number") => (DataType::Float64, JNode::Num),
            Some("boolean") => (DataType::Boolean, JNode::Bool),
            Some("null") => {
                return Err(refuse(path, "a field of type 'null' only carries no data"))
            }
            Some("array") => {
                let (dt, node) = match obj.get("items") {
                    Some(items) => self.node(items, &format!("{path}[]"))?,
                    None => (DataType::Utf8, JNode::Raw),
                };
                (
                    DataType::List(Arc::new(Field::new("element", dt, true))),
                    JNode::List(Box::new(node)),
                )
            }
            Some("object") => match obj.get("properties") {
                Some(Value::Object(props)) => {
                    let mut fields = Vec::with_capacity(props.len());
                    let mut names = Vec::with_capacity(props.len());
                    let mut nodes = Vec::with_capacity(props.len());
                    for (name, sub) in props {
                        let sub_path = if path.is_empty() {
                            name.clone()
                        } else {
                            format!("{path}.{name}")
                        };
                        let (dt, node) = self.node(sub, &sub_path)?;
                        fields.push(Field::new(name, dt, true));
                        names.push(name.as_bytes().into());
                        nodes.push(node);
                    }
                    (
                        DataType::Struct(Fields::from(fields)),
                        JNode::Obj(JObj { names, nodes }),
                    )
                }
                Some(_) => return Err(refuse(path, "'properties' must be an object")),
                None => match obj.get("additionalProperties") {
                    Some(v @ Value::Object(_)) => {
                        let (dt, node) = self.node(v, &format!("{path}{{}}"))?;
                        (crate::map_type(dt), JNode::Map(Box::new(node)))
                    }
                    _ => (DataType::Utf8, JNode::Raw),
                },
            },
            Some(other) => return Err(refuse(path, format!("unknown type '{other}'"))),
        })
    }
}
