//! CPU time (user + system) of a process, read from `/proc/<pid>/stat` (Linux; `None`
//! elsewhere or when the process is gone). Benches use it for records per CPU-second, tests for
//! a server's CPU over a window. The kernel counts in clock ticks (`getconf CLK_TCK`, asked
//! once; 100 where it cannot be asked), so the resolution is 10 ms.

use std::sync::OnceLock;
use std::time::Duration;

/// The kernel's clock ticks per second.
fn ticks_per_second() -> u64 {
    static HZ: OnceLock<u64> = OnceLock::new();
    *HZ.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .filter(|hz| *hz > 0)
            .unwrap_or(100)
    })
}

/// utime + stime of `/proc/<pid>/stat` (`pid` may be `self`), in clock ticks.
fn ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses): utime is the
    // 14th field of the line, the 12th after the name.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The CPU time process `pid` has used so far.
pub fn cpu_time(pid: &str) -> Option<Duration> {
    ticks(pid).map(|t| Duration::from_millis(t * 1000 / ticks_per_second()))
}

/// The CPU time this process has used so far.
pub fn process_cpu() -> Option<Duration> {
    cpu_time("self")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_cpu_grows_with_work() {
        let Some(before) = process_cpu() else {
            return; // not Linux
        };
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = process_cpu().unwrap_or_default();
        assert!(
            after >= before + Duration::from_millis(100),
            "{before:?} -> {after:?}"
        );
        assert!(cpu_time("0").is_none(), "no process 0 in /proc");
    }
}
