//! statestore-compare: which embedded key-value store should hold a streaming aggregation's
//! state once it no longer fits in memory?
//!
//! Every candidate runs the same deterministic workload (same seed, same keys, same order of
//! operations) in its own child process, so RSS and peak RSS are per store. After each phase
//! the child reports the number of keys and an order-independent checksum of all (key, value)
//! pairs; the parent asserts that they equal the in-memory baseline's.
//!
//! Usage: `cargo run --release -- [baseline|redb|fjall|rocksdb ...] [options]`
//! (no candidate = all compiled in). See README.md.

// Helpers used only by some stores are unused when those features are off.
#![cfg_attr(
    not(all(feature = "redb", feature = "fjall", feature = "rocksdb")),
    allow(dead_code)
)]

use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Workload definition
// ---------------------------------------------------------------------------------------------

/// Keys per event-time bucket. One steady batch adds one new bucket and evicts the oldest one.
const KEYS_PER_BUCKET: u64 = 1_000;
/// Keys per commit while loading.
const LOAD_BATCH: u64 = 100_000;
/// Store cache size configured for every candidate (block cache / page cache of the store).
const CACHE_BYTES: u64 = 64 << 20;

/// LSM write-buffer (memtable) size in bytes for this run; 0 = the store's default.
/// The 10 M-key suite sets it (default 16 MiB) so that memtables fit a memory budget.
static WRITE_BUFFER_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn write_buffer_bytes() -> Option<u64> {
    match WRITE_BUFFER_BYTES.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// Eviction scans start at the last evicted key (the previous watermark) instead of the very
/// first key. Matters for LSM stores, whose scan from the start walks over all tombstones of
/// earlier evictions that compaction has not dropped yet. redb pops the first entry either way.
static EVICT_FROM_WATERMARK: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

fn evict_from_watermark() -> bool {
    EVICT_FROM_WATERMARK.load(std::sync::atomic::Ordering::Relaxed)
}

type Key = [u8; 16];
type Val = [u8; 40];

/// splitmix64 finaliser: a bijection on u64.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }
    /// Uniform in 0..n (n > 0); bias is negligible for the n used here.
    fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Key `j` (0..KEYS_PER_BUCKET) of event-time bucket `bucket`: 8-byte big-endian bucket, then an
/// 8-byte big-endian scrambled id. Present ids are even, so `absent_key` (odd id) never exists.
fn key(bucket: u64, j: u64) -> Key {
    let id = mix64(bucket * KEYS_PER_BUCKET + j) << 1;
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&bucket.to_be_bytes());
    k[8..].copy_from_slice(&id.to_be_bytes());
    k
}

fn absent_key(bucket: u64, r: u64) -> Key {
    let id = (mix64(r) << 1) | 1;
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&bucket.to_be_bytes());
    k[8..].copy_from_slice(&id.to_be_bytes());
    k
}

fn prefix_of(k: &[u8]) -> u64 {
    u64::from_be_bytes(k[..8].try_into().expect("16-byte key"))
}

fn key_seed(k: &Key) -> u64 {
    mix64(
        u64::from_le_bytes(k[..8].try_into().unwrap())
            ^ mix64(u64::from_le_bytes(k[8..].try_into().unwrap())),
    )
}

/// 40-byte aggregate: an 8-byte update counter, then 32 bytes derived from (key, counter).
fn value(k: &Key, counter: u64) -> Val {
    let mut v = [0u8; 40];
    v[..8].copy_from_slice(&counter.to_le_bytes());
    let mut s = key_seed(k) ^ counter;
    for chunk in v[8..].chunks_mut(8) {
        s = mix64(s);
        chunk.copy_from_slice(&s.to_le_bytes());
    }
    v
}

/// The read-modify-write every store applies to a looked-up key.
fn next_value(k: &Key, old: &[u8]) -> Val {
    let c = u64::from_le_bytes(old[..8].try_into().expect("40-byte value"));
    value(k, c + 1)
}

fn fold_bytes(mut h: u64, b: &[u8]) -> u64 {
    for chunk in b.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = mix64(h ^ u64::from_le_bytes(w));
    }
    h
}

/// Order-independent checksum term of one (key, value) pair.
fn pair_hash(k: &[u8], v: &[u8]) -> u64 {
    fold_bytes(fold_bytes(0x5EED, k), v)
}

fn value_hash(v: &[u8]) -> u64 {
    fold_bytes(0xFEED, v)
}

/// One steady batch, generated by the driver identically for every store.
struct Batch {
    /// `n_exist` existing keys (never in the oldest bucket) followed by absent keys.
    lookups: Vec<Key>,
    /// The first `updates` lookups are written back with `next_value`.
    updates: usize,
    /// New keys (one new, newest bucket).
    new: Vec<(Key, Val)>,
    /// Number of smallest keys to delete (= the oldest bucket).
    evict: usize,
    /// Commit durably (fsync) instead of the per-batch no-sync commit.
    durable: bool,
}

#[derive(Default, Clone, Copy)]
struct Phases {
    read: Duration,
    write: Duration,
    evict: Duration,
    commit: Duration,
}

impl Phases {
    fn total(&self) -> Duration {
        self.read + self.write + self.evict + self.commit
    }
    fn add(&mut self, o: &Phases) {
        self.read += o.read;
        self.write += o.write;
        self.evict += o.evict;
        self.commit += o.commit;
    }
}

#[derive(Default)]
struct BatchOut {
    found: u64,
    read_sum: u64,
    evicted: u64,
    evicted_min_prefix: u64,
    evicted_max_prefix: u64,
}

impl BatchOut {
    fn record_read(&mut self, v: Option<&[u8]>) {
        if let Some(v) = v {
            self.found += 1;
            self.read_sum = self.read_sum.wrapping_add(value_hash(v));
        }
    }
    fn record_evict(&mut self, k: &[u8]) {
        let p = prefix_of(k);
        if self.evicted == 0 {
            self.evicted_min_prefix = p;
            self.evicted_max_prefix = p;
        }
        self.evicted_min_prefix = self.evicted_min_prefix.min(p);
        self.evicted_max_prefix = self.evicted_max_prefix.max(p);
        self.evicted += 1;
    }
}

/// Updated values computed from the batch's reads (shared by every store).
fn compute_updates(b: &Batch, reads: &[Option<Val>]) -> Vec<(Key, Val)> {
    let mut out = Vec::with_capacity(b.updates + b.new.len());
    for i in 0..b.updates {
        let k = &b.lookups[i];
        let old = reads[i].as_ref().expect("updated keys exist");
        out.push((*k, next_value(k, old)));
    }
    out.extend_from_slice(&b.new);
    out
}

fn to_val(v: &[u8]) -> Val {
    v.try_into().expect("40-byte value")
}

// ---------------------------------------------------------------------------------------------
// Stores
// ---------------------------------------------------------------------------------------------

trait Store {
    /// Insert and commit one load batch (no fsync).
    fn load(&mut self, kvs: &[(Key, Val)]);
    /// Reads, read-modify-write upserts, eviction of the `evict` smallest keys by a range scan
    /// from the start, one commit. Times its own phases.
    fn batch(&mut self, b: &Batch, ph: &mut Phases) -> BatchOut;
    /// Full scan in key order: (count, checksum).
    fn scan(&mut self) -> (u64, u64);
    /// Close the store (flush whatever its close flushes).
    fn close(&mut self);
    /// Reopen the store and read one key.
    fn reopen_and_get(&mut self, k: &Key) -> bool;
}

// ---- in-memory baseline ----------------------------------------------------------------------

#[derive(Default)]
struct KeyHasher(u64);
impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = fold_bytes(self.0, bytes);
    }
    fn write_usize(&mut self, _: usize) {}
    fn finish(&self) -> u64 {
        self.0
    }
}

struct MemStore {
    map: HashMap<Key, Val, BuildHasherDefault<KeyHasher>>,
}

impl Store for MemStore {
    fn load(&mut self, kvs: &[(Key, Val)]) {
        self.map.extend(kvs.iter().copied());
    }
    fn batch(&mut self, b: &Batch, ph: &mut Phases) -> BatchOut {
        let mut out = BatchOut::default();
        let t = Instant::now();
        let mut reads = Vec::with_capacity(b.lookups.len());
        for k in &b.lookups {
            let v = self.map.get(k).copied();
            out.record_read(v.as_ref().map(|v| &v[..]));
            reads.push(v);
        }
        ph.read = t.elapsed();
        let t = Instant::now();
        for (k, v) in compute_updates(b, &reads) {
            self.map.insert(k, v);
        }
        ph.write = t.elapsed();
        // No ordered index: find the `evict` smallest keys by scanning everything.
        let t = Instant::now();
        let mut heap: BinaryHeap<Key> = BinaryHeap::with_capacity(b.evict + 1);
        for k in self.map.keys() {
            if heap.len() < b.evict {
                heap.push(*k);
            } else if let Some(top) = heap.peek() {
                if k < top {
                    heap.pop();
                    heap.push(*k);
                }
            }
        }
        for k in heap.into_vec() {
            self.map.remove(&k);
            out.record_evict(&k);
        }
        ph.evict = t.elapsed();
        out
    }
    fn scan(&mut self) -> (u64, u64) {
        // Unordered (a HashMap has no key order).
        let mut sum = 0u64;
        for (k, v) in &self.map {
            sum = sum.wrapping_add(pair_hash(k, v));
        }
        (self.map.len() as u64, sum)
    }
    fn close(&mut self) {}
    fn reopen_and_get(&mut self, k: &Key) -> bool {
        self.map.contains_key(k)
    }
}

// ---- redb ------------------------------------------------------------------------------------

#[cfg(feature = "redb")]
mod redb_store;

// ---- fjall -----------------------------------------------------------------------------------

#[cfg(feature = "fjall")]
mod fjall_store;

// ---- RocksDB ---------------------------------------------------------------------------------

#[cfg(feature = "rocksdb")]
mod rocksdb_store;

/// How librocksdb-sys got RocksDB, as far as this build's environment tells.
fn rocksdb_build_kind() -> &'static str {
    match (
        option_env!("ROCKSDB_COMPILE"),
        option_env!("ROCKSDB_LIB_DIR"),
    ) {
        (Some("1" | "true"), _) | (None, None) => "bundled RocksDB 7.9.2 built from source",
        _ => "system librocksdb",
    }
}

fn display_name(c: &str) -> String {
    if c == "rocksdb" {
        format!("rocksdb ({})", rocksdb_build_kind())
    } else {
        c.to_string()
    }
}

fn compiled_candidates() -> Vec<&'static str> {
    let mut v = vec![];
    if cfg!(feature = "redb") {
        v.push("redb");
    }
    if cfg!(feature = "fjall") {
        v.push("fjall");
    }
    if cfg!(feature = "rocksdb") {
        v.push("rocksdb");
    }
    v
}

fn make_store(name: &str, dir: &Path) -> Box<dyn Store> {
    match name {
        "baseline" => Box::new(MemStore {
            map: HashMap::default(),
        }),
        #[cfg(feature = "redb")]
        "redb" => Box::new(redb_store::RedbStore::new(dir)),
        #[cfg(feature = "fjall")]
        "fjall" => Box::new(fjall_store::FjallStore::new(dir)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(rocksdb_store::RocksStore::new(dir)),
        other => {
            let _ = dir;
            panic!(
                "candidate {other:?} is not compiled in (features: {:?})",
                compiled_candidates()
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Child: run one store through one suite, print `@` lines
// ---------------------------------------------------------------------------------------------

mod measure;
use measure::*;

mod workload;
use workload::*;

fn child(args: &[String]) {
    // __child <store> <suite> <keys> <dir> <steady_batches> <large_batches> <write_buffer_bytes> <durable_every> <evict_from_watermark 0|1>
    let name = &args[0];
    let suite = &args[1];
    let n_keys: u64 = args[2].parse().expect("keys");
    let dir = PathBuf::from(&args[3]);
    let steady_batches: usize = args[4].parse().expect("batches");
    let large_batches: usize = args[5].parse().expect("large batches");
    let durable_every: usize = args[7].parse().expect("durable every");
    EVICT_FROM_WATERMARK.store(args[8] == "1", std::sync::atomic::Ordering::Relaxed);
    let wb: u64 = args[6].parse().expect("write buffer bytes");
    WRITE_BUFFER_BYTES.store(wb, std::sync::atomic::Ordering::Relaxed);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    emit("loadavg_start", loadavg());
    let wall = Instant::now();
    let mut store = make_store(name, &dir);
    let mut ks = load(store.as_mut(), n_keys);
    emit_mem_disk("after_load", &dir);
    let small = SteadyCfg {
        tag: "steady",
        batches: steady_batches,
        n_exist: 10_000,
        n_absent: 1_000,
        updates: 10_000,
        seed: 2,
        durable_every,
    };
    match suite.as_str() {
        "small" => {
            steady(store.as_mut(), &mut ks, &small);
            emit_mem_disk("after_steady", &dir);
            timed_scan(store.as_mut(), "scan");
            let large = SteadyCfg {
                tag: "large",
                batches: large_batches,
                n_exist: 100_000,
                n_absent: 10_000,
                updates: 100_000,
                seed: 3,
                durable_every,
            };
            steady(store.as_mut(), &mut ks, &large);
            // One more small batch committed durably (fsync), for reference.
            let mut rng = Rng::new(4);
            let b = gen_batch(&mut rng, &mut ks, 10_000, 1_000, 10_000, true);
            let mut ph = Phases::default();
            let out = store.batch(&b, &mut ph);
            assert_eq!(out.evicted, KEYS_PER_BUCKET);
            ks.lo += 1;
            emit("durable_batch.ms", ph.total().as_secs_f64() * 1e3);
            emit("durable_batch.commit_ms", ph.commit.as_secs_f64() * 1e3);
            timed_scan(store.as_mut(), "scan2");
            emit_mem_disk("end", &dir);
            let t = Instant::now();
            store.close();
            emit("close.ms", t.elapsed().as_secs_f64() * 1e3);
            let probe = key(ks.lo + (ks.hi - ks.lo) / 2, 7);
            let t = Instant::now();
            let found = store.reopen_and_get(&probe);
            emit("reopen_first_read.ms", t.elapsed().as_secs_f64() * 1e3);
            assert!(found, "probe key present after reopen");
            let (n, sum) = store.scan();
            emit_check("after_reopen", n, sum);
        }
        "big" => {
            steady(store.as_mut(), &mut ks, &small);
            emit_mem_disk("after_steady", &dir);
            timed_scan(store.as_mut(), "scan");
        }
        other => panic!("unknown suite {other}"),
    }
    drop(store);
    emit("wall_s", wall.elapsed().as_secs_f64());
    emit("cpu_s", cpu_seconds());
    emit("loadavg_end", loadavg());
    let _ = std::fs::remove_dir_all(&dir);
    println!("@done");
}

// ---------------------------------------------------------------------------------------------
// Parent: run children, check results against the baseline, print tables
// ---------------------------------------------------------------------------------------------

#[derive(Default, Clone)]
struct RunResult {
    ok: bool,
    note: String,
    metrics: Vec<(String, f64)>,
    checks: Vec<(String, String)>,
}

impl RunResult {
    fn m(&self, k: &str) -> Option<f64> {
        self.metrics.iter().find(|(n, _)| n == k).map(|(_, v)| *v)
    }
}

#[derive(Clone)]
enum Cap {
    None,
    Systemd(String),
    Prlimit(u64),
}

fn parse_bytes(s: &str) -> u64 {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().expect("size") * mul
}

fn detect_cap(spec: &str) -> Cap {
    if spec == "none" {
        return Cap::None;
    }
    let ok = |c: &mut Command| c.output().map(|o| o.status.success()).unwrap_or(false);
    if ok(Command::new("systemd-run").args([
        "--scope",
        "-q",
        "-p",
        &format!("MemoryMax={spec}"),
        "true",
    ])) {
        return Cap::Systemd(spec.to_string());
    }
    if ok(Command::new("prlimit").args([&format!("--as={}", parse_bytes(spec)), "true"])) {
        return Cap::Prlimit(parse_bytes(spec));
    }
    Cap::None
}

fn cap_desc(c: &Cap) -> String {
    match c {
        Cap::None => "none".into(),
        Cap::Systemd(s) => format!("systemd-run --scope -p MemoryMax={s}"),
        Cap::Prlimit(b) => format!("prlimit --as={} MiB (+MALLOC_ARENA_MAX=2)", b >> 20),
    }
}

fn run_child(name: &str, suite: &str, keys: u64, opts: &Opts, cap: &Cap) -> RunResult {
    let exe = std::env::current_exe().expect("exe");
    let dir = opts.dir.join(format!("{name}-{suite}"));
    let child_args = [
        "__child".to_string(),
        name.to_string(),
        suite.to_string(),
        keys.to_string(),
        dir.display().to_string(),
        opts.steady_batches.to_string(),
        opts.large_batches.to_string(),
        if suite == "big" {
            opts.big_write_buffer_mib << 20
        } else {
            0
        }
        .to_string(),
        opts.durable_every.to_string(),
        if opts.evict_from_watermark { "1" } else { "0" }.to_string(),
    ];
    let mut cmd = match cap {
        Cap::None => Command::new(&exe),
        Cap::Systemd(s) => {
            let mut c = Command::new("systemd-run");
            c.args([
                "--scope",
                "-q",
                "-p",
                &format!("MemoryMax={s}"),
                "-p",
                "MemorySwapMax=0",
                "--",
            ])
            .arg(&exe);
            c
        }
        Cap::Prlimit(b) => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--as={b}"))
                .arg("--")
                .arg(&exe)
                .env("MALLOC_ARENA_MAX", "2");
            c
        }
    };
    cmd.args(&child_args);
    eprintln!("== {name} / {suite} / {keys} keys / cap: {}", cap_desc(cap));
    let t = Instant::now();
    let out = cmd.output().expect("spawn child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut r = RunResult::default();
    for line in stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["@m", k, v] => r
                .metrics
                .push((k.to_string(), v.parse().unwrap_or(f64::NAN))),
            ["@c", k, n, s] => r.checks.push((k.to_string(), format!("{n} {s}"))),
            ["@done"] => r.ok = true,
            _ => {}
        }
    }
    r.ok &= out.status.success();
    if !r.ok {
        let tail: Vec<&str> = stderr
            .lines()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        r.note = format!("exit {:?}: {}", out.status.code(), tail.join(" | "));
        eprintln!("   FAILED: {}", r.note);
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("   ok in {:.1} s", t.elapsed().as_secs_f64());
    }
    for (k, v) in &r.metrics {
        eprintln!("   {k} = {v:.3}");
    }
    r
}

fn assert_matches(base: &RunResult, r: &RunResult, name: &str) {
    for (k, v) in &base.checks {
        // The baseline's "after_reopen" equals its scan2; stores check it against scan2.
        let got = r
            .checks
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone());
        assert_eq!(
            got.as_deref(),
            Some(v.as_str()),
            "{name}: check {k} differs from baseline"
        );
    }
    if let Some(s2) = base.checks.iter().find(|(n, _)| n == "scan2") {
        let got = r
            .checks
            .iter()
            .find(|(n, _)| n == "after_reopen")
            .map(|(_, v)| v.clone());
        assert_eq!(
            got.as_deref(),
            Some(s2.1.as_str()),
            "{name}: state after reopen differs"
        );
    }
    eprintln!(
        "   {name}: {} checks equal the baseline's",
        base.checks.len()
    );
}

struct Opts {
    candidates: Vec<String>,
    only: Option<String>,
    keys: u64,
    big_keys: u64,
    mem_cap: String,
    steady_batches: usize,
    large_batches: usize,
    big_write_buffer_mib: u64,
    durable_every: usize,
    evict_from_watermark: bool,
    dir: PathBuf,
}

mod report;
use report::{print_big, print_runinfo, print_small};

fn usage() -> ! {
    eprintln!(
        "usage: statestore-compare [baseline|{}]... [--only small|big] [--keys N] [--big-keys N] \
         [--mem-cap 256M|none] [--big-write-buffer-mib 16 (0 = store default)] \
         [--durable-every N (0 = never)] [--evict-from-watermark] [--steady-batches N] [--large-batches N] [--dir PATH]",
        compiled_candidates().join("|")
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__child") {
        return child(&args[1..]);
    }
    let mut o = Opts {
        candidates: vec![],
        only: None,
        keys: 1_000_000,
        big_keys: 10_000_000,
        mem_cap: "256M".into(),
        steady_batches: 100,
        large_batches: 20,
        big_write_buffer_mib: 16,
        durable_every: 0,
        evict_from_watermark: false,
        dir: std::env::temp_dir().join("statestore-compare"),
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--only" => o.only = Some(val()),
            "--keys" => o.keys = val().parse().unwrap_or_else(|_| usage()),
            "--big-keys" => o.big_keys = val().parse().unwrap_or_else(|_| usage()),
            "--mem-cap" => o.mem_cap = val(),
            "--steady-batches" => o.steady_batches = val().parse().unwrap_or_else(|_| usage()),
            "--large-batches" => o.large_batches = val().parse().unwrap_or_else(|_| usage()),
            "--dir" => o.dir = PathBuf::from(val()),
            "--evict-from-watermark" => o.evict_from_watermark = true,
            "--durable-every" => o.durable_every = val().parse().unwrap_or_else(|_| usage()),
            "--big-write-buffer-mib" => {
                o.big_write_buffer_mib = val().parse().unwrap_or_else(|_| usage())
            }
            "-h" | "--help" => usage(),
            s if s.starts_with('-') => usage(),
            s => o.candidates.push(s.to_string()),
        }
    }
    if o.candidates.is_empty() {
        o.candidates = compiled_candidates()
            .into_iter()
            .map(String::from)
            .collect();
    }
    o.candidates.retain(|c| c != "baseline");
    for c in &o.candidates {
        if !compiled_candidates().contains(&c.as_str()) {
            eprintln!(
                "candidate {c:?} is not compiled in; compiled: {:?}",
                compiled_candidates()
            );
            std::process::exit(2);
        }
    }
    std::fs::create_dir_all(&o.dir).expect("data dir");
    let run_small = o.only.as_deref() != Some("big");
    let run_big = o.only.as_deref() != Some("small");

    if run_small {
        let base = run_child("baseline", "small", o.keys, &o, &Cap::None);
        assert!(base.ok, "baseline failed");
        let mut rows = vec![("baseline (HashMap)".to_string(), base.clone())];
        for c in &o.candidates {
            let r = run_child(c, "small", o.keys, &o, &Cap::None);
            if r.ok {
                assert_matches(&base, &r, c);
            }
            rows.push((display_name(c), r));
        }
        print_small(&rows, &o);
        print_runinfo(&rows.iter().map(|(n, r)| (n.clone(), r)).collect::<Vec<_>>());
    }
    if run_big {
        let cap = detect_cap(&o.mem_cap);
        eprintln!("memory cap mechanism: {}", cap_desc(&cap));
        let base = run_child("baseline", "big", o.big_keys, &o, &Cap::None);
        assert!(base.ok, "baseline failed");
        let mut rows = vec![(
            "baseline (HashMap)".to_string(),
            "none".to_string(),
            base.clone(),
        )];
        for c in &o.candidates {
            let r = run_child(c, "big", o.big_keys, &o, &cap);
            if r.ok {
                assert_matches(&base, &r, c);
                rows.push((display_name(c), cap_desc(&cap), r));
            } else {
                rows.push((display_name(c), cap_desc(&cap), r));
                if !matches!(cap, Cap::None) {
                    eprintln!("   {c} failed under the cap; rerunning without it to report RSS");
                    let r2 = run_child(c, "big", o.big_keys, &o, &Cap::None);
                    if r2.ok {
                        assert_matches(&base, &r2, c);
                    }
                    rows.push((display_name(c), "none (rerun)".into(), r2));
                }
            }
        }
        print_big(&rows, &o);
        print_runinfo(
            &rows
                .iter()
                .map(|(n, c, r)| (format!("{n} ({c})"), r))
                .collect::<Vec<_>>(),
        );
    }
}
