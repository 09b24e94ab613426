//! SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: a user name and a password.

use async_trait::async_trait;
use rdkafka::ClientConfig;
use tributary_sdk::{Authenticator, Credentials, Result, SaslMechanism, Secret};

/// User name and password for SASL PLAIN or SCRAM. The password is a [`Secret`], usually resolved
/// from a `{{secrets/scope/key}}` reference.
#[derive(Debug, Clone)]
pub struct SaslAuthenticator {
    mechanism: SaslMechanism,
    username: String,
    password: Secret,
}

impl SaslAuthenticator {
    /// A new authenticator.
    pub fn new(mechanism: SaslMechanism, username: impl Into<String>, password: Secret) -> Self {
        SaslAuthenticator {
            mechanism,
            username: username.into(),
            password,
        }
    }

    /// The mechanism.
    pub fn mechanism(&self) -> SaslMechanism {
        self.mechanism
    }

    /// Sets `sasl.mechanism`, `sasl.username` and `sasl.password` (security.protocol is chosen by
    /// the connection profile, which knows whether TLS is on).
    pub(crate) fn apply(&self, config: &mut ClientConfig) {
        config
            .set("sasl.mechanism", self.mechanism.as_str())
            .set("sasl.username", &self.username)
            .set("sasl.password", self.password.expose());
    }
}

#[async_trait]
impl Authenticator for SaslAuthenticator {
    fn name(&self) -> &str {
        match self.mechanism {
            SaslMechanism::Plain => "sasl-plain",
            SaslMechanism::ScramSha256 => "scram-sha-256",
            SaslMechanism::ScramSha512 => "scram-sha-512",
        }
    }

    async fn credentials(&self) -> Result<Credentials> {
        Ok(Credentials::UserPassword {
            mechanism: self.mechanism,
            username: self.username.clone(),
            password: self.password.clone(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn password_never_prints_and_reaches_the_client_config() {
        let a = SaslAuthenticator::new(SaslMechanism::ScramSha512, "u", Secret::new("hunter2"));
        assert!(!format!("{a:?}").contains("hunter2"));
        let mut c = ClientConfig::new();
        a.apply(&mut c);
        assert_eq!(c.get("sasl.mechanism"), Some("SCRAM-SHA-512"));
        assert_eq!(c.get("sasl.password"), Some("hunter2"));
        assert_eq!(a.name(), "scram-sha-512");
        match a.credentials().await.unwrap() {
            Credentials::UserPassword {
                username, password, ..
            } => {
                assert_eq!(username, "u");
                assert_eq!(password.expose(), "hunter2");
            }
            other => panic!("{other:?}"),
        }
    }
}
