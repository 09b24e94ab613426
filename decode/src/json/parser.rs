//! A schema-directed JSON reader that writes straight into column builders.
//!
//! Hand-written rather than `serde_json::Value` + conversion because the per-record value tree
//! costs more than the parse itself, and rather than `arrow-json` because that reader fails a
//! whole batch on one bad record or one value of another type, where PERMISSIVE decoding needs
//! a null for that record (or that field) and the rest decoded. Syntax follows RFC 8259; strings
//! are checked to be UTF-8; nesting is limited to [`MAX_DEPTH`].

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Fields};

use super::{JNode, JObj};
use crate::columns::{Col, StructCol};
use crate::metrics::{Bad, Malformed};
use crate::RowDecoder;
use tributary_sdk::error::Result;

/// Deepest nesting of arrays and objects accepted in a record.
pub(crate) const MAX_DEPTH: u32 = 128;

/// Decodes JSON objects into a struct column.
#[derive(Debug)]
pub(crate) struct JsonDecoder {
    fields: Fields,
    plan: JObj,
    col: StructCol,
    strict: bool,
    mismatches: u64,
}

impl JsonDecoder {
    /// A decoder for JSON Schema text; `strict` turns field type mismatches into errors.
    pub(crate) fn new(schema: &str, strict: bool) -> Result<JsonDecoder> {
        let (fields, plan) = super::compile(schema)?;
        let Col::Struct(col) = Col::new(&DataType::Struct(fields.clone()))? else {
            return Err(tributary_sdk::Error::new(
                tributary_sdk::ErrorCode::Internal,
                "struct builder expected",
            ));
        };
        Ok(JsonDecoder {
            fields,
            plan,
            col,
            strict,
            mismatches: 0,
        })
    }
}

impl RowDecoder for JsonDecoder {
    fn data_type(&self) -> DataType {
        DataType::Struct(self.fields.clone())
    }

    fn decode(&mut self, bytes: &[u8]) -> std::result::Result<(), Bad> {
        let n = self.col.len();
        let mut p = Parser {
            b: bytes,
            i: 0,
            depth: 0,
            strict: self.strict,
            mismatches: 0,
        };
        p.ws();
        let result = match p.peek() {
            Some(b'{') => p.object(&self.plan, &mut self.col).and_then(|_| {
                p.ws();
                if p.i == bytes.len() {
                    Ok(())
                } else {
                    Err(p.bad("characters after the JSON object"))
                }
            }),
            Some(b'n')
                if p.literal(b"null").is_ok() && {
                    p.ws();
                    p.i == bytes.len()
                } =>
            {
                self.col.push_null();
                Ok(())
            }
            Some(_) => Err(p.bad("the record is not a JSON object")),
            None => Err(p.bad("empty input")),
        };
        match result {
            Ok(()) => {
                self.mismatches += p.mismatches;
                Ok(())
            }
            Err(e) => {
                self.col.truncate(n);
                Err(e)
            }
        }
    }

    fn push_null(&mut self) {
        self.col.push_null();
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(std::sync::Arc::new(self.col.finish()?))
    }

    fn take_mismatches(&mut self) -> u64 {
        std::mem::take(&mut self.mismatches)
    }
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
    strict: bool,
    mismatches: u64,
}

type R = std::result::Result<(), Bad>;

impl<'a> Parser<'a> {
    #[inline]
    fn bad(&self, what: &'static str) -> Bad {
        Bad::new(Malformed::BadJson, what, self.i)
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// After a member or an element: `,` (another follows: `false`) or `close` (the container
    /// ends: `true`), both consumed; anything else is the error `what`.
    #[inline]
    fn closes(&mut self, close: u8, what: &'static str) -> std::result::Result<bool, Bad> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(true)
            }
            _ => Err(self.bad(what)),
        }
    }

    fn expect(&mut self, c: u8, what: &'static str) -> R {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.bad(what))
        }
    }

    fn literal(&mut self, lit: &[u8]) -> R {
        if self.b.get(self.i..self.i + lit.len()) == Some(lit) {
            self.i += lit.len();
            Ok(())
        } else {
            Err(self.bad("invalid literal"))
        }
    }

    fn enter(&mut self) -> R {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(self.bad("nesting too deep"))
        } else {
            Ok(())
        }
    }

    /// A value of another type than declared: null in PERMISSIVE, an error in FAILFAST.
    fn mismatch(&mut self, col: &mut Col) -> R {
        if self.strict {
            return Err(Bad::new(
                Malformed::JsonTypeMismatch,
                "a value has another type than the schema declares",
                self.i,
            ));
        }
        self.skip_value()?;
        col.push_null();
        self.mismatches += 1;
        Ok(())
    }

    fn mismatch_consumed(&mut self, col: &mut Col, at: usize) -> R {
        if self.strict {
            return Err(Bad::new(
                Malformed::JsonTypeMismatch,
                "a value has another type than the schema declares",
                at,
            ));
        }
        col.push_null();
        self.mismatches += 1;
        Ok(())
    }

    fn value(&mut self, node: &JNode, col: &mut Col) -> R {
        self.ws();
        let Some(c) = self.peek() else {
            return Err(self.bad("unexpected end of input"));
        };
        if c == b'n' {
            self.literal(b"null")?;
            col.push_null();
            return Ok(());
        }
        match (node, &mut *col) {
            (JNode::Bool, Col::Bool(p)) => match c {
                b't' => {
                    self.literal(b"true")?;
                    p.push(true);
                    Ok(())
                }
                b'f' => {
                    self.literal(b"false")?;
                    p.push(false);
                    Ok(())
                }
                _ => self.mismatch(col),
            },
            (JNode::Int, Col::I64(p, _)) => {
                if c != b'-' && !c.is_ascii_digit() {
                    return self.mismatch(col);
                }
                let start = self.i;
                let is_int = self.number()?;
                match is_int.then(|| parse_i64(&self.b[start..self.i])).flatten() {
                    Some(v) => {
                        p.push(v);
                        Ok(())
                    }
                    None => self.mismatch_consumed(col, start),
                }
            }
            (JNode::Num, Col::F64(p)) => {
                if c != b'-' && !c.is_ascii_digit() {
                    return self.mismatch(col);
                }
                let start = self.i;
                self.number()?;
                // The number grammar was checked: ASCII digits, sign, dot and exponent only.
                let v = std::str::from_utf8(&self.b[start..self.i])
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok());
                match v {
                    Some(v) => {
                        p.push(v);
                        Ok(())
                    }
                    None => Err(Bad::new(Malformed::BadJson, "invalid number", start)),
                }
            }
            (JNode::Str | JNode::Raw, Col::Utf8(b)) if c == b'"' => {
                match self.string_into(&mut b.data) {
                    Ok(()) => {
                        b.close();
                        Ok(())
                    }
                    Err(e) => {
                        b.abandon();
                        Err(e)
                    }
                }
            }
            (JNode::Raw, Col::Utf8(b)) => {
                let start = self.i;
                self.skip_value()?;
                // Outside strings a valid JSON text is ASCII; strings inside were UTF-8 checked.
                b.push(&self.b[start..self.i]);
                Ok(())
            }
            (JNode::Timestamp, Col::I64(p, _)) if c == b'"' => {
                let start = self.i;
                let mut s = Vec::new();
                self.string_into(&mut s)?;
                let v = std::str::from_utf8(&s)
                    .ok()
                    .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                    .map(|t| t.timestamp_micros());
                match v {
                    Some(v) => {
                        p.push(v);
                        Ok(())
                    }
                    None => self.mismatch_consumed(col, start),
                }
            }
            (JNode::Date, Col::I32(p, _)) if c == b'"' => {
                let start = self.i;
                let mut s = Vec::new();
                self.string_into(&mut s)?;
                let v = std::str::from_utf8(&s)
                    .ok()
                    .and_then(|s| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok())
                    .and_then(|d| {
                        i32::try_from(
                            d.signed_duration_since(chrono::NaiveDate::default())
                                .num_days(),
                        )
                        .ok()
                    });
                match v {
                    Some(v) => {
                        p.push(v);
                        Ok(())
                    }
                    None => self.mismatch_consumed(col, start),
                }
            }
            (JNode::List(item), Col::List(l)) if c == b'[' => {
                self.enter()?;
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.value(item, &mut l.child)?;
                        if self.closes(b']', "expected ',' or ']'")? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                l.close();
                Ok(())
            }
            (JNode::Obj(o), Col::Struct(s)) if c == b'{' => self.object(o, s),
            (JNode::Map(v), Col::Map(m)) if c == b'{' => {
                self.enter()?;
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        if self.peek() != Some(b'"') {
                            return Err(self.bad("expected a string key"));
                        }
                        let Col::Utf8(keys) = &mut *m.keys else {
                            return Err(self.bad("internal: map keys are not utf8"));
                        };
                        if let Err(e) = self.string_into(&mut keys.data) {
                            keys.abandon();
                            return Err(e);
                        }
                        keys.close();
                        self.expect(b':', "expected ':'")?;
                        self.value(v, &mut m.values)?;
                        if self.closes(b'}', "expected ',' or '}'")? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                m.close();
                Ok(())
            }
            (JNode::Str | JNode::Timestamp | JNode::Date | JNode::List(_), _)
            | (JNode::Obj(_) | JNode::Map(_), _) => self.mismatch(col),
            _ => Err(self.bad("internal: plan and builder disagree")),
        }
    }

    /// An object into a struct: known keys into their child (last one wins), others skipped,
    /// absent ones null.
    fn object(&mut self, o: &JObj, s: &mut StructCol) -> R {
        self.enter()?;
        self.i += 1;
        let n = s.len();
        let mut hint = 0usize;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
        } else {
            let mut escaped = Vec::new();
            loop {
                self.ws();
                if self.peek() != Some(b'"') {
                    return Err(self.bad("expected a string key"));
                }
                let key: &[u8] = match self.plain_key() {
                    Some(k) => k,
                    None => {
                        escaped.clear();
                        self.string_into(&mut escaped)?;
                        &escaped
                    }
                };
                let found = if o.names.get(hint).is_some_and(|h| **h == *key) {
                    Some(hint)
                } else {
                    o.names.iter().position(|name| **name == *key)
                };
                self.expect(b':', "expected ':'")?;
                match found {
                    Some(j) => {
                        hint = j + 1;
                        let child = &mut s.children[j];
                        if child.len() > n {
                            child.truncate(n);
                        }
                        self.value(&o.nodes[j], child)?;
                    }
                    None => self.skip_value()?,
                }
                if self.closes(b'}', "expected ',' or '}'")? {
                    break;
                }
            }
        }
        self.depth -= 1;
        s.close_row();
        Ok(())
    }

    /// A key without escapes, borrowed from the input; None (position unchanged) when it has some.
    #[inline]
    fn plain_key(&mut self) -> Option<&'a [u8]> {
        let b = self.b;
        let start = self.i + 1;
        let mut j = start;
        while let Some(&c) = b.get(j) {
            if c == b'"' {
                let key = &b[start..j];
                if std::str::from_utf8(key).is_err() {
                    return None;
                }
                self.i = j + 1;
                return Some(key);
            }
            if c == b'\\' || c < 0x20 {
                return None;
            }
            j += 1;
        }
        None
    }

    /// Reads a string (at its opening quote), appending its UTF-8 content to `out`.
    fn string_into(&mut self, out: &mut Vec<u8>) -> R {
        self.i += 1;
        loop {
            let start = self.i;
            let rest = &self.b[start..];
            let stop = rest
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            let Some(k) = stop else {
                return Err(self.bad("unterminated string"));
            };
            let chunk = &rest[..k];
            if !chunk.is_ascii() && std::str::from_utf8(chunk).is_err() {
                return Err(Bad::new(
                    Malformed::InvalidUtf8,
                    "a string is not valid UTF-8",
                    start,
                ));
            }
            out.extend_from_slice(chunk);
            self.i = start + k;
            match rest[k] {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => self.escape(out)?,
                _ => return Err(self.bad("control character in string")),
            }
        }
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> R {
        let Some(&e) = self.b.get(self.i + 1) else {
            return Err(self.bad("unterminated escape"));
        };
        self.i += 2;
        let simple = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let hi = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                        return Err(self.bad("unpaired surrogate"));
                    }
                    self.i += 2;
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(self.bad("unpaired surrogate"));
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                let ch = char::from_u32(code).ok_or_else(|| self.bad("unpaired surrogate"))?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            _ => return Err(self.bad("invalid escape")),
        };
        out.push(simple);
        Ok(())
    }

    fn hex4(&mut self) -> std::result::Result<u32, Bad> {
        let digits = self
            .b
            .get(self.i..self.i + 4)
            .ok_or_else(|| self.bad("short \\u escape"))?;
        let mut v = 0u32;
        for &d in digits {
            let x = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.bad("invalid \\u escape"))?;
            v = v * 16 + x;
        }
        self.i += 4;
        Ok(v)
    }

    /// Consumes a number; true when it is an integer (no fraction, no exponent).
    fn number(&mut self) -> std::result::Result<bool, Bad> {
        let b = self.b;
        let mut j = self.i;
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        match b.get(j) {
            Some(b'0') => j += 1,
            Some(c) if c.is_ascii_digit() => {
                while b.get(j).is_some_and(u8::is_ascii_digit) {
                    j += 1;
                }
            }
            _ => return Err(Bad::new(Malformed::BadJson, "invalid number", j)),
        }
        let mut int = true;
        if b.get(j) == Some(&b'.') {
            int = false;
            j += 1;
            if !b.get(j).is_some_and(u8::is_ascii_digit) {
                return Err(Bad::new(Malformed::BadJson, "invalid number", j));
            }
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
        }
        if matches!(b.get(j), Some(b'e' | b'E')) {
            int = false;
            j += 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if !b.get(j).is_some_and(u8::is_ascii_digit) {
                return Err(Bad::new(Malformed::BadJson, "invalid number", j));
            }
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
        }
        self.i = j;
        Ok(int)
    }

    /// Skips one value, checking its syntax.
    fn skip_value(&mut self) -> R {
        self.ws();
        match self.peek() {
            Some(b'"') => {
                let mut sink = Vec::new();
                self.string_into(&mut sink)
            }
            Some(b'{') => {
                self.enter()?;
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        if self.peek() != Some(b'"') {
                            return Err(self.bad("expected a string key"));
                        }
                        if self.plain_key().is_none() {
                            let mut sink = Vec::new();
                            self.string_into(&mut sink)?;
                        }
                        self.expect(b':', "expected ':'")?;
                        self.skip_value()?;
                        if self.closes(b'}', "expected ',' or '}'")? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                Ok(())
            }
            Some(b'[') => {
                self.enter()?;
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.skip_value()?;
                        if self.closes(b']', "expected ',' or ']'")? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                Ok(())
            }
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(c) if c == b'-' || c.is_ascii_digit() => self.number().map(|_| ()),
            Some(_) => Err(self.bad("unexpected character")),
            None => Err(self.bad("unexpected end of input")),
        }
    }
}

/// Parses an integer literal (already checked to be `-?digits`); None when it overflows i64.
#[inline]
fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for &d in digits {
        let x = (d - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(x)?
        } else {
            v.checked_add(x)?
        };
    }
    Some(v)
}
