//! [`SpilledGroups`]: an aggregation's groups held on local disk in an embedded LSM tree
//! ([fjall](https://docs.rs/fjall)) instead of in memory, for state larger than memory
//! (`[transform] stateStore.providerClass = "disk"`, Spark's RocksDB state store provider in
//! spirit). Why fjall, measured against RocksDB and redb: `tools/statestore-compare`.
//!
//! The store is a working copy; the checkpoint's files ([`super::store`]) stay the truth.
//! Restoring rebuilds it from the version's snapshot and deltas, chunk by chunk; saving applies
//! the batch's changes to it without an fsync (the delta written after it is what is durable);
//! a snapshot is written from a consistent view of it (a fjall snapshot), in chunks, on the
//! commit path or in the background. What it holds in memory is fjall's block cache and write
//! buffers, whatever the number of groups.
//!
//! Keys are the grouping key in Arrow's row format, after the group's expiry (the window's
//! end, or the event-time key) in 9 order-preserving bytes when the watermark finalises
//! groups, so the groups a watermark finalised are one range scan from the start. Values are
//! the partial aggregate columns in Arrow's row format.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashSet;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, Readable};
use tributary_sdk::{Error, ErrorCode, Result};

use super::rewrite::Expiry;
use super::store::{Replayed, Scan};

/// Rows per chunk when the store is scanned (snapshots, finalised groups, complete mode).
const CHUNK_ROWS: usize = 65_536;
/// fjall's block cache.
const CACHE_BYTES: u64 = 32 << 20;
/// The size at which a memtable is flushed to disk.
const MEMTABLE_BYTES: u64 = 16 << 20;
/// The working copies' directory, under the operator's state directory (not a version file,
/// so the checkpoint's readers pass it by): one directory per open store, named by process.
pub(crate) const LOCAL_DIR: &str = ".spill";

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] spilled aggregation state: {what}: {e}"),
    )
}

pub(crate) fn store_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Checkpoint,
        format!(
            "[transform] the aggregation state's local store at {}: {e}",
            path.display()
        ),
    )
    .with_context("path", path.display())
}

/// A group's expiry as 9 bytes that sort as the times do; a group without one sorts after
/// every time, so no watermark finalises it.
fn expiry_prefix(ms: Option<i64>) -> [u8; 9] {
    let mut b = [1u8; 9];
    if let Some(ms) = ms {
        b[0] = 0;
        b[1..].copy_from_slice(&time_order(ms));
    }
    b
}

/// A time as 8 bytes that sort as the times do.
pub(crate) fn time_order(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

/// Every pair of keyspace `space` of `local` as of now, scanned from a consistent view (later writes
/// do not show) in chunks of [`CHUNK_ROWS`], each made rows by `decode`; one empty chunk when
/// there is nothing (or no store).
pub(crate) fn scan_keyspace(
    local: Option<&Local>,
    space: usize,
    decode: impl Fn(&[(fjall::Slice, fjall::Slice)]) -> Result<RecordBatch> + Send + 'static,
) -> Scan {
    let view = local.map(|l| (l.db.snapshot(), l.spaces[space].clone(), l.path.clone()));
    Box::new(move |each: &mut dyn FnMut(RecordBatch) -> Result<()>| {
        let Some((snapshot, keyspace, path)) = view else {
            return each(decode(&[])?);
        };
        let mut pairs = Vec::with_capacity(CHUNK_ROWS);
        let mut any = false;
        for g in snapshot.iter(&keyspace) {
            pairs.push(g.into_inner().map_err(|e| store_error(&path, e))?);
            if pairs.len() == CHUNK_ROWS {
                each(decode(&pairs)?)?;
                pairs.clear();
                any = true;
            }
        }
        if !pairs.is_empty() || !any {
            each(decode(&pairs)?)?;
        }
        Ok(())
    })
}

/// A working store opened under an operator's state directory, with its keyspaces.
pub(crate) struct Local {
    pub(crate) db: Database,
    pub(crate) spaces: Vec<Keyspace>,
    pub(crate) path: PathBuf,
}

/// Opens an empty working store under the operator's state directory `dir`, in a directory of
/// its own (another instance of the operator in this process may still hold one), after
/// removing what earlier processes left there; it is removed when dropped.
pub(crate) fn open_local(dir: &Path, names: &[&str]) -> Result<Local> {
    let root = dir.join(LOCAL_DIR);
    let ours = format!("{}-", std::process::id());
    if let Ok(entries) = std::fs::read_dir(&root) {
        for e in entries.flatten() {
            if !e.file_name().to_string_lossy().starts_with(&ours) {
                std::fs::remove_dir_all(e.path()).map_err(|err| store_error(&e.path(), err))?;
            }
        }
    }
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = root.join(format!("{ours}{n}"));
    // a killed process of the same id may have left this very directory
    match std::fs::remove_dir_all(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(store_error(&path, e)),
    }
    std::fs::create_dir_all(&path).map_err(|e| store_error(&path, e))?;
    let db = Database::builder(&path)
        .cache_size(CACHE_BYTES)
        .temporary(true)
        .open()
        .map_err(|e| store_error(&path, e))?;
    let mut spaces = Vec::with_capacity(names.len());
    for name in names {
        spaces.push(
            db.keyspace(name, || {
                KeyspaceCreateOptions::default().max_memtable_size(MEMTABLE_BYTES)
            })
            .map_err(|e| store_error(&path, e))?,
        );
    }
    Ok(Local { db, spaces, path })
}

/// A batch's changes, applied when its state is kept.
#[derive(Default)]
struct Staged {
    puts: Vec<(Vec<u8>, Vec<u8>)>,
    removes: Vec<Vec<u8>>,
    rows: u64,
}

/// The groups of an aggregation's state, on disk.
pub(crate) struct SpilledGroups {
    schema: SchemaRef,
    n_keys: usize,
    expiry: Option<Expiry>,
    key_fields: Vec<SortField>,
    value_fields: Vec<SortField>,
    keys: RowConverter,
    values: RowConverter,
    /// The store, one keyspace: the groups.
    open: Option<Local>,
    /// Groups held as of the changes applied last.
    rows: u64,
    staged: Option<Staged>,
}

/// The held groups of a batch's keys.
pub(crate) struct Held {
    /// Their rows, in the state's schema.
    pub(crate) rows: RecordBatch,
    /// Their keys in the store.
    pub(crate) found: HashSet<Vec<u8>>,
}

impl SpilledGroups {
    /// A store for a state of `schema` whose first `n_keys` columns are the grouping key.
    pub(crate) fn new(schema: &SchemaRef, n_keys: usize, expiry: Option<Expiry>) -> Result<Self> {
        let fields: Vec<SortField> = schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let (key_fields, value_fields) = (fields[..n_keys].to_vec(), fields[n_keys..].to_vec());
        Ok(SpilledGroups {
            schema: Arc::clone(schema),
            n_keys,
            expiry,
            keys: RowConverter::new(key_fields.clone()).map_err(|e| internal("the keys", e))?,
            values: RowConverter::new(value_fields.clone())
                .map_err(|e| internal("the values", e))?,
            key_fields,
            value_fields,
            open: None,
            rows: 0,
            staged: None,
        })
    }

    /// Groups held as of the changes applied last.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes of memory the store holds (block cache and write buffers).
    pub(crate) fn memory(&self) -> u64 {
        self.open
            .as_ref()
            .map_or(0, |o| o.db.cache_size() + o.db.write_buffer_size())
    }

    /// Opens an empty store under the operator's state directory `dir` ([`open_local`]).
    pub(crate) fn reset(&mut self, dir: &Path) -> Result<()> {
        self.open = None;
        self.staged = None;
        self.rows = 0;
        self.open = Some(open_local(dir, &["groups"])?);
        Ok(())
    }

    /// Rebuilds the store as of `version` from the checkpoint's files under `dir`.
    pub(crate) fn restore(
        &mut self,
        dir: &Path,
        version: u64,
        signature: &str,
    ) -> Result<super::store::Marks> {
        self.reset(dir)?;
        super::store::replay(dir, version, signature, &mut |part| match part {
            Replayed::Snapshot(rows) => {
                let keys = self.encode_keys(&rows)?;
                let values = self.encode_values(&rows)?;
                let open = self.opened()?;
                let mut batch = open.db.batch();
                for (k, v) in keys.into_iter().zip(values) {
                    batch.insert(&open.spaces[0], k, v);
                }
                batch.commit().map_err(|e| store_error(&open.path, e))?;
                self.rows += rows.num_rows() as u64;
                Ok(())
            }
            Replayed::Delta(rows) => self.apply_delta(&rows),
        })
    }

    /// Applies a delta's rows (upserts and deletions, the later of a key's rows winning).
    fn apply_delta(&mut self, rows: &RecordBatch) -> Result<()> {
        let width = self.schema.fields().len();
        let deleted = rows
            .column(width)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .cloned()
            .ok_or_else(|| internal("a delta's deletion flags", "are not booleans"))?;
        let state =
            RecordBatch::try_new(Arc::clone(&self.schema), rows.columns()[..width].to_vec())
                .map_err(|e| internal("a delta", e))?;
        let keys = self.encode_keys(&state)?;
        let values = self.encode_values(&state)?;
        let mut last = datafusion::common::HashMap::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            last.insert(k.as_slice(), i);
        }
        let open = self.opened()?;
        let mut batch = open.db.batch();
        let mut rows_after = self.rows;
        for (k, &i) in &last {
            let held = open.spaces[0]
                .contains_key(k)
                .map_err(|e| store_error(&open.path, e))?;
            if deleted.value(i) {
                if held {
                    rows_after -= 1;
                }
                batch.remove(&open.spaces[0], k.to_vec());
            } else {
                if !held {
                    rows_after += 1;
                }
                batch.insert(&open.spaces[0], k.to_vec(), values[i].clone());
            }
        }
        batch.commit().map_err(|e| store_error(&open.path, e))?;
        self.rows = rows_after;
        Ok(())
    }

    fn opened(&self) -> Result<&Local> {
        self.open
            .as_ref()
            .ok_or_else(|| internal("the local store", "is not open"))
    }

    /// The store keys of `state`'s rows: expiry, then the grouping key in row format.
    pub(crate) fn encode_keys(&self, state: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        let rows = self
            .keys
            .convert_columns(&state.columns()[..self.n_keys])
            .map_err(|e| internal("encoding keys", e))?;
        let expiry = match self.expiry {
            Some(e) => Some(e.millis(state)?),
            None => None,
        };
        Ok(rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let r = r.as_ref();
                match &expiry {
                    None => r.to_vec(),
                    Some(ms) => {
                        let ms = ms.is_valid(i).then(|| ms.value(i));
                        let mut k = Vec::with_capacity(9 + r.len());
                        k.extend_from_slice(&expiry_prefix(ms));
                        k.extend_from_slice(r);
                        k
                    }
                }
            })
            .collect())
    }

    fn encode_values(&self, state: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        let rows = self
            .values
            .convert_columns(&state.columns()[self.n_keys..])
            .map_err(|e| internal("encoding values", e))?;
        Ok(rows.iter().map(|r| r.as_ref().to_vec()).collect())
    }

    /// The held groups of `delta`'s keys (each key looked up once).
    pub(crate) fn held(&self, delta: &RecordBatch) -> Result<Held> {
        let mut found = HashSet::new();
        let Some(open) = &self.open else {
            return Ok(Held {
                rows: RecordBatch::new_empty(Arc::clone(&self.schema)),
                found,
            });
        };
        let mut keys: Vec<(Vec<u8>, u32)> =
            self.encode_keys(delta)?.into_iter().zip(0u32..).collect();
        // in key order, so consecutive reads meet the same blocks; each key once
        keys.sort_unstable();
        keys.dedup_by(|a, b| a.0 == b.0);
        let mut at = Vec::new();
        let mut values = Vec::new();
        for (k, i) in keys {
            if let Some(v) = open.spaces[0]
                .get(&k)
                .map_err(|e| store_error(&open.path, e))?
            {
                at.push(i);
                values.push(v);
                found.insert(k);
            }
        }
        let mut columns: Vec<ArrayRef> = delta.columns()[..self.n_keys]
            .iter()
            .map(|c| datafusion::arrow::compute::take(c, &UInt32Array::from(at.clone()), None))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| internal("the held keys", e))?;
        columns.extend(decode(&self.values, values.iter().map(|v| v.as_ref()))?);
        let rows = RecordBatch::try_new(Arc::clone(&self.schema), columns)
            .map_err(|e| internal("the held groups", e))?;
        Ok(Held { rows, found })
    }

    /// The held groups the watermark `wm` finalised (expiry ≤ `wm`) but those in `skip`, with
    /// their store keys.
    pub(crate) fn finalised(
        &self,
        wm: i64,
        skip: &HashSet<Vec<u8>>,
    ) -> Result<(RecordBatch, Vec<Vec<u8>>)> {
        let Some(open) = &self.open else {
            return Ok((RecordBatch::new_empty(Arc::clone(&self.schema)), Vec::new()));
        };
        let end = match wm.checked_add(1) {
            Some(next) => expiry_prefix(Some(next)).to_vec(),
            None => vec![1],
        };
        let mut pairs = Vec::new();
        for g in open.spaces[0].range(..end) {
            let (k, v) = g.into_inner().map_err(|e| store_error(&open.path, e))?;
            if !skip.contains(k.as_ref()) {
                pairs.push((k, v));
            }
        }
        let batch = self.decode_pairs(&pairs)?;
        Ok((batch, pairs.into_iter().map(|(k, _)| k.to_vec()).collect()))
    }

    /// Every held group but those in `skip` (complete mode's unchanged groups).
    pub(crate) fn all_but(&self, skip: &HashSet<Vec<u8>>) -> Result<RecordBatch> {
        let Some(open) = &self.open else {
            return Ok(RecordBatch::new_empty(Arc::clone(&self.schema)));
        };
        let mut pairs = Vec::new();
        for g in open.spaces[0].iter() {
            let (k, v) = g.into_inner().map_err(|e| store_error(&open.path, e))?;
            if !skip.contains(k.as_ref()) {
                pairs.push((k, v));
            }
        }
        self.decode_pairs(&pairs)
    }

    fn decode_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(K, V)],
    ) -> Result<RecordBatch> {
        decode_pairs(
            &self.schema,
            &self.keys,
            &self.values,
            self.expiry.is_some(),
            pairs,
        )
    }

    /// Stages a batch's changes: `puts` (store key, row of `state`) upserted, `removes` deleted,
    /// leaving `rows` groups; they reach the store with [`SpilledGroups::apply`].
    pub(crate) fn stage(
        &mut self,
        state: &RecordBatch,
        keys: Vec<Vec<u8>>,
        put: &BooleanArray,
        removes: Vec<Vec<u8>>,
        rows: u64,
    ) -> Result<()> {
        let values = self.encode_values(state)?;
        let puts = keys
            .into_iter()
            .zip(values)
            .enumerate()
            .filter(|(i, _)| put.value(*i))
            .map(|(_, kv)| kv)
            .collect();
        self.staged = Some(Staged {
            puts,
            removes,
            rows,
        });
        Ok(())
    }

    /// Forgets the staged changes (a batch ended but its state was not kept).
    pub(crate) fn discard(&mut self) {
        self.staged = None;
    }

    /// Opens an empty store under `dir` when no restore did.
    pub(crate) fn ensure_open(&mut self, dir: &Path) -> Result<()> {
        match self.open {
            Some(_) => Ok(()),
            None => {
                let staged = self.staged.take();
                self.reset(dir)?;
                self.staged = staged;
                Ok(())
            }
        }
    }

    /// Applies the staged changes to the store; whether there were any.
    pub(crate) fn apply(&mut self) -> Result<bool> {
        let Some(staged) = self.staged.take() else {
            return Ok(false);
        };
        let open = self.opened()?;
        let mut batch = open.db.batch();
        for (k, v) in staged.puts {
            batch.insert(&open.spaces[0], k, v);
        }
        for k in staged.removes {
            batch.remove(&open.spaces[0], k);
        }
        batch.commit().map_err(|e| store_error(&open.path, e))?;
        self.rows = staged.rows;
        Ok(true)
    }

    /// Every held group as of now, scanned in chunks from a consistent view of the store
    /// (later changes do not show), for a snapshot.
    pub(crate) fn scan(&self) -> Result<Scan> {
        let schema = Arc::clone(&self.schema);
        let keys =
            RowConverter::new(self.key_fields.clone()).map_err(|e| internal("the keys", e))?;
        let values =
            RowConverter::new(self.value_fields.clone()).map_err(|e| internal("the values", e))?;
        let prefixed = self.expiry.is_some();
        Ok(scan_keyspace(self.open.as_ref(), 0, move |pairs| {
            decode_pairs(&schema, &keys, &values, prefixed, pairs)
        }))
    }
}

/// Rows of `schema` from store pairs.
fn decode_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    schema: &SchemaRef,
    keys: &RowConverter,
    values: &RowConverter,
    prefixed: bool,
    pairs: &[(K, V)],
) -> Result<RecordBatch> {
    let skip = if prefixed { 9 } else { 0 };
    let mut columns = decode(keys, pairs.iter().map(|(k, _)| &k.as_ref()[skip..]))?;
    columns.extend(decode(values, pairs.iter().map(|(_, v)| v.as_ref()))?);
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| internal("decoding groups", e))
}

/// Columns from rows in `converter`'s format.
fn decode<'a>(
    converter: &RowConverter,
    rows: impl Iterator<Item = &'a [u8]>,
) -> Result<Vec<ArrayRef>> {
    let parser = converter.parser();
    let rows: Vec<&[u8]> = rows.collect();
    converter
        .convert_rows(rows.iter().map(|r| parser.parse(r)))
        .map_err(|e| internal("decoding rows", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_prefixes_sort_as_times_and_nulls_last() {
        let times = [i64::MIN, -1_000, -1, 0, 1, 60_000, i64::MAX];
        let prefixes: Vec<_> = times.iter().map(|&t| expiry_prefix(Some(t))).collect();
        assert!(prefixes.windows(2).all(|w| w[0] < w[1]));
        assert!(prefixes.iter().all(|p| *p < expiry_prefix(None)));
    }
}
