//! The client context of every consumer and producer: keeps the last error librdkafka
//! reported on its own threads (to explain a timeout as an authentication or TLS failure) and
//! supplies OAUTHBEARER tokens (MSK IAM or OIDC client credentials). A leaf module: the connection builds clients with it, the client
//! module reads it.

use std::sync::{Arc, Mutex};

use rdkafka::client::OAuthToken;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::{ClientContext, TopicPartitionList};

use crate::auth::{MskIamAuthenticator, OidcAuthenticator};
use crate::error::ClientFailure;

/// Where OAUTHBEARER tokens come from.
#[derive(Clone)]
pub(crate) enum TokenSource {
    /// AWS MSK IAM (a SigV4-signed URL).
    MskIam(Arc<MskIamAuthenticator>),
    /// An OIDC token endpoint (client credentials).
    Oidc(Arc<OidcAuthenticator>),
}

/// The client context of every consumer and producer the connector creates.
pub(crate) struct KafkaContext {
    last_failure: Mutex<Option<ClientFailure>>,
    tokens: Option<TokenSource>,
}

impl KafkaContext {
    pub(crate) fn new(tokens: Option<TokenSource>) -> Self {
        KafkaContext {
            last_failure: Mutex::new(None),
            tokens,
        }
    }

    /// Keeps a failure; a detailed authentication/TLS message is not replaced by a vaguer one.
    pub(crate) fn record(&self, code: Option<rdkafka::error::RDKafkaErrorCode>, message: String) {
        let new = ClientFailure { code, message };
        if let Ok(mut g) = self.last_failure.lock() {
            let keep_old = g
                .as_ref()
                .is_some_and(|old| old.is_authentication() && !new.is_authentication());
            if !keep_old {
                *g = Some(new);
            }
        }
    }

    /// The last error librdkafka reported through the error callback.
    pub(crate) fn last_failure(&self) -> Option<ClientFailure> {
        self.last_failure.lock().ok().and_then(|g| g.clone())
    }
}

impl ClientContext for KafkaContext {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error
            | RDKafkaLogLevel::Warning => {
                tracing::debug!(target: "librdkafka", "{fac} {message}");
                let m = message.to_ascii_lowercase();
                if ["ssl", "sasl", "authentication", "certificate"]
                    .iter()
                    .any(|w| m.contains(w))
                {
                    self.record(None, message.to_string());
                }
            }
            _ => tracing::trace!(target: "librdkafka", "{fac} {message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::debug!(target: "librdkafka", "client error: {error}: {reason}");
        self.record(error.rdkafka_error_code(), reason.to_string());
    }

    fn generate_oauth_token(
        &self,
        _config: Option<&str>,
    ) -> std::result::Result<OAuthToken, Box<dyn std::error::Error>> {
        let unix_ms = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or_default()
        };
        let result = match &self.tokens {
            None => return Err("no OAUTHBEARER token source: set kafka.sasl.mechanism=OAUTHBEARER with kafka.sasl.oauthbearer.method=oidc, or AWS_MSK_IAM".into()),
            Some(TokenSource::MskIam(auth)) => auth.token_blocking().map(|(token, expires)| OAuthToken {
                token: token.expose().to_string(),
                principal_name: crate::auth::msk_iam_principal().to_string(),
                lifetime_ms: unix_ms(expires),
            }),
            Some(TokenSource::Oidc(auth)) => auth.token_blocking().map(|t| OAuthToken {
                token: t.token.expose().to_string(),
                principal_name: t.principal,
                lifetime_ms: unix_ms(t.expires_at),
            }),
        };
        // librdkafka logs the callback's error and retries; keep it to explain a later timeout.
        result.map_err(|e| {
            self.record(
                Some(rdkafka::error::RDKafkaErrorCode::Authentication),
                e.to_string(),
            );
            e.into()
        })
    }
}

impl ConsumerContext for KafkaContext {
    /// A failed group-offset commit is a warning: the group's offsets are for monitoring, the
    /// checkpoint is unaffected.
    fn commit_callback(&self, result: KafkaResult<()>, _offsets: &TopicPartitionList) {
        if let Err(e) = result {
            tracing::warn!(
                "committing offsets to the consumer group failed (monitoring only; the checkpoint is unaffected): {e}"
            );
        }
    }
}
