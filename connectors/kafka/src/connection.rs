//! The connection profile: bootstrap servers and authentication, kept apart from per-stream
//! options so one profile can serve a source, a sink and other clients.
//!
//! Options:
//! - `kafka.bootstrap.servers` (required) and any other `kafka.`-prefixed librdkafka property,
//!   passed through as is. Values may be secret references (`{{secrets/scope/key}}`).
//! - `auth.mechanism` = `none` | `PLAIN` | `SCRAM-SHA-256` | `SCRAM-SHA-512` | `AWS_MSK_IAM`,
//!   with `auth.username`, `auth.password` (a secret reference) or `auth.awsRegion`.
//! - `tls.enabled`, `tls.truststore.*`, `tls.keystore.*`, `tls.key.*` (PEM or PKCS#12), and
//!   `tls.verify` (on unless turned off by name).
//!
//! `security.protocol` follows from these (SSL, SASL_PLAINTEXT, SASL_SSL); an explicit
//! `kafka.security.protocol` still wins.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use rdkafka::ClientConfig;
use tributary_sdk::options::is_sensitive_key;
use tributary_sdk::secret::resolve_value;
use tributary_sdk::{
    Authenticator, Error, ErrorCode, OptionSpec, ParsedOptions, Result, SaslMechanism, Secret,
    SecretStore,
};

use crate::auth::{
    MskIamAuthenticator, SaslAuthenticator, StoreFormat, TlsAuthenticator, TlsSettings,
};
use crate::client::KafkaContext;
use crate::error::config_error;

/// The options of a connection profile (shared by the source and the sink).
pub fn connection_option_specs() -> Vec<OptionSpec> {
    vec![
        OptionSpec::prefix("kafka.", "librdkafka properties, passed through as is (kafka.bootstrap.servers is required). Values may be {{secrets/scope/key}} references."),
        OptionSpec::one_of("auth.mechanism", &["none", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "AWS_MSK_IAM"], "How the client authenticates.").default_value("none"),
        OptionSpec::string("auth.username", "SASL user name."),
        OptionSpec::string("auth.password", "SASL password, as a {{secrets/scope/key}} reference.").sensitive(),
        OptionSpec::string("auth.awsRegion", "AWS region of the MSK cluster (default: the AWS chain's region)."),
        OptionSpec::bool("tls.enabled", "Connect with TLS (implied by any tls.*.location option and by AWS_MSK_IAM).").default_value(false),
        OptionSpec::string("tls.truststore.location", "CA certificates to verify the brokers with (PEM or PKCS#12); default: the system roots."),
        OptionSpec::one_of("tls.truststore.type", &["PEM", "PKCS12"], "Format of the trust store (default: from the file extension)."),
        OptionSpec::string("tls.truststore.password", "Password of a PKCS#12 trust store, as a secret reference.").sensitive(),
        OptionSpec::string("tls.keystore.location", "Client certificate for mutual TLS: a PEM chain (with tls.key.location) or a PKCS#12 store with the key."),
        OptionSpec::one_of("tls.keystore.type", &["PEM", "PKCS12"], "Format of the key store (default: from the file extension)."),
        OptionSpec::string("tls.keystore.password", "Password of a PKCS#12 key store, as a secret reference.").sensitive(),
        OptionSpec::string("tls.key.location", "PEM private key of the client certificate."),
        OptionSpec::string("tls.key.password", "Password of an encrypted PEM private key, as a secret reference.").sensitive(),
        OptionSpec::bool("tls.verify", "Verify the broker certificate and host name.").default_value(true),
    ]
}

/// Refuses a missing or empty `kafka.bootstrap.servers`.
pub(crate) fn check_bootstrap(p: &ParsedOptions) -> Result<()> {
    let given = p
        .prefixed("kafka.")
        .into_iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("bootstrap.servers") && !v.trim().is_empty());
    if given {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::MissingOption,
            "option 'kafka.bootstrap.servers' is required for 'kafka': a comma-separated list of host:port",
        )
        .with_context("option", "kafka.bootstrap.servers")
        .with_context("connector", "kafka"))
    }
}

/// Bootstrap servers, librdkafka pass-through properties and authenticators.
#[derive(Clone)]
pub struct ConnectionProfile {
    bootstrap_servers: String,
    pass_through: Vec<(String, Secret)>,
    sasl: Option<Arc<SaslAuthenticator>>,
    tls: Option<Arc<TlsAuthenticator>>,
    msk_iam: Option<Arc<MskIamAuthenticator>>,
}

impl fmt::Debug for ConnectionProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let props: Vec<(&str, &str)> = self
            .pass_through
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    if is_sensitive_key(k) {
                        "***"
                    } else {
                        v.expose()
                    },
                )
            })
            .collect();
        f.debug_struct("ConnectionProfile")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("properties", &props)
            .field("sasl", &self.sasl)
            .field("tls", &self.tls)
            .field("msk_iam", &self.msk_iam)
            .finish()
    }
}

fn secret_option(p: &ParsedOptions, name: &str, store: &dyn SecretStore) -> Result<Option<Secret>> {
    match p.string(name)? {
        Some(v) => resolve_value(store, &v)
            .map(Some)
            .map_err(|e| e.with_context("option", name)),
        None => Ok(None),
    }
}

impl ConnectionProfile {
    /// Builds the profile from validated options: resolves secrets and checks key material.
    /// Nothing connects.
    pub fn from_options(p: &ParsedOptions, secrets: &dyn SecretStore) -> Result<Self> {
        check_bootstrap(p)?;
        let mut pass_through = Vec::new();
        let mut bootstrap_servers = String::new();
        for (k, v) in p.prefixed("kafka.") {
            let value = resolve_value(secrets, &v)
                .map_err(|e| e.with_context("option", format!("kafka.{k}")))?;
            if k.eq_ignore_ascii_case("bootstrap.servers") {
                bootstrap_servers = value.expose().trim().to_string();
            }
            pass_through.push((k, value));
        }
        let mechanism = p.string("auth.mechanism")?.unwrap_or_else(|| "none".into());
        let sasl_mechanism = match mechanism.to_ascii_uppercase().as_str() {
            "PLAIN" => Some(SaslMechanism::Plain),
            "SCRAM-SHA-256" => Some(SaslMechanism::ScramSha256),
            "SCRAM-SHA-512" => Some(SaslMechanism::ScramSha512),
            _ => None,
        };
        let sasl = match sasl_mechanism {
            Some(m) => {
                let user = p.string("auth.username")?.ok_or_else(|| {
                    Error::new(
                        ErrorCode::MissingOption,
                        format!("auth.mechanism={} needs 'auth.username'", m.as_str()),
                    )
                    .with_context("option", "auth.username")
                })?;
                let password = secret_option(p, "auth.password", secrets)?.ok_or_else(|| {
                    Error::new(
                        ErrorCode::MissingOption,
                        format!("auth.mechanism={} needs 'auth.password'", m.as_str()),
                    )
                    .with_context("option", "auth.password")
                })?;
                Some(Arc::new(SaslAuthenticator::new(m, user, password)))
            }
            None => None,
        };
        let msk_iam = mechanism.eq_ignore_ascii_case("AWS_MSK_IAM").then(|| {
            Arc::new(MskIamAuthenticator::new(
                p.string("auth.awsRegion").ok().flatten(),
            ))
        });
        let path =
            |name: &str| -> Result<Option<PathBuf>> { Ok(p.string(name)?.map(PathBuf::from)) };
        let truststore = path("tls.truststore.location")?;
        let keystore = path("tls.keystore.location")?;
        let key = path("tls.key.location")?;
        let verify = p.bool("tls.verify")?.unwrap_or(true);
        let tls_on = p.bool("tls.enabled")?.unwrap_or(false)
            || truststore.is_some()
            || keystore.is_some()
            || key.is_some()
            || !verify;
        let tls = if tls_on {
            let fmt_of = |opt: &str, path: &Option<PathBuf>| -> Result<StoreFormat> {
                Ok(match path {
                    Some(pth) => StoreFormat::from_option(p.string(opt)?.as_deref(), pth),
                    None => StoreFormat::Pem,
                })
            };
            Some(Arc::new(TlsAuthenticator::load(TlsSettings {
                truststore_format: fmt_of("tls.truststore.type", &truststore)?,
                keystore_format: fmt_of("tls.keystore.type", &keystore)?,
                truststore,
                truststore_password: secret_option(p, "tls.truststore.password", secrets)?,
                keystore,
                keystore_password: secret_option(p, "tls.keystore.password", secrets)?,
                key,
                key_password: secret_option(p, "tls.key.password", secrets)?,
                verify,
            })?))
        } else {
            None
        };
        let profile = ConnectionProfile {
            bootstrap_servers,
            pass_through,
            sasl,
            tls,
            msk_iam,
        };
        // librdkafka's own check of every property (unknown / invalid), still without I/O.
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
        out
    }

    /// The librdkafka configuration: authentication first, pass-through properties last.
    pub(crate) fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        let protocol = match (
            self.sasl.is_some() || self.msk_iam.is_some(),
            self.tls.is_some() || self.msk_iam.is_some(),
        ) {
            (true, true) => Some("SASL_SSL"),
            (true, false) => Some("SASL_PLAINTEXT"),
            (false, true) => Some("SSL"),
            (false, false) => None,
        };
        if let Some(p) = protocol {
            c.set("security.protocol", p);
        }
        if let Some(s) = &self.sasl {
            s.apply(&mut c);
        }
        if let Some(t) = &self.tls {
            t.apply(&mut c);
        }
        if let Some(m) = &self.msk_iam {
            m.apply(&mut c);
        }
        for (k, v) in &self.pass_through {
            c.set(k, v.expose());
        }
        c
    }

    /// A fresh client context (error capture, MSK IAM token refresh).
    pub(crate) fn context(&self) -> KafkaContext {
        KafkaContext::new(self.msk_iam.clone())
    }

    /// True when librdkafka must be polled for an OAUTHBEARER token before it can connect.
    pub(crate) fn needs_token(&self) -> bool {
        self.msk_iam.is_some()
    }
}

/// Checks the `kafka.` properties with librdkafka without building a profile (no secrets are
/// resolved: references are replaced by a placeholder). Used by `validate`.
pub(crate) fn check_pass_through(p: &ParsedOptions) -> Result<()> {
    let mut c = ClientConfig::new();
    for (k, v) in p.prefixed("kafka.") {
        let v = if tributary_sdk::SecretRef::parse(&v).is_some() {
            "placeholder".to_string()
        } else {
            v
        };
        c.set(k, v);
    }
    c.create_native_config()
        .map(|_| ())
        .map_err(|e| config_error(e, "kafka."))
}
