//! `schemaResolution=writer`: registry records framed with another schema id than the pinned
//! one (a producer registered a new compatible version) are read with their writer's schema
//! into the pinned (reader) schema's columns, instead of being nulled as `wrongSchemaId`.
//!
//! The pinned id stays the hot path: the framing layer accepts it as before, and only a record
//! it refuses with `wrongSchemaId` reaches a [`BatchResolver`]. Before each batch,
//! [`Resolver::prefetch`] reads the 5-byte frame headers, fetches the writer schema of each id
//! never met ([`WriterSchemas`], blocking: see [`crate::registry::BlockingWriterSchemas`] for
//! why) and caches the outcome, unknown and incompatible ids included, so each id costs one
//! registry call per run; [`Resolver::batch`] then builds the readers of the batch's ids once.
//!
//! - Avro: the writer schema must be readable as the pinned one
//!   (`apache_avro::schema_compatibility`). Its records are read by a plan compiled once per id
//!   (`crate::avro::resolve`: fields matched by name, reader fields missing from the writer take
//!   their default, writer fields missing from the reader are skipped, int→long→float→double
//!   and string↔bytes promotions, enum symbols by name) straight into the pinned columns, about
//!   1.5x the cost of a pinned record (`benches/resolution.rs`). What the plan does not cover
//!   (a reader union other than `["null", T]`, ...) is read with `apache_avro`'s own resolution
//!   into a value, written again with the pinned schema and decoded: exact but ~30x slower.
//! - Protobuf: the wire format is self-describing by field number, so the pinned plan reads the
//!   writer's message as is (fields unknown to the reader are skipped, fields missing from the
//!   writer are absent). The writer schema must declare the pinned message (same full name; its
//!   message-index path may differ) and every field number both declare must have a
//!   wire-compatible type (same cardinality; int32/int64/uint32/uint64/bool/enum,
//!   sint32/sint64, string/bytes, fixed32/sfixed32, fixed64/sfixed64 interchangeable; nested
//!   messages checked the same way).
//!
//! An id the registry does not know, or a writer schema the reader cannot read, makes the record
//! `malformed.unresolvableSchemaId` (PERMISSIVE) or fails the batch naming the id (FAILFAST).

use std::collections::HashMap;
use std::sync::Arc;

use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::schema_compatibility::SchemaCompatibility;
use apache_avro::writer::datum::GenericDatumWriter;
use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use tributary_sdk::error::{Error, ErrorCode, Result};
use tributary_sdk::schema_provider::{ResolvedSchema, SchemaFormat};

use crate::framing::Frame;
use crate::metrics::{Bad, Malformed};
use crate::RowDecoder;

/// The outcome of asking the registry for a schema id.
#[derive(Debug, Clone)]
pub(crate) enum Fetched {
    /// The schema, self-contained (references inlined), of the side's format.
    Schema(ResolvedSchema),
    /// The registry does not know the id, or it holds a schema of another format: why.
    Unknown(String),
}

/// Fetches writer schemas by id. Blocking: called from [`tributary_sdk::Stage::apply`].
pub(crate) trait WriterSchemas: Send + Sync + std::fmt::Debug {
    /// The schema registered under `id`, read as the key's (`is_key`) or payload's locator
    /// says. `Err` only for failures that may pass (registry unreachable, credentials refused):
    /// they fail the batch, not the record.
    fn fetch(&self, id: u32, is_key: bool) -> Result<Fetched>;
}

/// The pinned schema, as the resolver compares writer schemas against it.
#[derive(Debug)]
enum Pinned {
    Avro(apache_avro::Schema),
    Protobuf(MessageDescriptor),
}

/// What the resolver knows about one writer id.
#[derive(Debug)]
enum Entry {
    /// Read with `plan` straight into the pinned columns; without a plan, read with the writer
    /// schema into an `apache_avro` value, written again with the pinned one and decoded.
    Avro {
        writer: apache_avro::Schema,
        plan: Option<crate::avro::ANode>,
    },
    /// Read with the pinned plan once this frame (the writer's id and message path) is stripped.
    Protobuf(Frame),
    /// Why the id cannot be read into the pinned schema.
    Unresolvable(String),
}

/// Resolves the writer schemas of one side (key or payload).
#[derive(Debug)]
pub(crate) struct Resolver {
    is_key: bool,
    /// The pinned schema's registry id (its records never get here).
    pinned_id: u32,
    pinned: Pinned,
    source: Arc<dyn WriterSchemas>,
    cache: HashMap<u32, Entry>,
    /// Distinct writer ids met in the current batch (reused between batches).
    seen: Vec<u32>,
}

fn schema_err(msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Schema, msg.to_string())
}

impl Resolver {
    /// A resolver for a side whose pinned schema is `pinned` (a registry schema).
    pub(crate) fn new(
        pinned: &ResolvedSchema,
        is_key: bool,
        source: Arc<dyn WriterSchemas>,
    ) -> Result<Resolver> {
        let pinned_id = pinned
            .registry_id
            .ok_or_else(|| schema_err("schemaResolution=writer needs a registry schema"))?;
        let pinned =
            match &pinned.format {
                SchemaFormat::Avro => {
                    Pinned::Avro(apache_avro::Schema::parse_str(&pinned.text).map_err(|e| {
                        schema_err(format!("the pinned Avro schema does not parse: {e}"))
                    })?)
                }
                SchemaFormat::Protobuf { message } => {
                    let pool = crate::protobuf::load_pool(&pinned.text, &[])?;
                    let name = if message.is_empty() {
                        crate::protobuf::first_message(&pool)?
                    } else {
                        message.trim_start_matches('.').to_string()
                    };
                    Pinned::Protobuf(pool.get_message_by_name(&name).ok_or_else(|| {
                        schema_err(format!("message '{name}' is not in the pinned schema"))
                    })?)
                }
                SchemaFormat::JsonSchema => return Err(schema_err(
                    "schemaResolution=writer applies to Avro and Protobuf registry schemas only",
                )),
            };
        Ok(Resolver {
            is_key,
            pinned_id,
            pinned,
            source,
            cache: HashMap::new(),
            seen: Vec::new(),
        })
    }

    /// Why `id` could not be resolved (None when it was, or was never seen).
    pub(crate) fn unresolvable(&self, id: u32) -> Option<&str> {
        match self.cache.get(&id) {
            Some(Entry::Unresolvable(why)) => Some(why),
            _ => None,
        }
    }

    /// Distinct writer ids resolved (unresolvable ones not counted).
    pub(crate) fn resolved_ids(&self) -> u64 {
        self.cache
            .values()
            .filter(|e| !matches!(e, Entry::Unresolvable(_)))
            .count() as u64
    }

    /// Before a batch is decoded: finds the writer ids its records carry (5-byte headers only)
    /// and fetches those never met (blocking, once per id; unknown and incompatible ids are
    /// cached too). `Err` when the registry cannot be asked: the batch fails, nothing is cached
    /// for that id, and the next attempt asks again.
    pub(crate) fn prefetch<'r>(&mut self, records: impl Iterator<Item = &'r [u8]>) -> Result<()> {
        self.seen.clear();
        for record in records {
            let Some(id) = frame_id(record) else { continue };
            if id == self.pinned_id || self.seen.contains(&id) {
                continue;
            }
            self.seen.push(id);
            if self.cache.contains_key(&id) {
                continue;
            }
            let entry = self.resolve(id)?;
            match &entry {
                Entry::Unresolvable(why) => {
                    tracing::warn!(schema_id = id, reason = %why, "writer schema cannot be resolved; its records are malformed.unresolvableSchemaId")
                }
                _ => tracing::info!(
                    schema_id = id,
                    "records of this writer schema id are resolved into the pinned schema"
                ),
            }
            self.cache.insert(id, entry);
        }
        Ok(())
    }

    /// The readers for the writer ids of the batch [`Resolver::prefetch`] saw, built once per
    /// batch (an Avro reader borrows its schemas, so it lives as long as the batch).
    pub(crate) fn batch(&self) -> BatchResolver<'_> {
        let mut prepared = Vec::with_capacity(self.seen.len());
        for id in &self.seen {
            let ready = match (self.cache.get(id), &self.pinned) {
                (
                    Some(Entry::Avro {
                        plan: Some(plan), ..
                    }),
                    _,
                ) => Ready::Plan(plan),
                (Some(Entry::Avro { writer, .. }), Pinned::Avro(reader)) => {
                    let read = GenericDatumReader::builder(writer)
                        .reader_schema(reader)
                        .build();
                    let write = GenericDatumWriter::builder(reader).validate(false).build();
                    match (read, write) {
                        (Ok(r), Ok(w)) => Ready::Avro(Box::new((r, w))),
                        _ => Ready::Unresolvable,
                    }
                }
                (Some(Entry::Protobuf(frame)), _) => Ready::Protobuf(frame),
                _ => Ready::Unresolvable,
            };
            prepared.push((*id, ready));
        }
        BatchResolver {
            prepared,
            scratch: Vec::new(),
        }
    }

    fn resolve(&self, id: u32) -> Result<Entry> {
        let writer = match self.source.fetch(id, self.is_key)? {
            Fetched::Schema(s) => s,
            Fetched::Unknown(why) => return Ok(Entry::Unresolvable(why)),
        };
        Ok(match &self.pinned {
            Pinned::Avro(reader) => {
                let writer = match apache_avro::Schema::parse_str(&writer.text) {
                    Ok(w) => w,
                    Err(e) => {
                        return Ok(Entry::Unresolvable(format!(
                            "schema id {id} is not a valid Avro schema: {e}"
                        )))
                    }
                };
                match SchemaCompatibility::can_read(&writer, reader) {
                    Ok(_) => {
                        let plan = crate::avro::resolution_plan(&writer, reader);
                        if plan.is_none() {
                            tracing::info!(schema_id = id, "no direct resolution plan for this writer schema; its records are resolved through apache_avro values (slower)");
                        }
                        Entry::Avro { writer, plan }
                    }
                    Err(e) => Entry::Unresolvable(format!(
                        "the writer schema of id {id} cannot be read as the pinned schema: {e}"
                    )),
                }
            }
            Pinned::Protobuf(reader) => match protobuf_writer(id, &writer, reader) {
                Ok(frame) => Entry::Protobuf(frame),
                Err(why) => Entry::Unresolvable(why),
            },
        })
    }
}

/// A writer id's reader for one batch.
enum Ready<'a> {
    Plan(&'a crate::avro::ANode),
    Avro(Box<(GenericDatumReader<'a>, GenericDatumWriter<'a>)>),
    Protobuf(&'a Frame),
    Unresolvable,
}

/// Reads one batch's records framed with writer ids (see [`Resolver::batch`]).
pub(crate) struct BatchResolver<'a> {
    /// Per writer id of the batch (a handful at most: a linear search beats hashing).
    prepared: Vec<(u32, Ready<'a>)>,
    /// The record re-encoded with the pinned Avro schema.
    scratch: Vec<u8>,
}

impl BatchResolver<'_> {
    /// Decodes a Confluent-framed record whose schema id is not the pinned one (the framing
    /// layer checked the magic byte and length).
    pub(crate) fn decode(
        &mut self,
        record: &[u8],
        decoder: &mut dyn RowDecoder,
    ) -> std::result::Result<(), Bad> {
        let id = frame_id(record);
        let ready = self
            .prepared
            .iter()
            .find(|(k, _)| Some(*k) == id)
            .map(|(_, r)| r);
        match ready {
            Some(Ready::Plan(plan)) => decoder.decode_avro_plan(plan, &record[5..]),
            Some(Ready::Avro(rw)) => {
                avro_resolve(&rw.0, &rw.1, &record[5..], &mut self.scratch)?;
                decoder.decode(&self.scratch)
            }
            Some(Ready::Protobuf(frame)) => frame.strip(record).and_then(|p| decoder.decode(p)),
            Some(Ready::Unresolvable) | None => Err(Bad::new(
                Malformed::UnresolvableSchemaId,
                "the record's schema id is unknown to the registry, or its writer schema cannot be read as the pinned one",
                1,
            )),
        }
    }
}

/// The schema id of a Confluent-framed record.
fn frame_id(record: &[u8]) -> Option<u32> {
    match record {
        [0, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// Reads one datum with Avro schema resolution and writes it again with the pinned schema
/// into `out`.
fn avro_resolve(
    read: &GenericDatumReader<'_>,
    write: &GenericDatumWriter<'_>,
    mut datum: &[u8],
    out: &mut Vec<u8>,
) -> std::result::Result<(), Bad> {
    let unreadable = |_| {
        Bad::new(
            Malformed::BadAvro,
            "the record cannot be read with its writer schema (or resolved into the pinned one)",
            5,
        )
    };
    let value = read.read_value(&mut datum).map_err(unreadable)?;
    if !datum.is_empty() {
        return Err(Bad::new(
            Malformed::AvroTrailingBytes,
            "bytes left after the record (its writer schema does not describe it)",
            5,
        ));
    }
    out.clear();
    write.write_value_ref(out, &value).map_err(unreadable)?;
    Ok(())
}

/// The frame of the pinned message in a protobuf writer schema, or why it cannot be read.
fn protobuf_writer(
    id: u32,
    writer: &ResolvedSchema,
    reader: &MessageDescriptor,
) -> std::result::Result<Frame, String> {
    let pool: DescriptorPool = crate::protobuf::load_pool(&writer.text, &[])
        .map_err(|e| format!("schema id {id} does not compile: {}", e.message()))?;
    let name = reader.full_name();
    let message = pool.get_message_by_name(name).ok_or_else(|| {
        format!("the writer schema of id {id} does not declare the pinned message '{name}'")
    })?;
    let mut seen = Vec::new();
    compatible(reader, &message, name, &mut seen).map_err(|why| {
        format!("the writer schema of id {id} cannot be read as the pinned one: {why}")
    })?;
    let indexes = message
        .path()
        .iter()
        .skip(1)
        .step_by(2)
        .map(|i| *i as i64)
        .collect();
    Ok(Frame {
        confluent: true,
        schema_id: Some(id),
        message_indexes: Some(indexes),
    })
}

/// Whether every field number both messages declare has a wire-compatible type.
fn compatible(
    reader: &MessageDescriptor,
    writer: &MessageDescriptor,
    path: &str,
    seen: &mut Vec<(String, String)>,
) -> std::result::Result<(), String> {
    let pair = (
        reader.full_name().to_string(),
        writer.full_name().to_string(),
    );
    if seen.contains(&pair) {
        return Ok(());
    }
    seen.push(pair);
    for r in reader.fields() {
        let Some(w) = writer.get_field(r.number()) else {
            continue;
        };
        let at = format!("{path}.{}", r.name());
        field_compatible(&r, &w, &at, seen)?;
    }
    Ok(())
}

fn field_compatible(
    r: &FieldDescriptor,
    w: &FieldDescriptor,
    at: &str,
    seen: &mut Vec<(String, String)>,
) -> std::result::Result<(), String> {
    if r.is_list() != w.is_list() || r.is_map() != w.is_map() {
        return Err(format!(
            "field '{at}' (number {}) changed between repeated/map and singular",
            r.number()
        ));
    }
    match (r.kind(), w.kind()) {
        (Kind::Message(rm), Kind::Message(wm)) => {
            let well_known = |m: &MessageDescriptor| m.full_name().starts_with("google.protobuf.");
            if (well_known(&rm) || well_known(&wm)) && rm.full_name() != wm.full_name() {
                return Err(format!(
                    "field '{at}' changed from {} to {}",
                    rm.full_name(),
                    wm.full_name()
                ));
            }
            compatible(&rm, &wm, at, seen)
        }
        (rk, wk) if wire_class(&rk) == wire_class(&wk) => Ok(()),
        (rk, wk) => Err(format!(
            "field '{at}' (number {}) is {} in the pinned schema but {} in the writer's",
            r.number(),
            kind_name(&rk),
            kind_name(&wk)
        )),
    }
}

/// Types whose encodings read as each other (protobuf's compatible changes).
fn wire_class(k: &Kind) -> u8 {
    match k {
        Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Bool | Kind::Enum(_) => 0,
        Kind::Sint32 | Kind::Sint64 => 1,
        Kind::String | Kind::Bytes => 2,
        Kind::Fixed32 | Kind::Sfixed32 => 3,
        Kind::Fixed64 | Kind::Sfixed64 => 4,
        Kind::Float => 5,
        Kind::Double => 6,
        Kind::Message(_) => 7,
    }
}

fn kind_name(k: &Kind) -> String {
    match k {
        Kind::Message(m) => m.full_name().to_string(),
        Kind::Enum(e) => e.full_name().to_string(),
        other => format!("{other:?}").to_ascii_lowercase(),
    }
}
