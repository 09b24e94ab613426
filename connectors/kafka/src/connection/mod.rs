//! The connection profile: bootstrap servers and authentication, kept apart from per-stream
//! options so one profile can serve a source, a sink and other clients.
//!
//! Options (each security setting in the project's spelling or Spark's; both together are
//! refused with `CONFLICTING_OPTIONS`):
//! - `kafka.bootstrap.servers` (required) and any other `kafka.`-prefixed librdkafka property,
//!   passed through as is. Values may be secret references (`{{secrets/scope/key}}`).
//! - `auth.mechanism` / `kafka.sasl.mechanism` = `PLAIN` | `SCRAM-SHA-256` | `SCRAM-SHA-512` |
//!   `AWS_MSK_IAM` (Spark's `OAUTHBEARER` is served with MSK IAM tokens too), with
//!   `auth.username` + `auth.password` or Spark's `kafka.sasl.jaas.config`
//!   (`...ScramLoginModule required username="..." password="...";`), or `auth.awsRegion`.
//! - `kafka.sasl.mechanism=OAUTHBEARER` with `kafka.sasl.oauthbearer.method=oidc`: tokens from an
//!   OIDC token endpoint (client credentials), with librdkafka's names
//!   `kafka.sasl.oauthbearer.token.endpoint.url`, `.client.id`, `.client.secret` (a secret
//!   reference) and `.scope`; fetched in Rust (this librdkafka has no libcurl) and refreshed
//!   before they expire. Other `kafka.sasl.oauthbearer.*` properties are refused.
//! - `kafka.security.protocol` (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`) or
//!   `tls.enabled`; TLS is also implied by any trust/key store option and by MSK IAM.
//! - `tls.truststore.*` / `kafka.ssl.truststore.*`, `tls.keystore.*` / `kafka.ssl.keystore.*`
//!   (JKS, PKCS12 or PEM), `tls.key.location`, `tls.key.password` / `kafka.ssl.key.password`,
//!   `tls.verify` or `kafka.ssl.endpoint.identification.algorithm` (`https`, or empty to skip
//!   the host name check only).
//!
//! [`ConnectionSettings`] is the parsed form (no secret resolved, no file read);
//! [`ConnectionProfile::resolve`] resolves secrets and loads key material when a source or sink
//! is built.

mod jaas;
mod oauthbearer;
mod settings;

use std::fmt;
use std::sync::Arc;

use rdkafka::ClientConfig;
use tributary_sdk::options::printable_value;
use tributary_sdk::secret::resolve_value;
use tributary_sdk::{
    Authenticator, Error, ErrorCode, OptionSpec, ParsedOptions, Result, Secret, SecretRef,
    SecretStore,
};

use oauthbearer::{OIDC_CLIENT_ID, OIDC_CLIENT_SECRET};
pub use settings::ConnectionSettings;
use settings::{resolve_jaas, AuthSettings, SaslCredentials};

use crate::auth::{
    MskIamAuthenticator, OidcAuthenticator, OidcSettings, SaslAuthenticator, TlsAuthenticator,
    TlsSettings,
};
use crate::context::{KafkaContext, TokenSource};
use crate::error::config_error;

/// The options of a connection profile (shared by the source and the sink). Spark's spellings
/// of the security settings come before the `kafka.` pass-through prefix, which takes the rest.
pub fn connection_option_specs() -> Vec<OptionSpec> {
    vec![
        OptionSpec::one_of("kafka.security.protocol", &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], "Spark's protocol setting: SSL and SASL_SSL turn TLS on (as tls.enabled); SASL_* need kafka.sasl.mechanism."),
        OptionSpec::one_of("kafka.sasl.mechanism", &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "AWS_MSK_IAM", "OAUTHBEARER"], "Spark's spelling of auth.mechanism. OAUTHBEARER is served with OIDC client-credentials tokens when kafka.sasl.oauthbearer.method=oidc, else with AWS MSK IAM tokens."),
        OptionSpec::one_of("kafka.sasl.oauthbearer.method", &["default", "oidc"], "oidc: OAUTHBEARER tokens from an OIDC token endpoint (client credentials: Confluent Cloud, Entra ID, Okta, Keycloak); needs kafka.sasl.mechanism=OAUTHBEARER and the token endpoint, client id and secret. default: OAUTHBEARER means AWS MSK IAM."),
        OptionSpec::string("kafka.sasl.oauthbearer.token.endpoint.url", "OIDC token endpoint (https://.../token) asked for client-credentials tokens (kafka.sasl.oauthbearer.method=oidc). The token is refreshed before it expires."),
        OptionSpec::string("kafka.sasl.oauthbearer.client.id", "OIDC client id (kafka.sasl.oauthbearer.method=oidc)."),
        OptionSpec::string("kafka.sasl.oauthbearer.client.secret", "OIDC client secret, as a {{secrets/scope/key}} reference (kafka.sasl.oauthbearer.method=oidc).").sensitive(),
        OptionSpec::string("kafka.sasl.oauthbearer.scope", "Scope asked for with each token (kafka.sasl.oauthbearer.method=oidc; default: none, the endpoint's default)."),
        OptionSpec::string("kafka.sasl.jaas.config", r#"Spark's credentials: `org.apache.kafka.common.security.scram.ScramLoginModule required username="..." password="...";` (or PlainLoginModule; IAMLoginModule for MSK IAM). The password may be a {{secrets/scope/key}} reference."#).sensitive(),
        OptionSpec::string("kafka.sasl.username", "librdkafka's spelling of auth.username."),
        OptionSpec::string("kafka.sasl.password", "librdkafka's spelling of auth.password.").sensitive(),
        OptionSpec::string("kafka.ssl.truststore.location", "Spark's spelling of tls.truststore.location (JKS, PKCS12 or PEM)."),
        OptionSpec::one_of("kafka.ssl.truststore.type", &["JKS", "PKCS12", "PEM"], "Spark's spelling of tls.truststore.type (default: recognised from the file)."),
        OptionSpec::string("kafka.ssl.truststore.password", "Spark's spelling of tls.truststore.password.").sensitive(),
        OptionSpec::string("kafka.ssl.keystore.location", "Spark's spelling of tls.keystore.location (JKS, PKCS12 or PEM)."),
        OptionSpec::one_of("kafka.ssl.keystore.type", &["JKS", "PKCS12", "PEM"], "Spark's spelling of tls.keystore.type (default: recognised from the file)."),
        OptionSpec::string("kafka.ssl.keystore.password", "Spark's spelling of tls.keystore.password.").sensitive(),
        OptionSpec::string("kafka.ssl.key.password", "Spark's spelling of tls.key.password: the password of the key in a JKS store (default: the store password) or of an encrypted PEM key.").sensitive(),
        OptionSpec::string("kafka.ssl.endpoint.identification.algorithm", "https (default) verifies the broker host name against its certificate; an empty value skips that check (the certificate is still verified)."),
        OptionSpec::prefix("kafka.", "librdkafka properties, passed through as is (kafka.bootstrap.servers is required). Values may be {{secrets/scope/key}} references."),
        OptionSpec::one_of("auth.mechanism", &["none", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "AWS_MSK_IAM"], "How the client authenticates.").default_value("none"),
        OptionSpec::string("auth.username", "SASL user name (PLAIN, SCRAM)."),
        OptionSpec::string("auth.password", "SASL password (PLAIN, SCRAM), as a {{secrets/scope/key}} reference.").sensitive(),
        OptionSpec::string("auth.awsRegion", "AWS region of the MSK cluster (AWS_MSK_IAM only; default: the AWS chain's region)."),
        OptionSpec::bool("tls.enabled", "Connect with TLS (implied by any trust/key store option and by AWS_MSK_IAM).").default_value(false),
        OptionSpec::string("tls.truststore.location", "CA certificates to verify the brokers with (PEM, PKCS12 or JKS); default: the system roots."),
        OptionSpec::one_of("tls.truststore.type", &["PEM", "PKCS12", "JKS"], "Format of the trust store (default: recognised from the file)."),
        OptionSpec::string("tls.truststore.password", "Password of a PKCS12 or JKS trust store, as a secret reference.").sensitive(),
        OptionSpec::string("tls.keystore.location", "Client certificate for mutual TLS: a PEM chain (with tls.key.location) or a PKCS12 / JKS store with the key."),
        OptionSpec::one_of("tls.keystore.type", &["PEM", "PKCS12", "JKS"], "Format of the key store (default: recognised from the file)."),
        OptionSpec::string("tls.keystore.password", "Password of a PKCS12 or JKS key store, as a secret reference.").sensitive(),
        OptionSpec::string("tls.key.location", "PEM private key of a PEM client certificate."),
        OptionSpec::string("tls.key.password", "Password of an encrypted PEM private key (or of the key in a JKS store), as a secret reference.").sensitive(),
        OptionSpec::bool("tls.verify", "Verify the broker certificate and host name (turns TLS on).").default_value(true),
    ]
}

/// `kafka.bootstrap.servers`, refused when missing or empty.
pub(crate) fn bootstrap(p: &ParsedOptions) -> Result<String> {
    p.prefixed("kafka.")
        .into_iter()
        .find(|(k, v)| k.eq_ignore_ascii_case("bootstrap.servers") && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_string())
        .ok_or_else(|| {
            let given: Vec<String> = p
                .prefixed("kafka.")
                .into_iter()
                .map(|(k, _)| format!("kafka.{k}"))
                .collect();
            let typo = tributary_sdk::options::near_miss(
                "kafka.bootstrap.servers",
                given.iter().map(String::as_str),
            )
            .map(|k| format!(" ('{k}' was given: did you mean 'kafka.bootstrap.servers'?)"))
            .unwrap_or_default();
            Error::new(
                ErrorCode::MissingOption,
                format!("option 'kafka.bootstrap.servers' is required for 'kafka': a comma-separated list of host:port{typo}"),
            )
            .with_context("option", "kafka.bootstrap.servers")
            .with_context("connector", "kafka")
        })
}

impl ConnectionSettings {
    /// librdkafka's own check of the pass-through properties (unknown or invalid), without I/O:
    /// secret references are replaced by a placeholder.
    pub(crate) fn check_pass_through(&self) -> Result<()> {
        let mut c = ClientConfig::new();
        for (k, v) in &self.pass_through {
            let v = if SecretRef::parse(v).is_some() {
                "placeholder"
            } else {
                v.as_str()
            };
            c.set(k, v);
        }
        c.create_native_config()
            .map(|_| ())
            .map_err(|e| config_error(e, "kafka."))
    }
}

/// Bootstrap servers, librdkafka pass-through properties and authenticators, secrets resolved.
#[derive(Clone)]
pub struct ConnectionProfile {
    bootstrap_servers: String,
    pass_through: Vec<(String, Secret)>,
    sasl: Option<Arc<SaslAuthenticator>>,
    tls: Option<Arc<TlsAuthenticator>>,
    msk_iam: Option<Arc<MskIamAuthenticator>>,
    oidc: Option<Arc<OidcAuthenticator>>,
}

impl fmt::Debug for ConnectionProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let props: Vec<(&str, String)> = self
            .pass_through
            .iter()
            .map(|(k, v)| (k.as_str(), printable_value(k, v.expose()).into_owned()))
            .collect();
        f.debug_struct("ConnectionProfile")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("properties", &props)
            .field("sasl", &self.sasl)
            .field("tls", &self.tls)
            .field("msk_iam", &self.msk_iam)
            .field("oidc", &self.oidc)
            .finish()
    }
}

fn resolve(store: &dyn SecretStore, value: &Secret, option: &str) -> Result<Secret> {
    resolve_value(store, value.expose()).map_err(|e| e.with_context("option", option))
}

impl ConnectionProfile {
    /// Resolves the settings' secrets and loads their key material. Nothing connects.
    pub fn resolve(settings: &ConnectionSettings, secrets: &dyn SecretStore) -> Result<Self> {
        let mut pass_through = Vec::new();
        let mut bootstrap_servers = settings.bootstrap_servers.clone();
        for (k, v) in &settings.pass_through {
            let option = format!("kafka.{k}");
            let value = resolve_value(secrets, v).map_err(|e| e.with_context("option", &option))?;
            if k.eq_ignore_ascii_case("bootstrap.servers") {
                bootstrap_servers = value.expose().trim().to_string();
            }
            pass_through.push((k.clone(), value));
        }
        let mut oidc = None;
        let (sasl, msk_iam) = match &settings.auth {
            AuthSettings::None => (None, None),
            AuthSettings::MskIam { region } => (
                None,
                Some(Arc::new(MskIamAuthenticator::new(region.clone()))),
            ),
            AuthSettings::Oidc {
                token_endpoint,
                client_id,
                client_secret,
                scope,
            } => {
                oidc = Some(Arc::new(OidcAuthenticator::new(OidcSettings {
                    token_endpoint: token_endpoint.clone(),
                    client_id: resolve(secrets, &Secret::new(client_id.clone()), OIDC_CLIENT_ID)?
                        .expose()
                        .to_string(),
                    client_secret: resolve(secrets, client_secret, OIDC_CLIENT_SECRET)?,
                    scope: scope.clone(),
                })));
                (None, None)
            }
            AuthSettings::Sasl {
                mechanism,
                credentials,
            } => {
                let (username, password) = match credentials {
                    SaslCredentials::UserPassword {
                        username,
                        password,
                        option,
                    } => (
                        resolve(secrets, &Secret::new(username.clone()), option)?
                            .expose()
                            .to_string(),
                        resolve(secrets, password, option)?,
                    ),
                    SaslCredentials::JaasReference(reference) => {
                        let text = resolve(secrets, reference, "kafka.sasl.jaas.config")?;
                        let (u, pw) = resolve_jaas(text.expose(), *mechanism)?;
                        let pw = resolve(secrets, &pw, "kafka.sasl.jaas.config")?;
                        (u, pw)
                    }
                };
                (
                    Some(Arc::new(SaslAuthenticator::new(
                        *mechanism, username, password,
                    ))),
                    None,
                )
            }
        };
        let tls = match &settings.tls {
            None => None,
            Some(t) => {
                let names = t.names;
                let pw = |v: &Option<Secret>, option: &str| -> Result<Option<Secret>> {
                    v.as_ref().map(|s| resolve(secrets, s, option)).transpose()
                };
                Some(Arc::new(TlsAuthenticator::load(TlsSettings {
                    truststore: t.truststore.as_ref().map(|s| s.path.clone()),
                    truststore_format: t.truststore.as_ref().and_then(|s| s.format),
                    truststore_password: pw(
                        &t.truststore.as_ref().and_then(|s| s.password.clone()),
                        names.truststore_password,
                    )?,
                    keystore: t.keystore.as_ref().map(|s| s.path.clone()),
                    keystore_format: t.keystore.as_ref().and_then(|s| s.format),
                    keystore_password: pw(
                        &t.keystore.as_ref().and_then(|s| s.password.clone()),
                        names.keystore_password,
                    )?,
                    key: t.key.clone(),
                    key_password: pw(&t.key_password, names.key_password)?,
                    verify: t.verify,
                    verify_hostname: t.verify_hostname,
                    names,
                })?))
            }
        };
        let profile = ConnectionProfile {
            bootstrap_servers,
            pass_through,
            sasl,
            tls,
            msk_iam,
            oidc,
        };
        // librdkafka's own check of every property once secrets are in, still without I/O.
        profile
            .client_config()
            .create_native_config()
            .map_err(|e| config_error(e, "kafka."))?;
        Ok(profile)
    }

    /// The bootstrap servers.
    pub fn bootstrap_servers(&self) -> &str {
        &self.bootstrap_servers
    }

    /// The authenticators of this profile (for other clients that connect the same way).
    pub fn authenticators(&self) -> Vec<Arc<dyn Authenticator>> {
        let mut out: Vec<Arc<dyn Authenticator>> = Vec::new();
        if let Some(a) = &self.sasl {
            out.push(a.clone());
        }
        if let Some(a) = &self.tls {
            out.push(a.clone());
        }
        if let Some(a) = &self.msk_iam {
            out.push(a.clone());
        }
        if let Some(a) = &self.oidc {
            out.push(a.clone());
        }
        out
    }

    /// The librdkafka configuration: authentication first, pass-through properties last.
    pub(crate) fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        let protocol = match (
            self.sasl.is_some() || self.msk_iam.is_some() || self.oidc.is_some(),
            self.tls.is_some(),
        ) {
            (true, true) => "SASL_SSL",
            (true, false) => "SASL_PLAINTEXT",
            (false, true) => "SSL",
            (false, false) => "PLAINTEXT",
        };
        c.set("security.protocol", protocol);
        if let Some(s) = &self.sasl {
            s.apply(&mut c);
        }
        if let Some(t) = &self.tls {
            t.apply(&mut c);
        }
        if let Some(m) = &self.msk_iam {
            m.apply(&mut c);
        }
        if let Some(o) = &self.oidc {
            o.apply(&mut c);
        }
        for (k, v) in &self.pass_through {
            c.set(k, v.expose());
        }
        c
    }

    /// A fresh client context (error capture, OAUTHBEARER token refresh).
    pub(crate) fn context(&self) -> KafkaContext {
        let tokens = match (&self.msk_iam, &self.oidc) {
            (Some(m), _) => Some(TokenSource::MskIam(m.clone())),
            (None, Some(o)) => Some(TokenSource::Oidc(o.clone())),
            (None, None) => None,
        };
        KafkaContext::new(tokens)
    }

    /// True when librdkafka must be polled for an OAUTHBEARER token before it can connect.
    pub(crate) fn needs_token(&self) -> bool {
        self.msk_iam.is_some() || self.oidc.is_some()
    }
}

#[cfg(test)]
mod tests;
