//! AWS MSK IAM: SASL OAUTHBEARER with a SigV4-presigned `kafka-cluster:Connect` URL as the token.
//!
//! The token format is the one of AWS's MSK IAM SASL signers: the URL
//! `https://kafka.<region>.amazonaws.com/?Action=kafka-cluster%3AConnect` presigned with SigV4
//! (service `kafka-cluster`, query-string signature, 900 s expiry), a `User-Agent` query
//! parameter appended, the whole URL base64url-encoded without padding. Signing is done by
//! `aws-sigv4`; credentials come from the standard AWS chain (`aws-config`: environment, profile,
//! web identity, ECS/EC2 metadata). librdkafka asks for a fresh token before the old one expires
//! (the connector's client context calls [`MskIamAuthenticator::token_blocking`]).
//!
//! No MSK cluster is reachable from the test machines, so the token shape and signature are
//! unit-tested here; the OAUTHBEARER handshake against a real cluster is not.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::Credentials as AwsCredentials;
use base64::Engine;
use rdkafka::ClientConfig;
use tributary_sdk::{Authenticator, Credentials, Error, ErrorCode, Result, Secret};

const SIGNING_NAME: &str = "kafka-cluster";
const EXPIRY: Duration = Duration::from_secs(900);
/// Refresh a cached token this long before it expires.
const REFRESH_MARGIN: Duration = Duration::from_secs(120);
const PRINCIPAL: &str = "tributary-msk-iam";

/// Builds an MSK IAM token from credentials at `now`: the signed URL, base64url without padding,
/// and when it expires.
pub fn msk_iam_token(
    region: &str,
    credentials: &AwsCredentials,
    now: SystemTime,
) -> Result<(Secret, SystemTime)> {
    use aws_sigv4::http_request::{
        sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    };
    use aws_sigv4::sign::v4;

    let failed = |what: &str, e: &dyn std::fmt::Display| {
        Error::new(
            ErrorCode::Authentication,
            format!("cannot build the MSK IAM token: {what}: {e}"),
        )
    };
    let mut url = url::Url::parse(&format!("https://kafka.{region}.amazonaws.com/"))
        .map_err(|e| failed("bad region", &e))?;
    url.query_pairs_mut()
        .append_pair("Action", "kafka-cluster:Connect");
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(EXPIRY);
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SIGNING_NAME)
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| failed("signing parameters", &e))?;
    let request = SignableRequest::new(
        "GET",
        url.as_str(),
        std::iter::empty(),
        SignableBody::Bytes(&[]),
    )
    .map_err(|e| failed("request", &e))?;
    let (instructions, _) = sign(request, &params.into())
        .map_err(|e| failed("signing", &e))?
        .into_parts();
    {
        let mut q = url.query_pairs_mut();
        for (name, value) in instructions.params() {
            q.append_pair(name, value);
        }
        q.append_pair(
            "User-Agent",
            concat!("tributary-kafka/", env!("CARGO_PKG_VERSION")),
        );
    }
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(url.as_str());
    Ok((Secret::new(token), now + EXPIRY))
}

/// MSK IAM tokens from the standard AWS credential chain, cached until shortly before expiry.
#[derive(Debug)]
pub struct MskIamAuthenticator {
    region: Option<String>,
    cached: Mutex<Option<(Secret, SystemTime)>>,
}

impl MskIamAuthenticator {
    /// An authenticator for a region (`None`: the region of the AWS chain, e.g. `AWS_REGION`).
    pub fn new(region: Option<String>) -> Self {
        MskIamAuthenticator {
            region,
            cached: Mutex::new(None),
        }
    }

    /// Sets `security.protocol=SASL_SSL` and `sasl.mechanism=OAUTHBEARER`.
    pub(crate) fn apply(&self, config: &mut ClientConfig) {
        config
            .set("security.protocol", "SASL_SSL")
            .set("sasl.mechanism", "OAUTHBEARER");
    }

    /// The current token, fetched on a thread of its own (callable from librdkafka's threads and
    /// from inside an async runtime alike).
    pub fn token_blocking(&self) -> Result<(Secret, SystemTime)> {
        if let Ok(guard) = self.cached.lock() {
            if let Some((t, exp)) = guard.as_ref() {
                if *exp > SystemTime::now() + REFRESH_MARGIN {
                    return Ok((t.clone(), *exp));
                }
            }
        }
        let region = self.region.clone();
        let fresh = std::thread::spawn(move || -> Result<(Secret, SystemTime)> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    Error::new(ErrorCode::Internal, "cannot start a runtime").with_cause(e)
                })?;
            rt.block_on(fetch_token(region))
        })
        .join()
        .map_err(|_| Error::new(ErrorCode::Internal, "the MSK IAM token thread panicked"))??;
        if let Ok(mut guard) = self.cached.lock() {
            *guard = Some(fresh.clone());
        }
        Ok(fresh)
    }
}

async fn fetch_token(region: Option<String>) -> Result<(Secret, SystemTime)> {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(r) = region {
        loader = loader.region(aws_config::Region::new(r));
    }
    let sdk = loader.load().await;
    let region = sdk.region().map(|r| r.to_string()).ok_or_else(|| {
        Error::new(
            ErrorCode::Authentication,
            "MSK IAM needs an AWS region: set auth.awsRegion or AWS_REGION",
        )
        .with_context("option", "auth.awsRegion")
    })?;
    let provider = sdk.credentials_provider().ok_or_else(|| {
        Error::new(
            ErrorCode::Authentication,
            "no AWS credentials provider is configured",
        )
    })?;
    let creds = provider.provide_credentials().await.map_err(|e| {
        Error::new(
            ErrorCode::Authentication,
            format!("cannot load AWS credentials from the default chain: {e}"),
        )
    })?;
    msk_iam_token(&region, &creds, SystemTime::now())
}

#[async_trait]
impl Authenticator for MskIamAuthenticator {
    fn name(&self) -> &str {
        "msk-iam"
    }

    async fn credentials(&self) -> Result<Credentials> {
        let (token, expires_at) = self.token_blocking()?;
        Ok(Credentials::BearerToken {
            token,
            principal: PRINCIPAL.to_string(),
            expires_at,
        })
    }
}

/// The principal name given to librdkafka with each token.
pub(crate) fn principal() -> &'static str {
    PRINCIPAL
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn decode(token: &Secret) -> url::Url {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.expose())
            .unwrap();
        url::Url::parse(std::str::from_utf8(&bytes).unwrap()).unwrap()
    }

    #[test]
    fn token_is_a_presigned_connect_url() {
        let creds = AwsCredentials::new(
            "AKIDEXAMPLE",
            "secret-key",
            Some("session".into()),
            None,
            "test",
        );
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let (token, expires) = msk_iam_token("eu-west-1", &creds, now).unwrap();
        assert!(!token.expose().contains('='), "no padding");
        assert_eq!(expires, now + Duration::from_secs(900));
        let url = decode(&token);
        assert_eq!(url.host_str(), Some("kafka.eu-west-1.amazonaws.com"));
        let q: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(q["Action"], "kafka-cluster:Connect");
        assert_eq!(q["X-Amz-Algorithm"], "AWS4-HMAC-SHA256");
        assert_eq!(
            q["X-Amz-Credential"],
            "AKIDEXAMPLE/20231114/eu-west-1/kafka-cluster/aws4_request"
        );
        assert_eq!(q["X-Amz-Date"], "20231114T221320Z");
        assert_eq!(q["X-Amz-Expires"], "900");
        assert_eq!(q["X-Amz-SignedHeaders"], "host");
        assert_eq!(q["X-Amz-Security-Token"], "session");
        assert!(q["User-Agent"].starts_with("tributary-kafka/"));
        let sig = &q["X-Amz-Signature"];
        assert_eq!(sig.len(), 64);
        assert!(sig.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!url.as_str().contains("secret-key"));
    }

    #[test]
    fn signature_depends_on_the_secret_and_is_deterministic() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let a = AwsCredentials::new("AKID", "one", None, None, "t");
        let b = AwsCredentials::new("AKID", "two", None, None, "t");
        let sig = |c: &AwsCredentials| {
            let (t, _) = msk_iam_token("us-east-1", c, now).unwrap();
            decode(&t)
                .query_pairs()
                .find(|(k, _)| k == "X-Amz-Signature")
                .map(|(_, v)| v.into_owned())
                .unwrap()
        };
        assert_eq!(sig(&a), sig(&a));
        assert_ne!(sig(&a), sig(&b));
    }

    #[test]
    fn client_config_uses_oauthbearer_over_tls() {
        let a = MskIamAuthenticator::new(Some("us-east-1".into()));
        let mut c = ClientConfig::new();
        a.apply(&mut c);
        assert_eq!(c.get("sasl.mechanism"), Some("OAUTHBEARER"));
        assert_eq!(c.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(a.name(), "msk-iam");
    }
}
