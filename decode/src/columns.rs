//! Growable, truncatable column builders shared by the JSON, Avro and Protobuf decoders.
//!
//! Decoders append one value at a time straight into these builders (no intermediate value tree).
//! A record that turns out to be malformed half-way is rolled back with [`Col::truncate`] to the
//! length it had before the record, and a null is appended instead. Arrow's own builders cannot
//! be truncated, which is why these exist; [`Col::finish`] turns them into Arrow arrays.

use std::sync::Arc;

use arrow_array::{
    make_array, new_empty_array, ArrayRef, BooleanArray, FixedSizeBinaryArray, ListArray, MapArray,
    StringArray, StructArray,
};
use arrow_buffer::{
    BooleanBuffer, BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{ArrowError, DataType, FieldRef, Fields};

use tributary_sdk::error::{Error, ErrorCode, Result};

/// Fixed-width values with a validity flag per slot.
#[derive(Debug, Default)]
pub(crate) struct Prim<T> {
    pub values: Vec<T>,
    pub valid: Valid,
}

impl<T: Default + Copy> Prim<T> {
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        self.values.push(v);
        self.valid.push_valid();
    }
    #[inline]
    pub fn push_null(&mut self) {
        self.values.push(T::default());
        self.valid.push(false);
    }
    fn truncate(&mut self, n: usize) {
        self.values.truncate(n);
        self.valid.truncate(n);
    }
}

/// Variable-width values (utf8 or binary) and fixed-size binary.
#[derive(Debug)]
pub(crate) struct Bytes {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub valid: Valid,
    /// Bytes per value in the last finished batch (to reserve for the next one).
    per_value: usize,
    /// Set by decoders that check every utf8 value they push (see [`Col::trust_utf8`]).
    utf8_checked: bool,
}

impl Default for Bytes {
    fn default() -> Self {
        Bytes {
            offsets: vec![0],
            data: Vec::new(),
            valid: Valid::default(),
            per_value: 0,
            utf8_checked: false,
        }
    }
}

impl Bytes {
    /// Appends a value.
    #[inline(always)]
    pub fn push(&mut self, v: &[u8]) {
        self.data.extend_from_slice(v);
        self.close();
    }
    /// Ends a value whose bytes were written to `data` directly.
    #[inline(always)]
    pub fn close(&mut self) {
        // Offsets past i32::MAX are caught in `finish` (the data length is checked there).
        self.offsets.push(self.data.len() as i32);
        self.valid.push_valid();
    }
    /// Drops bytes written to `data` since the last value ended.
    #[inline]
    pub fn abandon(&mut self) {
        let end = self.offsets.last().copied().unwrap_or(0) as usize;
        self.data.truncate(end);
    }
    #[inline]
    pub fn push_null(&mut self) {
        self.offsets.push(self.data.len() as i32);
        self.valid.push(false);
    }
    fn len(&self) -> usize {
        self.valid.len()
    }
    /// Drops values from `n` on, and bytes of a value not yet closed.
    fn truncate(&mut self, n: usize) {
        if n <= self.len() {
            self.data.truncate(self.offsets[n] as usize);
            self.offsets.truncate(n + 1);
            self.valid.truncate(n);
        }
    }
}

/// A struct column.
#[derive(Debug)]
pub(crate) struct StructCol {
    pub fields: Fields,
    pub children: Vec<Col>,
    pub valid: Valid,
}

impl StructCol {
    /// Appends a null struct (a null in every child too).
    pub fn push_null(&mut self) {
        for c in &mut self.children {
            c.push_null();
        }
        self.valid.push(false);
    }
    /// Length in rows.
    pub fn len(&self) -> usize {
        self.valid.len()
    }
    /// Makes room for `n` more rows.
    pub fn reserve(&mut self, n: usize) {
        for c in &mut self.children {
            c.reserve(n);
        }
    }
    /// Drops rows from `n` on.
    pub fn truncate(&mut self, n: usize) {
        for c in &mut self.children {
            c.truncate(n);
        }
        self.valid.truncate(n);
    }
    /// Fills children that got no value in the current row with nulls and ends the row.
    #[inline]
    pub fn close_row(&mut self) {
        let n = self.valid.len();
        for c in &mut self.children {
            if c.len() == n {
                c.push_null();
            }
        }
        self.valid.push(true);
    }
    /// Builds the array.
    pub fn finish(&mut self) -> Result<StructArray> {
        let len = self.valid.len();
        let nulls = self.valid.take();
        if self.children.is_empty() {
            return Ok(StructArray::new_empty_fields(len, nulls));
        }
        let children = self
            .children
            .iter_mut()
            .map(Col::finish)
            .collect::<Result<Vec<_>>>()?;
        Ok(StructArray::try_new(self.fields.clone(), children, nulls)?)
    }
}

/// A list column.
#[derive(Debug)]
pub(crate) struct ListCol {
    pub field: FieldRef,
    pub offsets: Vec<i32>,
    pub child: Box<Col>,
    pub valid: Valid,
}

impl ListCol {
    /// Ends a list whose items were appended to `child`.
    #[inline]
    pub fn close(&mut self) {
        self.offsets.push(self.child.len() as i32);
        self.valid.push(true);
    }
}

/// A map column (entries struct of `keys` and `values`).
#[derive(Debug)]
pub(crate) struct MapCol {
    pub field: FieldRef,
    pub offsets: Vec<i32>,
    pub keys: Box<Col>,
    pub values: Box<Col>,
    pub valid: Valid,
}

impl MapCol {
    /// Ends a map whose entries were appended to `keys` and `values`.
    #[inline]
    pub fn close(&mut self) {
        self.offsets.push(self.keys.len() as i32);
        self.valid.push(true);
    }
}

/// A column builder of any supported Arrow type.
#[derive(Debug)]
pub(crate) enum Col {
    Null(usize),
    Bool(Prim<bool>),
    I32(Prim<i32>, DataType),
    I64(Prim<i64>, DataType),
    F32(Prim<f32>),
    F64(Prim<f64>),
    I128(Prim<i128>, DataType),
    Utf8(Bytes),
    Binary(Bytes),
    Fixed(Bytes, i32),
    Struct(StructCol),
    List(ListCol),
    Map(MapCol),
}

impl Col {
    /// An empty builder for `dt`.
    pub fn new(dt: &DataType) -> Result<Col> {
        Ok(match dt {
            DataType::Null => Col::Null(0),
            DataType::Boolean => Col::Bool(Prim::default()),
            DataType::Int32 | DataType::Date32 | DataType::Time32(_) => {
                Col::I32(Prim::default(), dt.clone())
            }
            DataType::Int64 | DataType::Timestamp(_, _) | DataType::Time64(_) => {
                Col::I64(Prim::default(), dt.clone())
            }
            DataType::Float32 => Col::F32(Prim::default()),
            DataType::Float64 => Col::F64(Prim::default()),
            DataType::Decimal128(_, _) => Col::I128(Prim::default(), dt.clone()),
            DataType::Utf8 => Col::Utf8(Bytes::default()),
            DataType::Binary => Col::Binary(Bytes::default()),
            DataType::FixedSizeBinary(n) => Col::Fixed(Bytes::default(), *n),
            DataType::Struct(fields) => Col::Struct(StructCol {
                fields: fields.clone(),
                children: fields
                    .iter()
                    .map(|f| Col::new(f.data_type()))
                    .collect::<Result<_>>()?,
                valid: Valid::default(),
            }),
            DataType::List(field) => Col::List(ListCol {
                field: field.clone(),
                offsets: vec![0],
                child: Box::new(Col::new(field.data_type())?),
                valid: Valid::default(),
            }),
            DataType::Map(field, _) => {
                let DataType::Struct(kv) = field.data_type() else {
                    return Err(internal("map entries must be a struct"));
                };
                if kv.len() != 2 {
                    return Err(internal("map entries must have two fields"));
                }
                Col::Map(MapCol {
                    field: field.clone(),
                    offsets: vec![0],
                    keys: Box::new(Col::new(kv[0].data_type())?),
                    values: Box::new(Col::new(kv[1].data_type())?),
                    valid: Valid::default(),
                })
            }
            other => return Err(internal(&format!("no column builder for {other}"))),
        })
    }

    /// Length in rows.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Col::Null(n) => *n,
            Col::Bool(p) => p.valid.len(),
            Col::I32(p, _) => p.valid.len(),
            Col::I64(p, _) => p.valid.len(),
            Col::F32(p) => p.valid.len(),
            Col::F64(p) => p.valid.len(),
            Col::I128(p, _) => p.valid.len(),
            Col::Utf8(b) | Col::Binary(b) | Col::Fixed(b, _) => b.valid.len(),
            Col::Struct(s) => s.valid.len(),
            Col::List(l) => l.valid.len(),
            Col::Map(m) => m.valid.len(),
        }
    }

    /// Appends a null.
    pub fn push_null(&mut self) {
        match self {
            Col::Null(n) => *n += 1,
            Col::Bool(p) => p.push_null(),
            Col::I32(p, _) => p.push_null(),
            Col::I64(p, _) => p.push_null(),
            Col::F32(p) => p.push_null(),
            Col::F64(p) => p.push_null(),
            Col::I128(p, _) => p.push_null(),
            Col::Utf8(b) | Col::Binary(b) => b.push_null(),
            Col::Fixed(b, size) => {
                b.data.resize(b.data.len() + *size as usize, 0);
                b.valid.push(false);
            }
            Col::Struct(s) => s.push_null(),
            Col::List(l) => {
                l.offsets.push(l.child.len() as i32);
                l.valid.push(false);
            }
            Col::Map(m) => {
                m.offsets.push(m.keys.len() as i32);
                m.valid.push(false);
            }
        }
    }

    /// Opts this builder (and its children) into building utf8 columns without validating
    /// them again in [`Col::finish`] (`StringArray::new_unchecked`, see [`utf8_unchecked`]).
    /// Builders that never get this call take the checked path: the whole column is validated
    /// once per batch.
    ///
    /// # Safety
    ///
    /// Every value the caller pushes into a utf8 column of this builder from now on must be
    /// valid UTF-8 (checked with `from_utf8`, ASCII, or taken from a `&str`), and bytes written
    /// to `data` directly must be closed ([`Bytes::close`]) or abandoned ([`Bytes::abandon`])
    /// on value boundaries. The Avro and Protobuf decoders check each string before pushing it;
    /// the JSON decoder does not opt in (it copies unescaped bytes).
    pub unsafe fn trust_utf8(&mut self) {
        match self {
            Col::Utf8(b) => b.utf8_checked = true,
            // SAFETY (these arms): the caller's promise covers every child.
            Col::Struct(s) => s
                .children
                .iter_mut()
                .for_each(|c| unsafe { c.trust_utf8() }),
            Col::List(l) => unsafe { l.child.trust_utf8() },
            Col::Map(m) => unsafe {
                m.keys.trust_utf8();
                m.values.trust_utf8();
            },
            _ => {}
        }
    }

    /// Makes room for `n` more rows (fixed-width values and offsets), so that filling a batch
    /// does not regrow the buffers row by row.
    pub fn reserve(&mut self, n: usize) {
        match self {
            Col::Null(_) => {}
            Col::Bool(p) => p.values.reserve(n),
            Col::I32(p, _) => p.values.reserve(n),
            Col::I64(p, _) => p.values.reserve(n),
            Col::F32(p) => p.values.reserve(n),
            Col::F64(p) => p.values.reserve(n),
            Col::I128(p, _) => p.values.reserve(n),
            Col::Utf8(b) | Col::Binary(b) => {
                b.offsets.reserve(n);
                b.data.reserve(n.saturating_mul(b.per_value));
            }
            Col::Fixed(b, size) => b.data.reserve(n.saturating_mul(*size as usize)),
            Col::Struct(s) => s.reserve(n),
            Col::List(l) => l.offsets.reserve(n),
            Col::Map(m) => m.offsets.reserve(n),
        }
    }

    /// Drops rows from `n` on (rolls back a malformed record).
    pub fn truncate(&mut self, n: usize) {
        match self {
            Col::Null(len) => *len = (*len).min(n),
            Col::Bool(p) => p.truncate(n),
            Col::I32(p, _) => p.truncate(n),
            Col::I64(p, _) => p.truncate(n),
            Col::F32(p) => p.truncate(n),
            Col::F64(p) => p.truncate(n),
            Col::I128(p, _) => p.truncate(n),
            Col::Utf8(b) | Col::Binary(b) => b.truncate(n),
            Col::Fixed(b, size) => {
                b.data.truncate(n * *size as usize);
                b.valid.truncate(n);
            }
            Col::Struct(s) => s.truncate(n),
            // `<=`: items of a list (entries of a map) still open belong to no row yet.
            Col::List(l) => {
                if n <= l.valid.len() {
                    let end = l.offsets[n] as usize;
                    l.child.truncate(end);
                    l.offsets.truncate(n + 1);
                    l.valid.truncate(n);
                }
            }
            Col::Map(m) => {
                if n <= m.valid.len() {
                    let end = m.offsets[n] as usize;
                    m.keys.truncate(end);
                    m.values.truncate(end);
                    m.offsets.truncate(n + 1);
                    m.valid.truncate(n);
                }
            }
        }
    }

    /// Builds the Arrow array and empties the builder for the next batch.
    pub fn finish(&mut self) -> Result<ArrayRef> {
        Ok(match self {
            Col::Null(n) => {
                let len = std::mem::take(n);
                Arc::new(arrow_array::NullArray::new(len))
            }
            Col::Bool(p) => {
                // From a slice packs the bits a word at a time.
                let values = BooleanBuffer::from(p.values.as_slice());
                p.values.clear();
                Arc::new(BooleanArray::new(values, p.valid.take()))
            }
            Col::I32(p, dt) => prim_array(std::mem::take(&mut p.values), &mut p.valid, dt)?,
            Col::I64(p, dt) => prim_array(std::mem::take(&mut p.values), &mut p.valid, dt)?,
            Col::F32(p) => prim_array(
                std::mem::take(&mut p.values),
                &mut p.valid,
                &DataType::Float32,
            )?,
            Col::F64(p) => prim_array(
                std::mem::take(&mut p.values),
                &mut p.valid,
                &DataType::Float64,
            )?,
            Col::I128(p, dt) => prim_array(std::mem::take(&mut p.values), &mut p.valid, dt)?,
            Col::Utf8(b) => bytes_array(b, &DataType::Utf8)?,
            Col::Binary(b) => bytes_array(b, &DataType::Binary)?,
            Col::Fixed(b, size) => {
                let data = Buffer::from_vec(std::mem::take(&mut b.data));
                let nulls = b.valid.take();
                Arc::new(FixedSizeBinaryArray::try_new(*size, data, nulls)?)
            }
            Col::Struct(s) => Arc::new(s.finish()?),
            Col::List(l) => {
                let offsets = take_offsets(&mut l.offsets)?;
                let nulls = l.valid.take();
                let child = l.child.finish()?;
                Arc::new(ListArray::try_new(l.field.clone(), offsets, child, nulls)?)
            }
            Col::Map(m) => {
                let offsets = take_offsets(&mut m.offsets)?;
                let nulls = m.valid.take();
                let DataType::Struct(kv) = m.field.data_type() else {
                    return Err(internal("map entries must be a struct"));
                };
                let entries = StructArray::try_new(
                    kv.clone(),
                    vec![m.keys.finish()?, m.values.finish()?],
                    None,
                )?;
                Arc::new(MapArray::try_new(
                    m.field.clone(),
                    offsets,
                    entries,
                    nulls,
                    false,
                )?)
            }
        })
    }
}

fn internal(msg: &str) -> Error {
    Error::new(ErrorCode::Internal, msg.to_string())
}

/// Validity of a column's slots. Hand-written rather than Arrow's `NullBufferBuilder` because
/// it is called for every value of every column: a slot is a counter increment, and nulls are
/// kept as a sorted list of positions that becomes a bitmap once per batch in [`Valid::take`].
/// (A bitmap set slot by slot made every value of a column pay once the column had one null;
/// with 10 % malformed records, every column of the struct has nulls.)
#[derive(Debug, Default)]
pub(crate) struct Valid {
    len: usize,
    /// Positions of the null slots, ascending.
    nulls: Vec<usize>,
}

impl Valid {
    /// Appends a valid slot.
    #[inline(always)]
    pub fn push_valid(&mut self) {
        self.len += 1;
    }
    /// Appends one slot's validity.
    #[inline(always)]
    pub fn push(&mut self, valid: bool) {
        if !valid {
            self.nulls.push(self.len);
        }
        self.len += 1;
    }
    /// Number of slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    /// Drops slots from `n` on.
    #[inline]
    pub fn truncate(&mut self, n: usize) {
        if n < self.len {
            self.len = n;
            while self.nulls.last().is_some_and(|&i| i >= n) {
                self.nulls.pop();
            }
        }
    }
    /// The null buffer (None when all valid); leaves the builder empty.
    fn take(&mut self) -> Option<NullBuffer> {
        let len = std::mem::take(&mut self.len);
        if self.nulls.is_empty() {
            return None;
        }
        let mut bits = BooleanBufferBuilder::new(len);
        bits.append_n(len, true);
        for i in self.nulls.drain(..) {
            bits.set_bit(i, false);
        }
        Some(NullBuffer::new(bits.finish()))
    }
}

fn take_offsets(offsets: &mut Vec<i32>) -> Result<OffsetBuffer<i32>> {
    let v = std::mem::replace(offsets, vec![0]);
    if v.windows(2).any(|w| w[1] < w[0]) {
        return Err(too_large());
    }
    Ok(OffsetBuffer::new(ScalarBuffer::from(v)))
}

fn too_large() -> Error {
    Error::new(
        ErrorCode::SourceRead,
        "a decoded column exceeds 2 GiB in one batch; use a smaller read limit",
    )
}

fn prim_array<T: arrow_buffer::ArrowNativeType>(
    values: Vec<T>,
    valid: &mut Valid,
    dt: &DataType,
) -> Result<ArrayRef> {
    let len = values.len();
    let nulls = valid.take();
    let data = arrow_data::ArrayDataBuilder::new(dt.clone())
        .len(len)
        .add_buffer(Buffer::from_vec(values))
        .nulls(nulls)
        .build()
        .map_err(|e: ArrowError| Error::from(e))?;
    Ok(make_array(data))
}

fn bytes_array(b: &mut Bytes, dt: &DataType) -> Result<ArrayRef> {
    if b.data.len() > i32::MAX as usize {
        return Err(too_large());
    }
    let len = b.valid.len();
    b.per_value = b.data.len().checked_div(len).unwrap_or(0);
    let offsets = std::mem::replace(&mut b.offsets, vec![0]);
    let data = std::mem::take(&mut b.data);
    let nulls = b.valid.take();
    if len == 0 {
        return Ok(new_empty_array(dt));
    }
    if b.utf8_checked && *dt == DataType::Utf8 {
        // SAFETY: `utf8_checked` is only set through `Col::trust_utf8`, whose caller promised
        // that every value pushed is valid UTF-8.
        return Ok(Arc::new(unsafe { utf8_unchecked(offsets, data, nulls) }));
    }
    // Utf8 columns of the JSON decoder are checked here, once per batch.
    let data = arrow_data::ArrayDataBuilder::new(dt.clone())
        .len(len)
        .add_buffer(Buffer::from_vec(offsets))
        .add_buffer(Buffer::from_vec(data))
        .nulls(nulls)
        .build()?;
    Ok(make_array(data))
}

/// A utf8 array from a builder's offsets and bytes, without validating the bytes: what
/// [`Col::trust_utf8`] buys (one pass over every string byte per batch; measured by the
/// `utf8_build` group of `benches/decode.rs`). Debug builds still check the contract.
///
/// # Safety
///
/// `data` is a concatenation of valid UTF-8 strings; `offsets` starts at 0, never decreases,
/// ends at `data.len()` (at most `i32::MAX`) and falls on the boundaries between the strings.
unsafe fn utf8_unchecked(
    offsets: Vec<i32>,
    data: Vec<u8>,
    nulls: Option<NullBuffer>,
) -> StringArray {
    debug_assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
    debug_assert_eq!(offsets.last().map(|&o| o as usize), Some(data.len()));
    debug_assert!(offsets
        .windows(2)
        .all(|w| std::str::from_utf8(&data[w[0] as usize..w[1] as usize]).is_ok()));
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: the caller's contract is exactly `new_unchecked`'s.
    unsafe { StringArray::new_unchecked(offsets, Buffer::from_vec(data), nulls) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn utf8_builder(values: &[Option<&[u8]>]) -> Col {
        let mut col = Col::new(&DataType::Utf8).unwrap();
        let Col::Utf8(b) = &mut col else {
            unreachable!()
        };
        for v in values {
            match v {
                Some(v) => b.push(v),
                None => b.push_null(),
            }
        }
        col
    }

    fn is_trusted(col: &Col) -> bool {
        matches!(col, Col::Utf8(b) if b.utf8_checked)
    }

    #[test]
    fn the_unchecked_path_builds_valid_columns_from_valid_strings() {
        let strings: Vec<Option<&[u8]>> = vec![
            Some(b"plain"),
            None,
            Some("gr\u{fc}n \u{1f30a}".as_bytes()),
            Some(b""),
            Some("\u{65e5}\u{672c}".as_bytes()),
        ];
        let fields = Fields::from(vec![arrow_schema::Field::new("s", DataType::Utf8, true)]);
        let mut col = Col::new(&DataType::Struct(fields)).unwrap();
        // SAFETY: only the valid UTF-8 strings above are pushed.
        unsafe { col.trust_utf8() };
        let Col::Struct(s) = &mut col else {
            unreachable!()
        };
        assert!(is_trusted(&s.children[0]), "trust reaches the children");
        for v in &strings {
            let Col::Utf8(b) = &mut s.children[0] else {
                unreachable!()
            };
            match v {
                Some(v) => b.push(v),
                None => b.push_null(),
            }
            s.valid.push(true);
        }
        // A value rolled back half-way leaves no bytes behind.
        if let Col::Utf8(b) = &mut s.children[0] {
            b.data.extend_from_slice(b"half");
            b.abandon();
        }
        let array = col.finish().unwrap();
        array.to_data().validate_full().unwrap();
        let s = array.as_any().downcast_ref::<StructArray>().unwrap();
        let values = s.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(values.len(), 5);
        assert_eq!(values.value(2), "gr\u{fc}n \u{1f30a}");
        assert!(values.is_null(1));
        // The unchecked constructor on its own.
        // SAFETY: two valid strings, offsets on their boundaries.
        let direct = unsafe { utf8_unchecked(vec![0, 2, 5], b"abxyz".to_vec(), None) };
        direct.to_data().validate_full().unwrap();
        assert_eq!(direct.value(1), "xyz");
    }

    #[test]
    fn the_checked_path_refuses_invalid_utf8() {
        let mut col = utf8_builder(&[Some(b"ok"), Some(b"\xff\xfe"), None]);
        assert!(!is_trusted(&col));
        let err = col.finish().unwrap_err();
        assert!(err.to_string().to_lowercase().contains("utf"), "{err}");
        let mut col = utf8_builder(&[Some(b"ok"), None, Some("\u{e9}".as_bytes())]);
        let array = col.finish().unwrap();
        array.to_data().validate_full().unwrap();
        assert_eq!(array.len(), 3);
    }

    fn bits(v: &mut Valid) -> Vec<bool> {
        let len = v.len();
        match v.take() {
            None => vec![true; len],
            Some(n) => (0..len).map(|i| n.is_valid(i)).collect(),
        }
    }

    #[test]
    fn validity_across_word_boundaries_and_rollbacks() {
        for first_null in [0, 1, 63, 64, 65, 200] {
            let mut v = Valid::default();
            let mut expect = Vec::new();
            for i in 0..300 {
                let valid = i != first_null && i % 7 != 3 || i < first_null;
                if valid {
                    v.push_valid();
                } else {
                    v.push(false);
                }
                expect.push(valid);
            }
            // Roll back into a word, then append across the next boundary.
            v.truncate(130);
            expect.truncate(130);
            for i in 0..70 {
                v.push(i % 5 != 0);
                expect.push(i % 5 != 0);
            }
            assert_eq!(bits(&mut v), expect, "first null at {first_null}");
            assert_eq!(v.len(), 0);
        }
    }

    #[test]
    fn a_rolled_back_null_leaves_no_bitmap() {
        let mut v = Valid::default();
        v.push_valid();
        v.push(false);
        v.truncate(1);
        v.push_valid();
        assert!(v.take().is_none());
    }
}
