//! Building an `aws-sdk-kinesis` client from [`ConnectionSettings`]: region, custom endpoint,
//! credentials (static keys from secret references, a shared-config profile, STS assume-role,
//! or the default provider chain) and a custom CA for the endpoint. TLS verification is always
//! on; `tls.truststore.location` replaces the system roots with the given PEM certificates.

use std::sync::Arc;

use aws_config::meta::region::RegionProviderChain;
use aws_config::sts::AssumeRoleProvider;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_sdk_kinesis::Client;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use tributary_sdk::secret::resolve_value;
use tributary_sdk::{Error, ErrorCode, Result, SecretStore};

use crate::config::{BaseCredentials, ConnectionSettings};

/// The region used when neither the `region` option nor the AWS chain gives one.
pub const FALLBACK_REGION: &str = "us-east-1";

/// How long a connection may take to open (the AWS SDK's own default is 3.1 s).
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a call may wait for the first byte of its response before the attempt fails and
/// the SDK's retry policy takes over (GetRecords answers in well under a second).
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Builds a Kinesis client: resolves secrets, reads the CA file, loads the AWS configuration
/// and assumes the role if asked. Nothing is sent to Kinesis yet.
pub async fn build_client(
    settings: &ConnectionSettings,
    secrets: &dyn SecretStore,
) -> Result<Client> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).region(
        RegionProviderChain::first_try(settings.region.clone().map(Region::new))
            .or_default_provider()
            .or_else(Region::new(FALLBACK_REGION)),
    );
    match &settings.credentials {
        BaseCredentials::Static {
            access_key,
            secret_key,
        } => {
            let ak = resolve_value(secrets, access_key.expose())
                .map_err(|e| e.with_context("option", "awsAccessKey"))?;
            let sk = resolve_value(secrets, secret_key.expose())
                .map_err(|e| e.with_context("option", "awsSecretKey"))?;
            loader = loader.credentials_provider(Credentials::new(
                ak.expose(),
                sk.expose(),
                None,
                None,
                "tributary-static",
            ));
        }
        BaseCredentials::Profile(name) => loader = loader.profile_name(name),
        BaseCredentials::DefaultChain => {}
    }
    if let Some(path) = &settings.ca_file {
        loader = loader.http_client(https_client_with_ca(path)?);
    }
    // The SDK sets no read timeout: a server that accepts the connection and never answers
    // (a stalled proxy, a half-open connection) held a call forever. A response's first byte
    // must come within READ_TIMEOUT; SubscribeToShard's initial response comes at once, so the
    // stream that follows is not cut.
    loader = loader.timeout_config(
        aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build(),
    );
    let base = loader.load().await;
    let mut builder = aws_sdk_kinesis::config::Builder::from(&base);
    if let Some(role) = &settings.assume_role {
        // stsEndpoint: the STS client is built from this configuration alone.
        let sts_config = match &role.sts_endpoint {
            Some(e) => base
                .clone()
                .into_builder()
                .endpoint_url(e.trim_end_matches('/'))
                .build(),
            None => base.clone(),
        };
        let mut provider = AssumeRoleProvider::builder(role.role_arn.clone())
            .session_name(role.session_name.clone())
            .configure(&sts_config);
        if let Some(id) = &role.external_id {
            provider = provider.external_id(id.clone());
        }
        builder = builder.credentials_provider(provider.build().await);
    }
    if let Some(endpoint) = &settings.endpoint {
        builder = builder.endpoint_url(endpoint.trim_end_matches('/'));
    }
    Ok(Client::from_conf(builder.build()))
}

/// The SDK configuration the client was built from is not kept; this is for callers that need
/// the same HTTP client elsewhere.
pub fn https_client_with_ca(
    path: &std::path::Path,
) -> Result<aws_sdk_kinesis::config::SharedHttpClient> {
    let pem = std::fs::read(path).map_err(|e| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "cannot read the CA file '{}' given in 'tls.truststore.location'",
                path.display()
            ),
        )
        .with_context("option", "tls.truststore.location")
        .with_cause(e)
    })?;
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "the file '{}' given in 'tls.truststore.location' holds no PEM certificate",
                path.display()
            ),
        )
        .with_context("option", "tls.truststore.location"));
    }
    let ctx = TlsContext::builder()
        .with_trust_store(
            TrustStore::empty()
                .with_native_roots(false)
                .with_pem_certificate(pem),
        )
        .build()
        .map_err(|e| {
            Error::new(
                ErrorCode::InvalidOption,
                "the CA in 'tls.truststore.location' is not usable",
            )
            .with_context("option", "tls.truststore.location")
            .with_cause(e)
        })?;
    Ok(aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ))
        .tls_context(ctx)
        .build_https())
}

/// A shared client, built on first use.
#[derive(Debug, Clone, Default)]
pub(crate) struct LazyClient {
    client: Option<Arc<Client>>,
}

impl LazyClient {
    /// A client given by the caller.
    pub fn ready(client: Client) -> Self {
        LazyClient {
            client: Some(Arc::new(client)),
        }
    }

    /// The client, built from `settings` the first time.
    pub async fn get(
        &mut self,
        settings: &ConnectionSettings,
        secrets: &dyn SecretStore,
    ) -> Result<Arc<Client>> {
        if let Some(c) = &self.client {
            return Ok(c.clone());
        }
        let c = Arc::new(build_client(settings, secrets).await?);
        self.client = Some(c.clone());
        Ok(c)
    }
}

/// The SDK config type, re-exported for the consumer manager's callers.
pub type AwsSdkConfig = SdkConfig;
