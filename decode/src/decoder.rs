//! [`StreamDecoder`]: replaces a batch's binary key and payload columns by typed ones.
//!
//! Each side (key, payload) has its framing (plain or Confluent) and a format decoder, or no
//! schema at all (then the bytes become utf8). Records are decoded row by row straight into
//! Arrow builders; a malformed record becomes null and is counted (PERMISSIVE) or fails the
//! batch naming its position (FAILFAST).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use tributary_sdk::error::{Error, ErrorCode, Result};
use tributary_sdk::schema_provider::{ResolvedSchema, SchemaFormat, StreamSchemas, WireFormat};
use tributary_sdk::SourceMetrics;

use crate::columns::{Bytes, Col};
use crate::framing::Frame;
use crate::metrics::{Bad, Counters, Malformed};
use crate::options::{DecodeMode, ProtobufOptions};
use crate::{RowDecoder, KEY_COLUMN};

fn missing_feature(what: &str, feature: &str) -> Error {
    Error::new(
        ErrorCode::Schema,
        format!("{what} decoding needs tributary-sdk built with the '{feature}' feature"),
    )
}

#[cfg(feature = "registry")]
use crate::resolution::{BatchResolver, Resolver, WriterSchemas};

/// Without the registry there is no writer schema to resolve.
#[cfg(not(feature = "registry"))]
#[derive(Debug)]
enum Resolver {}
#[cfg(not(feature = "registry"))]
enum BatchResolver {}

/// One side (key or payload): framing and decoder, or utf8 when there is no schema.
#[derive(Debug)]
struct Side {
    frame: Frame,
    decoder: Option<Box<dyn RowDecoder>>,
    /// `schemaResolution=writer`: reads records framed with another schema id.
    resolver: Option<Resolver>,
}

impl Side {
    // Without any format feature every schema is refused (the code after the match is dead).
    #[cfg_attr(
        not(any(feature = "json", feature = "avro", feature = "protobuf")),
        allow(unreachable_code, unused_variables)
    )]
    fn new(
        schema: Option<&ResolvedSchema>,
        strict: bool,
        protobuf: ProtobufOptions,
    ) -> Result<Side> {
        let Some(s) = schema else {
            return Ok(Side {
                frame: Frame::default(),
                decoder: None,
                resolver: None,
            });
        };
        #[allow(unused_mut)]
        let mut frame = Frame {
            confluent: s.wire == WireFormat::Confluent,
            schema_id: s.registry_id,
            message_indexes: None,
        };
        let _ = (strict, protobuf);
        let decoder: Box<dyn RowDecoder> = match &s.format {
            #[cfg(feature = "json")]
            SchemaFormat::JsonSchema => Box::new(crate::json::JsonDecoder::new(&s.text, strict)?),
            #[cfg(feature = "avro")]
            SchemaFormat::Avro => Box::new(crate::avro::AvroDecoder::new(&s.text)?),
            #[cfg(feature = "protobuf")]
            SchemaFormat::Protobuf { message } => {
                let m = (!message.is_empty()).then_some(message.as_str());
                let d = crate::protobuf::ProtoDecoder::new(&s.text, m, &[], protobuf)?;
                if frame.confluent {
                    frame.message_indexes = Some(d.indexes.clone());
                }
                Box::new(d)
            }
            #[allow(unreachable_patterns)]
            SchemaFormat::JsonSchema => return Err(missing_feature("JSON", "json")),
            #[allow(unreachable_patterns)]
            SchemaFormat::Avro => return Err(missing_feature("Avro", "avro")),
            #[allow(unreachable_patterns)]
            SchemaFormat::Protobuf { .. } => return Err(missing_feature("Protobuf", "protobuf")),
        };
        Ok(Side {
            frame,
            decoder: Some(decoder),
            resolver: None,
        })
    }

    fn data_type(&self) -> DataType {
        match &self.decoder {
            Some(d) => d.data_type(),
            None => DataType::Utf8,
        }
    }
}

/// Decodes the key and payload columns of a stream's batches into typed columns.
#[derive(Debug)]
pub struct StreamDecoder {
    mode: DecodeMode,
    payload_column: String,
    /// The key column (None: the batch has no key to decode).
    key_column: Option<String>,
    key: Side,
    payload: Side,
    counters: Counters,
}

/// A binary or utf8 column's offsets, values and nulls, downcast once per batch.
struct ByteRows<'a> {
    offsets: Offsets<'a>,
    values: &'a [u8],
    nulls: Option<&'a arrow_buffer::NullBuffer>,
}

enum Offsets<'a> {
    Small(&'a [i32]),
    Large(&'a [i64]),
}

impl<'a> ByteRows<'a> {
    /// None when `col` is not binary or utf8.
    fn new(col: &'a dyn Array) -> Option<ByteRows<'a>> {
        use arrow_array::cast::AsArray;
        let (offsets, values) = match col.data_type() {
            DataType::Binary => {
                let a = col.as_binary::<i32>();
                (Offsets::Small(a.value_offsets()), a.values().as_slice())
            }
            DataType::LargeBinary => {
                let a = col.as_binary::<i64>();
                (Offsets::Large(a.value_offsets()), a.values().as_slice())
            }
            DataType::Utf8 => {
                let a = col.as_string::<i32>();
                (Offsets::Small(a.value_offsets()), a.values().as_slice())
            }
            DataType::LargeUtf8 => {
                let a = col.as_string::<i64>();
                (Offsets::Large(a.value_offsets()), a.values().as_slice())
            }
            _ => return None,
        };
        Some(ByteRows {
            offsets,
            values,
            nulls: col.nulls(),
        })
    }

    /// The bytes of row `i`, None when null (or out of range).
    #[inline]
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        if self.nulls.is_some_and(|n| n.is_null(i)) {
            return None;
        }
        let (start, end) = match self.offsets {
            Offsets::Small(o) => (*o.get(i)? as usize, *o.get(i + 1)? as usize),
            Offsets::Large(o) => (*o.get(i)? as usize, *o.get(i + 1)? as usize),
        };
        self.values.get(start..end)
    }
}

fn is_bytes_type(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Binary | DataType::LargeBinary | DataType::Utf8 | DataType::LargeUtf8
    )
}

impl StreamDecoder {
    /// A decoder for the resolved schemas. `payload_column` is `value` (Kafka) or `data`
    /// (Kinesis). Fails with `SCHEMA_ERROR` when a schema cannot be decoded (naming the field).
    pub fn new(
        schemas: &StreamSchemas,
        mode: DecodeMode,
        payload_column: &str,
    ) -> Result<StreamDecoder> {
        StreamDecoder::with_protobuf(schemas, mode, payload_column, ProtobufOptions::default())
    }

    /// [`StreamDecoder::new`] with protobuf choices (`emit.default.values`, `enums.as.ints`).
    pub fn with_protobuf(
        schemas: &StreamSchemas,
        mode: DecodeMode,
        payload_column: &str,
        protobuf: ProtobufOptions,
    ) -> Result<StreamDecoder> {
        let strict = mode == DecodeMode::FailFast;
        Ok(StreamDecoder {
            mode,
            payload_column: payload_column.to_string(),
            key_column: Some(KEY_COLUMN.to_string()),
            key: Side::new(schemas.key.as_ref(), strict, protobuf)?,
            payload: Side::new(schemas.payload.as_ref(), strict, protobuf)?,
            counters: Counters::default(),
        })
    }

    /// Decodes the key from `column` instead of `key` (None: no key column is decoded; a key
    /// schema then has nothing to apply to and is refused).
    pub fn with_key_column(mut self, column: Option<&str>) -> Result<StreamDecoder> {
        if column.is_none() && self.key.decoder.is_some() {
            return Err(Error::new(
                ErrorCode::Schema,
                "a key schema is given but the source has no key column",
            ));
        }
        self.key_column = column.map(str::to_string);
        Ok(self)
    }

    /// `schemaResolution=writer`: a registry side's records framed with another schema id than
    /// the pinned one are read with their writer schema (fetched by id from `source`, once per
    /// id) into the pinned columns; see [`crate::resolution`]. Adds the `resolvedSchemaIds` and
    /// `resolvedRecords` counters.
    #[cfg(feature = "registry")]
    pub(crate) fn resolving_writer_schemas(
        mut self,
        schemas: &StreamSchemas,
        source: std::sync::Arc<dyn WriterSchemas>,
    ) -> Result<StreamDecoder> {
        for (side, schema, is_key) in [
            (&mut self.key, &schemas.key, true),
            (&mut self.payload, &schemas.payload, false),
        ] {
            if let Some(s) = schema {
                if s.registry_id.is_some() && side.decoder.is_some() {
                    side.resolver = Some(Resolver::new(s, is_key, source.clone())?);
                }
            }
        }
        self.counters.enable_resolution();
        Ok(self)
    }

    fn is_key(&self, name: &str) -> bool {
        self.key_column.as_deref() == Some(name)
    }

    /// The schema of decoded batches: the key and payload columns replaced by their typed
    /// forms (struct with a schema, utf8 without), everything else unchanged.
    pub fn output_schema(&self, input: &Schema) -> SchemaRef {
        let fields: Vec<Field> = input
            .fields()
            .iter()
            .map(|f| {
                let side = if self.is_key(f.name()) {
                    Some(&self.key)
                } else if *f.name() == self.payload_column {
                    Some(&self.payload)
                } else {
                    None
                };
                match side {
                    Some(s) if is_bytes_type(f.data_type()) => {
                        Field::new(f.name(), s.data_type(), true)
                            .with_metadata(f.metadata().clone())
                    }
                    _ => f.as_ref().clone(),
                }
            })
            .collect();
        Arc::new(Schema::new_with_metadata(fields, input.metadata().clone()))
    }

    /// Decodes one batch. PERMISSIVE: malformed records become null and are counted. FAILFAST:
    /// the first one fails the batch with `MALFORMED_RECORD` naming its partition and offset
    /// (or shard and sequence number).
    pub fn decode(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let schema = batch.schema();
        let key = self.key_column.as_deref().map(|k| (&self.key, k));
        let payload = Some((&self.payload, self.payload_column.as_str()));
        for (side, name) in [key, payload].into_iter().flatten() {
            if side.decoder.is_some() && schema.index_of(name).is_err() {
                return Err(Error::new(
                    ErrorCode::Schema,
                    format!(
                        "a schema is given for column '{name}' but the batch has no such column"
                    ),
                )
                .with_context("field", name));
            }
        }
        let out_schema = self.output_schema(&schema);
        let mut columns = batch.columns().to_vec();
        // A failed batch counts nothing: it may be applied again.
        let counted = self.counters.clone();
        for (idx, field) in schema.fields().iter().enumerate() {
            let is_key = self.is_key(field.name());
            if !(is_key || *field.name() == self.payload_column)
                || !is_bytes_type(field.data_type())
            {
                continue;
            }
            match self.decode_column(batch, idx, is_key) {
                Ok(decoded) => columns[idx] = decoded,
                Err(e) => {
                    self.counters = counted;
                    return Err(e);
                }
            }
        }
        Ok(RecordBatch::try_new(out_schema, columns)?)
    }

    fn decode_column(&mut self, batch: &RecordBatch, idx: usize, is_key: bool) -> Result<ArrayRef> {
        let col = batch.column(idx).as_ref();
        let side = if is_key {
            &mut self.key
        } else {
            &mut self.payload
        };
        let Some(decoder) = side.decoder.as_mut() else {
            if matches!(col.data_type(), DataType::Utf8) {
                return Ok(batch.column(idx).clone());
            }
            return utf8_column(col, &mut self.counters, self.mode, batch, idx);
        };
        let rows = ByteRows::new(col);
        let mut batch_resolver = match side.resolver.as_mut() {
            Some(r) => {
                let records = (0..col.len()).filter_map(|i| rows.as_ref().and_then(|r| r.get(i)));
                prefetch(r, records)?;
                side.resolver.as_ref().map(for_batch)
            }
            None => None,
        };
        let mut decoded = 0u64;
        let mut failure = None;
        decoder.reserve(col.len());
        for i in 0..col.len() {
            let Some(bytes) = rows.as_ref().and_then(|r| r.get(i)) else {
                decoder.push_null();
                continue;
            };
            let result = match side.frame.strip(bytes) {
                Ok(payload) => decoder.decode(payload),
                Err(bad) => match batch_resolver.as_mut() {
                    Some(r) if bad.reason == Malformed::WrongSchemaId => {
                        resolve_writer(r, bytes, decoder.as_mut(), &mut self.counters)
                    }
                    _ => Err(bad),
                },
            };
            match result {
                Ok(()) => decoded += 1,
                Err(bad) => {
                    if self.mode == DecodeMode::FailFast {
                        let detail = schema_id_detail(bytes, bad.reason, side.resolver.as_ref());
                        failure = Some(malformed_error(batch, idx, i, bad, detail));
                        break;
                    }
                    self.counters.malformed(bad.reason);
                    decoder.push_null();
                }
            }
        }
        if let Some(e) = failure {
            // Drop the rows decoded so far: the stage may be applied again.
            let _ = decoder.take_mismatches();
            let _ = decoder.finish();
            return Err(e);
        }
        self.counters.decoded(decoded);
        self.counters.mismatches(decoder.take_mismatches());
        decoder.finish()
    }

    /// Counters: `malformed.<reason>` per reason, `malformedRecords` (total),
    /// `typeMismatchFields` (JSON fields nulled for having another type) and `decodedValues`.
    pub fn metrics(&self) -> SourceMetrics {
        #[cfg_attr(not(feature = "registry"), allow(unused_mut))]
        let mut m = self.counters.to_metrics();
        #[cfg(feature = "registry")]
        if m.contains_key("resolvedRecords") {
            let ids: u64 = [&self.key, &self.payload]
                .iter()
                .filter_map(|s| s.resolver.as_ref())
                .map(Resolver::resolved_ids)
                .sum();
            m.insert("resolvedSchemaIds".into(), ids.into());
        }
        m
    }
}

/// Fetches the writer schemas of the ids a batch carries (see [`Resolver::prefetch`]).
#[cfg(feature = "registry")]
fn prefetch<'r>(resolver: &mut Resolver, records: impl Iterator<Item = &'r [u8]>) -> Result<()> {
    resolver.prefetch(records)
}

#[cfg(feature = "registry")]
fn for_batch(resolver: &Resolver) -> BatchResolver<'_> {
    resolver.batch()
}

/// Reads a record framed with another schema id than the pinned one with its writer schema.
#[cfg(feature = "registry")]
fn resolve_writer(
    resolver: &mut BatchResolver<'_>,
    record: &[u8],
    decoder: &mut dyn RowDecoder,
    counters: &mut Counters,
) -> std::result::Result<(), Bad> {
    let outcome = resolver.decode(record, decoder);
    if outcome.is_ok() {
        counters.resolved_record();
    }
    outcome
}

#[cfg(not(feature = "registry"))]
fn prefetch<'r>(resolver: &mut Resolver, _: impl Iterator<Item = &'r [u8]>) -> Result<()> {
    match *resolver {}
}

#[cfg(not(feature = "registry"))]
fn for_batch(resolver: &Resolver) -> BatchResolver {
    match *resolver {}
}

#[cfg(not(feature = "registry"))]
fn resolve_writer(
    resolver: &mut BatchResolver,
    _: &[u8],
    _: &mut dyn RowDecoder,
    _: &mut Counters,
) -> std::result::Result<(), Bad> {
    match *resolver {}
}

/// For a FAILFAST error about a record's schema id: the id, and why it could not be resolved.
fn schema_id_detail(
    record: &[u8],
    reason: Malformed,
    resolver: Option<&Resolver>,
) -> Option<(u32, String)> {
    if !matches!(
        reason,
        Malformed::WrongSchemaId | Malformed::UnresolvableSchemaId
    ) {
        return None;
    }
    let id = u32::from_be_bytes(record.get(1..5)?.try_into().ok()?);
    #[cfg(feature = "registry")]
    let why = resolver
        .and_then(|r| r.unresolvable(id))
        .map(str::to_string);
    #[cfg(not(feature = "registry"))]
    let why: Option<String> = resolver.map(|r| match *r {});
    Some((id, why.unwrap_or_default()))
}

/// A binary column without schema as utf8 (invalid UTF-8 is malformed).
fn utf8_column(
    col: &dyn Array,
    counters: &mut Counters,
    mode: DecodeMode,
    batch: &RecordBatch,
    idx: usize,
) -> Result<ArrayRef> {
    let rows = ByteRows::new(col);
    let mut b = Bytes::default();
    for i in 0..col.len() {
        match rows.as_ref().and_then(|r| r.get(i)) {
            None => b.push_null(),
            Some(bytes) if std::str::from_utf8(bytes).is_ok() => b.push(bytes),
            Some(_) => {
                let bad = Bad::new(Malformed::InvalidUtf8, "the value is not valid UTF-8", 0);
                if mode == DecodeMode::FailFast {
                    return Err(malformed_error(batch, idx, i, bad, None));
                }
                counters.malformed(bad.reason);
                b.push_null();
            }
        }
    }
    Col::Utf8(b).finish()
}

/// `MALFORMED_RECORD` naming the row's position from the batch's own columns (and, for a schema
/// id problem, the id and why it could not be resolved).
fn malformed_error(
    batch: &RecordBatch,
    column: usize,
    row: usize,
    bad: Bad,
    schema_id: Option<(u32, String)>,
) -> Error {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    let schema = batch.schema();
    let name = schema.field(column).name().clone();
    let text = |c: &str| -> Option<String> {
        let a = batch.column_by_name(c)?;
        if a.is_null(row) {
            return None;
        }
        match a.data_type() {
            DataType::Int32 => Some(a.as_primitive::<Int32Type>().value(row).to_string()),
            DataType::Int64 => Some(a.as_primitive::<Int64Type>().value(row).to_string()),
            DataType::Utf8 => Some(a.as_string::<i32>().value(row).to_string()),
            _ => None,
        }
    };
    let mut ctx: Vec<(&'static str, String)> = Vec::new();
    if let Some(t) = text("topic").or_else(|| text("stream")) {
        ctx.push(("topic", t));
    }
    let position = if let (Some(p), Some(o)) = (text("partition"), text("offset")) {
        let pos = format!("partition {p} offset {o}");
        ctx.push(("partition", p));
        ctx.push(("offset", o));
        pos
    } else if let (Some(s), Some(q)) = (text("shardId"), text("sequenceNumber")) {
        let pos = format!("shard {s} sequenceNumber {q}");
        ctx.push(("shard", s));
        ctx.push(("sequenceNumber", q));
        pos
    } else {
        format!("row {row} of the batch")
    };
    let id_text = match &schema_id {
        Some((id, why)) if why.is_empty() => format!(" (schema id {id})"),
        Some((id, why)) => format!(" (schema id {id}: {why})"),
        None => String::new(),
    };
    if let Some((id, _)) = schema_id {
        ctx.push(("schema_id", id.to_string()));
    }
    let mut e = Error::new(
        ErrorCode::MalformedRecord,
        format!(
            "malformed record at {position} (column '{name}', mode FAILFAST): {} at byte {} [{}]{id_text}",
            bad.what,
            bad.at,
            bad.reason.counter()
        ),
    );
    for (k, v) in ctx {
        e = e.with_context(k, v);
    }
    e.with_context("row", row)
        .with_context("field", name)
        .with_context("reason", bad.reason.counter())
}
