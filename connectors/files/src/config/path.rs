//! Local path options: a plain path or `file://` URL, made absolute and normalized without
//! touching the file system, so the source's identity is known before anything is opened
//! (object-store URLs are [`super::location`]'s).

use std::path::{Component, Path, PathBuf};

use tributary_sdk::{Error, ErrorCode, Result};

/// The `path` option as an absolute, lexically normalized path (`.` and `..` resolved by name;
/// symbolic links are left for the build step to follow).
pub(super) fn resolve(option: &str, raw: &str) -> Result<PathBuf> {
    let path = parse_path(option, raw)?;
    let absolute = std::path::absolute(&path).map_err(|e| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{option}': {} cannot be made absolute (the current directory is unknown)",
                path.display()
            ),
        )
        .with_context("option", option)
        .with_cause(e)
    })?;
    Ok(normalize(&absolute))
}

/// Removes `.` components and resolves `..` against the preceding component, by name.
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` is `/`.
                if !matches!(
                    out.components().next_back(),
                    None | Some(Component::RootDir | Component::Prefix(_))
                ) {
                    out.pop();
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Turns a path option (`option` names it in errors) into a local path: a plain path or a
/// `file://` URL. Any other URL scheme is refused here ([`super::location`] reads object-store URLs).
pub(super) fn parse_path(option: &str, raw: &str) -> Result<PathBuf> {
    let text = raw.trim();
    let bad = |msg: String| {
        Error::new(ErrorCode::InvalidOption, msg)
            .with_context("option", option)
            .with_context("value", text)
    };
    if text.is_empty() {
        return Err(bad(format!("option '{option}' must not be empty")));
    }
    if let Some(scheme) = url_scheme(text) {
        if scheme.eq_ignore_ascii_case("file") {
            let url = url::Url::parse(text).map_err(|e| {
                bad(format!(
                    "option '{option}' is not a valid file URL '{text}': {e}"
                ))
            })?;
            return url.to_file_path().map_err(|_| {
                bad(format!(
                    "option '{option}' is not a local file URL: '{text}'"
                ))
            });
        }
        return Err(bad(format!(
            "option '{option}' uses the scheme '{scheme}://', but a local path (or file:// URL) \
             is expected here"
        )));
    }
    Ok(PathBuf::from(text))
}

/// The scheme of `text` when it looks like a URL (`s3://...`, `dbfs:/...`); a Windows drive
/// letter (`C:\`) is not a scheme.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once(':')?;
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_absolute_and_normalized_by_name() {
        assert_eq!(
            resolve("path", "/a/./b/../c/").unwrap(),
            PathBuf::from("/a/c")
        );
        assert_eq!(resolve("path", "/../x").unwrap(), PathBuf::from("/x"));
        assert_eq!(
            resolve("path", "file:///tmp/in").unwrap(),
            PathBuf::from("/tmp/in")
        );
        let rel = resolve("path", "in/*.json").unwrap();
        assert!(
            rel.is_absolute() && rel.ends_with("in/*.json"),
            "{}",
            rel.display()
        );
    }
}
