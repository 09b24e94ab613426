//! The object store a source reads: a `LocalFileSystem` rooted at the listed directory, or an
//! S3, GCS or Azure Blob client for the bucket (container) that `path` names.
//!
//! [`StoreSpec`] is the resolved configuration (secrets resolved through the run's secret
//! store, held as [`Secret`]s that print `***`); [`StoreSpec::build`] makes a client from it
//! without I/O, so the synchronous build step can make one for its own I/O thread and the
//! source another for the run. [`access_error`] turns an object-store failure on the bucket
//! into one clear error: credentials missing or rejected (naming the bucket and what was
//! tried), bucket or prefix missing, or the store unreachable.

pub(crate) mod aws;
mod azure;
mod gcp;

use std::sync::Arc;
use std::time::Duration;

use object_store::list::PaginatedListStore;
use object_store::local::LocalFileSystem;
use object_store::{ClientOptions, ObjectStore, RetryConfig};
use tributary_sdk::{Error, ErrorCode, Result, Secret, SecretStore};

use crate::config::{CloudOptions, CloudPath};

pub(crate) use self::azure::ConnectionString;

/// Everything needed to make a client for the source's store.
#[derive(Debug, Clone)]
pub(crate) enum StoreSpec {
    /// A local directory (canonical).
    Local(std::path::PathBuf),
    /// A bucket or container.
    Cloud(Box<CloudSpec>),
}

/// A store's client: the object store, and (clouds) the same client's page-by-page listing
/// with a delimiter, which the fanned-out listing of [`crate::prefixes`] needs.
#[derive(Clone)]
pub(crate) struct Client {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// Its paginated listing (none for a local directory).
    pub pages: Pages,
}

/// A client's paginated listing, where the store has one.
#[derive(Clone, Default)]
pub(crate) struct Pages(pub Option<Arc<dyn PaginatedListStore>>);

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Pages(paginated)"
        } else {
            "Pages(none)"
        })
    }
}

impl Client {
    fn of<T: ObjectStore + PaginatedListStore>(store: T) -> Client {
        let store = Arc::new(store);
        Client {
            pages: Pages(Some(Arc::clone(&store) as Arc<dyn PaginatedListStore>)),
            store,
        }
    }
}

/// A resolved object-store configuration.
#[derive(Debug, Clone)]
pub(crate) struct CloudSpec {
    /// Bucket, key, store.
    pub path: CloudPath,
    /// The options, secrets resolved.
    pub options: ResolvedCloudOptions,
}

/// [`CloudOptions`] with each secret reference resolved to its value.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResolvedCloudOptions {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub aws_keys: Option<(Secret, Secret)>,
    pub role_arn: Option<String>,
    pub role_external_id: Option<String>,
    pub role_session_name: Option<String>,
    pub sts_endpoint: Option<String>,
    pub connection_string: Option<ConnectionString>,
    pub client_secret: Option<(String, Secret, String)>,
    pub service_account: Option<(String, Secret, Secret)>,
}

impl ResolvedCloudOptions {
    /// Resolves the secret references of `o` through `secrets`.
    pub fn resolve(o: &CloudOptions, secrets: &dyn SecretStore) -> Result<ResolvedCloudOptions> {
        let r = |s: &Option<Secret>| -> Result<Option<Secret>> {
            s.as_ref()
                .map(|s| tributary_sdk::secret::resolve_value(secrets, s.expose()))
                .transpose()
        };
        let connection_string = r(&o.connection_string)?
            .map(|s| ConnectionString::parse(&s))
            .transpose()?;
        Ok(ResolvedCloudOptions {
            endpoint: o.endpoint.clone(),
            region: o.region.clone(),
            aws_keys: r(&o.aws_access_key)?.zip(r(&o.aws_secret_key)?),
            role_arn: o.role_arn.clone(),
            role_external_id: o.role_external_id.clone(),
            role_session_name: o.role_session_name.clone(),
            sts_endpoint: o.sts_endpoint.clone(),
            connection_string,
            client_secret: match (&o.client_id, r(&o.client_secret)?, &o.tenant_id) {
                (Some(id), Some(secret), Some(tenant)) => {
                    Some((id.clone(), secret, tenant.clone()))
                }
                _ => None,
            },
            service_account: match (&o.client_email, r(&o.private_key)?, r(&o.private_key_id)?) {
                (Some(email), Some(key), Some(id)) => Some((email.clone(), key, id)),
                _ => None,
            },
        })
    }
}

impl StoreSpec {
    /// The spec for `path` (a canonical local directory, or a bucket).
    pub fn cloud(
        path: &CloudPath,
        options: &CloudOptions,
        secrets: &dyn SecretStore,
    ) -> Result<StoreSpec> {
        Ok(StoreSpec::Cloud(Box::new(CloudSpec {
            path: path.clone(),
            options: ResolvedCloudOptions::resolve(options, secrets)?,
        })))
    }

    /// A new client (no I/O).
    pub fn build(&self) -> Result<Arc<dyn ObjectStore>> {
        self.connect().map(|c| c.store)
    }

    /// A client, with the paginated listing of the clouds ([`Client::pages`]).
    pub fn connect(&self) -> Result<Client> {
        match self {
            StoreSpec::Local(root) => {
                let store = LocalFileSystem::new_with_prefix(root).map_err(|e| {
                    Error::new(
                        ErrorCode::SourceRead,
                        format!("cannot open the directory {}", root.display()),
                    )
                    .with_context("path", root.display())
                    .with_cause(e)
                })?;
                Ok(Client {
                    store: Arc::new(store),
                    pages: Pages(None),
                })
            }
            StoreSpec::Cloud(spec) => {
                let built = match spec.path.cloud {
                    crate::config::Cloud::S3 => aws::build(spec).map(Client::of),
                    crate::config::Cloud::Azure => azure::build(spec).map(Client::of),
                    crate::config::Cloud::Gcs => gcp::build(spec).map(Client::of),
                };
                built.map_err(|e| {
                    Error::new(
                        ErrorCode::InvalidOption,
                        format!(
                            "cannot configure the {} client for {}: {}",
                            spec.path.cloud.name(),
                            spec.path.root_url(),
                            redact(&e.to_string())
                        ),
                    )
                    .with_context("path", spec.path.root_url())
                })
            }
        }
    }

    /// What credentials this spec uses, for messages.
    pub fn credentials_tried(&self) -> String {
        match self {
            StoreSpec::Local(_) => "the local file system".into(),
            StoreSpec::Cloud(spec) => match spec.path.cloud {
                crate::config::Cloud::S3 => aws::tried(&spec.options),
                crate::config::Cloud::Azure => azure::tried(&spec.options, &spec.path),
                crate::config::Cloud::Gcs => gcp::tried(&spec.options),
            },
        }
    }
}

/// Client options shared by the cloud stores: plain HTTP allowed only for an explicit `http://`
/// endpoint (emulators), bounded timeouts.
fn client_options(endpoint: Option<&str>) -> ClientOptions {
    ClientOptions::new()
        .with_allow_http(endpoint.is_some_and(|e| e.starts_with("http://")))
        .with_connect_timeout(Duration::from_secs(10))
        .with_timeout(Duration::from_secs(120))
}

/// Retries: a few, within a minute (the store's default of three minutes hides a wrong endpoint).
fn retry() -> RetryConfig {
    RetryConfig {
        max_retries: 4,
        retry_timeout: Duration::from_secs(60),
        ..Default::default()
    }
}

/// Turns a failure to reach `what` (the bucket, a prefix or a file of `spec`) into one clear
/// error.
pub(crate) fn access_error(spec: &StoreSpec, what: &str, e: object_store::Error) -> Error {
    let StoreSpec::Cloud(cloud) = spec else {
        return Error::new(ErrorCode::SourceRead, format!("cannot read {what}: {e}"))
            .with_context("path", what)
            .with_cause(e);
    };
    let store = cloud.path.cloud.name();
    let bucket = format!("{} '{}'", cloud.path.cloud.bucket_word(), cloud.path.bucket);
    let tried = spec.credentials_tried();
    // Matched on the whole text; printed as one line (an S3 XML body becomes `Code: Message`).
    let raw = redact(&e.to_string());
    let text = tributary_sdk::one_line::one_line(&raw);
    let lower = raw.to_ascii_lowercase();
    let status = |codes: &[&str]| codes.iter().any(|c| raw.contains(c));
    let rejected = status(&[
        "403 Forbidden",
        "401 Unauthorized",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "AuthenticationFailed",
        "AuthorizationFailure",
    ]);
    let missing = status(&["NoSuchBucket", "ContainerNotFound", "404 Not Found"]);
    let error = match &e {
        _ if rejected => Error::new(
            ErrorCode::Authentication,
            format!(
                "{store} rejected the credentials for {bucket} ({what}); tried {tried}: {text}"
            ),
        ),
        _ if missing => Error::new(
            ErrorCode::InvalidOption,
            format!("option 'path': the {bucket} of {what} does not exist in {store} ({text})"),
        )
        .with_context("option", crate::config::names::PATH),
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => Error::new(
            ErrorCode::Authentication,
            format!(
                "{store} rejected the credentials for {bucket} ({what}); tried {tried}: {text}"
            ),
        ),
        object_store::Error::NotFound { .. } => Error::new(
            ErrorCode::InvalidOption,
            format!("option 'path': the {bucket} of {what} does not exist in {store} ({text})"),
        )
        .with_context("option", crate::config::names::PATH),
        _ if is_credential_failure(&lower) => Error::new(
            ErrorCode::Authentication,
            format!("no usable {store} credentials for {bucket} ({what}); tried {tried}: {text}"),
        ),
        _ => Error::new(
            ErrorCode::Connection,
            format!("cannot reach {store} for {bucket} ({what}): {text}"),
        ),
    };
    error
        .with_context("path", what)
        .with_context("bucket", &cloud.path.bucket)
}

/// An object-store message without credentials: URL user info and JAAS-style passwords (the
/// SDK's redaction), and the signature and credential parameters of signed URLs (`sig=` of an
/// Azure SAS, `X-Amz-Signature`/`X-Amz-Credential`/`X-Amz-Security-Token`).
pub(crate) fn redact(text: &str) -> String {
    // The SDK masks the user info of one URL: apply it to each word.
    let mut out = text
        .split(' ')
        .map(|w| tributary_sdk::options::redact_embedded(w).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    for param in [
        "sig=",
        "X-Amz-Signature=",
        "X-Amz-Credential=",
        "X-Amz-Security-Token=",
    ] {
        let mut from = 0;
        while let Some(i) = out[from..].find(param) {
            let start = from + i + param.len();
            let end = out[start..]
                .find(|c: char| c == '&' || c == '"' || c == '\'' || c.is_whitespace())
                .map_or(out.len(), |j| start + j);
            out.replace_range(start..end, "***");
            from = start + 3;
        }
    }
    out
}

/// Messages of credential providers that found nothing (object_store's and ours).
fn is_credential_failure(lower: &str) -> bool {
    [
        "credential",
        "no aws credentials",
        "token",
        "authorization",
        "imds",
        "metadata",
        "forbidden",
        "signature",
        "invalidaccesskeyid",
        "access denied",
        "accessdenied",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    #[test]
    fn signed_url_parameters_are_redacted() {
        let t = super::redact("GET https://a.blob.core.windows.net/c/x?sv=2021&sig=c2VjcmV0&se=1 failed; https://u:pw@h/");
        assert!(!t.contains("c2VjcmV0") && !t.contains(":pw@"), "{t}");
        assert!(t.contains("sig=***&se=1"), "{t}");
    }
}
