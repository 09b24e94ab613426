//! Secrets: references in configuration, values that never print.
//!
//! Configuration never holds a secret value directly; it holds a [`SecretRef`] written as
//! `{{secrets/<scope>/<key>}}` (the Databricks notation) and a [`SecretStore`] resolves it at start.
//! Built-in stores: [`EnvSecretStore`] (scope `env`, key = variable name) and [`FileSecretStore`]
//! (`<dir>/<scope>/<key>`, one secret per file, trailing newline removed). The resolved
//! [`Secret`] prints `***` in `Debug` and `Display`; only [`Secret::expose`] reveals it.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, ErrorCode, Result};

/// A secret value. `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself. Call only where it is handed to a client library.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A reference to a secret: a scope and a key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SecretRef {
    /// The store scope (`env`, or a directory name for the file store).
    pub scope: String,
    /// The key within the scope.
    pub key: String,
}

impl SecretRef {
    /// A new reference.
    pub fn new(scope: impl Into<String>, key: impl Into<String>) -> Self {
        SecretRef {
            scope: scope.into(),
            key: key.into(),
        }
    }

    /// Parses `{{secrets/<scope>/<key>}}`; returns `None` for any other text.
    pub fn parse(text: &str) -> Option<SecretRef> {
        let inner = text
            .trim()
            .strip_prefix("{{")?
            .strip_suffix("}}")?
            .trim()
            .strip_prefix("secrets/")?;
        let (scope, key) = inner.split_once('/')?;
        if scope.is_empty() || key.is_empty() || key.contains('/') {
            return None;
        }
        Some(SecretRef::new(scope, key))
    }
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{{secrets/{}/{}}}}}", self.scope, self.key)
    }
}

/// Resolves secret references.
pub trait SecretStore: Send + Sync + fmt::Debug {
    /// The secret, or `SECRET_NOT_FOUND` naming the reference (never a value).
    fn resolve(&self, reference: &SecretRef) -> Result<Secret>;
}

/// Resolves an option value: a `{{secrets/scope/key}}` reference through the store, or the
/// literal text (for options such as `kafka.sasl.username` that may be given in the clear).
pub fn resolve_value(store: &dyn SecretStore, value: &str) -> Result<Secret> {
    match SecretRef::parse(value) {
        Some(r) => store.resolve(&r),
        None => Ok(Secret::new(value)),
    }
}

fn not_found(reference: &SecretRef, why: &str) -> Error {
    Error::new(
        ErrorCode::SecretNotFound,
        format!("secret {reference} cannot be resolved: {why}"),
    )
}

/// Scope `env`: the key is an environment variable name.
#[derive(Debug, Default, Clone)]
pub struct EnvSecretStore;

impl SecretStore for EnvSecretStore {
    fn resolve(&self, reference: &SecretRef) -> Result<Secret> {
        if reference.scope != "env" {
            return Err(not_found(
                reference,
                "the environment store only serves scope 'env'",
            ));
        }
        std::env::var(&reference.key)
            .map(Secret::new)
            .map_err(|_| not_found(reference, "the environment variable is not set"))
    }
}

/// Reads `<root>/<scope>/<key>`; a trailing newline is removed.
#[derive(Debug, Clone)]
pub struct FileSecretStore {
    root: PathBuf,
}

impl FileSecretStore {
    /// A store rooted at a directory.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileSecretStore { root: root.into() }
    }
}

impl SecretStore for FileSecretStore {
    fn resolve(&self, reference: &SecretRef) -> Result<Secret> {
        let bad = |p: &str| p.is_empty() || p == "." || p == ".." || p.contains(['/', '\\']);
        if bad(&reference.scope) || bad(&reference.key) {
            return Err(not_found(reference, "scope and key must be plain names"));
        }
        let path = self.root.join(&reference.scope).join(&reference.key);
        std::fs::read_to_string(&path)
            .map(|s| Secret::new(s.trim_end_matches(['\n', '\r'])))
            .map_err(|e| not_found(reference, &format!("{}: {e}", path.display())))
    }
}

/// Tries several stores in order; the first that knows the scope answers.
#[derive(Debug, Default)]
pub struct ChainSecretStore {
    stores: Vec<Box<dyn SecretStore>>,
}

impl ChainSecretStore {
    /// An empty chain.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a store.
    pub fn with(mut self, store: impl SecretStore + 'static) -> Self {
        self.stores.push(Box::new(store));
        self
    }
}

impl SecretStore for ChainSecretStore {
    fn resolve(&self, reference: &SecretRef) -> Result<Secret> {
        let mut last = None;
        for s in &self.stores {
            match s.resolve(reference) {
                Ok(v) => return Ok(v),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| not_found(reference, "no secret store is configured")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "Secret(***) ***");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn references_parse_in_databricks_notation() {
        assert_eq!(
            SecretRef::parse("{{secrets/kafka/password}}"),
            Some(SecretRef::new("kafka", "password"))
        );
        assert_eq!(SecretRef::parse("{{secrets/kafka}}"), None);
        assert_eq!(SecretRef::parse("plain"), None);
        assert_eq!(
            SecretRef::new("a", "b").to_string(),
            "{{secrets/a/b}}".to_string()
        );
    }

    #[test]
    fn file_store_reads_and_refuses_traversal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("kafka")).unwrap();
        std::fs::write(dir.path().join("kafka/pw"), "s3cret\n").unwrap();
        let store = FileSecretStore::new(dir.path());
        assert_eq!(
            store
                .resolve(&SecretRef::new("kafka", "pw"))
                .unwrap()
                .expose(),
            "s3cret"
        );
        let e = store.resolve(&SecretRef::new("..", "pw")).unwrap_err();
        assert_eq!(e.code(), ErrorCode::SecretNotFound);
        let e = store.resolve(&SecretRef::new("kafka", "nope")).unwrap_err();
        assert!(e.message().contains("{{secrets/kafka/nope}}"));
    }

    #[test]
    fn chain_falls_through_to_the_store_that_knows() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("s")).unwrap();
        std::fs::write(dir.path().join("s/k"), "v").unwrap();
        let chain = ChainSecretStore::new()
            .with(EnvSecretStore)
            .with(FileSecretStore::new(dir.path()));
        assert_eq!(
            resolve_value(&chain, "{{secrets/s/k}}").unwrap().expose(),
            "v"
        );
        assert_eq!(
            resolve_value(&chain, "literal").unwrap().expose(),
            "literal"
        );
    }
}
