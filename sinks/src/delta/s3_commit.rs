//! How commits to a Delta table on S3 stay atomic between concurrent writers.
//!
//! A Delta commit creates `_delta_log/<version>.json`, and two writers must never both create
//! the same version. deltalake 1.1 (`deltalake-aws` 1.0) does this on S3 with a **conditional
//! put** (`If-None-Match: *`, object_store's default `aws_conditional_put = etag`): the loser
//! gets `412 Precondition Failed` and retries on the next version. AWS S3 has supported it since
//! 2024, and moto's server honours it (checked by the tests). This is the default and needs no
//! option.
//!
//! Other configurations are refused, naming the option, because they lose commits silently:
//!
//! - `storage.aws_s3_locking_provider` (or the `AWS_S3_LOCKING_PROVIDER` variable): deltalake
//!   1.1 no longer has the DynamoDB lock; with this set it logs an error and commits by plain
//!   copy-and-delete instead (no lock at all).
//! - `storage.aws_s3_allow_unsafe_rename` (or `AWS_S3_ALLOW_UNSAFE_RENAME`): the same unlocked
//!   rename. A single writer on a store without conditional put may opt in with the sink option
//!   `allowUnsafeRename = true`, which sets it.
//! - `storage.aws_conditional_put = disabled`: commits fail without conditional put; allowed
//!   only with `allowUnsafeRename`.

use std::collections::BTreeMap;

use tributary_sdk::{Error, ErrorCode, Result};

/// `allowUnsafeRename`: the opt-in to unlocked S3 commits.
pub const ALLOW_UNSAFE_RENAME: &str = "allowUnsafeRename";
/// deltalake-aws's storage key (and environment variable) for unlocked renames.
pub const UNSAFE_RENAME_KEY: &str = "aws_s3_allow_unsafe_rename";
const LOCKING_PROVIDER_KEY: &str = "aws_s3_locking_provider";
const CONDITIONAL_PUT_KEYS: [&str; 2] = ["aws_conditional_put", "conditional_put"];

/// `s3://` or `s3a://`.
pub(crate) fn is_s3(scheme: Option<&str>) -> bool {
    matches!(scheme, Some("s3" | "s3a"))
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "true" | "1" | "yes" | "on"
    )
}

/// Checks the `storage.*` options of a table (parse time, no I/O). That
/// `allowUnsafeRename` is set only for an S3 table is checked by the caller, which knows the
/// `path` option.
pub fn check_storage(storage: &BTreeMap<String, String>, allow_unsafe_rename: bool) -> Result<()> {
    for (key, value) in storage {
        let k = key.to_ascii_lowercase();
        if k == LOCKING_PROVIDER_KEY {
            return Err(locking_provider(&format!("storage.{key}")));
        }
        if k == UNSAFE_RENAME_KEY && truthy(value) {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "option 'storage.{key}' makes S3 commits unlocked renames, and two writers \
                     can then overwrite each other's commit; remove it (conditional put is used \
                     by default), or set '{ALLOW_UNSAFE_RENAME}' = true if this table only ever \
                     has one writer"
                ),
            )
            .with_context("option", format!("storage.{key}")));
        }
        if CONDITIONAL_PUT_KEYS.contains(&k.as_str())
            && value.trim().eq_ignore_ascii_case("disabled")
            && !allow_unsafe_rename
        {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "option 'storage.{key}' = disabled leaves Delta commits on S3 without an \
                     atomic create; remove it (allowed: etag, the default), or set \
                     '{ALLOW_UNSAFE_RENAME}' = true for a table with a single writer"
                ),
            )
            .with_context("option", format!("storage.{key}"))
            .with_context("allowed", "etag"));
        }
    }
    Ok(())
}

/// Checks the process environment, which deltalake-aws also reads (build time).
pub fn check_environment(scheme: Option<&str>, allow_unsafe_rename: bool) -> Result<()> {
    check_env_values(
        scheme,
        allow_unsafe_rename,
        std::env::var("AWS_S3_LOCKING_PROVIDER").ok().as_deref(),
        std::env::var("AWS_S3_ALLOW_UNSAFE_RENAME").ok().as_deref(),
    )
}

fn check_env_values(
    scheme: Option<&str>,
    allow_unsafe_rename: bool,
    locking: Option<&str>,
    unsafe_rename: Option<&str>,
) -> Result<()> {
    if !is_s3(scheme) {
        return Ok(());
    }
    if locking.is_some_and(|v| !v.trim().is_empty()) {
        return Err(locking_provider("AWS_S3_LOCKING_PROVIDER (environment)"));
    }
    if unsafe_rename.is_some_and(truthy) && !allow_unsafe_rename {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "the environment sets AWS_S3_ALLOW_UNSAFE_RENAME, which makes S3 commits \
                 unlocked renames; unset it, or set '{ALLOW_UNSAFE_RENAME}' = true if this \
                 table only ever has one writer"
            ),
        )
        .with_context("option", ALLOW_UNSAFE_RENAME));
    }
    Ok(())
}

fn locking_provider(source: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "{source}: deltalake 1.1 has no DynamoDB commit lock any more (with it set, commits \
             become unlocked renames); remove it: commits use S3 conditional put by default"
        ),
    )
    .with_context("option", source.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn unsafe_configurations_are_refused_unless_opted_in() {
        assert!(check_storage(&storage(&[("aws_endpoint", "http://x")]), false).is_ok());
        let e =
            check_storage(&storage(&[("AWS_S3_LOCKING_PROVIDER", "dynamodb")]), true).unwrap_err();
        assert!(e.to_string().contains("DynamoDB"), "{e}");
        let e =
            check_storage(&storage(&[("aws_s3_allow_unsafe_rename", "true")]), false).unwrap_err();
        assert!(e.to_string().contains(ALLOW_UNSAFE_RENAME), "{e}");
        let e = check_storage(&storage(&[("aws_conditional_put", "disabled")]), false).unwrap_err();
        assert_eq!(e.context_value("allowed"), Some("etag"));
        assert!(check_storage(&storage(&[("aws_conditional_put", "disabled")]), true).is_ok());
    }

    #[test]
    fn environment_is_checked_for_s3_tables_only() {
        assert!(check_env_values(Some("s3"), false, Some("dynamodb"), None).is_err());
        assert!(check_env_values(Some("s3"), false, None, Some("true")).is_err());
        assert!(check_env_values(Some("s3"), true, None, Some("true")).is_ok());
        assert!(check_env_values(None, false, Some("dynamodb"), Some("true")).is_ok());
    }
}
