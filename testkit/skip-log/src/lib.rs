//! # tributary-skip-log
//!
//! Skipped tests must be visible in the summary `scripts/test.sh` prints, not only in captured
//! output. A test (or a conformance case) that cannot run calls [`skip`] with its reason:
//!
//! - under `CI` (set and not `false`/`0`) a skip is a failure: the call panics, because CI
//!   starts every server the tests need;
//! - otherwise the skip is printed and appended as one JSON line
//!   (`{"test": ..., "reason": ..., "kind": "test"}`) to the file named by `TRIBUTARY_SKIP_LOG`,
//!   which `scripts/test.sh` sets, counts and lists after `cargo test`. `kind` is `test` for a
//!   whole test that returned early (cargo counted it as passed; the summary does not) and
//!   `case` for a case skipped inside a test that ran others.
//!
//! [`require_env`] is the common case: an endpoint variable written by a service script.
//!
//! ```
//! // Without the variable and outside CI this records a skip and returns None.
//! if std::env::var_os("CI").is_none() {
//!     assert!(tributary_skip_log::require_env("NO_SUCH_VARIABLE_X", "scripts/services/x.sh").is_none());
//! }
//! ```

use std::io::Write;

/// The environment variable naming the skip log.
pub const SKIP_LOG_VAR: &str = "TRIBUTARY_SKIP_LOG";

/// True when running under CI (`CI` set to anything but `false`/`0`/empty).
pub fn in_ci() -> bool {
    match std::env::var("CI") {
        Ok(v) => !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false")),
        Err(_) => false,
    }
}

/// The name of the running test (libtest names each test's thread after it).
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("unnamed test")
        .to_string()
}

/// Records that `test` did not run because of `reason`. Panics under CI.
pub fn skip_named(test: &str, reason: &str) {
    if in_ci() {
        panic!("{test} cannot run under CI: {reason}");
    }
    println!("SKIPPED {test}: {reason}");
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR) {
        let line =
            serde_json::json!({ "test": test, "reason": reason, "kind": "test" }).to_string();
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            eprintln!("cannot append to {}: {e}", path.to_string_lossy());
        }
    }
}

/// Records that the running test did not run because of `reason`. Panics under CI.
pub fn skip(reason: &str) {
    skip_named(&current_test(), reason);
}

/// The value of an endpoint variable, or `None` after recording a skip that says which
/// script starts the server (a panic under CI).
pub fn require_env(var: &str, started_by: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            skip(&format!("{var} is not set (started by {started_by})"));
            None
        }
    }
}
