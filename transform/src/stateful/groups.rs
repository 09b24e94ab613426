//! [`GroupTable`]: an aggregation's groups held in memory across batches, merged in place.
//!
//! A batch's partial values (one row per group of each part) are merged into the table as
//! DataFusion's own hash aggregation merges a batch into its groups: the grouping keys are
//! interned by DataFusion's [`GroupValues`] (the same specialised hash tables its `GROUP BY`
//! uses), which gives each key a group id, and each partial column is merged into a plain
//! vector indexed by group id ([`columns`]). So a batch costs what its own groups cost, never a
//! pass over the whole state; only a snapshot, `complete` mode and `append` mode's finalised
//! groups read groups the batch did not touch.
//!
//! Each group's key is kept once, in the chunks of key columns the batches that created groups
//! added, to emit and snapshot groups the batch did not bring. A group that leaves the state
//! (evicted by the watermark, or created by a batch whose state is dropped) keeps its id and is
//! marked gone; it is held again if its key comes back. When gone groups outnumber held ones,
//! the table is rebuilt from the held ones ([`GroupTable::commit`]).
//!
//! Everything a batch changes is undone by [`GroupTable::rollback`] until
//! [`GroupTable::commit`]: a batch whose state is not saved leaves the table as it found it.

pub(crate) mod columns;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{Schema, SchemaRef};
use datafusion::physical_plan::aggregates::group_values::{new_group_values, GroupValues};
use datafusion::physical_plan::aggregates::order::GroupOrdering;
use tributary_sdk::{Error, ErrorCode, Result};

use super::rewrite::Expiry;
use columns::{Merge, StateColumn};

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] aggregation groups: {what}: {e}"),
    )
}

/// Key chunks are concatenated into one when there are more than this many.
const MAX_KEY_CHUNKS: usize = 64;

/// The table is rebuilt at a commit when this many groups or more are gone and they
/// outnumber the held ones.
const MIN_GONE_TO_REBUILD: usize = 4096;

/// What a batch did to a group, undone in reverse order by a rollback.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The group came (new, or held again after it left).
    Came(usize),
    /// The group left (evicted).
    Left(usize),
}

/// The groups a batch's partials touched.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    /// Group ids, each once, in the order the batch's rows first name them.
    pub(crate) ids: Vec<usize>,
    /// The part of the batch's partials and the row in it that first named each.
    pub(crate) rows: Vec<(usize, usize)>,
}

/// An aggregation's groups in memory (see the module docs).
pub(crate) struct GroupTable {
    state_schema: SchemaRef,
    n_keys: usize,
    merges: Vec<Merge>,
    /// The key → group id table (in a mutex only to be `Sync`; reached through `&mut`).
    table: std::sync::Mutex<Box<dyn GroupValues>>,
    /// Every group's key: `(first id, key columns)`, ids in order.
    keys: Vec<(usize, Vec<ArrayRef>)>,
    columns: Vec<Box<dyn StateColumn>>,
    held: Vec<bool>,
    n_held: usize,
    /// Each group's expiry time (epoch ms; none: never final) under a watermark that finalises
    /// groups, and a lower bound of the held groups' ones.
    expiry: Option<(Expiry, Vec<Option<i64>>, i64)>,
    /// The batch each group was last touched in (`generation`), to name each once.
    stamp: Vec<u32>,
    generation: u32,
    undo: Vec<Step>,
}

impl std::fmt::Debug for GroupTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupTable")
            .field("held", &self.n_held)
            .field("ids", &self.held.len())
            .finish()
    }
}

impl GroupTable {
    /// An empty table for a state of `state_schema` (its first `n_keys` columns the key, one
    /// partial column per entry of `merges` after them).
    pub(crate) fn new(
        state_schema: &SchemaRef,
        n_keys: usize,
        merges: Vec<Merge>,
        expiry: Option<Expiry>,
    ) -> Result<Self> {
        let key_schema = Arc::new(Schema::new(
            state_schema
                .fields()
                .iter()
                .take(n_keys)
                .cloned()
                .collect::<Vec<_>>(),
        ));
        if state_schema.fields().len() != n_keys + merges.len() {
            return Err(internal(
                "the state's columns",
                "do not match the partial values",
            ));
        }
        let columns = state_schema
            .fields()
            .iter()
            .skip(n_keys)
            .zip(&merges)
            .map(|(f, &m)| columns::column(f.data_type(), m))
            .collect();
        Ok(GroupTable {
            table: std::sync::Mutex::new(
                new_group_values(key_schema, &GroupOrdering::None)
                    .map_err(|e| internal("the key table", e))?,
            ),
            state_schema: Arc::clone(state_schema),
            n_keys,
            merges,
            keys: Vec::new(),
            columns,
            held: Vec::new(),
            n_held: 0,
            expiry: expiry.map(|e| (e, Vec::new(), i64::MAX)),
            stamp: Vec::new(),
            generation: 0,
            undo: Vec::new(),
        })
    }

    /// Groups held.
    pub(crate) fn len(&self) -> usize {
        self.n_held
    }

    /// Replaces the table with the groups of `state` (a restore).
    pub(crate) fn rebuild(&mut self, state: &RecordBatch) -> Result<()> {
        let expiry = self.expiry.as_ref().map(|(e, _, _)| *e);
        *self = GroupTable::new(&self.state_schema, self.n_keys, self.merges.clone(), expiry)?;
        let touched = self.merge(std::slice::from_ref(state))?;
        if touched.ids.len() != state.num_rows() {
            return Err(internal("restoring", "the state holds a key twice"));
        }
        self.commit();
        Ok(())
    }

    /// Merges a batch's partial values (`parts`, rows of the state's schema; a key may come
    /// more than once, in one part or several) into the table: the groups touched. The parts
    /// are merged one after the other, not concatenated first.
    pub(crate) fn merge(&mut self, parts: &[RecordBatch]) -> Result<Touched> {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
        let mut touched = Touched::default();
        let mut ids = Vec::new();
        for (part, delta) in parts.iter().enumerate() {
            self.merge_part(part, delta, &mut ids, &mut touched)?;
        }
        Ok(touched)
    }

    /// Merges part `part` of the batch into the table, its group ids left in `ids`, the groups
    /// it touched first added to `touched`.
    fn merge_part(
        &mut self,
        part: usize,
        delta: &RecordBatch,
        ids: &mut Vec<usize>,
        touched: &mut Touched,
    ) -> Result<()> {
        let before = self.held.len();
        ids.clear();
        let table = self.table.get_mut().unwrap_or_else(|p| p.into_inner());
        table
            .intern(&delta.columns()[..self.n_keys], ids)
            .map_err(|e| internal("interning keys", e))?;
        let after = table.len();
        if after > u32::MAX as usize {
            return Err(internal("the state", "holds more than 2^32 groups"));
        }
        self.held.resize(after, false);
        self.stamp.resize(after, 0);
        for c in &mut self.columns {
            c.grow(after);
        }
        let expiry = match &self.expiry {
            Some((e, _, _)) => Some(e.millis(delta)?),
            None => None,
        };
        if let Some((_, times, _)) = &mut self.expiry {
            times.resize(after, None);
        }
        let mut new_rows = Vec::new();
        // groups held before the batch (their values are noted for a rollback), and groups
        // new or held again after they left (their values start afresh)
        let (mut held, mut came) = (Vec::new(), Vec::new());
        for (r, &id) in ids.iter().enumerate() {
            if self.stamp[id] == self.generation {
                continue;
            }
            self.stamp[id] = self.generation;
            touched.ids.push(id);
            touched.rows.push((part, r));
            if id >= before {
                new_rows.push(r as u32);
            }
            if self.held[id] {
                held.push(id);
                continue;
            }
            came.push(id);
            self.held[id] = true;
            self.n_held += 1;
            self.undo.push(Step::Came(id));
            if let (Some((_, times, low)), Some(e)) = (&mut self.expiry, &expiry) {
                let t = e.is_valid(r).then(|| e.value(r));
                times[id] = t;
                if let Some(t) = t {
                    *low = (*low).min(t);
                }
            }
        }
        for c in &mut self.columns {
            c.remember(&held)?;
            c.clear(&came)?;
        }
        if !new_rows.is_empty() {
            let rows = UInt32Array::from(new_rows);
            let keys = delta.columns()[..self.n_keys]
                .iter()
                .map(|c| datafusion::arrow::compute::take(c, &rows, None))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| internal("keeping the new keys", e))?;
            self.keys.push((before, keys));
        }
        for (j, c) in self.columns.iter_mut().enumerate() {
            c.merge(delta.column(self.n_keys + j).as_ref(), ids)?;
        }
        Ok(())
    }

    /// The held groups final under watermark `wm` (their expiry time ≤ `wm`), in id order.
    pub(crate) fn expired(&mut self, wm: i64) -> Vec<usize> {
        let Some((_, times, low)) = &mut self.expiry else {
            return Vec::new();
        };
        if wm < *low {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut left = i64::MAX;
        for (id, t) in times.iter().enumerate() {
            if let (true, Some(t)) = (self.held[id], *t) {
                match t <= wm {
                    true => out.push(id),
                    false => left = left.min(t),
                }
            }
        }
        *low = left;
        out
    }

    /// Removes groups `ids` (held) from the state.
    pub(crate) fn evict(&mut self, ids: &[usize]) {
        for &id in ids {
            if let Some(h) = self.held.get_mut(id) {
                if *h {
                    *h = false;
                    self.n_held -= 1;
                    self.undo.push(Step::Left(id));
                }
            }
        }
    }

    /// Empty key columns.
    fn no_keys(&self) -> Vec<ArrayRef> {
        self.state_schema
            .fields()
            .iter()
            .take(self.n_keys)
            .map(|f| arrow_array::new_empty_array(f.data_type()))
            .collect()
    }

    /// The key columns of groups `ids`, in order.
    pub(crate) fn keys(&self, ids: &[usize]) -> Result<Vec<ArrayRef>> {
        if let [(0, only)] = self.keys.as_slice() {
            let at = UInt32Array::from_iter_values(ids.iter().map(|&i| i as u32));
            return only
                .iter()
                .map(|c| datafusion::arrow::compute::take(c, &at, None))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| internal("taking keys", e));
        }
        if self.keys.is_empty() {
            return Ok(self.no_keys());
        }
        let mut at = Vec::with_capacity(ids.len());
        for &id in ids {
            let chunk = self.keys.partition_point(|(first, _)| *first <= id);
            let chunk = chunk
                .checked_sub(1)
                .ok_or_else(|| internal("group", format!("{id} has no key")))?;
            at.push((chunk, id - self.keys[chunk].0));
        }
        (0..self.n_keys)
            .map(|c| {
                let parts: Vec<&dyn Array> =
                    self.keys.iter().map(|(_, cols)| cols[c].as_ref()).collect();
                datafusion::arrow::compute::interleave(&parts, &at)
                    .map_err(|e| internal("taking keys", e))
            })
            .collect()
    }

    /// Groups `ids` as rows of the state's schema, in order.
    pub(crate) fn rows(&self, ids: &[usize]) -> Result<RecordBatch> {
        let mut columns = self.keys(ids)?;
        for c in &self.columns {
            columns.push(c.take(ids)?);
        }
        RecordBatch::try_new(Arc::clone(&self.state_schema), columns)
            .map_err(|e| internal("the groups' rows", e))
    }

    /// Groups `ids` with the partial values they have now, keyed by the batch's own rows
    /// `rows` of `parts` (the keys the batch brought).
    pub(crate) fn touched_rows(&self, parts: &[RecordBatch], t: &Touched) -> Result<RecordBatch> {
        let mut columns = match parts {
            [] => Ok(self.no_keys()),
            [delta] => {
                let at = UInt32Array::from_iter_values(t.rows.iter().map(|&(_, r)| r as u32));
                delta.columns()[..self.n_keys]
                    .iter()
                    .map(|c| datafusion::arrow::compute::take(c, &at, None))
                    .collect::<std::result::Result<Vec<_>, _>>()
            }
            _ => (0..self.n_keys)
                .map(|c| {
                    let keys: Vec<&dyn Array> =
                        parts.iter().map(|p| p.column(c).as_ref()).collect();
                    datafusion::arrow::compute::interleave(&keys, &t.rows)
                })
                .collect::<std::result::Result<Vec<_>, _>>(),
        }
        .map_err(|e| internal("the touched keys", e))?;
        for c in &self.columns {
            columns.push(c.take(&t.ids)?);
        }
        RecordBatch::try_new(Arc::clone(&self.state_schema), columns)
            .map_err(|e| internal("the touched groups", e))
    }

    /// The held groups' ids, in order.
    pub(crate) fn held_ids(&self) -> Vec<usize> {
        (0..self.held.len()).filter(|&i| self.held[i]).collect()
    }

    /// Every held group, in id order.
    pub(crate) fn all(&self) -> Result<RecordBatch> {
        self.rows(&self.held_ids())
    }

    /// Undoes everything since the last commit.
    pub(crate) fn rollback(&mut self) {
        for step in self.undo.drain(..).rev() {
            match step {
                Step::Came(id) => {
                    self.held[id] = false;
                    self.n_held -= 1;
                }
                Step::Left(id) => {
                    self.held[id] = true;
                    self.n_held += 1;
                }
            }
        }
        for c in &mut self.columns {
            c.rollback();
        }
        if let Some((_, _, low)) = &mut self.expiry {
            // times of groups held again are still there: the bound may only have dropped
            *low = i64::MIN;
        }
    }

    /// Keeps everything since the last commit; rebuilds the table when gone groups outnumber
    /// held ones, and joins the key chunks when there are many.
    pub(crate) fn commit(&mut self) {
        self.undo.clear();
        for c in &mut self.columns {
            c.forget();
        }
        let gone = self.held.len() - self.n_held;
        if gone >= MIN_GONE_TO_REBUILD && gone > self.n_held {
            if let Err(e) = self.compact() {
                // the table stays as it is, correct but larger
                tracing::warn!("[transform] aggregation groups not compacted: {e}");
            }
        } else if self.keys.len() > MAX_KEY_CHUNKS {
            if let Err(e) = self.join_keys() {
                tracing::warn!("[transform] aggregation keys not joined: {e}");
            }
        }
    }

    /// Rebuilds the table from the held groups (expiry times are read from the keys again).
    fn compact(&mut self) -> Result<()> {
        let state = self.all()?;
        self.rebuild(&state)
    }

    fn join_keys(&mut self) -> Result<()> {
        let joined = (0..self.n_keys)
            .map(|c| {
                let parts: Vec<&dyn Array> =
                    self.keys.iter().map(|(_, cols)| cols[c].as_ref()).collect();
                datafusion::arrow::compute::concat(&parts)
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| internal("joining keys", e))?;
        self.keys = vec![(0, joined)];
        Ok(())
    }

    /// Bytes held: the key table, the keys, the partial values and the flags.
    pub(crate) fn memory(&self) -> u64 {
        let keys: usize = self
            .keys
            .iter()
            .flat_map(|(_, cols)| cols.iter().map(|c| c.get_array_memory_size()))
            .sum();
        let columns: usize = self.columns.iter().map(|c| c.bytes()).sum();
        let expiry = self
            .expiry
            .as_ref()
            .map_or(0, |(_, t, _)| t.capacity() * 16);
        (self.table.lock().map_or(0, |t| t.size())
            + keys
            + columns
            + expiry
            + self.held.capacity()
            + self.stamp.capacity() * 4) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("n", DataType::Int64, true),
        ]))
    }

    fn rows(k: &[i64], n: &[i64]) -> RecordBatch {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(k.to_vec())),
                Arc::new(Int64Array::from(n.to_vec())),
            ],
        )
        .unwrap()
    }

    fn values(b: &RecordBatch) -> Vec<(i64, i64)> {
        let k = b.column(0).as_primitive::<Int64Type>();
        let n = b.column(1).as_primitive::<Int64Type>();
        (0..b.num_rows())
            .map(|i| (k.value(i), n.value(i)))
            .collect()
    }

    #[test]
    fn batches_merge_in_place_roll_back_and_evicted_keys_come_back() {
        let mut t = GroupTable::new(&schema(), 1, vec![Merge::Sum], None).unwrap();
        t.rebuild(&rows(&[10, 20], &[1, 2])).unwrap();
        // a key twice in one part, and again in another part, is touched once; a key new in
        // the second part is kept with the others
        let delta = [
            rows(&[20, 30, 20], &[5, 7, 1]),
            rows(&[40, 30, 20], &[3, 1, 1]),
        ];
        let touched = t.merge(&delta).unwrap();
        assert_eq!(touched.rows, vec![(0, 0), (0, 1), (1, 0)]);
        assert_eq!(
            values(&t.touched_rows(&delta, &touched).unwrap()),
            vec![(20, 9), (30, 8), (40, 3)]
        );
        // dropped: as before
        t.rollback();
        assert_eq!(t.len(), 2);
        assert_eq!(values(&t.all().unwrap()), vec![(10, 1), (20, 2)]);
        // no part (a batch without rows) touches nothing
        let touched = t.merge(&[]).unwrap();
        assert!(touched.ids.is_empty());
        assert_eq!(t.touched_rows(&[], &touched).unwrap().num_rows(), 0);
        // one part
        let delta = [rows(&[20, 30, 20], &[5, 7, 1])];
        let touched = t.merge(&delta).unwrap();
        assert_eq!(touched.rows, vec![(0, 0), (0, 1)]);
        assert_eq!(
            values(&t.touched_rows(&delta, &touched).unwrap()),
            vec![(20, 8), (30, 7)]
        );
        // dropped: as before
        t.rollback();
        assert_eq!(t.len(), 2);
        assert_eq!(values(&t.all().unwrap()), vec![(10, 1), (20, 2)]);
        // kept, then 10 evicted and rolled back, then evicted and kept
        t.merge(&delta).unwrap();
        t.commit();
        t.evict(&[0]);
        t.rollback();
        assert_eq!(values(&t.all().unwrap()), vec![(10, 1), (20, 8), (30, 7)]);
        t.evict(&[0]);
        t.commit();
        assert_eq!(values(&t.all().unwrap()), vec![(20, 8), (30, 7)]);
        // an evicted key that comes back starts afresh
        let again = [rows(&[10], &[4])];
        let touched = t.merge(&again).unwrap();
        assert_eq!(
            values(&t.touched_rows(&again, &touched).unwrap()),
            vec![(10, 4)]
        );
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn many_gone_groups_rebuild_the_table_and_keys_of_many_batches_are_joined() {
        let mut t = GroupTable::new(&schema(), 1, vec![Merge::Sum], None).unwrap();
        for b in 0..100i64 {
            let k: Vec<i64> = (b * 100..b * 100 + 100).collect();
            t.merge(&[rows(&k, &vec![1; 100])]).unwrap();
            t.commit();
        }
        assert!(t.keys.len() <= MAX_KEY_CHUNKS + 1);
        let gone: Vec<usize> = (0..9_000).collect();
        t.evict(&gone);
        t.commit();
        assert_eq!(t.held.len(), 1_000, "rebuilt from the held groups");
        let all = t.all().unwrap();
        assert_eq!(values(&all).first(), Some(&(9_000, 1)));
        let again = [rows(&[9_999], &[1])];
        let touched = t.merge(&again).unwrap();
        assert_eq!(
            values(&t.touched_rows(&again, &touched).unwrap()),
            vec![(9_999, 2)]
        );
    }
}
