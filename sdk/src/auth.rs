//! The `Authenticator` contract: credentials for a client, kept fresh.
//!
//! An authenticator gives a client (a Kafka broker connection, a schema-registry HTTP client, an
//! object store) what it needs to connect: a user name and password for SASL PLAIN / SCRAM, TLS key
//! material for mutual TLS, a bearer token (OAUTHBEARER, AWS MSK IAM) or AWS credentials. One
//! authenticator may serve several clients. Tokens expire: [`Authenticator::credentials`] returns
//! the current credentials and refreshes them first when they are about to expire.
//! Implementations live with the connectors (`tributary-kafka` for SASL/mTLS/MSK IAM); all secret
//! values are [`Secret`]s and never appear in `Debug` output or errors.

use std::fmt::Debug;
use std::path::PathBuf;
use std::time::SystemTime;

use async_trait::async_trait;

use crate::error::Result;
use crate::secret::Secret;

/// The SASL mechanism of a user/password credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SaslMechanism {
    /// SASL PLAIN.
    #[serde(rename = "PLAIN")]
    Plain,
    /// SCRAM-SHA-256.
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    /// SCRAM-SHA-512.
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
}

impl SaslMechanism {
    /// The mechanism name as Kafka spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// TLS material: where the CA, certificate and key are, already checked to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsMaterial {
    /// CA certificates (PEM) to verify the server with; `None` uses the system roots.
    pub ca_pem: Option<PathBuf>,
    /// Client certificate chain (PEM) for mutual TLS.
    pub client_cert_pem: Option<PathBuf>,
    /// Client private key (PEM) for mutual TLS.
    pub client_key_pem: Option<PathBuf>,
    /// Password of an encrypted key.
    pub key_password: Option<Secret>,
    /// Verify the server certificate and host name (on unless turned off by name).
    pub verify: bool,
}

/// What an authenticator hands a client.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub enum Credentials {
    /// No authentication.
    None,
    /// SASL user name and password.
    UserPassword {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// User name (not secret).
        username: String,
        /// Password.
        password: Secret,
    },
    /// A bearer token (OAUTHBEARER).
    BearerToken {
        /// The token.
        token: Secret,
        /// The principal name the token stands for.
        principal: String,
        /// When the token expires.
        expires_at: SystemTime,
    },
    /// AWS credentials (Kinesis, S3).
    Aws {
        /// Access key id (not secret, but not printed either).
        access_key_id: Secret,
        /// Secret access key.
        secret_access_key: Secret,
        /// Session token for temporary credentials.
        session_token: Option<Secret>,
        /// Region.
        region: Option<String>,
    },
}

/// Supplies and refreshes credentials (and, separately, TLS material) for clients.
#[async_trait]
pub trait Authenticator: Send + Sync + Debug {
    /// A short name for logs (`scram-sha-512`, `mtls`, `msk-iam`), never a secret.
    fn name(&self) -> &str;

    /// The current credentials, refreshed first when they expire soon.
    async fn credentials(&self) -> Result<Credentials>;

    /// TLS material the connection needs (server verification, client certificate), if any.
    fn tls(&self) -> Option<TlsMaterial> {
        None
    }
}
