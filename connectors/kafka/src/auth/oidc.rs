//! Generic SASL OAUTHBEARER with OIDC client credentials (Confluent Cloud, Microsoft Entra ID,
//! Okta, Keycloak, ...), with librdkafka's property names: `sasl.oauthbearer.method=oidc`,
//! `sasl.oauthbearer.token.endpoint.url`, `sasl.oauthbearer.client.id`,
//! `sasl.oauthbearer.client.secret`, `sasl.oauthbearer.scope`. (`sasl.oauthbearer.extensions`
//! is refused: the token callback of rdkafka 0.39 cannot hand SASL extensions to librdkafka.)
//!
//! The librdkafka bundled here is built without libcurl, so its own OIDC fetcher is not
//! available: the token is fetched in Rust, in the client context's OAUTHBEARER refresh
//! callback, as librdkafka's fetcher does it — an RFC 6749 client-credentials request
//! (`POST`, form body `grant_type=client_credentials` and `scope`, the client id and secret as
//! HTTP basic authentication) whose JSON answer gives `access_token` and `expires_in`. The
//! principal given to librdkafka is the token's `sub` claim (the client id when the token is
//! not a JWT). librdkafka calls the callback again at 80 % of the token's lifetime, so the
//! token is refreshed before it expires; a token is reused (by the other clients of the same
//! profile) only while less than half of its lifetime has passed.
//!
//! The client secret is a [`Secret`]: it prints `***`, and no error quotes it (nor the token,
//! nor the endpoint's user information).

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use base64::Engine;
use rdkafka::ClientConfig;
use tributary_sdk::{Authenticator, Credentials, Error, ErrorCode, Result, Secret};

/// Longest one token request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The options, for messages.
pub(crate) const ENDPOINT_OPTION: &str = "kafka.sasl.oauthbearer.token.endpoint.url";

/// What the OIDC client-credentials flow needs (secret resolved).
#[derive(Clone)]
pub struct OidcSettings {
    /// The token endpoint (`https://.../oauth2/token`).
    pub token_endpoint: String,
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: Secret,
    /// The scope asked for, if any.
    pub scope: Option<String>,
}

impl fmt::Debug for OidcSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcSettings")
            .field(
                "token_endpoint",
                &tributary_sdk::redact::mask_url_userinfo(&self.token_endpoint),
            )
            .field("client_id", &self.client_id)
            .field("client_secret", &"***")
            .field("scope", &self.scope)
            .finish()
    }
}

/// A token, when it expires, and how long it was given for.
#[derive(Clone)]
pub struct OidcToken {
    /// The access token.
    pub token: Secret,
    /// The principal (the `sub` claim, or the client id).
    pub principal: String,
    /// When the token expires.
    pub expires_at: SystemTime,
    /// When it was fetched.
    pub fetched_at: SystemTime,
}

impl fmt::Debug for OidcToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcToken")
            .field("token", &"***")
            .field("principal", &self.principal)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// OAUTHBEARER tokens from an OIDC token endpoint (client credentials).
#[derive(Debug)]
pub struct OidcAuthenticator {
    settings: OidcSettings,
    cached: Mutex<Option<OidcToken>>,
}

fn failed(what: impl fmt::Display) -> Error {
    Error::new(
        ErrorCode::Authentication,
        format!("cannot get an OAUTHBEARER token: {what}"),
    )
    .with_context("option", ENDPOINT_OPTION)
}

/// The `sub` claim of a JWT (`header.payload.signature`), if the token is one.
fn subject(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("sub")?.as_str().map(str::to_string)
}

impl OidcAuthenticator {
    /// An authenticator for these settings; nothing is fetched yet.
    pub fn new(settings: OidcSettings) -> Self {
        OidcAuthenticator {
            settings,
            cached: Mutex::new(None),
        }
    }

    /// Sets `sasl.mechanism=OAUTHBEARER` (the security protocol comes from the profile's TLS
    /// setting).
    pub(crate) fn apply(&self, config: &mut ClientConfig) {
        config.set("sasl.mechanism", "OAUTHBEARER");
    }

    /// The current token: the cached one while less than half of its lifetime has passed,
    /// else a fresh one, fetched on a thread of its own (callable from librdkafka's threads and
    /// from inside an async runtime alike).
    pub fn token_blocking(&self) -> Result<OidcToken> {
        if let Ok(guard) = self.cached.lock() {
            if let Some(t) = guard.as_ref() {
                let lifetime = t
                    .expires_at
                    .duration_since(t.fetched_at)
                    .unwrap_or_default();
                let age = SystemTime::now()
                    .duration_since(t.fetched_at)
                    .unwrap_or_default();
                if age < lifetime / 2 {
                    return Ok(t.clone());
                }
            }
        }
        let settings = self.settings.clone();
        let fresh = std::thread::spawn(move || -> Result<OidcToken> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    Error::new(ErrorCode::Internal, "cannot start a runtime").with_cause(e)
                })?;
            rt.block_on(fetch_token(&settings))
        })
        .join()
        .map_err(|_| Error::new(ErrorCode::Internal, "the OIDC token thread panicked"))??;
        if let Ok(mut guard) = self.cached.lock() {
            *guard = Some(fresh.clone());
        }
        Ok(fresh)
    }
}

/// One client-credentials request.
pub async fn fetch_token(s: &OidcSettings) -> Result<OidcToken> {
    let endpoint = tributary_sdk::redact::mask_url_userinfo(&s.token_endpoint).into_owned();
    let client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| failed(format!("cannot build an HTTP client: {e}")))?;
    let mut form = vec![("grant_type", "client_credentials".to_string())];
    if let Some(scope) = &s.scope {
        form.push(("scope", scope.clone()));
    }
    let body = form
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
            )
        })
        .collect::<Vec<_>>()
        .join("&");
    let fetched_at = SystemTime::now();
    let response = client
        .post(&s.token_endpoint)
        .basic_auth(&s.client_id, Some(s.client_secret.expose()))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(body)
        .send()
        .await
        // reqwest's error names the URL; without it, nothing of the request is shown.
        .map_err(|e| {
            failed(format!(
                "the token endpoint {endpoint} did not answer: {}",
                e.without_url()
            ))
        })?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(|e| {
        failed(format!(
            "reading the answer of {endpoint} failed: {}",
            e.without_url()
        ))
    })?;
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if !status.is_success() {
        // Only the standard error fields: the rest of a body is not shown.
        let code = json.get("error").and_then(|v| v.as_str()).unwrap_or("");
        let description = json
            .get("error_description")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        return Err(failed(format!(
            "the token endpoint {endpoint} answered {status}{}{}",
            if code.is_empty() {
                String::new()
            } else {
                format!(": {code}")
            },
            if description.is_empty() {
                String::new()
            } else {
                format!(" ({description})")
            },
        )));
    }
    let token = json
        .get("access_token")
        .and_then(|v| v.as_str())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| failed(format!("the answer of {endpoint} has no access_token")))?;
    let expires_in = json
        .get("expires_in")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .ok_or_else(|| failed(format!("the answer of {endpoint} has no expires_in")))?;
    if expires_in == 0 {
        return Err(failed(format!(
            "the token of {endpoint} expires at once (expires_in 0)"
        )));
    }
    Ok(OidcToken {
        principal: subject(token).unwrap_or_else(|| s.client_id.clone()),
        token: Secret::new(token),
        expires_at: fetched_at + Duration::from_secs(expires_in),
        fetched_at,
    })
}

#[async_trait]
impl Authenticator for OidcAuthenticator {
    fn name(&self) -> &str {
        "oauthbearer-oidc"
    }

    async fn credentials(&self) -> Result<Credentials> {
        let t = self.token_blocking()?;
        Ok(Credentials::BearerToken {
            token: t.token,
            principal: t.principal,
            expires_at: t.expires_at,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_principal_is_the_subject_of_a_jwt() {
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let jwt = format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(r#"{"sub":"svc-1"}"#)
        );
        assert_eq!(subject(&jwt).as_deref(), Some("svc-1"));
        assert_eq!(subject("opaque-token"), None);
    }

    #[test]
    fn debug_hides_the_secret() {
        let s = OidcSettings {
            token_endpoint: "https://user:pw@idp.example/token".into(),
            client_id: "client".into(),
            client_secret: Secret::new("s3cr3t-value"),
            scope: Some("kafka".into()),
        };
        let shown = format!("{:?}", OidcAuthenticator::new(s));
        assert!(
            !shown.contains("s3cr3t-value") && !shown.contains(":pw@"),
            "{shown}"
        );
        assert!(shown.contains("client"), "{shown}");
    }
}
