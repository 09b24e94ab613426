//! Avro schema to Arrow, and the Avro binary decoder.
//!
//! The schema text is parsed by `apache-avro` (its `Schema` is the reference for names,
//! namespaces and logical types); records are read by a hand-written binary reader driven by a
//! plan compiled from that schema, writing straight into column builders. Going through
//! `apache_avro::types::Value` per record would allocate a tree per record and cost several times
//! the decode itself.
//!
//! Mapping: null -> null, boolean, int -> int32, long -> int64, float, double, bytes -> binary,
//! string -> utf8, record -> struct, enum -> utf8 (symbol), array -> list, map -> map<utf8, T>,
//! fixed -> fixed_size_binary; logical types date -> date32, time-millis -> time32(ms),
//! time-micros -> time64(us), timestamp-millis / -micros / -nanos -> timestamp(unit, UTC),
//! local-timestamp-* -> timestamp(unit), decimal (bytes or fixed) -> decimal128(p, s), uuid -> utf8,
//! duration -> fixed_size_binary(12). `["null", T]` -> nullable T; any other union -> struct with
//! one nullable field per branch, named after the record (or named type), `member<i>` otherwise.
//! Refused: recursive types, decimals with precision above 38, big-decimal.

mod reader;
#[cfg(feature = "registry")]
mod references;
#[cfg(feature = "registry")]
mod resolve;

use std::collections::HashMap;
use std::sync::Arc;

use apache_avro::schema::{InnerDecimalSchema, Name, UuidSchema};
use apache_avro::Schema;
use arrow_schema::{DataType, Field, Fields, TimeUnit};

use tributary_sdk::error::{Error, ErrorCode, Result};

pub(crate) use reader::AvroDecoder;
#[cfg(feature = "registry")]
pub(crate) use references::inline_references;
#[cfg(feature = "registry")]
pub(crate) use resolve::plan as resolution_plan;

/// How one Avro value is read.
#[derive(Debug, Clone)]
pub(crate) enum ANode {
    Null,
    Bool,
    /// int (and date, time-millis) into an int32 column.
    Int,
    /// long (and timestamps, time-micros) into an int64 column.
    Long,
    Float,
    Double,
    Bytes,
    Str,
    /// uuid stored as 16 fixed bytes, rendered as text.
    UuidFixed,
    DecimalBytes,
    DecimalFixed(usize),
    Fixed(usize),
    Enum(Vec<String>),
    Record(Vec<ANode>),
    Array(Box<ANode>),
    Map(Box<ANode>),
    /// `["null", T]`: the branch index of null and T.
    Nullable(u8, Box<ANode>),
    /// Other unions: branch -> child of the struct (None for the null branch).
    Union(Vec<Option<usize>>, Vec<ANode>),
    // Schema resolution (`schemaResolution=writer`, see `resolve`): a writer's datum read into
    // the pinned schema's columns.
    /// A writer number promoted to the reader's wider type.
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    Promote(Promotion),
    /// A writer enum index -> the reader's symbol (None: the reader has no such symbol).
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    EnumMap(Vec<Option<String>>),
    /// A writer union: the plan of each branch into the reader's column.
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    WriterUnion(Vec<ANode>),
    /// A null into a nullable reader column (reads nothing).
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    PushNull,
    /// A writer union's null branch where the reader has no null: the record is malformed.
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    RefuseNull,
    /// A writer record read into a reader record.
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    Resolved(Box<RecordPlan>),
}

/// Writer-to-reader number promotions.
#[cfg_attr(not(feature = "registry"), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Promotion {
    IntToLong,
    IntToFloat,
    IntToDouble,
    LongToFloat,
    LongToDouble,
    FloatToDouble,
}

/// One writer field: read into reader child `k`, or skipped (the plan is the writer's).
#[cfg_attr(not(feature = "registry"), allow(dead_code))]
#[derive(Debug, Clone)]
pub(crate) enum Step {
    Read(usize, ANode),
    Skip(ANode),
}

/// A writer record read into a reader record: the writer's fields in order, then the reader
/// fields the writer does not have, each from its default's encoding.
#[derive(Debug, Clone)]
pub(crate) struct RecordPlan {
    pub steps: Vec<Step>,
    /// Reader child, its default encoded with its schema, and the reader's plan for it.
    pub defaults: Vec<(usize, Vec<u8>, ANode)>,
}

impl ANode {
    /// Fewest bytes a value can take (0 for null and records of nulls), to bound block counts.
    pub(crate) fn min_size(&self) -> usize {
        match self {
            ANode::Null => 0,
            ANode::Record(fields) => fields.iter().map(ANode::min_size).sum(),
            ANode::Fixed(n) | ANode::DecimalFixed(n) => *n,
            ANode::UuidFixed => 16,
            ANode::PushNull => 0,
            ANode::Resolved(r) => r
                .steps
                .iter()
                .map(|s| match s {
                    Step::Read(_, n) | Step::Skip(n) => n.min_size(),
                })
                .sum(),
            _ => 1,
        }
    }
}

fn refuse(path: &str, msg: impl std::fmt::Display) -> Error {
    let at = if path.is_empty() { "<root>" } else { path };
    Error::new(
        ErrorCode::Schema,
        format!("Avro schema field '{at}': {msg}"),
    )
    .with_context("field", at)
}

/// Parses Avro schema JSON into the Arrow type of the decoded column and the reading plan.
pub(crate) fn compile(text: &str) -> Result<(DataType, ANode)> {
    let schema = Schema::parse_str(text).map_err(|e| {
        Error::new(
            ErrorCode::Schema,
            format!("avro_schema is not a valid Avro schema: {e}"),
        )
    })?;
    let mut names = HashMap::new();
    collect_names(&schema, &mut names);
    let mut c = Compiler {
        names,
        stack: Vec::new(),
    };
    c.node(&schema, "")
}

fn collect_names(s: &Schema, names: &mut HashMap<Name, Schema>) {
    match s {
        Schema::Record(r) => {
            names.insert(r.name.clone(), s.clone());
            for f in &r.fields {
                collect_names(&f.schema, names);
            }
        }
        Schema::Enum(e) => {
            names.insert(e.name.clone(), s.clone());
        }
        Schema::Fixed(f) => {
            names.insert(f.name.clone(), s.clone());
        }
        Schema::Decimal(d) => {
            if let InnerDecimalSchema::Fixed(f) = &d.inner {
                names.insert(f.name.clone(), Schema::Fixed(f.clone()));
            }
        }
        Schema::Uuid(UuidSchema::Fixed(f)) | Schema::Duration(f) => {
            names.insert(f.name.clone(), Schema::Fixed(f.clone()));
        }
        Schema::Array(a) => collect_names(&a.items, names),
        Schema::Map(m) => collect_names(&m.types, names),
        Schema::Union(u) => {
            for v in u.variants() {
                collect_names(v, names);
            }
        }
        _ => {}
    }
}

struct Compiler {
    names: HashMap<Name, Schema>,
    stack: Vec<Name>,
}

fn ts(unit: TimeUnit, utc: bool) -> DataType {
    DataType::Timestamp(unit, utc.then(|| "UTC".into()))
}

impl Compiler {
    fn node(&mut self, s: &Schema, path: &str) -> Result<(DataType, ANode)> {
        Ok(match s {
            Schema::Null => (DataType::Null, ANode::Null),
            Schema::Boolean => (DataType::Boolean, ANode::Bool),
            Schema::Int => (DataType::Int32, ANode::Int),
            Schema::Long => (DataType::Int64, ANode::Long),
            Schema::Float => (DataType::Float32, ANode::Float),
            Schema::Double => (DataType::Float64, ANode::Double),
            Schema::Bytes => (DataType::Binary, ANode::Bytes),
            Schema::String => (DataType::Utf8, ANode::Str),
            Schema::Date => (DataType::Date32, ANode::Int),
            Schema::TimeMillis => (DataType::Time32(TimeUnit::Millisecond), ANode::Int),
            Schema::TimeMicros => (DataType::Time64(TimeUnit::Microsecond), ANode::Long),
            Schema::TimestampMillis => (ts(TimeUnit::Millisecond, true), ANode::Long),
            Schema::TimestampMicros => (ts(TimeUnit::Microsecond, true), ANode::Long),
            Schema::TimestampNanos => (ts(TimeUnit::Nanosecond, true), ANode::Long),
            Schema::LocalTimestampMillis => (ts(TimeUnit::Millisecond, false), ANode::Long),
            Schema::LocalTimestampMicros => (ts(TimeUnit::Microsecond, false), ANode::Long),
            Schema::LocalTimestampNanos => (ts(TimeUnit::Nanosecond, false), ANode::Long),
            Schema::Uuid(UuidSchema::String) => (DataType::Utf8, ANode::Str),
            Schema::Uuid(UuidSchema::Bytes) => (DataType::Binary, ANode::Bytes),
            Schema::Uuid(UuidSchema::Fixed(f)) if f.size == 16 => {
                (DataType::Utf8, ANode::UuidFixed)
            }
            Schema::Uuid(UuidSchema::Fixed(f)) => (
                DataType::FixedSizeBinary(f.size as i32),
                ANode::Fixed(f.size),
            ),
            Schema::Decimal(d) => {
                if d.precision == 0 || d.precision > 38 {
                    return Err(refuse(
                        path,
                        format!(
                            "decimal precision {} is outside 1..=38 (Arrow decimal128)",
                            d.precision
                        ),
                    ));
                }
                if d.scale > d.precision {
                    return Err(refuse(path, "decimal scale is larger than its precision"));
                }
                let dt = DataType::Decimal128(d.precision as u8, d.scale as i8);
                match &d.inner {
                    InnerDecimalSchema::Bytes => (dt, ANode::DecimalBytes),
                    InnerDecimalSchema::Fixed(f) => (dt, ANode::DecimalFixed(f.size)),
                }
            }
            Schema::BigDecimal => {
                return Err(refuse(
                    path,
                    "logical type big-decimal has no fixed precision and is not supported",
                ))
            }
            Schema::Duration(_) => (DataType::FixedSizeBinary(12), ANode::Fixed(12)),
            Schema::Fixed(f) => (
                DataType::FixedSizeBinary(f.size as i32),
                ANode::Fixed(f.size),
            ),
            Schema::Enum(e) => (DataType::Utf8, ANode::Enum(e.symbols.clone())),
            Schema::Array(a) => {
                let (dt, node) = self.node(&a.items, &format!("{path}[]"))?;
                (
                    DataType::List(Arc::new(Field::new("element", dt, true))),
                    ANode::Array(Box::new(node)),
                )
            }
            Schema::Map(m) => {
                let (dt, node) = self.node(&m.types, &format!("{path}{{}}"))?;
                (crate::map_type(dt), ANode::Map(Box::new(node)))
            }
            Schema::Record(r) => {
                if self.stack.contains(&r.name) {
                    return Err(refuse(
                        path,
                        format!(
                            "recursive type '{}' cannot be represented as Arrow columns",
                            r.name.fullname(None)
                        ),
                    ));
                }
                self.stack.push(r.name.clone());
                let mut fields = Vec::with_capacity(r.fields.len());
                let mut nodes = Vec::with_capacity(r.fields.len());
                for f in &r.fields {
                    let sub = if path.is_empty() {
                        f.name.clone()
                    } else {
                        format!("{path}.{}", f.name)
                    };
                    let (dt, node) = self.node(&f.schema, &sub)?;
                    fields.push(Field::new(&f.name, dt, true));
                    nodes.push(node);
                }
                self.stack.pop();
                (DataType::Struct(Fields::from(fields)), ANode::Record(nodes))
            }
            Schema::Ref { name } => {
                let target = self.names.get(name).cloned().ok_or_else(|| {
                    refuse(path, format!("unknown type '{}'", name.fullname(None)))
                })?;
                if self.stack.contains(name) {
                    return Err(refuse(
                        path,
                        format!(
                            "recursive type '{}' cannot be represented as Arrow columns",
                            name.fullname(None)
                        ),
                    ));
                }
                self.node(&target, path)?
            }
            Schema::Union(u) => self.union(u.variants(), path)?,
        })
    }

    fn union(&mut self, variants: &[Schema], path: &str) -> Result<(DataType, ANode)> {
        let null_at = variants.iter().position(|v| matches!(v, Schema::Null));
        let others: Vec<(usize, &Schema)> = variants
            .iter()
            .enumerate()
            .filter(|(_, v)| !matches!(v, Schema::Null))
            .collect();
        if let (Some(n), [(_, one)]) = (null_at, others.as_slice()) {
            let (dt, node) = self.node(one, path)?;
            return Ok((dt, ANode::Nullable(n as u8, Box::new(node))));
        }
        if let (None, [(_, one)]) = (null_at, others.as_slice()) {
            return self.node(one, path);
        }
        if others.is_empty() {
            return Ok((DataType::Null, ANode::Null));
        }
        let mut branch_to_child = vec![None; variants.len()];
        let mut fields: Vec<Field> = Vec::with_capacity(others.len());
        let mut nodes = Vec::with_capacity(others.len());
        for (child, (branch, v)) in others.iter().enumerate() {
            let mut name = match self.named(v) {
                Some(n) => n,
                None => format!("member{child}"),
            };
            if fields.iter().any(|f| *f.name() == name) {
                name = format!("{name}{child}");
            }
            let (dt, node) = self.node(v, &format!("{path}.{name}"))?;
            fields.push(Field::new(name, dt, true));
            nodes.push(node);
            branch_to_child[*branch] = Some(child);
        }
        Ok((
            DataType::Struct(Fields::from(fields)),
            ANode::Union(branch_to_child, nodes),
        ))
    }

    /// The simple name of a named type (record, enum, fixed), following references.
    fn named(&self, s: &Schema) -> Option<String> {
        match s {
            Schema::Record(r) => Some(r.name.name().to_string()),
            Schema::Enum(e) => Some(e.name.name().to_string()),
            Schema::Fixed(f) => Some(f.name.name().to_string()),
            Schema::Ref { name } => Some(name.name().to_string()),
            _ => None,
        }
    }
}
