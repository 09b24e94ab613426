//! The result tables the parent prints (markdown), from the children's measurements.

use super::*;

fn fmt(v: Option<f64>, prec: usize) -> String {
    match v {
        Some(x) if x.is_finite() => {
            if x >= 1e6 {
                format!("{:.2} M", x / 1e6)
            } else {
                format!("{x:.prec$}")
            }
        }
        _ => "–".into(),
    }
}

fn run_desc(opts: &Opts) -> String {
    format!(
        "durable commit every {} batches; eviction scan from {}",
        if opts.durable_every == 0 {
            "∞ (never)".to_string()
        } else {
            opts.durable_every.to_string()
        },
        if opts.evict_from_watermark {
            "the last evicted key"
        } else {
            "the first key"
        }
    )
}

pub(crate) fn print_small(rows: &[(String, RunResult)], opts: &Opts) {
    println!("\n### {} keys loaded; {} steady batches of 10k+1k reads / 10k+1k upserts / 1k evictions; {} large batches of 100k+10k reads / 100k+1k upserts / 1k evictions; {}\n", opts.keys, opts.steady_batches, opts.large_batches, run_desc(opts));
    println!("| store | load s | load keys/s | steady median ms | steady p99 ms | read µs/op | write+commit µs/op | evict ms/batch | large median ms | large p99 ms | large read µs/op | large write+commit µs/op | scan s | scan keys/s | durable batch ms | close ms | reopen→first read ms | disk MiB (end) | RSS MiB (end) | peak RSS MiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, r) in rows {
        if !r.ok {
            println!("| {name} | failed: {} |", r.note);
            continue;
        }
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            fmt(r.m("load.s"), 2),
            fmt(r.m("load.keys_per_s"), 0),
            fmt(r.m("steady.median_ms"), 1),
            fmt(r.m("steady.p99_ms"), 1),
            fmt(r.m("steady.read_us_per_op"), 2),
            fmt(r.m("steady.write_commit_us_per_op"), 2),
            fmt(r.m("steady.evict_ms_per_batch"), 2),
            fmt(r.m("large.median_ms"), 1),
            fmt(r.m("large.p99_ms"), 1),
            fmt(r.m("large.read_us_per_op"), 2),
            fmt(r.m("large.write_commit_us_per_op"), 2),
            fmt(r.m("scan.s"), 3),
            fmt(r.m("scan.keys_per_s"), 0),
            fmt(r.m("durable_batch.ms"), 1),
            fmt(r.m("close.ms"), 1),
            fmt(r.m("reopen_first_read.ms"), 1),
            fmt(r.m("end.disk_mib"), 0),
            fmt(r.m("end.rss_mib"), 0),
            fmt(r.m("end.hwm_mib"), 0),
        );
    }
}

pub(crate) fn print_big(rows: &[(String, String, RunResult)], opts: &Opts) {
    println!("\n### {} keys loaded, store cache {} MiB, LSM memtable {} MiB; {} steady batches (10k+1k reads / 10k+1k upserts / 1k evictions); {}\n", opts.big_keys, CACHE_BYTES >> 20, if opts.big_write_buffer_mib == 0 { "default".to_string() } else { opts.big_write_buffer_mib.to_string() }, opts.steady_batches, run_desc(opts));
    println!("| store | memory cap | load s | load keys/s | RSS after load MiB | peak RSS after load MiB | disk after load MiB | steady median ms | steady p99 ms | read µs/op | write+commit µs/op | evict ms/batch | RSS after steady MiB | peak RSS MiB | disk after steady MiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, cap, r) in rows {
        if !r.ok {
            println!("| {name} | {cap} | failed: {} |", r.note);
            continue;
        }
        println!(
            "| {name} | {cap} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            fmt(r.m("load.s"), 1),
            fmt(r.m("load.keys_per_s"), 0),
            fmt(r.m("after_load.rss_mib"), 0),
            fmt(r.m("after_load.hwm_mib"), 0),
            fmt(r.m("after_load.disk_mib"), 0),
            fmt(r.m("steady.median_ms"), 1),
            fmt(r.m("steady.p99_ms"), 1),
            fmt(r.m("steady.read_us_per_op"), 2),
            fmt(r.m("steady.write_commit_us_per_op"), 2),
            fmt(r.m("steady.evict_ms_per_batch"), 2),
            fmt(r.m("after_steady.rss_mib"), 0),
            fmt(r.m("after_steady.hwm_mib"), 0),
            fmt(r.m("after_steady.disk_mib"), 0),
        );
    }
}

pub(crate) fn print_runinfo(rows: &[(String, &RunResult)]) {
    println!("\n| run | child wall s | child CPU s (all threads) | load avg at start / end |");
    println!("|---|---|---|---|");
    for (name, r) in rows {
        println!(
            "| {name} | {} | {} | {} / {} |",
            fmt(r.m("wall_s"), 1),
            fmt(r.m("cpu_s"), 1),
            fmt(r.m("loadavg_start"), 2),
            fmt(r.m("loadavg_end"), 2)
        );
    }
}
