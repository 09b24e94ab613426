//! Avro schema resolution compiled into a reading plan: a record written with one schema (the
//! writer's) read straight into the columns of another (the pinned reader schema), following
//! the specification's rules.
//!
//! - Records: fields matched by name (or a reader field's alias); writer fields the reader does
//!   not have are skipped; reader fields the writer does not have take their default (encoded
//!   once here with the reader's field schema, decoded per record from those bytes).
//! - Promotions: int → long, float, double; long → float, double; float → double;
//!   string ↔ bytes.
//! - Enums: symbols matched by name; a symbol the reader does not have takes the reader's
//!   default symbol, else the record is malformed.
//! - Unions: a writer union reads each branch into the reader type (null into a nullable
//!   reader; a null where the reader has none makes that record malformed); a reader
//!   `["null", T]` reads a writer T.
//! - Arrays and maps: their items resolved the same way; any other type must be the same.
//!
//! [`plan`] returns None for what it does not cover (a reader union other than `["null", T]`,
//! a writer union branch the reader cannot read, a default it cannot encode, a writer type it
//! cannot compile); the caller then reads through `apache_avro`'s own resolution, which is
//! slower but complete.

use std::collections::HashMap;

use apache_avro::schema::{Name, RecordField};
use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;
use apache_avro::Schema;

use super::{collect_names, ANode, Compiler, Promotion, RecordPlan, Step};

/// The plan reading `writer`'s datums into the columns compiled from `reader`, or None when
/// this resolution is not covered (see the module documentation).
pub(crate) fn plan(writer: &Schema, reader: &Schema) -> Option<ANode> {
    let names = |s: &Schema| {
        let mut names = HashMap::new();
        collect_names(s, &mut names);
        names
    };
    let mut p = Planner {
        writer: Compiler {
            names: names(writer),
            stack: Vec::new(),
        },
        reader: Compiler {
            names: names(reader),
            stack: Vec::new(),
        },
        reader_root: reader,
        depth: 0,
    };
    p.node(writer, reader)
}

/// Nesting past this is left to `apache_avro` (recursive writer types never end).
const MAX_DEPTH: usize = 64;

struct Planner<'s> {
    writer: Compiler,
    reader: Compiler,
    reader_root: &'s Schema,
    depth: usize,
}

fn deref(names: &HashMap<Name, Schema>, s: &Schema) -> Option<Schema> {
    match s {
        Schema::Ref { name } => names.get(name).cloned(),
        other => Some(other.clone()),
    }
}

impl Planner<'_> {
    fn node(&mut self, w: &Schema, r: &Schema) -> Option<ANode> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let out = self.node_inner(w, r);
        self.depth -= 1;
        out
    }

    fn node_inner(&mut self, w: &Schema, r: &Schema) -> Option<ANode> {
        let w = deref(&self.writer.names, w)?;
        let r = deref(&self.reader.names, r)?;
        Some(match (&w, &r) {
            (Schema::Union(wu), _) => {
                let mut branches = Vec::with_capacity(wu.variants().len());
                for v in wu.variants() {
                    branches.push(if matches!(v, Schema::Null) {
                        match (&r, nullable_inner(&r)) {
                            (_, Some(_)) => ANode::PushNull,
                            (Schema::Union(_), None) => return None,
                            _ => ANode::RefuseNull,
                        }
                    } else {
                        self.node(v, &r)?
                    });
                }
                ANode::WriterUnion(branches)
            }
            (Schema::Null, Schema::Union(_)) => nullable_inner(&r).map(|_| ANode::PushNull)?,
            (_, Schema::Union(_)) => {
                let inner = nullable_inner(&r)?;
                self.node(&w, inner)?
            }
            (Schema::Record(wr), Schema::Record(rr)) => {
                let mut steps = Vec::with_capacity(wr.fields.len());
                let mut read = vec![false; rr.fields.len()];
                for wf in &wr.fields {
                    let k =
                        rr.lookup.get(&wf.name).copied().or_else(|| {
                            rr.fields.iter().position(|f| f.aliases.contains(&wf.name))
                        });
                    match k {
                        Some(k) if !read[k] => {
                            read[k] = true;
                            steps.push(Step::Read(k, self.node(&wf.schema, &rr.fields[k].schema)?));
                        }
                        _ => steps.push(Step::Skip(self.writer.node(&wf.schema, "").ok()?.1)),
                    }
                }
                let mut defaults = Vec::new();
                for (k, f) in rr.fields.iter().enumerate().filter(|(k, _)| !read[*k]) {
                    let bytes = self.default_bytes(f)?;
                    defaults.push((k, bytes, self.reader.node(&f.schema, "").ok()?.1));
                }
                ANode::Resolved(Box::new(RecordPlan { steps, defaults }))
            }
            (Schema::Enum(we), Schema::Enum(re)) => ANode::EnumMap(
                we.symbols
                    .iter()
                    .map(|s| {
                        re.symbols
                            .iter()
                            .find(|r| *r == s)
                            .or(re.default.as_ref())
                            .cloned()
                    })
                    .collect(),
            ),
            (Schema::Array(wa), Schema::Array(ra)) => {
                ANode::Array(Box::new(self.node(&wa.items, &ra.items)?))
            }
            (Schema::Map(wm), Schema::Map(rm)) => {
                ANode::Map(Box::new(self.node(&wm.types, &rm.types)?))
            }
            (Schema::Int, Schema::Long) => ANode::Promote(Promotion::IntToLong),
            (Schema::Int, Schema::Float) => ANode::Promote(Promotion::IntToFloat),
            (Schema::Int, Schema::Double) => ANode::Promote(Promotion::IntToDouble),
            (Schema::Long, Schema::Float) => ANode::Promote(Promotion::LongToFloat),
            (Schema::Long, Schema::Double) => ANode::Promote(Promotion::LongToDouble),
            (Schema::Float, Schema::Double) => ANode::Promote(Promotion::FloatToDouble),
            // Same encoding (length-prefixed); the reader's node checks UTF-8 for a string.
            (Schema::String, Schema::Bytes) => ANode::Bytes,
            (Schema::Bytes, Schema::String) => ANode::Str,
            _ => {
                let (wdt, wn) = self.writer.node(&w, "").ok()?;
                let (rdt, rn) = self.reader.node(&r, "").ok()?;
                if wdt != rdt || !same_leaf(&wn, &rn) {
                    return None;
                }
                rn
            }
        })
    }

    /// A reader field's default, encoded with the field's schema (what a record that has no
    /// such field reads as).
    fn default_bytes(&self, f: &RecordField) -> Option<Vec<u8>> {
        let json = f.default.clone()?;
        let schemata = vec![self.reader_root];
        let value = match &f.schema {
            // A union's default is of its first branch.
            Schema::Union(u) => {
                let first = u.variants().first()?;
                let v = Value::try_from(json)
                    .ok()?
                    .resolve_schemata(first, schemata.clone())
                    .ok()?;
                Value::Union(0, Box::new(v))
            }
            schema => Value::try_from(json)
                .ok()?
                .resolve_schemata(schema, schemata.clone())
                .ok()?,
        };
        GenericDatumWriter::builder(&f.schema)
            .schemata(schemata)
            .ok()?
            .build()
            .ok()?
            .write_value_to_vec(value)
            .ok()
    }
}

/// T of a reader `["null", T]` (or `[T, "null"]`).
fn nullable_inner(r: &Schema) -> Option<&Schema> {
    let Schema::Union(u) = r else { return None };
    match u.variants() {
        [Schema::Null, t] | [t, Schema::Null] if !matches!(t, Schema::Null) => Some(t),
        _ => None,
    }
}

/// Scalar nodes that read the same bytes into the same column.
fn same_leaf(w: &ANode, r: &ANode) -> bool {
    match (w, r) {
        (ANode::Fixed(a), ANode::Fixed(b)) | (ANode::DecimalFixed(a), ANode::DecimalFixed(b)) => {
            a == b
        }
        (ANode::Null, ANode::Null)
        | (ANode::Bool, ANode::Bool)
        | (ANode::Int, ANode::Int)
        | (ANode::Long, ANode::Long)
        | (ANode::Float, ANode::Float)
        | (ANode::Double, ANode::Double)
        | (ANode::Bytes, ANode::Bytes)
        | (ANode::Str, ANode::Str)
        | (ANode::UuidFixed, ANode::UuidFixed)
        | (ANode::DecimalBytes, ANode::DecimalBytes) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    //! Each plan against `apache_avro`'s own resolution (read as the reader, written again,
    //! decoded by the pinned plan): the same columns, the same records refused.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::avro::AvroDecoder;
    use crate::RowDecoder;
    use apache_avro::reader::datum::GenericDatumReader;

    fn check(writer: &str, reader: &str, records: Vec<Value>) {
        let w = Schema::parse_str(writer).unwrap();
        let r = Schema::parse_str(reader).unwrap();
        let plan = plan(&w, &r).unwrap_or_else(|| panic!("no plan for {writer} -> {reader}"));
        let mut direct = AvroDecoder::new(reader).unwrap();
        let mut reference = AvroDecoder::new(reader).unwrap();
        let read = GenericDatumReader::builder(&w)
            .reader_schema(&r)
            .build()
            .unwrap();
        let write = GenericDatumWriter::builder(&r).build().unwrap();
        for (i, v) in records.into_iter().enumerate() {
            let datum = GenericDatumWriter::builder(&w)
                .build()
                .unwrap()
                .write_value_to_vec(v)
                .unwrap();
            let a = direct.decode_avro_plan(&plan, &datum);
            let b = read
                .read_value(&mut datum.as_slice())
                .ok()
                .and_then(|v| write.write_value_to_vec(v).ok())
                .ok_or(())
                .and_then(|bytes| reference.decode(&bytes).map_err(|_| ()));
            assert_eq!(a.is_ok(), b.is_ok(), "record {i}: {a:?} vs {b:?}");
            if a.is_err() {
                direct.push_null();
                reference.push_null();
            }
        }
        let (a, b) = (direct.finish().unwrap(), reference.finish().unwrap());
        assert_eq!(a.as_ref(), b.as_ref(), "{a:?}\n{b:?}");
    }

    fn rec(fields: Vec<(&str, Value)>) -> Value {
        Value::Record(fields.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    const ITEM: &str =
        r#"{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"}]}"#;

    #[test]
    fn records_reorder_skip_and_default() {
        let writer = format!(
            r#"{{"type":"record","name":"R","fields":[
            {{"name":"extra_items","type":{{"type":"array","items":{ITEM}}}}},
            {{"name":"b","type":"string"}},
            {{"name":"extra_map","type":{{"type":"map","values":["null","Item"]}}}},
            {{"name":"a","type":"long"}},
            {{"name":"extra_fixed","type":{{"type":"fixed","name":"F","size":3}}}}]}}"#
        );
        let reader = r#"{"type":"record","name":"R","fields":[
            {"name":"a","type":"long"},
            {"name":"c","type":"string","default":"web"},
            {"name":"b","type":"string"},
            {"name":"d","type":["null","int"],"default":null},
            {"name":"e","type":["int","null"],"default":7},
            {"name":"f","type":{"type":"record","name":"Sub","fields":[{"name":"x","type":"int"}]},"default":{"x":3}},
            {"name":"g","type":{"type":"array","items":"long"},"default":[1,2]},
            {"name":"h","type":{"type":"enum","name":"E","symbols":["A","B"]},"default":"B"}]}"#;
        let item = |s: &str| rec(vec![("sku", Value::String(s.into()))]);
        let records = (0..3)
            .map(|i| {
                rec(vec![
                    ("extra_items", Value::Array(vec![item("x"); i])),
                    ("b", Value::String(format!("b{i}"))),
                    (
                        "extra_map",
                        Value::Map(
                            [
                                ("k".to_string(), Value::Union(1, Box::new(item("y")))),
                                ("n".to_string(), Value::Union(0, Box::new(Value::Null))),
                            ]
                            .into(),
                        ),
                    ),
                    ("a", Value::Long(i as i64)),
                    ("extra_fixed", Value::Fixed(3, vec![1, 2, 3])),
                ])
            })
            .collect();
        check(&writer, reader, records);
    }

    #[test]
    fn promotions() {
        let writer = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"},{"name":"c","type":"long"},{"name":"d","type":"float"},{"name":"e","type":"string"},{"name":"f","type":"bytes"},{"name":"g","type":["null","int"]},{"name":"h","type":"int"},{"name":"i","type":"long"}]}"#;
        let reader = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"double"},{"name":"c","type":"float"},{"name":"d","type":"double"},{"name":"e","type":"bytes"},{"name":"f","type":"string"},{"name":"g","type":["null","long"]},{"name":"h","type":["null","long"]},{"name":"i","type":"double"}]}"#;
        let record = |n: i32, bytes: Vec<u8>, g: Option<i32>| {
            rec(vec![
                ("a", Value::Int(n)),
                ("b", Value::Int(-n)),
                ("c", Value::Long(n as i64 * 1_000_000_007)),
                ("d", Value::Float(n as f32 / 3.0)),
                ("e", Value::String(format!("é{n}"))),
                ("f", Value::Bytes(bytes)),
                (
                    "g",
                    match g {
                        Some(v) => Value::Union(1, Box::new(Value::Int(v))),
                        None => Value::Union(0, Box::new(Value::Null)),
                    },
                ),
                ("h", Value::Int(n)),
                ("i", Value::Long(-(n as i64))),
            ])
        };
        check(
            writer,
            reader,
            vec![
                record(1, b"ok".to_vec(), Some(5)),
                record(2, vec![0xff, 0xfe], None), // bytes -> string: not UTF-8
                record(i32::MAX, b"".to_vec(), None),
            ],
        );
    }

    #[test]
    fn enums_and_unions() {
        let writer = r#"{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","NEW","B"]}},{"name":"s","type":{"type":"enum","name":"S","symbols":["X","Y"]}},{"name":"u","type":["null","string"]}]}"#;
        let reader = r#"{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["B","A","OTHER"],"default":"OTHER"}},{"name":"s","type":{"type":"enum","name":"S","symbols":["X"]}},{"name":"u","type":"string"}]}"#;
        let record = |e: (u32, &str), s: (u32, &str), u: Option<&str>| {
            rec(vec![
                ("e", Value::Enum(e.0, e.1.into())),
                ("s", Value::Enum(s.0, s.1.into())),
                (
                    "u",
                    match u {
                        Some(t) => Value::Union(1, Box::new(Value::String(t.into()))),
                        None => Value::Union(0, Box::new(Value::Null)),
                    },
                ),
            ])
        };
        check(
            writer,
            reader,
            vec![
                record((0, "A"), (0, "X"), Some("t")),
                record((1, "NEW"), (0, "X"), Some("u")), // -> the reader's default
                record((2, "B"), (1, "Y"), Some("v")),   // Y: no such symbol, no default
                record((2, "B"), (0, "X"), None),        // null into a non-null string
            ],
        );
    }

    #[test]
    fn what_is_not_covered_is_left_to_apache_avro() {
        let writer = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
        let reader =
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":["string","long"]}]}"#;
        let w = Schema::parse_str(writer).unwrap();
        let r = Schema::parse_str(reader).unwrap();
        assert!(plan(&w, &r).is_none());
    }
}
