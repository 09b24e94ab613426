//! Making skipped cases visible in the test summary (`scripts/test.sh`).
//!
//! Two kinds of skip, recorded differently:
//!
//! - **Missing environment** (a server the fixture needs is not running): [`require_env`]
//!   delegates to [`tributary_skip_log::require_env`], which records the skip and fails under
//!   CI, where every server is started.
//! - **Legitimate skips** (the connector does not declare the capability a case needs, or a case
//!   decides it does not apply — an at-least-once sink on the replay cases): [`record_skip`]
//!   records the same `{"test": ..., "reason": ...}` line in `$TRIBUTARY_SKIP_LOG` and prints
//!   `SKIPPED name: reason`, but never fails, under CI or not: the skip is the right answer.
//!
//! The generated tests ([`crate::conformance_tests!`], [`crate::sink_conformance_tests!`])
//! record their skips as `<connector>::<case>`. The library runners ([`crate::run`],
//! [`crate::run_sinks`]) record nothing: their [`crate::Report`] lists every skip with its
//! reason.

use std::io::Write;

use tributary_skip_log::SKIP_LOG_VAR;

/// Records a legitimate skip (a capability the connector does not claim): prints
/// `SKIPPED test: reason` and appends `{"test": ..., "reason": ...}` to `$TRIBUTARY_SKIP_LOG`
/// when it is set. Never panics, also under CI.
pub fn record_skip(test: &str, reason: &str) {
    println!("SKIPPED {test}: {reason}");
    let Some(path) = std::env::var_os(SKIP_LOG_VAR) else {
        return;
    };
    // One write of the whole line, so lines of tests running in parallel do not interleave.
    let line = format!(
        "{}\n",
        // `kind: test`: a generated test that ends here counted as passed for cargo; the
        // summary of scripts/test.sh takes it out of the passed count.
        serde_json::json!({ "test": test, "reason": reason, "kind": "test" })
    );
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot append the skip of {test} to {}: {e}",
            path.to_string_lossy()
        );
    }
}

/// The value of an endpoint variable a fixture needs, or `None` after recording the skip
/// (naming the script that starts the server); under CI a missing variable fails the test.
/// A setup that returns `None` uses this (or [`tributary_skip_log::skip`]) so the skip is
/// recorded once.
pub fn require_env(var: &str, started_by: &str) -> Option<String> {
    tributary_skip_log::require_env(var, started_by)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_legitimate_skip_is_one_json_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skips.jsonl");
        // Only this test touches the variable in this binary.
        std::env::set_var(SKIP_LOG_VAR, &log);
        record_skip("generator::assign_partitions", "no capability Assign");
        record_skip("generator::efo", "no \"EFO\"");
        std::env::remove_var(SKIP_LOG_VAR);
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["test"], "generator::assign_partitions");
        assert_eq!(lines[1]["reason"], "no \"EFO\"");
    }
}
