//! What a child process reports to the parent (one `name value` line each) and reads of its
//! own memory, CPU time, load and the store's disk use.

use super::*;

pub(crate) fn emit(name: &str, v: f64) {
    println!("@m {name} {v}");
}
pub(crate) fn emit_check(name: &str, count: u64, sum: u64) {
    println!("@c {name} {count} {sum:016x}");
}

pub(crate) fn proc_status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for line in s.lines() {
        if let Some(rest) = line.strip_prefix(field) {
            let n: String = rest.chars().filter(|c| c.is_ascii_digit()).collect();
            return n.parse().unwrap_or(0);
        }
    }
    0
}

/// (allocated bytes, apparent bytes) of everything under `dir`.
pub(crate) fn disk_usage(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut alloc, mut len) = (0, 0);
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                let (a, l) = disk_usage(&e.path());
                alloc += a;
                len += l;
            } else {
                alloc += m.blocks() * 512;
                len += m.len();
            }
        }
    }
    (alloc, len)
}

/// 1-minute load average of the machine (the bench shares its cores with whatever else runs).
pub(crate) fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// User + system CPU seconds of this process, all threads (clock ticks assumed 100 Hz).
pub(crate) fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| {
        f.get(i)
            .and_then(|x| x.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (tick(11) + tick(12)) / 100.0
}

pub(crate) fn emit_mem_disk(tag: &str, dir: &Path) {
    emit(
        &format!("{tag}.rss_mib"),
        proc_status_kib("VmRSS:") as f64 / 1024.0,
    );
    emit(
        &format!("{tag}.hwm_mib"),
        proc_status_kib("VmHWM:") as f64 / 1024.0,
    );
    let (a, l) = disk_usage(dir);
    emit(&format!("{tag}.disk_mib"), a as f64 / 1048576.0);
    emit(&format!("{tag}.disk_apparent_mib"), l as f64 / 1048576.0);
}
