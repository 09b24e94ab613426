//! [`KeyIndex`]: where each group of an aggregation's state sits, by its grouping key in Arrow's
//! row format, so a batch merges only the groups it touched instead of regrouping the whole
//! state: the batch's keys are looked up, the held rows of those keys are merged with the
//! batch's partials, and the merged rows are placed back at their positions (new groups
//! appended) with one `interleave` per column. The state's row order is stable; a batch's new
//! groups and evictions become the index's only when the batch's state is kept
//! ([`KeyIndex::commit`]).

use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use datafusion::arrow::row::{RowConverter, SortField};
// DataFusion's map (hashbrown with foldhash): the default SipHash was a fifth of a batch at
// 1 M groups
use datafusion::common::HashMap;
use tributary_sdk::{Error, ErrorCode, Result};

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] aggregation state index: {what}: {e}"),
    )
}

/// The position of each group of the state, by key.
pub(crate) struct KeyIndex {
    converter: RowConverter,
    at: HashMap<Box<[u8]>, u32>,
    /// Keys the current batch appended (at positions past the kept state).
    appended: Vec<Box<[u8]>>,
    /// The current batch's evictions: the evicted keys and which rows of its state stay.
    evicted: Option<(Vec<Box<[u8]>>, BooleanArray)>,
    /// Bytes of the keys held.
    key_bytes: u64,
}

/// What one entry costs beside its key bytes (the box, the position, the table's slot).
const ENTRY_OVERHEAD: u64 = 28;

impl KeyIndex {
    /// An empty index for a state whose first `keys` columns of `schema` are the key.
    pub(crate) fn new(schema: &SchemaRef, keys: usize) -> Result<Self> {
        let converter = RowConverter::new(
            schema
                .fields()
                .iter()
                .take(keys)
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )
        .map_err(|e| internal("the key columns", e))?;
        Ok(KeyIndex {
            converter,
            at: HashMap::new(),
            appended: Vec::new(),
            evicted: None,
            key_bytes: 0,
        })
    }

    fn encode(&self, keys: &[ArrayRef]) -> Result<datafusion::arrow::row::Rows> {
        self.converter
            .convert_columns(keys)
            .map_err(|e| internal("encoding keys", e))
    }

    /// Indexes `state` anew (after a restore).
    pub(crate) fn rebuild(&mut self, state: &RecordBatch, keys: usize) -> Result<()> {
        self.at.clear();
        self.appended.clear();
        self.evicted = None;
        let rows = self.encode(&state.columns()[..keys])?;
        self.at.reserve(rows.num_rows());
        self.key_bytes = 0;
        for (i, r) in rows.iter().enumerate() {
            self.key_bytes += r.as_ref().len() as u64;
            self.at.insert(r.as_ref().into(), i as u32);
        }
        Ok(())
    }

    /// The held rows (sorted, each once) of the keys in `keys`.
    pub(crate) fn held(&self, keys: &[ArrayRef]) -> Result<Vec<u32>> {
        let rows = self.encode(keys)?;
        let mut held: Vec<u32> = rows
            .iter()
            .filter_map(|r| self.at.get(r.as_ref()).copied())
            .collect();
        held.sort_unstable();
        held.dedup();
        Ok(held)
    }

    /// Where the next state's rows come from: `(0, i)` is row `i` of the state (`held` rows),
    /// `(1, j)` row `j` of `merged` (keyed by `keys`), which replaces its key's held row or is
    /// appended. The appended keys are noted until [`Self::commit`] or [`Self::discard`].
    pub(crate) fn place(&mut self, keys: &[ArrayRef], held: usize) -> Result<Vec<(usize, usize)>> {
        let rows = self.encode(keys)?;
        let mut from: Vec<(usize, usize)> = Vec::with_capacity(held + rows.num_rows());
        from.extend((0..held).map(|i| (0, i)));
        self.at.reserve(rows.num_rows());
        for (j, r) in rows.iter().enumerate() {
            match self.at.get(r.as_ref()) {
                Some(&i) if (i as usize) < held => from[i as usize] = (1, j),
                _ => {
                    let key: Box<[u8]> = r.as_ref().into();
                    let pos = u32::try_from(from.len())
                        .map_err(|_| internal("the state", "holds more than 2^32 groups"))?;
                    self.key_bytes += key.len() as u64;
                    self.at.insert(key.clone(), pos);
                    self.appended.push(key);
                    from.push((1, j));
                }
            }
        }
        Ok(from)
    }

    /// Notes the batch's evictions: the evicted rows' keys and which rows stay.
    pub(crate) fn evicting(&mut self, keys: &[ArrayRef], kept: BooleanArray) -> Result<()> {
        let rows = self.encode(keys)?;
        self.evicted = Some((rows.iter().map(|r| r.as_ref().into()).collect(), kept));
        Ok(())
    }

    /// The batch's state is kept: its evictions leave the index and the rows after them move up.
    pub(crate) fn commit(&mut self) {
        self.appended.clear();
        let Some((gone, kept)) = self.evicted.take() else {
            return;
        };
        for k in &gone {
            if self.at.remove(k).is_some() {
                self.key_bytes -= k.len() as u64;
            }
        }
        let mut moved = Vec::with_capacity(kept.len());
        let mut next = 0u32;
        for k in kept.iter() {
            moved.push(next);
            if k == Some(true) {
                next += 1;
            }
        }
        for pos in self.at.values_mut() {
            if let Some(&p) = moved.get(*pos as usize) {
                *pos = p;
            }
        }
    }

    /// The batch's state is dropped: its appended keys leave the index.
    pub(crate) fn discard(&mut self) {
        for k in self.appended.drain(..) {
            if self.at.remove(&k).is_some() {
                self.key_bytes -= k.len() as u64;
            }
        }
        self.evicted = None;
    }

    /// Bytes the index holds (keys and positions), for `memoryUsedBytes`.
    pub(crate) fn memory(&self) -> u64 {
        self.key_bytes + self.at.len() as u64 * ENTRY_OVERHEAD
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn keys(v: &[i64]) -> Vec<ArrayRef> {
        vec![Arc::new(Int64Array::from(v.to_vec()))]
    }

    #[test]
    fn placed_groups_keep_their_rows_and_evictions_move_the_rest_up_on_commit() {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        let state = RecordBatch::try_new(Arc::clone(&schema), keys(&[10, 20, 30])).unwrap();
        let mut ix = KeyIndex::new(&schema, 1).unwrap();
        ix.rebuild(&state, 1).unwrap();
        assert_eq!(ix.held(&keys(&[30, 40, 30, 10])).unwrap(), vec![0, 2]);
        // merged groups 30 (held at 2) and 40 (new, appended at 3)
        assert_eq!(
            ix.place(&keys(&[30, 40]), 3).unwrap(),
            vec![(0, 0), (0, 1), (1, 0), (1, 1)]
        );
        // a dropped batch forgets 40
        ix.discard();
        assert_eq!(ix.held(&keys(&[40])).unwrap(), Vec::<u32>::new());
        // again, kept: 40 at 3; then 10 and 30 evicted → 20 at 0, 40 at 1
        ix.place(&keys(&[30, 40]), 3).unwrap();
        let kept = BooleanArray::from(vec![false, true, false, true]);
        ix.evicting(&keys(&[10, 30]), kept).unwrap();
        ix.commit();
        assert_eq!(ix.held(&keys(&[20])).unwrap(), vec![0]);
        assert_eq!(ix.held(&keys(&[40])).unwrap(), vec![1]);
        assert_eq!(ix.held(&keys(&[10, 30])).unwrap(), Vec::<u32>::new());
    }
}
