//! Globs of the files source: splitting a path at its first glob component and compiling a
//! pattern with errors that name the option. A leaf module (the config checks globs, discovery
//! matches them).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use tributary_sdk::{Error, ErrorCode, Result};

/// Splits `/a/b/*/c*.json` into (`/a/b`, `*/c*.json`); no glob characters gives (path, None).
pub(crate) fn split_glob(path: &Path) -> (PathBuf, Option<String>) {
    let mut dir = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    for comp in path.components() {
        let text = comp.as_os_str().to_string_lossy();
        if !rest.is_empty() || text.contains(['*', '?', '[', '{']) {
            rest.push(text.into_owned());
        } else {
            dir.push(comp);
        }
    }
    if rest.is_empty() {
        (dir, None)
    } else {
        (dir, Some(rest.join("/")))
    }
}

/// Compiles a glob, naming `option` when it is invalid.
pub(crate) fn glob(
    pattern: &str,
    literal_separator: bool,
    option: &str,
) -> Result<(String, GlobMatcher)> {
    let g = GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .build()
        .map_err(|e| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("invalid glob '{pattern}' in option '{option}': {e}"),
            )
            .with_context("option", option)
        })?;
    Ok((pattern.to_string(), g.compile_matcher()))
}
