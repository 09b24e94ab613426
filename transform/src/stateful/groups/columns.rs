//! The partial values of a [`super::GroupTable`]'s groups: one [`StateColumn`] per partial
//! column, a plain vector indexed by group id, merged in place with the merge function of its
//! aggregate ([`Merge`]), with DataFusion's semantics:
//!
//! - `sum` adds with wrapping (DataFusion's `SumAccumulator` and its groups accumulator);
//! - `min` / `max` keep the new value when it compares less / greater, or when the comparison
//!   is undefined (a NaN), as DataFusion's `PrimitiveGroupsAccumulator` for `min` / `max`;
//! - `bool_and` / `bool_or` (and `min` / `max` of booleans) are `and` / `or`;
//! - a null partial value leaves the group as it is; a group without any value is null.
//!
//! Primitive types (integers, floats, decimals, dates, times, timestamps, durations, intervals)
//! and booleans are held unboxed; any other type (strings, for `min` / `max`) as
//! [`ScalarValue`]s. A batch's overwritten values are remembered so that a batch whose state is
//! dropped can be rolled back.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{
    downcast_primitive, new_empty_array, Array, ArrayRef, ArrowNativeTypeOp, BooleanArray,
    PrimitiveArray,
};
use arrow_schema::DataType;
use datafusion::arrow::buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};
use datafusion::scalar::ScalarValue;
use tributary_sdk::{Error, ErrorCode, Result};

pub(crate) use crate::stateful::rewrite::Merge;

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] aggregation state column: {what}: {e}"),
    )
}

fn missing(id: usize) -> Error {
    internal("group", format!("{id} has no slot"))
}

/// One partial column of every group.
pub(crate) trait StateColumn: Send + Sync {
    /// Makes room for `len` groups (the new ones without a value).
    fn grow(&mut self, len: usize);
    /// Forgets groups `ids`' values (groups held again after they left the state).
    fn clear(&mut self, ids: &[usize]) -> Result<()>;
    /// Notes groups `ids`' values, which [`Self::rollback`] restores.
    fn remember(&mut self, ids: &[usize]) -> Result<()>;
    /// Merges row `r` of `partial` into group `ids[r]`, for every row.
    fn merge(&mut self, partial: &dyn Array, ids: &[usize]) -> Result<()>;
    /// The values of groups `ids`, in order.
    fn take(&self, ids: &[usize]) -> Result<ArrayRef>;
    /// Restores the values noted since the last [`Self::forget`].
    fn rollback(&mut self);
    /// Drops the values noted (the batch's state is kept).
    fn forget(&mut self);
    /// Bytes held.
    fn bytes(&self) -> usize;
}

/// A column of `data_type` merged with `merge`.
pub(crate) fn column(data_type: &DataType, merge: Merge) -> Box<dyn StateColumn> {
    macro_rules! primitive {
        ($t:ty) => {
            return Box::new(Primitive::<$t> {
                data_type: data_type.clone(),
                merge,
                slots: Slots::new(),
            })
        };
    }
    downcast_primitive! {
        data_type => (primitive),
        DataType::Boolean => Box::new(Bool {
            and: matches!(merge, Merge::And | Merge::Min),
            slots: Slots::new(),
        }),
        _ => Box::new(Scalars::new(data_type.clone(), merge)),
    }
}

/// Unboxed values by group id, with their validity and the values the batch overwrote.
struct Slots<V: Copy + Default> {
    values: Vec<V>,
    valid: Vec<bool>,
    undo: Vec<(usize, V, bool)>,
}

impl<V: Copy + Default> Slots<V> {
    fn new() -> Self {
        Slots {
            values: Vec::new(),
            valid: Vec::new(),
            undo: Vec::new(),
        }
    }

    fn grow(&mut self, len: usize) {
        self.values.resize(len, V::default());
        self.valid.resize(len, false);
    }

    fn clear(&mut self, ids: &[usize]) -> Result<()> {
        for &id in ids {
            *self.valid.get_mut(id).ok_or_else(|| missing(id))? = false;
        }
        Ok(())
    }

    fn remember(&mut self, ids: &[usize]) -> Result<()> {
        self.undo.reserve(ids.len());
        for &id in ids {
            let (Some(&v), Some(&ok)) = (self.values.get(id), self.valid.get(id)) else {
                return Err(missing(id));
            };
            self.undo.push((id, v, ok));
        }
        Ok(())
    }

    /// Merges `values[r]` into group `ids[r]` with `op`, for every row (a partial column
    /// without nulls).
    fn merge_all(&mut self, ids: &[usize], values: &[V], op: impl Fn(&mut V, V)) -> Result<()> {
        if ids.len() != values.len() {
            return Err(internal("a partial column", "is not as long as its keys"));
        }
        for (&id, &v) in ids.iter().zip(values) {
            self.fold(id, v, &op)?;
        }
        Ok(())
    }

    /// Merges `v` into group `id` with `op` (a group without a value takes it).
    #[inline]
    fn fold(&mut self, id: usize, v: V, op: &impl Fn(&mut V, V)) -> Result<()> {
        let (Some(cur), Some(valid)) = (self.values.get_mut(id), self.valid.get_mut(id)) else {
            return Err(missing(id));
        };
        if *valid {
            op(cur, v);
        } else {
            *cur = v;
            *valid = true;
        }
        Ok(())
    }

    /// Merges `value(r)` (none: null) into group `ids[r]` with `op`, for every row.
    fn merge(
        &mut self,
        ids: &[usize],
        value: impl Fn(usize) -> Option<V>,
        op: impl Fn(&mut V, V),
    ) -> Result<()> {
        for (r, &id) in ids.iter().enumerate() {
            if let Some(v) = value(r) {
                self.fold(id, v, &op)?;
            }
        }
        Ok(())
    }

    /// Groups `ids`' values and, when one is null, their validity.
    fn take(&self, ids: &[usize]) -> Result<(Vec<V>, Option<NullBuffer>)> {
        let mut values = Vec::with_capacity(ids.len());
        let mut all_valid = true;
        for &id in ids {
            let (Some(&v), Some(&ok)) = (self.values.get(id), self.valid.get(id)) else {
                return Err(missing(id));
            };
            values.push(if ok { v } else { V::default() });
            all_valid &= ok;
        }
        let nulls = match all_valid {
            true => None,
            false => Some(NullBuffer::from_iter(
                ids.iter()
                    .map(|&id| self.valid.get(id).copied().unwrap_or(false)),
            )),
        };
        Ok((values, nulls))
    }

    fn rollback(&mut self) {
        for (id, v, ok) in self.undo.drain(..).rev() {
            if let (Some(cur), Some(valid)) = (self.values.get_mut(id), self.valid.get_mut(id)) {
                *cur = v;
                *valid = ok;
            }
        }
    }

    fn bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<V>() + self.valid.capacity()
    }
}

/// Values of a primitive type, unboxed.
struct Primitive<T: ArrowPrimitiveType> {
    data_type: DataType,
    merge: Merge,
    slots: Slots<T::Native>,
}

/// `cur` after merging `v` into it with `merge`.
fn merged<V: ArrowNativeTypeOp>(merge: Merge, cur: &mut V, v: V) {
    match merge {
        Merge::Sum => *cur = cur.add_wrapping(v),
        Merge::Min | Merge::And => {
            if matches!(v.partial_cmp(cur), Some(Ordering::Less) | None) {
                *cur = v
            }
        }
        Merge::Max | Merge::Or => {
            if matches!(v.partial_cmp(cur), Some(Ordering::Greater) | None) {
                *cur = v
            }
        }
    }
}

impl<T: ArrowPrimitiveType> StateColumn for Primitive<T> {
    fn grow(&mut self, len: usize) {
        self.slots.grow(len);
    }

    fn clear(&mut self, ids: &[usize]) -> Result<()> {
        self.slots.clear(ids)
    }

    fn remember(&mut self, ids: &[usize]) -> Result<()> {
        self.slots.remember(ids)
    }

    fn merge(&mut self, partial: &dyn Array, ids: &[usize]) -> Result<()> {
        let partial = partial
            .as_primitive_opt::<T>()
            .ok_or_else(|| internal("a partial column", "is not of the state's type"))?;
        // one monomorphic loop per merge function
        macro_rules! each {
            ($m:expr) => {{
                let op = |cur: &mut T::Native, v: T::Native| merged($m, cur, v);
                match partial.null_count() {
                    0 => self.slots.merge_all(ids, partial.values(), op),
                    _ => self.slots.merge(
                        ids,
                        |r: usize| partial.is_valid(r).then(|| partial.value(r)),
                        op,
                    ),
                }
            }};
        }
        match self.merge {
            Merge::Sum => each!(Merge::Sum),
            Merge::Min => each!(Merge::Min),
            Merge::And => each!(Merge::And),
            Merge::Max => each!(Merge::Max),
            Merge::Or => each!(Merge::Or),
        }
    }

    fn take(&self, ids: &[usize]) -> Result<ArrayRef> {
        let (values, nulls) = self.slots.take(ids)?;
        let array = PrimitiveArray::<T>::try_new(ScalarBuffer::from(values), nulls)
            .map_err(|e| internal("taking values", e))?
            .with_data_type(self.data_type.clone());
        Ok(Arc::new(array))
    }

    fn rollback(&mut self) {
        self.slots.rollback();
    }

    fn forget(&mut self) {
        self.slots.undo.clear();
    }

    fn bytes(&self) -> usize {
        self.slots.bytes()
    }
}

/// Booleans (`bool_and`, `bool_or`, and `min` / `max` of booleans: false < true).
struct Bool {
    and: bool,
    slots: Slots<bool>,
}

impl StateColumn for Bool {
    fn grow(&mut self, len: usize) {
        self.slots.grow(len);
    }

    fn clear(&mut self, ids: &[usize]) -> Result<()> {
        self.slots.clear(ids)
    }

    fn remember(&mut self, ids: &[usize]) -> Result<()> {
        self.slots.remember(ids)
    }

    fn merge(&mut self, partial: &dyn Array, ids: &[usize]) -> Result<()> {
        let partial = partial
            .as_boolean_opt()
            .ok_or_else(|| internal("a partial column", "is not boolean"))?;
        let value = |r: usize| partial.is_valid(r).then(|| partial.value(r));
        match self.and {
            true => self.slots.merge(ids, value, |cur, v| *cur = *cur && v),
            false => self.slots.merge(ids, value, |cur, v| *cur = *cur || v),
        }
    }

    fn take(&self, ids: &[usize]) -> Result<ArrayRef> {
        let (values, nulls) = self.slots.take(ids)?;
        Ok(Arc::new(BooleanArray::new(
            BooleanBuffer::from(values),
            nulls,
        )))
    }

    fn rollback(&mut self) {
        self.slots.rollback();
    }

    fn forget(&mut self) {
        self.slots.undo.clear();
    }

    fn bytes(&self) -> usize {
        self.slots.bytes()
    }
}

/// Values of any other type (`min` / `max` of strings), as scalars.
struct Scalars {
    data_type: DataType,
    merge: Merge,
    null: ScalarValue,
    values: Vec<ScalarValue>,
    undo: Vec<(usize, ScalarValue)>,
}

impl Scalars {
    fn new(data_type: DataType, merge: Merge) -> Self {
        Scalars {
            null: ScalarValue::try_from(&data_type).unwrap_or(ScalarValue::Null),
            data_type,
            merge,
            values: Vec::new(),
            undo: Vec::new(),
        }
    }
}

impl StateColumn for Scalars {
    fn grow(&mut self, len: usize) {
        self.values.resize(len, self.null.clone());
    }

    fn clear(&mut self, ids: &[usize]) -> Result<()> {
        for &id in ids {
            *self.values.get_mut(id).ok_or_else(|| missing(id))? = self.null.clone();
        }
        Ok(())
    }

    fn remember(&mut self, ids: &[usize]) -> Result<()> {
        for &id in ids {
            let v = self.values.get(id).ok_or_else(|| missing(id))?.clone();
            self.undo.push((id, v));
        }
        Ok(())
    }

    fn merge(&mut self, partial: &dyn Array, ids: &[usize]) -> Result<()> {
        for (r, &id) in ids.iter().enumerate() {
            if partial.is_null(r) {
                continue;
            }
            let v = ScalarValue::try_from_array(partial, r)
                .map_err(|e| internal("reading a partial value", e))?;
            let cur = self.values.get_mut(id).ok_or_else(|| missing(id))?;
            if cur.is_null() {
                *cur = v;
                continue;
            }
            let replace = match self.merge {
                Merge::Min | Merge::And => {
                    matches!(v.partial_cmp(cur), Some(Ordering::Less) | None)
                }
                Merge::Max | Merge::Or => {
                    matches!(v.partial_cmp(cur), Some(Ordering::Greater) | None)
                }
                Merge::Sum => {
                    *cur = cur
                        .add(&v)
                        .map_err(|e| internal("adding partial sums", e))?;
                    false
                }
            };
            if replace {
                *cur = v;
            }
        }
        Ok(())
    }

    fn take(&self, ids: &[usize]) -> Result<ArrayRef> {
        if ids.is_empty() {
            return Ok(new_empty_array(&self.data_type));
        }
        let values = ids
            .iter()
            .map(|&id| self.values.get(id).cloned().ok_or_else(|| missing(id)))
            .collect::<Result<Vec<_>>>()?;
        ScalarValue::iter_to_array(values).map_err(|e| internal("taking values", e))
    }

    fn rollback(&mut self) {
        for (id, v) in self.undo.drain(..).rev() {
            if let Some(cur) = self.values.get_mut(id) {
                *cur = v;
            }
        }
    }

    fn forget(&mut self) {
        self.undo.clear();
    }

    fn bytes(&self) -> usize {
        self.values
            .iter()
            .map(|v| v.size())
            .sum::<usize>()
            .max(self.values.capacity() * std::mem::size_of::<ScalarValue>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int64Array, StringArray};

    #[test]
    fn sums_wrap_min_and_max_follow_datafusion_and_nulls_leave_values() {
        let mut sum = column(&DataType::Int64, Merge::Sum);
        sum.grow(2);
        let p = Int64Array::from(vec![Some(i64::MAX), Some(1), None, Some(5)]);
        sum.merge(&p, &[0, 0, 1, 1]).unwrap();
        let got = sum.take(&[0, 1]).unwrap();
        assert_eq!(
            got.as_primitive::<arrow_array::types::Int64Type>(),
            &Int64Array::from(vec![i64::MIN, 5])
        );
        // a NaN replaces a min, as DataFusion's min does
        let mut min = column(&DataType::Float64, Merge::Min);
        min.grow(1);
        min.merge(&Float64Array::from(vec![2.0, 1.0, f64::NAN]), &[0, 0, 0])
            .unwrap();
        let got = min.take(&[0]).unwrap();
        assert!(got
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(0)
            .is_nan());
        // bool_and over a null and a value is the value
        let mut and = column(&DataType::Boolean, Merge::And);
        and.grow(2);
        let p = BooleanArray::from(vec![Some(true), Some(false), None, Some(true)]);
        and.merge(&p, &[0, 0, 1, 1]).unwrap();
        assert_eq!(
            and.take(&[0, 1]).unwrap().as_boolean(),
            &BooleanArray::from(vec![false, true])
        );
        // a group never given a value is null
        let mut max = column(&DataType::Utf8, Merge::Max);
        max.grow(2);
        max.merge(&StringArray::from(vec!["b", "a", "c"]), &[0, 0, 0])
            .unwrap();
        assert_eq!(
            max.take(&[0, 1]).unwrap().as_string::<i32>(),
            &StringArray::from(vec![Some("c"), None])
        );
    }

    #[test]
    fn a_rolled_back_batch_restores_the_values_it_overwrote() {
        for dt in [DataType::Int64, DataType::Utf8] {
            let mut c = column(&dt, Merge::Max);
            c.grow(1);
            let (one, two): (ArrayRef, ArrayRef) = match dt {
                DataType::Int64 => (
                    Arc::new(Int64Array::from(vec![1])),
                    Arc::new(Int64Array::from(vec![2])),
                ),
                _ => (
                    Arc::new(StringArray::from(vec!["1"])),
                    Arc::new(StringArray::from(vec!["2"])),
                ),
            };
            c.merge(one.as_ref(), &[0]).unwrap();
            c.forget();
            c.remember(&[0]).unwrap();
            c.merge(two.as_ref(), &[0]).unwrap();
            assert_eq!(c.take(&[0]).unwrap().as_ref(), two.as_ref());
            c.rollback();
            assert_eq!(c.take(&[0]).unwrap().as_ref(), one.as_ref());
        }
    }
}
