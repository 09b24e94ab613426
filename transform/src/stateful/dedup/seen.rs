//! [`Seen`]: the keys a deduplication has seen, each with the time (epoch microseconds) after
//! which it may be forgotten: in memory, or on local disk in the embedded store
//! (`stateStore.providerClass = "disk"`, [`crate::stateful::spill`]).
//!
//! On disk, one keyspace maps each key (Arrow's row format) to its expiry and a second indexes
//! the keys by expiry, so eviction is one range scan. A batch's new keys are held in memory
//! until the batch ends (a key seen twice in one batch is found there), then written in one
//! batch without an fsync: as for an aggregation, the checkpoint's snapshots and deltas are the
//! truth and the store a working copy rebuilt from them at start.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, BooleanArray, Int64Array, RecordBatch};
use arrow_schema::SchemaRef;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::stateful::spill::{open_local, scan_keyspace, store_error, time_order, Local};
use crate::stateful::store::{Replayed, Scan};

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] deduplication state: {what}: {e}"),
    )
}

fn index_key(expires: i64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + key.len());
    k.extend_from_slice(&time_order(expires));
    k.extend_from_slice(key);
    k
}

fn expiry_of(value: &[u8]) -> Result<i64> {
    let bytes: [u8; 8] = value
        .try_into()
        .map_err(|_| internal("a stored expiry", "is not 8 bytes"))?;
    Ok(i64::from_be_bytes(bytes))
}

/// The keys seen.
pub(crate) enum Seen {
    Memory {
        keys: HashMap<Box<[u8]>, i64>,
        /// The earliest expiry held: eviction scans only when the watermark reaches it.
        earliest: i64,
    },
    Disk(Box<DiskKeys>),
}

/// The keys seen, on disk.
pub(crate) struct DiskKeys {
    local: Option<Local>,
    /// The current batch's new keys, until it ends.
    pending: HashMap<Box<[u8]>, i64>,
    /// Keys written.
    len: u64,
    /// The key columns' types, for decoding keys in a snapshot.
    fields: Vec<SortField>,
}

impl Seen {
    /// An empty set, in memory or (`disk`) on disk, of keys of these types.
    pub(crate) fn new(disk: bool, fields: Vec<SortField>) -> Self {
        match disk {
            false => Seen::Memory {
                keys: HashMap::new(),
                earliest: i64::MAX,
            },
            true => Seen::Disk(Box::new(DiskKeys {
                local: None,
                pending: HashMap::new(),
                len: 0,
                fields,
            })),
        }
    }

    /// Whether `key` was seen.
    pub(crate) fn contains(&self, key: &[u8]) -> Result<bool> {
        match self {
            Seen::Memory { keys, .. } => Ok(keys.contains_key(key)),
            Seen::Disk(d) => {
                if d.pending.contains_key(key) {
                    return Ok(true);
                }
                match &d.local {
                    None => Ok(false),
                    Some(l) => l.spaces[0]
                        .contains_key(key)
                        .map_err(|e| store_error(&l.path, e)),
                }
            }
        }
    }

    /// Notes a new key.
    pub(crate) fn insert(&mut self, key: &[u8], expires: i64) {
        match self {
            Seen::Memory { keys, earliest } => {
                *earliest = (*earliest).min(expires);
                keys.insert(key.into(), expires);
            }
            Seen::Disk(d) => {
                d.pending.insert(key.into(), expires);
            }
        }
    }

    /// A held key's expiry.
    pub(crate) fn expiry(&self, key: &[u8]) -> Result<Option<i64>> {
        match self {
            Seen::Memory { keys, .. } => Ok(keys.get(key).copied()),
            Seen::Disk(d) => {
                if let Some(e) = d.pending.get(key) {
                    return Ok(Some(*e));
                }
                let Some(l) = &d.local else { return Ok(None) };
                l.spaces[0]
                    .get(key)
                    .map_err(|e| store_error(&l.path, e))?
                    .map(|v| expiry_of(&v))
                    .transpose()
            }
        }
    }

    /// Keys held.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Seen::Memory { keys, .. } => keys.len() as u64,
            Seen::Disk(d) => d.len + d.pending.len() as u64,
        }
    }

    /// Bytes of memory held: the keys (row format) with their expiry, or the store's caches and
    /// the batch's new keys.
    pub(crate) fn memory(&self) -> u64 {
        let entries = |m: &HashMap<Box<[u8]>, i64>| -> u64 {
            m.keys().map(|k| (k.len() + 8 + 16) as u64).sum()
        };
        match self {
            Seen::Memory { keys, .. } => entries(keys),
            Seen::Disk(d) => {
                entries(&d.pending)
                    + d.local
                        .as_ref()
                        .map_or(0, |l| l.db.cache_size() + l.db.write_buffer_size())
            }
        }
    }

    /// Forgets every key (a restore without state); on disk, opens an empty store under `dir`.
    pub(crate) fn clear(&mut self, dir: &Path) -> Result<()> {
        match self {
            Seen::Memory { keys, earliest } => {
                keys.clear();
                *earliest = i64::MAX;
            }
            Seen::Disk(d) => {
                d.local = None;
                d.pending.clear();
                d.len = 0;
                d.local = Some(open_local(dir, &["keys", "expiry"])?);
            }
        }
        Ok(())
    }

    /// Writes the batch's new keys to disk (nothing in memory).
    pub(crate) fn flush(&mut self, dir: Option<&Path>) -> Result<()> {
        let Seen::Disk(d) = self else { return Ok(()) };
        if d.pending.is_empty() {
            return Ok(());
        }
        if d.local.is_none() {
            // not restored yet: the keys wait in memory for a directory
            let Some(dir) = dir else { return Ok(()) };
            d.local = Some(open_local(dir, &["keys", "expiry"])?);
        }
        let l = d
            .local
            .as_ref()
            .ok_or_else(|| internal("the local store", "is not open"))?;
        let mut batch = l.db.batch();
        for (k, e) in d.pending.drain() {
            batch.insert(&l.spaces[1], index_key(e, &k), []);
            batch.insert(&l.spaces[0], &*k, e.to_be_bytes().to_vec());
            d.len += 1;
        }
        batch.commit().map_err(|e| store_error(&l.path, e))
    }

    /// Forgets the keys whose expiry is at or before `bound`, noting them in `removed`.
    pub(crate) fn evict(&mut self, bound: i64, removed: &mut Vec<Box<[u8]>>) -> Result<()> {
        match self {
            Seen::Memory { keys, earliest } => {
                if *earliest > bound {
                    return Ok(());
                }
                keys.retain(|k, e| {
                    let keep = *e > bound;
                    if !keep {
                        removed.push(k.clone());
                    }
                    keep
                });
                *earliest = keys.values().copied().min().unwrap_or(i64::MAX);
                Ok(())
            }
            Seen::Disk(_) => {
                self.flush(None)?;
                let Seen::Disk(d) = self else { return Ok(()) };
                let Some(l) = &d.local else { return Ok(()) };
                let end = match bound.checked_add(1) {
                    Some(next) => time_order(next).to_vec(),
                    None => vec![0xFF; 9],
                };
                let mut batch = l.db.batch();
                let mut n = 0u64;
                for g in l.spaces[1].range(..end) {
                    let k = g.key().map_err(|e| store_error(&l.path, e))?;
                    let key = &k[8..];
                    batch.remove(&l.spaces[0], key.to_vec());
                    batch.remove(&l.spaces[1], k.to_vec());
                    removed.push(key.into());
                    n += 1;
                }
                batch.commit().map_err(|e| store_error(&l.path, e))?;
                d.len = d.len.saturating_sub(n);
                Ok(())
            }
        }
    }

    /// Rebuilds a disk set as of `version` of the state under `dir` (`converter` encodes the
    /// `n` key columns of the state's rows).
    pub(crate) fn restore_disk(
        &mut self,
        dir: &Path,
        version: u64,
        signature: &str,
        converter: &RowConverter,
        n: usize,
    ) -> Result<crate::stateful::store::Marks> {
        self.clear(dir)?;
        let Seen::Disk(d) = self else {
            return Err(internal("restoring", "the keys are not on disk"));
        };
        crate::stateful::store::replay(dir, version, signature, &mut |part| {
            let (rows, deleted) = match part {
                Replayed::Snapshot(rows) => (rows, None),
                Replayed::Delta(rows) => {
                    let flags = rows
                        .column(rows.num_columns() - 1)
                        .as_any()
                        .downcast_ref::<BooleanArray>()
                        .cloned()
                        .ok_or_else(|| internal("a delta's deletion flags", "are not booleans"))?;
                    (rows, Some(flags))
                }
            };
            let keys = converter
                .convert_columns(&rows.columns()[..n])
                .map_err(|e| internal("encoding keys", e))?;
            let expires = rows
                .column(n)
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or_else(|| internal("decoding", "the expiry column is not Int64"))?;
            // the later of a key's rows wins
            let mut last = HashMap::with_capacity(keys.num_rows());
            for (i, k) in keys.iter().enumerate() {
                last.insert(k.as_ref().to_vec(), i);
            }
            let l = d
                .local
                .as_ref()
                .ok_or_else(|| internal("the local store", "is not open"))?;
            let mut batch = l.db.batch();
            for (k, i) in last {
                let held = l.spaces[0].get(&k).map_err(|e| store_error(&l.path, e))?;
                if let Some(old) = &held {
                    batch.remove(&l.spaces[1], index_key(expiry_of(old)?, &k));
                } else {
                    d.len += 1;
                }
                match deleted.as_ref().is_some_and(|f| f.value(i)) {
                    true => {
                        batch.remove(&l.spaces[0], k);
                        d.len -= 1;
                    }
                    false => {
                        let e = expires.value(i);
                        batch.insert(&l.spaces[1], index_key(e, &k), []);
                        batch.insert(&l.spaces[0], k, e.to_be_bytes().to_vec());
                    }
                }
            }
            batch.commit().map_err(|e| store_error(&l.path, e))
        })
    }

    /// Every key held with its expiry, as rows of `schema` in chunks from a consistent view of
    /// the store (disk only).
    pub(crate) fn scan(&self, schema: &SchemaRef) -> Result<Option<Scan>> {
        let Seen::Disk(d) = self else { return Ok(None) };
        let converter =
            RowConverter::new(d.fields.clone()).map_err(|e| internal("the key columns", e))?;
        let schema = Arc::clone(schema);
        Ok(Some(scan_keyspace(d.local.as_ref(), 0, move |pairs| {
            let parser = converter.parser();
            let mut columns = converter
                .convert_rows(pairs.iter().map(|(k, _)| parser.parse(k)))
                .map_err(|e| internal("decoding keys", e))?;
            let expires: Vec<i64> = pairs
                .iter()
                .map(|(_, v)| expiry_of(v))
                .collect::<Result<_>>()?;
            columns.push(Arc::new(Int64Array::from(expires)));
            RecordBatch::try_new(Arc::clone(&schema), columns)
                .map_err(|e| internal("the saved keys", e))
        })))
    }

    /// The keys held in memory with their expiry (memory only).
    pub(crate) fn in_memory(&self) -> Option<&HashMap<Box<[u8]>, i64>> {
        match self {
            Seen::Memory { keys, .. } => Some(keys),
            Seen::Disk(_) => None,
        }
    }

    /// Whether the keys are on disk.
    pub(crate) fn on_disk(&self) -> bool {
        matches!(self, Seen::Disk(_))
    }
}
