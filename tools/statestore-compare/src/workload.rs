//! The phases a child runs against one store: load, steady batches (reads, upserts, eviction by
//! range scan, one commit) and the ordered scan.

use super::*;

/// Live key space: buckets [lo, hi), each holding all KEYS_PER_BUCKET keys.
pub(crate) struct KeySpace {
    pub(crate) lo: u64,
    pub(crate) hi: u64,
}

pub(crate) fn load(store: &mut dyn Store, n_keys: u64) -> KeySpace {
    assert!(n_keys % LOAD_BATCH == 0 && LOAD_BATCH % KEYS_PER_BUCKET == 0);
    let mut rng = Rng::new(1);
    let t = Instant::now();
    let mut gen_time = Duration::ZERO;
    for b in 0..n_keys / LOAD_BATCH {
        let g = Instant::now();
        let first = b * LOAD_BATCH / KEYS_PER_BUCKET;
        let mut kvs: Vec<(Key, Val)> = (first..first + LOAD_BATCH / KEYS_PER_BUCKET)
            .flat_map(|bk| (0..KEYS_PER_BUCKET).map(move |j| key(bk, j)))
            .map(|k| (k, value(&k, 0)))
            .collect();
        // Shuffle within the commit: keys of the same event-time range, in arrival order.
        for i in (1..kvs.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            kvs.swap(i, j);
        }
        gen_time += g.elapsed();
        store.load(&kvs);
    }
    let secs = (t.elapsed() - gen_time).as_secs_f64();
    emit("load.s", secs);
    emit("load.keys_per_s", n_keys as f64 / secs);
    KeySpace {
        lo: 0,
        hi: n_keys / KEYS_PER_BUCKET,
    }
}

pub(crate) fn gen_batch(
    rng: &mut Rng,
    ks: &mut KeySpace,
    n_exist: usize,
    n_absent: usize,
    updates: usize,
    durable: bool,
) -> Batch {
    let mut lookups = Vec::with_capacity(n_exist + n_absent);
    // Existing keys from every live bucket but the oldest (which this batch evicts).
    let span = ks.hi - ks.lo - 1;
    for _ in 0..n_exist {
        let bk = ks.lo + 1 + rng.below(span);
        lookups.push(key(bk, rng.below(KEYS_PER_BUCKET)));
    }
    for _ in 0..n_absent {
        let bk = ks.lo + rng.below(span + 1);
        lookups.push(absent_key(bk, rng.next_u64()));
    }
    let new = (0..KEYS_PER_BUCKET)
        .map(|j| key(ks.hi, j))
        .map(|k| (k, value(&k, 0)))
        .collect();
    let b = Batch {
        lookups,
        updates,
        new,
        evict: KEYS_PER_BUCKET as usize,
        durable,
    };
    ks.hi += 1;
    b
}

pub(crate) struct SteadyCfg<'a> {
    pub(crate) tag: &'a str,
    pub(crate) batches: usize,
    pub(crate) n_exist: usize,
    pub(crate) n_absent: usize,
    pub(crate) updates: usize,
    pub(crate) seed: u64,
    /// Commit durably every `durable_every`-th batch (0 = never), like a checkpoint would.
    pub(crate) durable_every: usize,
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub(crate) fn steady(store: &mut dyn Store, ks: &mut KeySpace, c: &SteadyCfg) {
    let mut rng = Rng::new(c.seed);
    let mut times = Vec::with_capacity(c.batches);
    let mut sum = Phases::default();
    let (mut found, mut read_sum) = (0u64, 0u64);
    for i in 0..c.batches {
        let durable = c.durable_every > 0 && (i + 1) % c.durable_every == 0;
        let b = gen_batch(&mut rng, ks, c.n_exist, c.n_absent, c.updates, durable);
        let mut ph = Phases::default();
        let out = store.batch(&b, &mut ph);
        assert_eq!(out.evicted, KEYS_PER_BUCKET, "evicted count");
        assert_eq!(
            (out.evicted_min_prefix, out.evicted_max_prefix),
            (ks.lo, ks.lo),
            "evicted the oldest bucket"
        );
        ks.lo += 1;
        found += out.found;
        read_sum = read_sum.wrapping_add(out.read_sum);
        times.push(ph.total().as_secs_f64() * 1e3);
        sum.add(&ph);
    }
    let total_ms: f64 = times.iter().sum();
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let t = c.tag;
    emit(&format!("{t}.batches"), c.batches as f64);
    emit(&format!("{t}.median_ms"), percentile(&times, 50.0));
    emit(&format!("{t}.p99_ms"), percentile(&times, 99.0));
    emit(&format!("{t}.max_ms"), *times.last().unwrap());
    emit(&format!("{t}.mean_ms"), total_ms / c.batches as f64);
    let nb = c.batches as f64;
    let reads = (c.n_exist + c.n_absent) as f64 * nb;
    let writes = (c.updates as f64 + KEYS_PER_BUCKET as f64) * nb;
    emit(
        &format!("{t}.read_us_per_op"),
        sum.read.as_secs_f64() * 1e6 / reads,
    );
    emit(
        &format!("{t}.write_commit_us_per_op"),
        (sum.write + sum.commit).as_secs_f64() * 1e6 / writes,
    );
    emit(
        &format!("{t}.evict_ms_per_batch"),
        sum.evict.as_secs_f64() * 1e3 / nb,
    );
    emit(
        &format!("{t}.commit_ms_per_batch"),
        sum.commit.as_secs_f64() * 1e3 / nb,
    );
    println!("@c {t}.reads {found} {read_sum:016x}");
}

pub(crate) fn timed_scan(store: &mut dyn Store, tag: &str) {
    let t = Instant::now();
    let (n, sum) = store.scan();
    let s = t.elapsed().as_secs_f64();
    emit(&format!("{tag}.s"), s);
    emit(&format!("{tag}.keys_per_s"), n as f64 / s);
    emit_check(tag, n, sum);
}
