//! The Avro binary reader: one datum per record, written straight into column builders.
//!
//! Follows the Avro specification's binary encoding: zig-zag varints for int and long
//! (at most 5 and 10 bytes), little-endian IEEE floats, length-prefixed bytes and strings,
//! arrays and maps as blocks (a negative block count is followed by the block's byte size),
//! unions as a branch index then the value. Every length is checked against the bytes left
//! before anything is allocated.

use arrow_array::ArrayRef;
use arrow_schema::DataType;

use super::ANode;
use crate::columns::Col;
use crate::metrics::{Bad, Malformed};
use crate::RowDecoder;
use tributary_sdk::error::{Error, ErrorCode, Result};

/// Decodes Avro binary datums (one per record) into a column.
#[derive(Debug)]
pub(crate) struct AvroDecoder {
    data_type: DataType,
    plan: ANode,
    col: Col,
}

impl AvroDecoder {
    /// A decoder for Avro schema JSON.
    pub(crate) fn new(schema: &str) -> Result<AvroDecoder> {
        let (data_type, plan) = super::compile(schema)?;
        if !matches!(data_type, DataType::Struct(_)) {
            return Err(Error::new(
                ErrorCode::Schema,
                format!(
                    "the Avro schema must be a record (or a union of records), found {data_type}"
                ),
            ));
        }
        let mut col = Col::new(&data_type)?;
        // Every string is checked before it is pushed; enum symbols come from the schema and
        // uuids are written as hex.
        // SAFETY: `Reader::value` checks each `Str` (and map key) with `from_utf8` unless it
        // is ASCII, and writes uuids as hex and enum symbols from the parsed schema.
        unsafe { col.trust_utf8() };
        Ok(AvroDecoder {
            data_type,
            plan,
            col,
        })
    }
}

impl RowDecoder for AvroDecoder {
    fn data_type(&self) -> DataType {
        self.data_type.clone()
    }

    fn decode(&mut self, bytes: &[u8]) -> std::result::Result<(), Bad> {
        decode_with(&self.plan, &mut self.col, bytes)
    }

    #[cfg(feature = "registry")]
    fn decode_avro_plan(&mut self, plan: &ANode, bytes: &[u8]) -> std::result::Result<(), Bad> {
        decode_with(plan, &mut self.col, bytes)
    }

    fn push_null(&mut self) {
        self.col.push_null();
    }

    fn reserve(&mut self, n: usize) {
        self.col.reserve(n);
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        self.col.finish()
    }
}

/// One datum read with `plan` into `col`; on error `col` is rolled back.
#[inline(always)]
fn decode_with(plan: &ANode, col: &mut Col, bytes: &[u8]) -> std::result::Result<(), Bad> {
    let n = col.len();
    let mut r = Reader {
        b: bytes,
        i: 0,
        zero_size_budget: MAX_ZERO_SIZE_ITEMS,
    };
    let result = r.value(plan, col).and_then(|_| {
        if r.i == bytes.len() {
            Ok(())
        } else {
            Err(Bad::new(
                Malformed::AvroTrailingBytes,
                "bytes left after the record (written with another schema?)",
                r.i,
            ))
        }
    });
    if result.is_err() {
        col.truncate(n);
    }
    result
}

type R<T = ()> = std::result::Result<T, Bad>;

/// Most items that take no bytes (nulls, records of nulls) one record may hold in its arrays
/// and maps; without a cap a few bytes of block counts could ask for billions of them.
const MAX_ZERO_SIZE_ITEMS: u64 = 1 << 20;

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    zero_size_budget: u64,
}

#[inline]
fn truncated(at: usize) -> Bad {
    Bad::new(Malformed::TruncatedAvro, "the record ends early", at)
}

#[inline]
fn bad(what: &'static str, at: usize) -> Bad {
    Bad::new(Malformed::BadAvro, what, at)
}

impl<'a> Reader<'a> {
    #[inline]
    fn varint(&mut self) -> R<u64> {
        // One-byte varints (small ints, lengths, union branches) are the common case.
        if let Some(&byte) = self.b.get(self.i) {
            if byte & 0x80 == 0 {
                self.i += 1;
                return Ok(byte as u64);
            }
        }
        let mut v: u64 = 0;
        let mut shift = 0;
        loop {
            let Some(&byte) = self.b.get(self.i) else {
                return Err(truncated(self.i));
            };
            self.i += 1;
            if shift == 63 && byte > 1 {
                return Err(bad("varint too long", self.i));
            }
            v |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(bad("varint too long", self.i));
            }
        }
    }

    #[inline]
    fn long(&mut self) -> R<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    #[inline]
    fn int(&mut self) -> R<i32> {
        let at = self.i;
        let v = self.long()?;
        i32::try_from(v).map_err(|_| bad("int out of range", at))
    }

    #[inline]
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.i.checked_add(n).ok_or_else(|| truncated(self.i))?;
        let s = self.b.get(self.i..end).ok_or_else(|| truncated(self.i))?;
        self.i = end;
        Ok(s)
    }

    #[inline]
    fn len(&mut self) -> R<usize> {
        let at = self.i;
        let n = self.long()?;
        let n = usize::try_from(n).map_err(|_| bad("negative length", at))?;
        if n > self.b.len() - self.i {
            return Err(truncated(at));
        }
        Ok(n)
    }

    /// The count of the next array or map block (0 ends), skipping a block byte size.
    fn block(&mut self, item_min: usize) -> R<usize> {
        let at = self.i;
        let mut count = self.long()?;
        if count < 0 {
            count = count
                .checked_neg()
                .ok_or_else(|| bad("invalid block count", at))?;
            let _size = self.long()?;
        }
        let count = count as u64;
        let left = (self.b.len() - self.i) as u64;
        let limit = if item_min == 0 {
            self.zero_size_budget
        } else {
            left / item_min as u64
        };
        if count > limit {
            return Err(if item_min == 0 {
                bad("block count too large", at)
            } else {
                truncated(at)
            });
        }
        if item_min == 0 {
            self.zero_size_budget -= count;
        }
        Ok(count as usize)
    }

    /// One value. Scalars are decoded inline here (this is inlined into the record loop, so
    /// a record of scalars costs no call per field); complex types go to [`Reader::complex`].
    #[inline(always)]
    fn value(&mut self, node: &ANode, col: &mut Col) -> R {
        match (node, col) {
            (ANode::Null, Col::Null(n)) => *n += 1,
            (ANode::Bool, Col::Bool(p)) => {
                let at = self.i;
                match self.take(1)?[0] {
                    0 => p.push(false),
                    1 => p.push(true),
                    _ => return Err(bad("boolean byte is not 0 or 1", at)),
                }
            }
            (ANode::Int, Col::I32(p, _)) => p.push(self.int()?),
            (ANode::Long, Col::I64(p, _)) => p.push(self.long()?),
            (ANode::Float, Col::F32(p)) => {
                let s = self.take(4)?;
                p.push(f32::from_le_bytes([s[0], s[1], s[2], s[3]]));
            }
            (ANode::Double, Col::F64(p)) => {
                let s = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                p.push(f64::from_le_bytes(a));
            }
            (ANode::Bytes, Col::Binary(b)) => {
                let n = self.len()?;
                b.push(self.take(n)?);
            }
            (ANode::Str, Col::Utf8(b)) => {
                let n = self.len()?;
                let at = self.i;
                let s = self.take(n)?;
                if !is_ascii(s) && std::str::from_utf8(s).is_err() {
                    return Err(Bad::new(
                        Malformed::InvalidUtf8,
                        "a string is not valid UTF-8",
                        at,
                    ));
                }
                b.push(s);
            }
            (ANode::UuidFixed, Col::Utf8(b)) => {
                let s = self.take(16)?;
                push_uuid(&mut b.data, s);
                b.close();
            }
            (ANode::Fixed(n), Col::Fixed(b, _)) => {
                let s = self.take(*n)?;
                b.data.extend_from_slice(s);
                b.valid.push(true);
            }
            (ANode::DecimalBytes, Col::I128(p, _)) => {
                let n = self.len()?;
                let at = self.i;
                p.push(
                    be_i128(self.take(n)?).ok_or_else(|| bad("decimal wider than 128 bits", at))?,
                );
            }
            (ANode::DecimalFixed(n), Col::I128(p, _)) => {
                let at = self.i;
                p.push(
                    be_i128(self.take(*n)?)
                        .ok_or_else(|| bad("decimal wider than 128 bits", at))?,
                );
            }
            (ANode::Enum(symbols), Col::Utf8(b)) => {
                let at = self.i;
                let k = self.long()?;
                let sym = usize::try_from(k)
                    .ok()
                    .and_then(|k| symbols.get(k))
                    .ok_or_else(|| bad("enum index out of range", at))?;
                b.push(sym.as_bytes());
            }
            (node, col) => return self.complex(node, col),
        }
        Ok(())
    }

    /// Records, arrays, maps and unions.
    #[inline(never)]
    fn complex(&mut self, node: &ANode, col: &mut Col) -> R {
        match (node, col) {
            (ANode::Record(fields), Col::Struct(s)) => {
                for (f, c) in fields.iter().zip(s.children.iter_mut()) {
                    self.value(f, c)?;
                }
                s.valid.push(true);
            }
            (ANode::Array(item), Col::List(l)) => {
                let min = item.min_size();
                loop {
                    let count = self.block(min)?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        self.value(item, &mut l.child)?;
                    }
                }
                l.close();
            }
            (ANode::Map(v), Col::Map(m)) => {
                let min = v.min_size() + 1;
                loop {
                    let count = self.block(min)?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        self.value(&ANode::Str, &mut m.keys)?;
                        self.value(v, &mut m.values)?;
                    }
                }
                m.close();
            }
            (ANode::Nullable(null_at, inner), col) => {
                let at = self.i;
                let branch = self.long()?;
                if branch == *null_at as i64 {
                    col.push_null();
                } else if branch == 1 - *null_at as i64 {
                    self.value(inner, col)?;
                } else {
                    return Err(bad("union branch out of range", at));
                }
            }
            (ANode::Union(branches, children), Col::Struct(s)) => {
                let at = self.i;
                let branch = self.long()?;
                let slot = usize::try_from(branch)
                    .ok()
                    .and_then(|b| branches.get(b))
                    .ok_or_else(|| bad("union branch out of range", at))?;
                match slot {
                    None => s.push_null(),
                    Some(k) => {
                        self.value(&children[*k], &mut s.children[*k])?;
                        s.close_row();
                    }
                }
            }
            (node, col) => return self.resolved(node, col),
        }
        Ok(())
    }

    /// Schema-resolution nodes (`super::resolve`): a writer's datum into the reader's columns.
    fn resolved(&mut self, node: &ANode, col: &mut Col) -> R {
        use super::Promotion as P;
        match (node, col) {
            (ANode::Promote(p), col) => match (p, col) {
                (P::IntToLong, Col::I64(c, _)) => c.push(self.int()? as i64),
                (P::IntToFloat, Col::F32(c)) => c.push(self.int()? as f32),
                (P::IntToDouble, Col::F64(c)) => c.push(self.int()? as f64),
                (P::LongToFloat, Col::F32(c)) => c.push(self.long()? as f32),
                (P::LongToDouble, Col::F64(c)) => c.push(self.long()? as f64),
                (P::FloatToDouble, Col::F64(c)) => {
                    let s = self.take(4)?;
                    c.push(f32::from_le_bytes([s[0], s[1], s[2], s[3]]) as f64);
                }
                _ => return Err(bad("internal: plan and builder disagree", self.i)),
            },
            (ANode::EnumMap(symbols), Col::Utf8(b)) => {
                let at = self.i;
                let k = self.long()?;
                match usize::try_from(k).ok().and_then(|k| symbols.get(k)) {
                    Some(Some(sym)) => b.push(sym.as_bytes()),
                    Some(None) => {
                        return Err(bad(
                            "enum symbol the pinned schema does not have (and no default)",
                            at,
                        ))
                    }
                    None => return Err(bad("enum index out of range", at)),
                }
            }
            (ANode::WriterUnion(branches), col) => {
                let at = self.i;
                let branch = self.long()?;
                let node = usize::try_from(branch)
                    .ok()
                    .and_then(|b| branches.get(b))
                    .ok_or_else(|| bad("union branch out of range", at))?;
                self.value(node, col)?;
            }
            (ANode::PushNull, col) => col.push_null(),
            (ANode::RefuseNull, _) => {
                return Err(bad(
                    "a null where the pinned schema has no null (union branch)",
                    self.i,
                ))
            }
            (ANode::Resolved(plan), Col::Struct(s)) => {
                for step in &plan.steps {
                    match step {
                        super::Step::Read(k, node) => self.value(node, &mut s.children[*k])?,
                        super::Step::Skip(node) => self.skip(node)?,
                    }
                }
                for (k, bytes, node) in &plan.defaults {
                    let mut d = Reader {
                        b: bytes,
                        i: 0,
                        zero_size_budget: MAX_ZERO_SIZE_ITEMS,
                    };
                    d.value(node, &mut s.children[*k])?;
                }
                s.valid.push(true);
            }
            _ => return Err(bad("internal: plan and builder disagree", self.i)),
        }
        Ok(())
    }

    /// Reads a writer value the reader does not have.
    fn skip(&mut self, node: &ANode) -> R {
        match node {
            ANode::Null => {}
            ANode::Bool => {
                self.take(1)?;
            }
            ANode::Int | ANode::Long | ANode::Enum(_) => {
                self.long()?;
            }
            ANode::Float => {
                self.take(4)?;
            }
            ANode::Double => {
                self.take(8)?;
            }
            ANode::Bytes | ANode::Str | ANode::DecimalBytes => {
                let n = self.len()?;
                self.take(n)?;
            }
            ANode::UuidFixed => {
                self.take(16)?;
            }
            ANode::Fixed(n) | ANode::DecimalFixed(n) => {
                self.take(*n)?;
            }
            ANode::Record(fields) => {
                for f in fields {
                    self.skip(f)?;
                }
            }
            ANode::Array(item) => {
                let min = item.min_size();
                loop {
                    let count = self.block(min)?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        self.skip(item)?;
                    }
                }
            }
            ANode::Map(v) => {
                let min = v.min_size() + 1;
                loop {
                    let count = self.block(min)?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        let n = self.len()?;
                        self.take(n)?;
                        self.skip(v)?;
                    }
                }
            }
            ANode::Nullable(null_at, inner) => {
                let at = self.i;
                let branch = self.long()?;
                if branch == 1 - *null_at as i64 {
                    self.skip(inner)?;
                } else if branch != *null_at as i64 {
                    return Err(bad("union branch out of range", at));
                }
            }
            ANode::Union(branches, children) => {
                let at = self.i;
                let branch = self.long()?;
                let slot = usize::try_from(branch)
                    .ok()
                    .and_then(|b| branches.get(b))
                    .ok_or_else(|| bad("union branch out of range", at))?;
                if let Some(k) = slot {
                    self.skip(&children[*k])?;
                }
            }
            _ => {
                return Err(bad(
                    "internal: a resolution node in a skipped value",
                    self.i,
                ))
            }
        }
        Ok(())
    }
}

/// Whether `s` is ASCII; short strings (the common case) are checked inline.
#[inline(always)]
fn is_ascii(s: &[u8]) -> bool {
    if s.len() <= 32 {
        s.iter().fold(0u8, |acc, b| acc | b) < 0x80
    } else {
        s.is_ascii()
    }
}

/// Big-endian two's complement bytes to i128 (None when it does not fit).
fn be_i128(s: &[u8]) -> Option<i128> {
    if s.is_empty() {
        return Some(0);
    }
    let neg = s[0] & 0x80 != 0;
    let (head, tail) = if s.len() > 16 {
        s.split_at(s.len() - 16)
    } else {
        (&[][..], s)
    };
    let fill = if neg { 0xff } else { 0 };
    if head.iter().any(|&b| b != fill) {
        return None;
    }
    let mut buf = [fill; 16];
    buf[16 - tail.len()..].copy_from_slice(tail);
    let v = i128::from_be_bytes(buf);
    if (v < 0) != neg {
        return None;
    }
    Some(v)
}

fn push_uuid(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (k, byte) in s.iter().enumerate() {
        if matches!(k, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(byte >> 4) as usize]);
        out.push(HEX[(byte & 15) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_sign_extend_and_refuse_overflow() {
        assert_eq!(be_i128(&[0xff, 0x85]), Some(-123));
        assert_eq!(be_i128(&[0x00, 0x7b]), Some(123));
        let mut wide = vec![0u8; 17];
        wide[0] = 1;
        assert_eq!(be_i128(&wide), None);
        let mut neg = vec![0xffu8; 18];
        neg[17] = 0x85;
        assert_eq!(be_i128(&neg), Some(-123));
    }

    #[test]
    fn uuid_text() {
        let mut out = Vec::new();
        push_uuid(&mut out, &[0x12; 16]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "12121212-1212-1212-1212-121212121212"
        );
    }
}
