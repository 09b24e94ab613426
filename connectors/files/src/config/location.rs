//! The `path` option as a location: a local path (or `file://` URL), or an object-store URL
//! (`s3://bucket/prefix`, `gs://bucket/prefix`, `abfss://container@account.dfs.core.windows.net/prefix`,
//! `az://container/prefix`). Parsed by name only, without touching any store, so the source's
//! identity is known before anything is opened.
//!
//! URLs are split by hand rather than with `url::Url`: a key prefix may hold glob characters
//! (`?`, `{a,b}`) that a URL parser would read as a query or percent-encode.

use std::fmt;
use std::path::PathBuf;

use tributary_sdk::{Error, ErrorCode, Result};

use super::path;

/// The object stores a `path` URL can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cloud {
    /// Amazon S3 or an S3-compatible store (`s3://`, `s3a://`).
    S3,
    /// Google Cloud Storage (`gs://`).
    Gcs,
    /// Azure Blob Storage / ADLS Gen2 (`abfss://`, `abfs://`, `az://`, `azure://`, `wasbs://`).
    Azure,
}

impl Cloud {
    /// What the bucket is called in this store, for messages.
    pub fn bucket_word(&self) -> &'static str {
        match self {
            Cloud::Azure => "container",
            _ => "bucket",
        }
    }

    /// The store's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Cloud::S3 => "S3",
            Cloud::Gcs => "GCS",
            Cloud::Azure => "Azure Blob Storage",
        }
    }
}

/// An object-store location: bucket (or container) and key prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudPath {
    /// Which store.
    pub cloud: Cloud,
    /// The scheme as written (`s3`, `abfss`, ...).
    pub scheme: String,
    /// The authority as written (`bucket`, `container@account.dfs.core.windows.net`).
    pub authority: String,
    /// The bucket or container.
    pub bucket: String,
    /// The Azure storage account named in the URL (`container@account.dfs.core.windows.net`).
    pub account: Option<String>,
    /// The key (prefix) without leading or trailing `/`; may hold glob characters; empty for
    /// the whole bucket.
    pub key: String,
}

impl CloudPath {
    /// `scheme://authority`, the prefix of every file path of this location.
    pub fn root_url(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    /// True when `other` names the same bucket (and account) of the same store.
    pub fn same_bucket(&self, other: &CloudPath) -> bool {
        self.cloud == other.cloud && self.bucket == other.bucket && self.account == other.account
    }
}

impl fmt::Display for CloudPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}", self.root_url())
        } else {
            write!(f, "{}/{}", self.root_url(), self.key)
        }
    }
}

/// Where the files are: a local path or an object-store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourcePath {
    /// An absolute, lexically normalized local path (may hold glob characters).
    Local(PathBuf),
    /// An object-store URL.
    Cloud(CloudPath),
}

impl SourcePath {
    /// The local path, if this is one.
    pub fn as_local(&self) -> Option<&PathBuf> {
        match self {
            SourcePath::Local(p) => Some(p),
            SourcePath::Cloud(_) => None,
        }
    }

    /// The object-store location, if this is one.
    pub fn as_cloud(&self) -> Option<&CloudPath> {
        match self {
            SourcePath::Local(_) => None,
            SourcePath::Cloud(c) => Some(c),
        }
    }
}

impl fmt::Display for SourcePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourcePath::Local(p) => write!(f, "{}", p.display()),
            SourcePath::Cloud(c) => c.fmt(f),
        }
    }
}

/// Parses a path option (`option` names it in errors): an object-store URL, or a local path
/// made absolute and normalized.
pub(super) fn parse(option: &str, raw: &str) -> Result<SourcePath> {
    let text = raw.trim();
    let bad = |msg: String| {
        Error::new(ErrorCode::InvalidOption, msg)
            .with_context("option", option)
            .with_context("value", text)
    };
    let Some((scheme, rest)) = text.split_once("://") else {
        return path::resolve(option, text).map(SourcePath::Local);
    };
    let cloud = match scheme.to_ascii_lowercase().as_str() {
        "file" => return path::resolve(option, text).map(SourcePath::Local),
        "s3" | "s3a" => Cloud::S3,
        "gs" => Cloud::Gcs,
        "abfss" | "abfs" | "az" | "azure" | "wasbs" | "wasb" => Cloud::Azure,
        other => {
            return Err(bad(format!(
                "option '{option}' uses the scheme '{other}://', which the files source does not \
                 read; use a local path, file://, s3://, gs://, abfss:// or az://"
            )))
        }
    };
    let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
    let (bucket, account) = match authority.split_once('@') {
        Some((container, host)) if cloud == Cloud::Azure => {
            let account = host.split('.').next().unwrap_or(host);
            (container, Some(account.to_string()))
        }
        Some(_) => {
            return Err(bad(format!(
                "option '{option}' has user information in its URL ('{}'); give credentials \
                 through the cloudFiles credential options instead",
                tributary_sdk::redact::mask_url_userinfo(text)
            )))
        }
        None => (authority, None),
    };
    if bucket.is_empty() || account.as_deref() == Some("") {
        return Err(bad(format!(
            "option '{option}' names no {} in '{text}' (expected {scheme}://{}/<prefix>)",
            cloud.bucket_word(),
            if cloud == Cloud::Azure {
                "<container>@<account>.dfs.core.windows.net"
            } else {
                "<bucket>"
            }
        )));
    }
    let parts: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return Err(bad(format!(
            "option '{option}': '.' and '..' are not allowed in an object-store key ('{text}')"
        )));
    }
    Ok(SourcePath::Cloud(CloudPath {
        cloud,
        scheme: scheme.to_string(),
        authority: authority.to_string(),
        bucket: bucket.to_string(),
        account,
        key: parts.join("/"),
    }))
}

/// Splits a key `a/b/*/c*.json` into (`a/b`, `*/c*.json`) at the first component with a glob
/// character.
pub(crate) fn split_key_glob(key: &str) -> (String, Option<String>) {
    let mut dir: Vec<&str> = Vec::new();
    let mut rest: Vec<&str> = Vec::new();
    for part in key.split('/').filter(|p| !p.is_empty()) {
        if !rest.is_empty() || part.contains(['*', '?', '[', '{']) {
            rest.push(part);
        } else {
            dir.push(part);
        }
    }
    let pattern = (!rest.is_empty()).then(|| rest.join("/"));
    (dir.join("/"), pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud(text: &str) -> CloudPath {
        match parse("path", text).unwrap() {
            SourcePath::Cloud(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn object_store_urls() {
        let c = cloud("s3://landing-bucket/in/2024/");
        assert_eq!(
            (c.cloud, c.bucket.as_str(), c.key.as_str()),
            (Cloud::S3, "landing-bucket", "in/2024")
        );
        assert_eq!(c.to_string(), "s3://landing-bucket/in/2024");
        assert_eq!(cloud("s3a://b1/x").cloud, Cloud::S3);
        let g = cloud("gs://gbucket");
        assert_eq!((g.cloud, g.key.as_str()), (Cloud::Gcs, ""));
        let a = cloud("abfss://landing@acct.dfs.core.windows.net/raw/*.json");
        assert_eq!(a.cloud, Cloud::Azure);
        assert_eq!(a.bucket, "landing");
        assert_eq!(a.account.as_deref(), Some("acct"));
        assert_eq!(a.key, "raw/*.json");
        let z = cloud("az://landing/raw?x/{a,b}");
        assert_eq!(
            (z.bucket.as_str(), z.key.as_str(), z.account),
            ("landing", "raw?x/{a,b}", None)
        );
    }

    #[test]
    fn bad_urls_name_the_option() {
        for bad in ["s3:///key", "hdfs://nn/x", "s3://b1/../x", "s3://u@b1/x"] {
            let e = parse("path", bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad}");
            assert!(e.message().contains("'path'"), "{}", e.message());
        }
        assert!(matches!(
            parse("path", "file:///tmp/x").unwrap(),
            SourcePath::Local(_)
        ));
    }

    #[test]
    fn key_globs_split_at_the_first_glob_component() {
        assert_eq!(
            split_key_glob("in/2024/*/x*.json"),
            ("in/2024".into(), Some("*/x*.json".into()))
        );
        assert_eq!(split_key_glob("in"), ("in".into(), None));
        assert_eq!(split_key_glob(""), (String::new(), None));
    }
}
