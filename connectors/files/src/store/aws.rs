//! S3 (and S3-compatible stores): object_store's `AmazonS3` with credentials from the options
//! (`cloudFiles.awsAccessKey`/`cloudFiles.awsSecretKey`), else the AWS SDK's default chain
//! (environment, shared config and credentials files with profiles and SSO, web identity,
//! ECS container, EC2 instance metadata), optionally assuming `cloudFiles.roleArn`.
//!
//! object_store's own chain knows no profiles and no assume-role, so the AWS SDK's chain is
//! bridged in ([`SdkChain`]). The SDK's providers do not cache, so the bridge keeps the last
//! credentials until five minutes before they expire (a few lines written here: the SDK's
//! identity cache is built for its own clients and is not reachable from outside).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_config::sts::AssumeRoleProvider;
use aws_config::BehaviorVersion;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use object_store::aws::{AmazonS3, AmazonS3Builder, AwsCredential};
use object_store::CredentialProvider;
use tokio::sync::{Mutex, OnceCell};

use super::{client_options, retry, CloudSpec, ResolvedCloudOptions};

/// The S3 client for `spec`'s bucket.
pub(super) fn build(spec: &CloudSpec) -> object_store::Result<AmazonS3> {
    let o = &spec.options;
    let region = region(o);
    let mut b = AmazonS3Builder::new()
        .with_bucket_name(&spec.path.bucket)
        .with_region(&region)
        .with_client_options(client_options(o.endpoint.as_deref()))
        .with_retry(retry());
    if let Some(endpoint) = &o.endpoint {
        b = b
            .with_endpoint(endpoint)
            .with_virtual_hosted_style_request(false);
    }
    b = match (&o.aws_keys, &o.role_arn) {
        (Some((key, secret)), None) => b
            .with_access_key_id(key.expose())
            .with_secret_access_key(secret.expose()),
        _ => b.with_credentials(Arc::new(SdkChain::new(o.clone(), region))),
    };
    b.build()
}

/// What credentials are tried, for messages.
pub(super) fn tried(o: &ResolvedCloudOptions) -> String {
    let base = if o.aws_keys.is_some() {
        "the key pair in cloudFiles.awsAccessKey/cloudFiles.awsSecretKey".to_string()
    } else {
        "the AWS default credential chain (environment variables AWS_ACCESS_KEY_ID/\
         AWS_SECRET_ACCESS_KEY, shared config and credentials files (AWS_PROFILE), web identity \
         token, ECS container credentials, EC2 instance metadata)"
            .to_string()
    };
    match &o.role_arn {
        Some(role) => format!("{base}, then assuming the role {role} (cloudFiles.roleArn)"),
        None => base,
    }
}

/// The AWS SDK's credential chain as an object_store credential provider.
#[derive(Debug)]
struct SdkChain {
    options: ResolvedCloudOptions,
    region: String,
    provider: OnceCell<SharedCredentialsProvider>,
    cached: Mutex<Option<(Arc<AwsCredential>, Option<SystemTime>)>>,
}

impl SdkChain {
    fn new(options: ResolvedCloudOptions, region: String) -> SdkChain {
        SdkChain {
            options,
            region,
            provider: OnceCell::new(),
            cached: Mutex::new(None),
        }
    }

    async fn make_provider(&self) -> SharedCredentialsProvider {
        credentials_provider(&self.options, &self.region).await
    }
}

/// The AWS credentials the options ask for: the key pair, else the SDK's default chain, then
/// `cloudFiles.roleArn` assumed with them (S3 and the SQS queue of notification mode).
pub(crate) async fn credentials_provider(
    o: &ResolvedCloudOptions,
    region: &str,
) -> SharedCredentialsProvider {
    {
        let region = aws_config::Region::new(region.to_string());
        let base: SharedCredentialsProvider = match &o.aws_keys {
            Some((key, secret)) => {
                SharedCredentialsProvider::new(aws_credential_types::Credentials::new(
                    key.expose(),
                    secret.expose(),
                    None,
                    None,
                    "cloudFiles.awsAccessKey",
                ))
            }
            None => SharedCredentialsProvider::new(
                aws_config::default_provider::credentials::DefaultCredentialsChain::builder()
                    .region(region.clone())
                    .build()
                    .await,
            ),
        };
        let Some(role) = &o.role_arn else {
            return base;
        };
        let mut config = aws_config::SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(region.clone())
            .credentials_provider(base);
        if let Some(endpoint) = &o.sts_endpoint {
            config = config.endpoint_url(endpoint);
        }
        let mut assume = AssumeRoleProvider::builder(role)
            .region(region)
            .configure(&config.build());
        if let Some(id) = &o.role_external_id {
            assume = assume.external_id(id);
        }
        if let Some(name) = &o.role_session_name {
            assume = assume.session_name(name);
        }
        SharedCredentialsProvider::new(assume.build().await)
    }
}

/// The region of `o` (option, then `AWS_REGION`/`AWS_DEFAULT_REGION`, then us-east-1).
pub(crate) fn region(o: &ResolvedCloudOptions) -> String {
    o.region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .unwrap_or_else(|| "us-east-1".to_string())
}

#[async_trait]
impl CredentialProvider for SdkChain {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let mut cached = self.cached.lock().await;
        if let Some((credential, expiry)) = cached.as_ref() {
            let fresh = expiry.is_none_or(|t| {
                t.duration_since(SystemTime::now())
                    .is_ok_and(|left| left > Duration::from_secs(300))
            });
            if fresh {
                return Ok(credential.clone());
            }
        }
        let provider = self.provider.get_or_init(|| self.make_provider()).await;
        let c = provider
            .provide_credentials()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: format!("no AWS credentials: {}", aws_error_text(&e)).into(),
            })?;
        let credential = Arc::new(AwsCredential {
            key_id: c.access_key_id().to_string(),
            secret_key: c.secret_access_key().to_string(),
            token: c.session_token().map(str::to_string),
        });
        *cached = Some((credential.clone(), c.expiry()));
        Ok(credential)
    }
}

/// The error and its causes on one line (the SDK's `Display` names only the outermost).
fn aws_error_text(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
