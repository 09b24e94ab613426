//! The protobuf wire-format reader: one message per record, written straight into column builders.
//!
//! Fields may come in any order and repeat, so each message is read in two steps: a scan records
//! where each known field occurs (unknown fields are skipped, groups included), then the fields
//! are written in schema order — the last occurrence of a scalar wins, repeated fields collect
//! every occurrence (packed or not), and a singular message field merges all its occurrences
//! (reading them one after the other is exactly protobuf's merge). A known field with the wrong
//! wire type makes the record malformed (`malformed.protobufWireType`).

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Fields};

use super::{PKind, PMsg};
use crate::columns::{Col, StructCol};
use crate::metrics::{Bad, Malformed};
use crate::options::ProtobufOptions;
use crate::RowDecoder;
use tributary_sdk::error::Result;

/// Decodes protobuf messages into a struct column.
#[derive(Debug)]
pub(crate) struct ProtoDecoder {
    fields: Fields,
    plan: PMsg,
    col: StructCol,
    scratch: Vec<Scratch>,
    /// Confluent message-index path of the message (checked by the framing layer).
    pub(crate) indexes: Vec<i64>,
}

impl ProtoDecoder {
    /// A decoder for `message` of a protobuf schema (first message when None).
    pub(crate) fn new(
        schema: &str,
        message: Option<&str>,
        imports: &[(String, String)],
        options: ProtobufOptions,
    ) -> Result<ProtoDecoder> {
        let c = super::compile(schema, message, imports, options)?;
        let mut col = Col::new(&DataType::Struct(c.fields.clone()))?;
        // SAFETY: `value` checks each `Str` (and map key) with `from_utf8`; enum names come
        // from the descriptor (Rust strings).
        unsafe { col.trust_utf8() };
        let Col::Struct(col) = col else {
            return Err(tributary_sdk::Error::new(
                tributary_sdk::ErrorCode::Internal,
                "struct builder expected",
            ));
        };
        Ok(ProtoDecoder {
            fields: c.fields,
            plan: c.plan,
            col,
            scratch: Vec::new(),
            indexes: c.indexes,
        })
    }
}

impl RowDecoder for ProtoDecoder {
    fn data_type(&self) -> DataType {
        DataType::Struct(self.fields.clone())
    }

    fn decode(&mut self, bytes: &[u8]) -> std::result::Result<(), Bad> {
        let n = self.col.len();
        let mut r = Reader {
            b: bytes,
            scratch: &mut self.scratch,
        };
        let span = [(0u32, bytes.len() as u32)];
        if bytes.len() > u32::MAX as usize {
            return Err(bad("message larger than 4 GiB", 0));
        }
        let result = r.message(&self.plan, &span, &mut self.col, 0);
        if result.is_err() {
            self.col.truncate(n);
        }
        result
    }

    fn push_null(&mut self) {
        self.col.push_null();
    }

    fn reserve(&mut self, n: usize) {
        self.col.reserve(n);
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(self.col.finish()?))
    }
}

/// Where a known field occurred: its index, wire type, and value (varint / fixed bits) or range.
#[derive(Debug, Clone, Copy)]
struct Occ {
    field: u16,
    wire: u8,
    value: u64,
    start: u32,
    end: u32,
}

#[derive(Debug, Default)]
struct Scratch {
    occs: Vec<Occ>,
    last: Vec<u32>,
}

type R<T = ()> = std::result::Result<T, Bad>;

#[inline]
fn bad(what: &'static str, at: usize) -> Bad {
    Bad::new(Malformed::BadProtobuf, what, at)
}
#[inline]
fn truncated(at: usize) -> Bad {
    Bad::new(
        Malformed::TruncatedProtobuf,
        "the message ends inside a field",
        at,
    )
}
#[inline]
fn wire_err(at: usize) -> Bad {
    Bad::new(
        Malformed::ProtobufWireType,
        "a field has a wire type its declared type cannot have",
        at,
    )
}

/// Reads a varint at `*i` from `b`.
#[inline]
fn varint(b: &[u8], i: &mut usize) -> R<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&byte) = b.get(*i) else {
            return Err(truncated(*i));
        };
        *i += 1;
        if shift == 63 && byte > 1 {
            return Err(bad("varint too long", *i));
        }
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(bad("varint too long", *i));
        }
    }
}

struct Reader<'a, 's> {
    b: &'a [u8],
    scratch: &'s mut Vec<Scratch>,
}

impl<'a, 's> Reader<'a, 's> {
    /// Skips a value of an unknown field (groups: up to the matching end-group).
    fn skip(&self, wire: u8, number: u64, i: &mut usize, end: usize, depth: u32) -> R {
        match wire {
            0 => {
                varint(&self.b[..end], i)?;
            }
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                if end - *i < n {
                    return Err(truncated(*i));
                }
                *i += n;
            }
            2 => {
                let at = *i;
                let n = varint(&self.b[..end], i)?;
                if n > (end - *i) as u64 {
                    return Err(truncated(at));
                }
                *i += n as usize;
            }
            3 => {
                if depth > 64 {
                    return Err(bad("groups nested too deep", *i));
                }
                loop {
                    let at = *i;
                    if *i >= end {
                        return Err(truncated(at));
                    }
                    let tag = varint(&self.b[..end], i)?;
                    let (num, w) = (tag >> 3, (tag & 7) as u8);
                    if w == 4 {
                        if num != number {
                            return Err(bad("end-group does not match its start", at));
                        }
                        return Ok(());
                    }
                    self.skip(w, num, i, end, depth + 1)?;
                }
            }
            _ => return Err(wire_err(*i)),
        }
        Ok(())
    }

    /// Scans `spans` of a message, recording occurrences of known fields in `sc`.
    fn scan(&self, msg: &PMsg, spans: &[(u32, u32)], sc: &mut Scratch) -> R {
        for &(start, end) in spans {
            let (mut i, end) = (start as usize, end as usize);
            let b = &self.b[..end];
            while i < end {
                let at = i;
                let tag = varint(b, &mut i)?;
                let number = tag >> 3;
                let wire = (tag & 7) as u8;
                if number == 0 || number > u32::MAX as u64 {
                    return Err(bad("invalid field number", at));
                }
                let Some(k) = msg.index(number as u32) else {
                    self.skip(wire, number, &mut i, end, 0)?;
                    continue;
                };
                let f = &msg.fields[k];
                let expected = f.kind.wire_type();
                let packable = f.repeated && expected != 2;
                if wire != expected && !(packable && wire == 2) {
                    return Err(wire_err(at));
                }
                let mut occ = Occ {
                    field: k as u16,
                    wire,
                    value: 0,
                    start: 0,
                    end: 0,
                };
                match wire {
                    0 => occ.value = varint(b, &mut i)?,
                    1 => {
                        let s = b.get(i..i + 8).ok_or_else(|| truncated(i))?;
                        occ.value =
                            u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]);
                        i += 8;
                    }
                    5 => {
                        let s = b.get(i..i + 4).ok_or_else(|| truncated(i))?;
                        occ.value = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as u64;
                        i += 4;
                    }
                    _ => {
                        let len_at = i;
                        let n = varint(b, &mut i)?;
                        if n > (end - i) as u64 {
                            return Err(truncated(len_at));
                        }
                        occ.start = i as u32;
                        i += n as usize;
                        occ.end = i as u32;
                    }
                }
                sc.last[k] = sc.occs.len() as u32;
                sc.occs.push(occ);
            }
        }
        Ok(())
    }

    fn message(
        &mut self,
        msg: &PMsg,
        spans: &[(u32, u32)],
        col: &mut StructCol,
        depth: usize,
    ) -> R {
        if self.scratch.len() <= depth {
            self.scratch.resize_with(depth + 1, Scratch::default);
        }
        let mut sc = std::mem::take(&mut self.scratch[depth]);
        sc.occs.clear();
        sc.last.clear();
        sc.last.resize(msg.fields.len(), u32::MAX);
        let result = self
            .scan(msg, spans, &mut sc)
            .and_then(|_| self.emit(msg, &sc, col, depth));
        self.scratch[depth] = sc;
        result?;
        col.valid.push(true);
        Ok(())
    }

    /// Writes every field of a scanned message in schema order.
    fn emit(&mut self, msg: &PMsg, sc: &Scratch, col: &mut StructCol, depth: usize) -> R {
        for (k, (f, child)) in msg.fields.iter().zip(col.children.iter_mut()).enumerate() {
            let last = sc.last[k];
            if f.repeated {
                let Col::List(list) = child else {
                    return Err(bad("internal: list builder expected", 0));
                };
                if last != u32::MAX {
                    for occ in sc.occs[..=last as usize]
                        .iter()
                        .filter(|o| o.field as usize == k)
                    {
                        if occ.wire == 2 && f.kind.wire_type() != 2 {
                            self.packed(&f.kind, occ, &mut list.child)?;
                        } else {
                            self.value(&f.kind, occ, &mut list.child, depth)?;
                        }
                    }
                }
                list.close();
                continue;
            }
            if last == u32::MAX {
                match (&f.kind, &mut *child) {
                    (PKind::Map(_), Col::Map(m)) => m.close(),
                    (kind, c) if f.default_when_absent => push_default(kind, c)?,
                    (_, c) => c.push_null(),
                }
                continue;
            }
            match &f.kind {
                PKind::Map(_) => {
                    for occ in sc.occs[..=last as usize]
                        .iter()
                        .filter(|o| o.field as usize == k)
                    {
                        self.value(&f.kind, occ, child, depth)?;
                    }
                    let Col::Map(m) = child else {
                        return Err(bad("internal: map builder expected", 0));
                    };
                    m.close();
                }
                PKind::Message(_) | PKind::Wrapper(_) | PKind::Timestamp => {
                    let spans: Vec<(u32, u32)> = sc.occs[..=last as usize]
                        .iter()
                        .filter(|o| o.field as usize == k)
                        .map(|o| (o.start, o.end))
                        .collect();
                    self.sub_message(&f.kind, &spans, child, depth)?;
                }
                kind => self.value(kind, &sc.occs[last as usize], child, depth)?,
            }
        }
        Ok(())
    }

    /// A message-typed value made of one or more spans (merged).
    fn sub_message(
        &mut self,
        kind: &PKind,
        spans: &[(u32, u32)],
        col: &mut Col,
        depth: usize,
    ) -> R {
        match (kind, col) {
            (PKind::Message(m), Col::Struct(s)) => self.message(m, spans, s, depth + 1),
            (PKind::Wrapper(inner), col) => {
                let mut got: Option<Occ> = None;
                let want = inner.wire_type();
                for &(start, end) in spans {
                    let (mut i, end) = (start as usize, end as usize);
                    let b = &self.b[..end];
                    while i < end {
                        let at = i;
                        let tag = varint(b, &mut i)?;
                        let (num, wire) = (tag >> 3, (tag & 7) as u8);
                        if num == 1 {
                            if wire != want {
                                return Err(wire_err(at));
                            }
                            got = Some(self.read_occ(wire, &mut i, end)?);
                        } else {
                            self.skip(wire, num, &mut i, end, 0)?;
                        }
                    }
                }
                match got {
                    Some(occ) => self.value(inner, &occ, col, depth),
                    None => self.value(
                        inner,
                        &Occ {
                            field: 0,
                            wire: want,
                            value: 0,
                            start: 0,
                            end: 0,
                        },
                        col,
                        depth,
                    ),
                }
            }
            (PKind::Timestamp, Col::I64(p, _)) => {
                let (mut seconds, mut nanos) = (0i64, 0i64);
                for &(start, end) in spans {
                    let (mut i, end) = (start as usize, end as usize);
                    let b = &self.b[..end];
                    while i < end {
                        let at = i;
                        let tag = varint(b, &mut i)?;
                        let (num, wire) = (tag >> 3, (tag & 7) as u8);
                        match (num, wire) {
                            (1, 0) => seconds = varint(b, &mut i)? as i64,
                            (2, 0) => nanos = varint(b, &mut i)? as i32 as i64,
                            (1 | 2, _) => return Err(wire_err(at)),
                            _ => self.skip(wire, num, &mut i, end, 0)?,
                        }
                    }
                }
                if !(0..1_000_000_000).contains(&nanos) {
                    return Err(bad("timestamp nanos out of range", spans[0].0 as usize));
                }
                let micros = seconds
                    .checked_mul(1_000_000)
                    .and_then(|s| s.checked_add(nanos / 1000))
                    .ok_or_else(|| bad("timestamp out of range", spans[0].0 as usize))?;
                p.push(micros);
                Ok(())
            }
            _ => Err(bad("internal: plan and builder disagree", 0)),
        }
    }

    fn read_occ(&self, wire: u8, i: &mut usize, end: usize) -> R<Occ> {
        let b = &self.b[..end];
        let mut occ = Occ {
            field: 0,
            wire,
            value: 0,
            start: 0,
            end: 0,
        };
        match wire {
            0 => occ.value = varint(b, i)?,
            1 => {
                let s = b.get(*i..*i + 8).ok_or_else(|| truncated(*i))?;
                occ.value = u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]);
                *i += 8;
            }
            5 => {
                let s = b.get(*i..*i + 4).ok_or_else(|| truncated(*i))?;
                occ.value = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as u64;
                *i += 4;
            }
            2 => {
                let at = *i;
                let n = varint(b, i)?;
                if n > (end - *i) as u64 {
                    return Err(truncated(at));
                }
                occ.start = *i as u32;
                *i += n as usize;
                occ.end = *i as u32;
            }
            _ => return Err(wire_err(*i)),
        }
        Ok(occ)
    }

    /// A packed run of numeric values.
    fn packed(&mut self, kind: &PKind, occ: &Occ, col: &mut Col) -> R {
        let wire = kind.wire_type();
        let (mut i, end) = (occ.start as usize, occ.end as usize);
        while i < end {
            let one = self.read_occ(wire, &mut i, end)?;
            self.value(kind, &one, col, 0)?;
        }
        Ok(())
    }

    /// One value of a non-repeated kind from an occurrence.
    fn value(&mut self, kind: &PKind, occ: &Occ, col: &mut Col, depth: usize) -> R {
        let v = occ.value;
        match (kind, col) {
            (PKind::Int32, Col::I32(p, _)) => p.push(v as i32),
            (PKind::SInt32, Col::I32(p, _)) => {
                let u = v as u32;
                p.push((u >> 1) as i32 ^ -((u & 1) as i32));
            }
            (PKind::SFixed32, Col::I32(p, _)) => p.push(v as u32 as i32),
            (PKind::Int64, Col::I64(p, _)) | (PKind::SFixed64, Col::I64(p, _)) => p.push(v as i64),
            (PKind::SInt64, Col::I64(p, _)) => p.push((v >> 1) as i64 ^ -((v & 1) as i64)),
            (PKind::UInt32, Col::I64(p, _)) => p.push(v as u32 as i64),
            (PKind::UInt64, Col::I128(p, _)) => p.push(v as i128),
            (PKind::Bool, Col::Bool(p)) => p.push(v != 0),
            (PKind::Float, Col::F32(p)) => p.push(f32::from_bits(v as u32)),
            (PKind::Double, Col::F64(p)) => p.push(f64::from_bits(v)),
            (PKind::Str, Col::Utf8(b)) => {
                let s = &self.b[occ.start as usize..occ.end as usize];
                if std::str::from_utf8(s).is_err() {
                    return Err(Bad::new(
                        Malformed::InvalidUtf8,
                        "a string is not valid UTF-8",
                        occ.start as usize,
                    ));
                }
                b.push(s);
            }
            (PKind::Bytes, Col::Binary(b)) => b.push(&self.b[occ.start as usize..occ.end as usize]),
            (PKind::EnumInt, Col::I32(p, _)) => p.push(v as i32),
            (PKind::Enum(names), Col::Utf8(b)) => {
                match names.binary_search_by_key(&(v as i32), |(n, _)| *n) {
                    Ok(k) => b.push(names[k].1.as_bytes()),
                    Err(_) => b.push_null(),
                }
            }
            (PKind::Message(_) | PKind::Wrapper(_) | PKind::Timestamp, col) => {
                self.sub_message(kind, &[(occ.start, occ.end)], col, depth)?
            }
            (PKind::Map(value_kind), Col::Map(m)) => self.map_entry(value_kind, occ, m, depth)?,
            _ => {
                return Err(bad(
                    "internal: plan and builder disagree",
                    occ.start as usize,
                ))
            }
        }
        Ok(())
    }

    fn map_entry(
        &mut self,
        value_kind: &PKind,
        occ: &Occ,
        m: &mut crate::columns::MapCol,
        depth: usize,
    ) -> R {
        let (mut i, end) = (occ.start as usize, occ.end as usize);
        let mut key: Option<Occ> = None;
        let mut val: Option<Occ> = None;
        let want = value_kind.wire_type();
        while i < end {
            let at = i;
            let tag = varint(&self.b[..end], &mut i)?;
            let (num, wire) = (tag >> 3, (tag & 7) as u8);
            match num {
                1 if wire == 2 => key = Some(self.read_occ(wire, &mut i, end)?),
                2 if wire == want => val = Some(self.read_occ(wire, &mut i, end)?),
                1 | 2 => return Err(wire_err(at)),
                _ => self.skip(wire, num, &mut i, end, 0)?,
            }
        }
        let empty = Occ {
            field: 0,
            wire: 2,
            value: 0,
            start: 0,
            end: 0,
        };
        self.value(&PKind::Str, &key.unwrap_or(empty), &mut m.keys, depth)?;
        match val {
            Some(v) => self.value(value_kind, &v, &mut m.values, depth),
            None => match value_kind {
                PKind::Message(_) | PKind::Wrapper(_) | PKind::Timestamp => {
                    m.values.push_null();
                    Ok(())
                }
                k => self.value(
                    k,
                    &Occ {
                        field: 0,
                        wire: want,
                        value: 0,
                        start: 0,
                        end: 0,
                    },
                    &mut m.values,
                    depth,
                ),
            },
        }
    }
}

/// The proto3 default of a scalar absent from the wire (`emit.default.values`): zero, false,
/// empty, or the enum's zero value (its first value when it has none).
fn push_default(kind: &PKind, col: &mut Col) -> R {
    match (kind, col) {
        (_, Col::I32(p, _)) => p.push(0),
        (_, Col::I64(p, _)) => p.push(0),
        (_, Col::I128(p, _)) => p.push(0),
        (_, Col::Bool(p)) => p.push(false),
        (_, Col::F32(p)) => p.push(0.0),
        (_, Col::F64(p)) => p.push(0.0),
        (PKind::Enum(names), Col::Utf8(b)) => {
            let zero = names.iter().find(|(n, _)| *n == 0).or(names.first());
            match zero {
                Some((_, name)) => b.push(name.as_bytes()),
                None => b.push_null(),
            }
        }
        (_, Col::Utf8(b) | Col::Binary(b)) => b.push(b""),
        (_, c) => c.push_null(),
    }
    Ok(())
}
