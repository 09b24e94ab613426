//! Names of the things a fixture or a case creates (topics, streams, consumers, buckets):
//! unique in this process and across runs, so a run never meets what an earlier one left.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A name starting with `hint` (characters other than ASCII letters, digits, `-`, `_` and `.`
/// become `_`), then the process id, the clock's nanoseconds within the second and a counter.
pub fn unique_name(hint: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let clean: String = hint
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000)
        .unwrap_or_default();
    format!(
        "{clean}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_clean_and_distinct() {
        let (a, b) = (unique_name("a b/c"), unique_name("a b/c"));
        assert!(a.starts_with("a_b_c-"), "{a}");
        assert_ne!(a, b);
    }
}
