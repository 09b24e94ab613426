//! The fjall candidate: a pure-Rust LSM tree, batches committed without fsync.

use super::*;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

pub struct FjallStore {
    path: PathBuf,
    db: Option<(Database, Keyspace)>,
    /// Last evicted key (used with --evict-from-watermark).
    low: Option<Vec<u8>>,
}

fn open(path: &Path) -> (Database, Keyspace) {
    // Batches are committed without durability (no fsync): the journal is written to the OS
    // buffers on commit (fjall's default, manual_journal_persist = false).
    let db = Database::builder(path)
        .cache_size(CACHE_BYTES)
        .open()
        .expect("fjall open");
    let ks = db
        .keyspace("state", || {
            let o = KeyspaceCreateOptions::default();
            // Default 64 MiB; up to 4 sealed memtables may wait for flush besides the active one.
            match write_buffer_bytes() {
                Some(n) => o.max_memtable_size(n),
                None => o,
            }
        })
        .expect("fjall keyspace");
    (db, ks)
}

impl FjallStore {
    pub fn new(dir: &Path) -> Self {
        let path = dir.join("fjall");
        let db = Some(open(&path));
        FjallStore {
            path,
            db,
            low: None,
        }
    }
    fn h(&self) -> &(Database, Keyspace) {
        self.db.as_ref().expect("open")
    }
}

impl Store for FjallStore {
    fn load(&mut self, kvs: &[(Key, Val)]) {
        let (db, ks) = self.h();
        let mut b = db.batch();
        for (k, v) in kvs {
            b.insert(ks, &k[..], &v[..]);
        }
        b.commit().unwrap();
    }

    fn batch(&mut self, b: &Batch, ph: &mut Phases) -> BatchOut {
        let (db, ks) = self.h();
        let mut out = BatchOut::default();
        let t = Instant::now();
        let mut reads = Vec::with_capacity(b.lookups.len());
        for k in &b.lookups {
            let v = ks.get(k).unwrap().map(|s| to_val(&s));
            out.record_read(v.as_ref().map(|v| &v[..]));
            reads.push(v);
        }
        ph.read = t.elapsed();
        let t = Instant::now();
        let mut wb = db.batch();
        for (k, v) in compute_updates(b, &reads) {
            wb.insert(ks, &k[..], &v[..]);
        }
        ph.write = t.elapsed();
        // Eviction: range scan from the start. The batch's own upserts are not visible yet;
        // the driver never updates keys of the bucket being evicted, so this is equivalent.
        let t = Instant::now();
        let iter = match (&self.low, evict_from_watermark()) {
            (Some(low), true) => ks.range(low.clone()..),
            _ => ks.iter(),
        };
        let mut last = None;
        for g in iter.take(b.evict) {
            let k = g.key().unwrap();
            out.record_evict(&k);
            last = Some(k.to_vec());
            wb.remove(ks, k);
        }
        ph.evict = t.elapsed();
        let t = Instant::now();
        wb.commit().unwrap();
        if b.durable {
            db.persist(PersistMode::SyncAll).unwrap();
        }
        ph.commit = t.elapsed();
        if last.is_some() {
            self.low = last;
        }
        out
    }

    fn scan(&mut self) -> (u64, u64) {
        let (_, ks) = self.h();
        let (mut n, mut sum) = (0u64, 0u64);
        for g in ks.iter() {
            let (k, v) = g.into_inner().unwrap();
            n += 1;
            sum = sum.wrapping_add(pair_hash(&k, &v));
        }
        (n, sum)
    }

    fn close(&mut self) {
        // Dropping the database persists its journal (fjall's documented drop behaviour).
        self.db = None;
    }

    fn reopen_and_get(&mut self, k: &Key) -> bool {
        self.db = Some(open(&self.path));
        self.h().1.get(k).unwrap().is_some()
    }
}
