//! Protobuf schema to Arrow, and the Protobuf decoder.
//!
//! `.proto` text (proto2 or proto3) is compiled at run time by `protox`; imports of the
//! well-known files (`google/protobuf/timestamp.proto`, `wrappers.proto`, ...) resolve without
//! the user shipping them. A schema may also be a base64 `FileDescriptorProto` (what some
//! registry clients register) or a bundle made by the registry provider ([`DESCRIPTOR_SET_PREFIX`]).
//!
//! Mapping (Spark's `from_protobuf`): int32 / sint32 / sfixed32 -> int32, int64 / sint64 /
//! sfixed64 -> int64, uint32 -> int64, uint64 -> decimal128(20, 0), bool, float, double,
//! string -> utf8, bytes -> binary, enum -> utf8 (the value's name; unknown numbers -> null),
//! message -> struct, repeated -> list, map with string keys -> map<utf8, V>, wrapper types
//! (`google.protobuf.Int32Value`, ...) -> nullable scalar, `google.protobuf.Timestamp` ->
//! timestamp(us, UTC). A field absent from the record is null (repeated and map: empty).
//! Refused when the schema is loaded, naming the field: `google.protobuf.Duration`, `Struct`,
//! `Value`, `ListValue`, `Any`, `fixed32`, `fixed64`, maps with non-string keys, groups and
//! recursive messages.

mod reader;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use base64::Engine;
use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

use crate::options::ProtobufOptions;
use tributary_sdk::error::{Error, ErrorCode, Result};

pub(crate) use reader::ProtoDecoder;

/// Prefix of a schema text that carries a base64 `FileDescriptorSet` (all files, imports
/// included) instead of `.proto` source; made by the registry provider when a registered schema
/// references other subjects.
pub const DESCRIPTOR_SET_PREFIX: &str = "descriptor-set;base64,";

/// The name the main schema file gets when compiled.
const MAIN_FILE: &str = "schema.proto";

/// How one protobuf field value is read.
#[derive(Debug, Clone)]
pub(crate) enum PKind {
    Int32,
    Int64,
    UInt32,
    UInt64,
    SInt32,
    SInt64,
    SFixed32,
    SFixed64,
    Bool,
    Float,
    Double,
    Str,
    Bytes,
    Enum(Arc<Vec<(i32, String)>>),
    /// An enum read as its number (`enums.as.ints`).
    EnumInt,
    Message(Box<PMsg>),
    /// A wrapper message (`google.protobuf.Int32Value`, ...): field 1 of this kind.
    Wrapper(Box<PKind>),
    Timestamp,
    /// A map entry message with a string key and this value.
    Map(Box<PKind>),
}

impl PKind {
    /// The wire type a single value of this kind has.
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            PKind::Int32
            | PKind::Int64
            | PKind::UInt32
            | PKind::UInt64
            | PKind::SInt32
            | PKind::SInt64
            | PKind::Bool
            | PKind::Enum(_)
            | PKind::EnumInt => 0,
            PKind::SFixed64 | PKind::Double => 1,
            PKind::SFixed32 | PKind::Float => 5,
            _ => 2,
        }
    }
}

/// A field of a message plan.
#[derive(Debug, Clone)]
pub(crate) struct PField {
    pub kind: PKind,
    pub repeated: bool,
    /// Absent from the wire: its default instead of null (`emit.default.values`, proto3
    /// scalars without presence).
    pub default_when_absent: bool,
}

/// A message plan: fields in declaration order and a number -> index lookup.
#[derive(Debug, Clone)]
pub(crate) struct PMsg {
    pub fields: Vec<PField>,
    /// Field number -> index + 1 for numbers below its length (0 = unknown).
    near: Vec<u16>,
    /// (number, index) for larger numbers, sorted.
    far: Vec<(u32, u16)>,
}

impl PMsg {
    /// The field index of a field number.
    #[inline]
    pub(crate) fn index(&self, number: u32) -> Option<usize> {
        match self.near.get(number as usize) {
            Some(0) => None,
            Some(k) => Some(*k as usize - 1),
            None => self
                .far
                .binary_search_by_key(&number, |(n, _)| *n)
                .ok()
                .map(|k| self.far[k].1 as usize),
        }
    }
}

/// A loaded message: its Arrow type, plan and Confluent message-index path.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    pub fields: Fields,
    pub plan: PMsg,
    pub indexes: Vec<i64>,
}

struct MemoryResolver(HashMap<String, File>);

impl FileResolver for MemoryResolver {
    fn open_file(&self, name: &str) -> std::result::Result<File, protox::Error> {
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| protox::Error::file_not_found(name))
    }
}

fn schema_err(msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Schema, msg.to_string())
}

fn looks_like_base64(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty()
        && t.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
}

fn to_file(name: &str, text: &str) -> Result<File> {
    if looks_like_base64(text) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| {
                schema_err(format!("protobuf schema '{name}' is not valid base64: {e}"))
            })?;
        let mut file = File::decode_file_descriptor_proto(bytes.as_slice()).map_err(|e| {
            schema_err(format!(
                "protobuf schema '{name}' is not a FileDescriptorProto: {e}"
            ))
        })?;
        // Compile it under the name it is imported by.
        let mut proto = file.file_descriptor_proto().clone();
        proto.name = Some(name.to_string());
        file = File::from_file_descriptor_proto(proto);
        Ok(file)
    } else {
        File::from_source(name, text)
            .map_err(|e| schema_err(format!("proto_schema does not parse: {e}")))
    }
}

/// Compiles a schema (and the files it imports by name) into a descriptor pool.
pub(crate) fn load_pool(text: &str, imports: &[(String, String)]) -> Result<DescriptorPool> {
    if let Some(b64) = text.strip_prefix(DESCRIPTOR_SET_PREFIX) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| schema_err(format!("descriptor set is not valid base64: {e}")))?;
        return DescriptorPool::decode(bytes.as_slice())
            .map_err(|e| schema_err(format!("descriptor set does not load: {e}")));
    }
    let mut files = HashMap::new();
    files.insert(MAIN_FILE.to_string(), to_file(MAIN_FILE, text)?);
    for (name, body) in imports {
        if name.starts_with("google/protobuf/") {
            continue;
        }
        files.insert(name.clone(), to_file(name, body)?);
    }
    let mut chain = ChainFileResolver::new();
    chain.add(MemoryResolver(files));
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    compiler
        .open_file(MAIN_FILE)
        .map_err(|e| schema_err(format!("proto_schema does not compile: {e}")))?;
    Ok(compiler.descriptor_pool())
}

/// The first message of the main file (the Confluent default when no name is given).
pub(crate) fn first_message(pool: &DescriptorPool) -> Result<String> {
    let file = pool
        .get_file_by_name(MAIN_FILE)
        .or_else(|| pool.files().last())
        .ok_or_else(|| schema_err("the protobuf schema has no file"))?;
    let first = file.messages().next().map(|m| m.full_name().to_string());
    first.ok_or_else(|| schema_err("the protobuf schema declares no message"))
}

/// Loads `message` from a schema: Arrow fields, plan and Confluent message indexes.
pub(crate) fn compile(
    text: &str,
    message: Option<&str>,
    imports: &[(String, String)],
    options: ProtobufOptions,
) -> Result<Compiled> {
    let pool = load_pool(text, imports)?;
    let name = match message {
        Some(m) => m.trim_start_matches('.').to_string(),
        None => first_message(&pool)?,
    };
    let desc = pool.get_message_by_name(&name).ok_or_else(|| {
        let known: Vec<String> = pool
            .all_messages()
            .filter(|m| !m.full_name().starts_with("google.protobuf."))
            .map(|m| m.full_name().to_string())
            .collect();
        Error::new(
            ErrorCode::Schema,
            format!(
                "message_name '{name}' is not in the protobuf schema; it declares: {}",
                known.join(", ")
            ),
        )
        .with_context("option", "message_name")
    })?;
    // The path is [4, i, 3, j, 3, k, ...]: message i of the file, nested message j, ...
    let indexes = desc
        .path()
        .iter()
        .skip(1)
        .step_by(2)
        .map(|i| *i as i64)
        .collect();
    let mut stack = Vec::new();
    let (fields, plan) = message_plan(&desc, desc.name(), &mut stack, options)?;
    Ok(Compiled {
        fields,
        plan,
        indexes,
    })
}

fn refuse(path: &str, msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Schema, format!("protobuf field '{path}': {msg}"))
        .with_context("field", path)
}

fn message_plan(
    desc: &MessageDescriptor,
    path: &str,
    stack: &mut Vec<String>,
    options: ProtobufOptions,
) -> Result<(Fields, PMsg)> {
    stack.push(desc.full_name().to_string());
    let mut fields = Vec::new();
    let mut plans = Vec::new();
    let mut near = Vec::new();
    let mut far = Vec::new();
    for (k, f) in desc.fields().enumerate() {
        let sub = format!("{path}.{}", f.name());
        let (dt, kind) = field_kind(&f, &sub, stack, options)?;
        let repeated = f.is_list();
        let default_when_absent = options.emit_default_values
            && !repeated
            && !f.supports_presence()
            && !matches!(kind, PKind::Message(_) | PKind::Map(_));
        let dt = if repeated {
            DataType::List(Arc::new(Field::new("element", dt, true)))
        } else {
            dt
        };
        fields.push(Field::new(f.name(), dt, true));
        plans.push(PField {
            kind,
            repeated,
            default_when_absent,
        });
        let number = f.number();
        if number < 1024 {
            if near.len() <= number as usize {
                near.resize(number as usize + 1, 0u16);
            }
            near[number as usize] = k as u16 + 1;
        } else {
            far.push((number, k as u16));
        }
    }
    far.sort_unstable();
    stack.pop();
    Ok((
        Fields::from(fields),
        PMsg {
            fields: plans,
            near,
            far,
        },
    ))
}

fn field_kind(
    f: &FieldDescriptor,
    path: &str,
    stack: &mut Vec<String>,
    options: ProtobufOptions,
) -> Result<(DataType, PKind)> {
    if f.is_group() {
        return Err(refuse(path, "groups are not supported"));
    }
    if f.is_map() {
        let Kind::Message(entry) = f.kind() else {
            return Err(refuse(path, "map field without an entry message"));
        };
        let key = entry.map_entry_key_field();
        if key.kind() != Kind::String {
            return Err(refuse(
                path,
                format!(
                    "maps with {:?} keys are not supported; only string keys map to Arrow maps",
                    key.kind()
                ),
            ));
        }
        let value = entry.map_entry_value_field();
        let (dt, kind) = field_kind(&value, &format!("{path}.value"), stack, options)?;
        return Ok((crate::map_type(dt), PKind::Map(Box::new(kind))));
    }
    scalar_kind(&f.kind(), path, stack, options)
}

fn scalar_kind(
    kind: &Kind,
    path: &str,
    stack: &mut Vec<String>,
    options: ProtobufOptions,
) -> Result<(DataType, PKind)> {
    Ok(match kind {
        Kind::Int32 => (DataType::Int32, PKind::Int32),
        Kind::Sint32 => (DataType::Int32, PKind::SInt32),
        Kind::Sfixed32 => (DataType::Int32, PKind::SFixed32),
        Kind::Int64 => (DataType::Int64, PKind::Int64),
        Kind::Sint64 => (DataType::Int64, PKind::SInt64),
        Kind::Sfixed64 => (DataType::Int64, PKind::SFixed64),
        Kind::Uint32 => (DataType::Int64, PKind::UInt32),
        Kind::Uint64 => (DataType::Decimal128(20, 0), PKind::UInt64),
        Kind::Bool => (DataType::Boolean, PKind::Bool),
        Kind::Float => (DataType::Float32, PKind::Float),
        Kind::Double => (DataType::Float64, PKind::Double),
        Kind::String => (DataType::Utf8, PKind::Str),
        Kind::Bytes => (DataType::Binary, PKind::Bytes),
        Kind::Fixed32 | Kind::Fixed64 => {
            return Err(refuse(
                path,
                format!(
                    "type {} is not supported (use uint32/uint64 or sfixed32/sfixed64)",
                    if matches!(kind, Kind::Fixed32) {
                        "fixed32"
                    } else {
                        "fixed64"
                    }
                ),
            ))
        }
        Kind::Enum(_) if options.enums_as_ints => (DataType::Int32, PKind::EnumInt),
        Kind::Enum(e) => {
            let mut names: Vec<(i32, String)> = e
                .values()
                .map(|v| (v.number(), v.name().to_string()))
                .collect();
            names.sort_by_key(|(n, _)| *n);
            names.dedup_by_key(|(n, _)| *n);
            (DataType::Utf8, PKind::Enum(Arc::new(names)))
        }
        Kind::Message(m) => match m.full_name() {
            "google.protobuf.Timestamp" => (
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                PKind::Timestamp,
            ),
            "google.protobuf.DoubleValue"
            | "google.protobuf.FloatValue"
            | "google.protobuf.Int64Value"
            | "google.protobuf.UInt64Value"
            | "google.protobuf.Int32Value"
            | "google.protobuf.UInt32Value"
            | "google.protobuf.BoolValue"
            | "google.protobuf.StringValue"
            | "google.protobuf.BytesValue" => {
                let inner = m
                    .get_field(1)
                    .ok_or_else(|| refuse(path, "wrapper type without field 1"))?;
                let (dt, kind) = scalar_kind(&inner.kind(), path, stack, options)?;
                (dt, PKind::Wrapper(Box::new(kind)))
            }
            name @ ("google.protobuf.Duration"
            | "google.protobuf.Struct"
            | "google.protobuf.Value"
            | "google.protobuf.ListValue"
            | "google.protobuf.Any") => {
                return Err(refuse(path, format!("type {name} is not supported")))
            }
            name if stack.iter().any(|s| s == name) => {
                return Err(refuse(
                    path,
                    format!("recursive message {name} cannot be represented as Arrow columns"),
                ))
            }
            _ => {
                let (fields, plan) = message_plan(m, path, stack, options)?;
                (DataType::Struct(fields), PKind::Message(Box::new(plan)))
            }
        },
    })
}
