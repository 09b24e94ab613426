//! The redb candidate: a B-tree in one file, commits without fsync (`Durability::None`).

use super::*;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

// Byte-slice keys and values, as Tributary's encoded group keys / aggregate states would be.
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("state");

pub struct RedbStore {
    path: PathBuf,
    db: Option<Database>,
}

fn open(path: &Path, create: bool) -> Database {
    let mut b = Database::builder();
    b.set_cache_size(CACHE_BYTES as usize);
    if create {
        b.create(path).expect("redb create")
    } else {
        b.open(path).expect("redb open")
    }
}

impl RedbStore {
    pub fn new(dir: &Path) -> Self {
        let path = dir.join("state.redb");
        let db = open(&path, true);
        // Create the table up front.
        let txn = db.begin_write().unwrap();
        txn.open_table(TABLE).unwrap();
        txn.commit().unwrap();
        RedbStore { path, db: Some(db) }
    }
    fn db(&self) -> &Database {
        self.db.as_ref().expect("open")
    }
}

impl Store for RedbStore {
    fn load(&mut self, kvs: &[(Key, Val)]) {
        let mut txn = self.db().begin_write().unwrap();
        txn.set_durability(Durability::None).unwrap();
        {
            let mut t = txn.open_table(TABLE).unwrap();
            for (k, v) in kvs {
                t.insert(&k[..], &v[..]).unwrap();
            }
        }
        txn.commit().unwrap();
    }

    fn batch(&mut self, b: &Batch, ph: &mut Phases) -> BatchOut {
        let mut out = BatchOut::default();
        let t0 = Instant::now();
        let mut txn = self.db().begin_write().unwrap();
        txn.set_durability(if b.durable {
            Durability::Immediate
        } else {
            Durability::None
        })
        .unwrap();
        {
            let mut table = txn.open_table(TABLE).unwrap();
            // Reads inside the write transaction (read-modify-write).
            let mut reads = Vec::with_capacity(b.lookups.len());
            for k in &b.lookups {
                let v = table.get(&k[..]).unwrap().map(|g| to_val(g.value()));
                out.record_read(v.as_ref().map(|v| &v[..]));
                reads.push(v);
            }
            ph.read = t0.elapsed();
            let t = Instant::now();
            for (k, v) in compute_updates(b, &reads) {
                table.insert(&k[..], &v[..]).unwrap();
            }
            ph.write = t.elapsed();
            let t = Instant::now();
            for _ in 0..b.evict {
                let Some((k, _v)) = table.pop_first().unwrap() else {
                    break;
                };
                out.record_evict(k.value());
            }
            ph.evict = t.elapsed();
        }
        let t = Instant::now();
        txn.commit().unwrap();
        ph.commit = t.elapsed();
        out
    }

    fn scan(&mut self) -> (u64, u64) {
        let txn = self.db().begin_read().unwrap();
        let table = txn.open_table(TABLE).unwrap();
        let (mut n, mut sum) = (0u64, 0u64);
        for item in table.range(..).unwrap() {
            let (k, v) = item.unwrap();
            n += 1;
            sum = sum.wrapping_add(pair_hash(k.value(), v.value()));
        }
        (n, sum)
    }

    fn close(&mut self) {
        if let Some(db) = self.db.take() {
            db.close().expect("redb close");
        }
    }

    fn reopen_and_get(&mut self, k: &Key) -> bool {
        self.db = Some(open(&self.path, false));
        let txn = self.db().begin_read().unwrap();
        let table = txn.open_table(TABLE).unwrap();
        let found = table.get(&k[..]).unwrap().is_some();
        found
    }
}
