//! The connection settings as parsed from the options: secrets not resolved, files not read.
//!
//! Every security setting has the project's spelling (`auth.*`, `tls.*`) and Spark's
//! (`kafka.security.protocol`, `kafka.sasl.*`, `kafka.ssl.*`); some also librdkafka's
//! (`kafka.sasl.username`). One setting given in two spellings, an option that the others make
//! meaningless (a password without a store, credentials without a SASL mechanism, TLS files
//! with `PLAINTEXT`) and Java-only options are refused here, naming the options, before
//! anything is resolved or connects.

use std::fmt;
use std::path::PathBuf;

use tributary_sdk::options::{conflicting, printable_value, redact_embedded};
use tributary_sdk::{Error, ErrorCode, ParsedOptions, Result, SaslMechanism, Secret, SecretRef};

use super::jaas::{self, LoginModule};
use super::oauthbearer::{self, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_ENDPOINT, OIDC_SCOPE};
use crate::auth::{StoreFormat, TlsOptionNames};

/// Java client options that cannot apply to librdkafka, with what to use instead.
const JAVA_ONLY: &[(&str, &str)] = &[
    ("sasl.login.callback.handler.class", "kafka.sasl.mechanism=AWS_MSK_IAM or OAUTHBEARER (auth.mechanism=AWS_MSK_IAM) for AWS MSK IAM; other login callbacks need the Java client"),
    ("sasl.client.callback.handler.class", "kafka.sasl.mechanism=AWS_MSK_IAM (auth.mechanism=AWS_MSK_IAM) for AWS MSK IAM; other callbacks need the Java client"),
    ("sasl.login.class", "kafka.sasl.jaas.config with PlainLoginModule or ScramLoginModule, or auth.username and auth.password"),
    ("ssl.engine.factory.class", "kafka.ssl.truststore.* and kafka.ssl.keystore.* (JKS, PKCS12 or PEM files), or tls.*"),
    ("ssl.keymanager.algorithm", "nothing: librdkafka handles keys with OpenSSL"),
    ("ssl.trustmanager.algorithm", "nothing: librdkafka verifies certificates with OpenSSL"),
    ("ssl.provider", "nothing: librdkafka uses OpenSSL"),
    ("ssl.secure.random.implementation", "nothing: librdkafka uses OpenSSL's generator"),
    ("ssl.protocol", "nothing: librdkafka negotiates the highest TLS version both sides support"),
    ("ssl.enabled.protocols", "nothing: librdkafka negotiates the highest TLS version both sides support"),
    ("ssl.truststore.certificates", "kafka.ssl.truststore.location (or tls.truststore.location) with a PEM file"),
    ("ssl.keystore.certificate.chain", "kafka.ssl.keystore.location (or tls.keystore.location) with a PEM file"),
    ("ssl.keystore.key", "tls.key.location with a PEM file"),
];

/// A Java callback handler that names exactly what the connector does natively, accepted (and
/// not passed on) with its mechanism: (option, class name suffix, mechanism).
const NATIVE_HANDLERS: &[(&str, &str, Mechanism)] = &[
    (
        "sasl.login.callback.handler.class",
        ".oauthbearer.OAuthBearerLoginCallbackHandler",
        Mechanism::Oidc,
    ),
    (
        "sasl.login.callback.handler.class",
        ".oauthbearer.secured.OAuthBearerLoginCallbackHandler",
        Mechanism::Oidc,
    ),
    (
        "sasl.client.callback.handler.class",
        "IAMClientCallbackHandler",
        Mechanism::MskIam,
    ),
    (
        "sasl.login.callback.handler.class",
        "IAMOAuthBearerLoginCallbackHandler",
        Mechanism::OAuthBearer,
    ),
];

/// librdkafka properties the connector sets itself from a setting, with that setting's names.
const NATIVE_DUPLICATES: &[(&str, &[&str])] = &[
    (
        "ssl.ca.location",
        &["tls.truststore.location", "kafka.ssl.truststore.location"],
    ),
    (
        "ssl.ca.pem",
        &["tls.truststore.location", "kafka.ssl.truststore.location"],
    ),
    (
        "ssl.certificate.location",
        &["tls.keystore.location", "kafka.ssl.keystore.location"],
    ),
    (
        "ssl.keystore.location",
        &["tls.keystore.location", "kafka.ssl.keystore.location"],
    ),
    ("ssl.key.location", &["tls.key.location"]),
    ("enable.ssl.certificate.verification", &["tls.verify"]),
];

/// The `kafka.*` options the connection reads itself (never passed through to librdkafka).
pub(crate) const INTERCEPTED: &[&str] = &[
    "kafka.security.protocol",
    "kafka.sasl.mechanism",
    "kafka.sasl.jaas.config",
    "kafka.sasl.username",
    "kafka.sasl.password",
    "kafka.ssl.truststore.location",
    "kafka.ssl.truststore.type",
    "kafka.ssl.truststore.password",
    "kafka.ssl.keystore.location",
    "kafka.ssl.keystore.type",
    "kafka.ssl.keystore.password",
    "kafka.ssl.key.password",
    "kafka.ssl.endpoint.identification.algorithm",
    "kafka.sasl.oauthbearer.method",
    OIDC_ENDPOINT,
    OIDC_CLIENT_ID,
    OIDC_CLIENT_SECRET,
    OIDC_SCOPE,
];

/// How the client authenticates, as named by `auth.mechanism` / `kafka.sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mechanism {
    None,
    Sasl(SaslMechanism),
    MskIam,
    /// Spark's OAUTHBEARER: served with AWS MSK IAM tokens.
    OAuthBearer,
    /// OAUTHBEARER with `kafka.sasl.oauthbearer.method=oidc`: client-credentials tokens.
    Oidc,
}

impl Mechanism {
    fn parse(text: &str) -> Mechanism {
        match text.trim().to_ascii_uppercase().as_str() {
            "PLAIN" => Mechanism::Sasl(SaslMechanism::Plain),
            "SCRAM-SHA-256" => Mechanism::Sasl(SaslMechanism::ScramSha256),
            "SCRAM-SHA-512" => Mechanism::Sasl(SaslMechanism::ScramSha512),
            "AWS_MSK_IAM" => Mechanism::MskIam,
            "OAUTHBEARER" => Mechanism::OAuthBearer,
            _ => Mechanism::None,
        }
    }

    fn module(self) -> Option<LoginModule> {
        match self {
            Mechanism::None => None,
            Mechanism::Sasl(SaslMechanism::Plain) => Some(LoginModule::Plain),
            Mechanism::Sasl(_) => Some(LoginModule::Scram),
            Mechanism::MskIam => Some(LoginModule::MskIam),
            Mechanism::OAuthBearer | Mechanism::Oidc => Some(LoginModule::OAuthBearer),
        }
    }
}

/// SASL user name and password, unresolved (either may be a `{{secrets/...}}` reference).
#[derive(Debug, Clone)]
pub(crate) enum SaslCredentials {
    /// From `auth.*`, `kafka.sasl.username/password` or a parsed JAAS line.
    UserPassword {
        /// The user name (may be a reference).
        username: String,
        /// The password (may be a reference); prints `***`.
        password: Secret,
        /// The option the password came from, for messages.
        option: &'static str,
    },
    /// A whole `kafka.sasl.jaas.config` given as a secret reference: parsed once resolved.
    JaasReference(Secret),
}

/// The authentication part of the settings.
#[derive(Debug, Clone)]
pub(crate) enum AuthSettings {
    /// No SASL.
    None,
    /// SASL PLAIN or SCRAM.
    Sasl {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// The credentials.
        credentials: SaslCredentials,
    },
    /// AWS MSK IAM (OAUTHBEARER tokens signed with the AWS credential chain).
    MskIam {
        /// `auth.awsRegion`.
        region: Option<String>,
    },
    /// OAUTHBEARER tokens from an OIDC token endpoint (client credentials).
    Oidc {
        /// `kafka.sasl.oauthbearer.token.endpoint.url`.
        token_endpoint: String,
        /// `kafka.sasl.oauthbearer.client.id` (may be a reference).
        client_id: String,
        /// `kafka.sasl.oauthbearer.client.secret` (may be a reference); prints `***`.
        client_secret: Secret,
        /// `kafka.sasl.oauthbearer.scope`.
        scope: Option<String>,
    },
}

/// One trust or key store, unresolved.
#[derive(Debug, Clone)]
pub(crate) struct StoreSettings {
    /// The file.
    pub path: PathBuf,
    /// The format, when a `type` option names it.
    pub format: Option<StoreFormat>,
    /// The password (may be a reference).
    pub password: Option<Secret>,
}

/// The TLS part of the settings, unresolved.
#[derive(Debug, Clone)]
pub(crate) struct TlsOptions {
    pub truststore: Option<StoreSettings>,
    pub keystore: Option<StoreSettings>,
    pub key: Option<PathBuf>,
    pub key_password: Option<Secret>,
    pub verify: bool,
    pub verify_hostname: bool,
    pub names: TlsOptionNames,
}

/// Bootstrap servers, pass-through properties and authentication, parsed but not resolved.
#[derive(Clone)]
pub struct ConnectionSettings {
    pub(crate) bootstrap_servers: String,
    /// `kafka.*` properties for librdkafka (prefix removed), values unresolved.
    pub(crate) pass_through: Vec<(String, String)>,
    pub(crate) auth: AuthSettings,
    pub(crate) tls: Option<TlsOptions>,
}

impl fmt::Debug for ConnectionSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let props: Vec<(&str, String)> = self
            .pass_through
            .iter()
            .map(|(k, v)| (k.as_str(), printable_value(k, v).into_owned()))
            .collect();
        f.debug_struct("ConnectionSettings")
            .field(
                "bootstrap_servers",
                &redact_embedded(&self.bootstrap_servers),
            )
            .field("properties", &props)
            .field("auth", &self.auth)
            .field("tls", &self.tls)
            .finish()
    }
}

/// The value of a setting with two spellings; both given is a conflict.
fn either(
    p: &ParsedOptions,
    project: &'static str,
    spark: &'static str,
) -> Result<Option<(&'static str, String)>> {
    match (p.is_set(project), p.is_set(spark)) {
        (true, true) => Err(conflicting(
            spark,
            project,
            &format!("is another spelling of '{project}' and both are given"),
        )),
        (true, false) => Ok(p.string(project)?.map(|v| (project, v))),
        (false, true) => Ok(p.string(spark)?.map(|v| (spark, v))),
        (false, false) => Ok(None),
    }
}

fn store_type(name: &'static str, value: &str) -> Result<StoreFormat> {
    StoreFormat::from_name(value).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "invalid value '{value}' for option '{name}': expected one of JKS, PKCS12, PEM"
            ),
        )
        .with_context("option", name)
    })
}

/// The first of `names` that is given.
fn first_given(p: &ParsedOptions, names: &[&'static str]) -> Option<&'static str> {
    names.iter().copied().find(|n| p.is_set(n))
}

impl ConnectionSettings {
    /// Parses the connection options (no I/O, no secret resolved).
    pub fn parse(p: &ParsedOptions) -> Result<ConnectionSettings> {
        let bootstrap_servers = super::bootstrap(p)?;
        let (mechanism_option, mechanism) =
            match either(p, "auth.mechanism", "kafka.sasl.mechanism")? {
                Some((name, v)) => (name, Mechanism::parse(&v)),
                None => ("auth.mechanism", Mechanism::None),
            };
        let mechanism = oauthbearer::refine_mechanism(p, mechanism, mechanism_option)?;
        let handlers = check_java_only(p, mechanism)?;
        let auth = parse_auth(p, mechanism, mechanism_option)?;
        let tls = parse_tls(p, &auth, mechanism_option)?;
        let mut pass_through = Vec::new();
        for (k, v) in p.prefixed("kafka.") {
            let full = format!("kafka.{k}");
            if INTERCEPTED.iter().any(|i| i.eq_ignore_ascii_case(&full))
                || handlers.iter().any(|h| h.eq_ignore_ascii_case(&k))
            {
                continue;
            }
            if let Some((_, settings)) = NATIVE_DUPLICATES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&k))
            {
                if let Some(other) = first_given(p, settings) {
                    return Err(conflicting(
                        &full,
                        other,
                        &format!(
                            "is librdkafka's spelling of what '{other}' sets, and both are given"
                        ),
                    ));
                }
            }
            pass_through.push((k, v));
        }
        Ok(ConnectionSettings {
            bootstrap_servers,
            pass_through,
            auth,
            tls,
        })
    }

    /// True when the client authenticates with SASL (PLAIN, SCRAM, MSK IAM or OIDC).
    pub fn uses_sasl(&self) -> bool {
        !matches!(self.auth, AuthSettings::None)
    }

    /// True when the client connects with TLS.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }
}

/// Refuses Java-only options; returns the accepted native callback handler options.
fn check_java_only(p: &ParsedOptions, mechanism: Mechanism) -> Result<Vec<&'static str>> {
    let mut accepted = Vec::new();
    for (k, v) in p.prefixed("kafka.") {
        let Some((name, instead)) = JAVA_ONLY.iter().find(|(n, _)| n.eq_ignore_ascii_case(&k))
        else {
            continue;
        };
        let native = NATIVE_HANDLERS.iter().find(|(n, suffix, m)| {
            n == name
                && v.trim().ends_with(suffix)
                && (*m == mechanism
                    || (*m == Mechanism::OAuthBearer && mechanism == Mechanism::MskIam))
        });
        if let Some((n, _, _)) = native {
            accepted.push(*n);
            continue;
        }
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!("option 'kafka.{name}' is a Java client setting that librdkafka cannot apply; use {instead}"),
        )
        .with_context("option", format!("kafka.{name}")));
    }
    Ok(accepted)
}

fn parse_auth(
    p: &ParsedOptions,
    mechanism: Mechanism,
    mechanism_option: &'static str,
) -> Result<AuthSettings> {
    let region_applies = matches!(mechanism, Mechanism::MskIam | Mechanism::OAuthBearer);
    p.refuse_ignored(
        "auth.awsRegion",
        region_applies,
        mechanism_option,
        "is only used with AWS_MSK_IAM",
    )?;
    // The credentials, in one of three spellings.
    let spellings: [(&'static str, &'static str); 2] = [
        ("auth.username", "auth.password"),
        ("kafka.sasl.username", "kafka.sasl.password"),
    ];
    let mut given: Vec<&'static str> = spellings
        .iter()
        .flat_map(|(u, pw)| [*u, *pw])
        .filter(|n| p.is_set(n))
        .collect();
    if p.is_set(jaas::OPTION) {
        given.push(jaas::OPTION);
    }
    for name in &given {
        let applies = match mechanism {
            Mechanism::Sasl(_) => true,
            Mechanism::MskIam | Mechanism::OAuthBearer | Mechanism::Oidc => *name == jaas::OPTION,
            Mechanism::None => false,
        };
        p.refuse_ignored(
            name,
            applies,
            mechanism_option,
            "is only used with a SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; kafka.sasl.jaas.config also with AWS_MSK_IAM or OAUTHBEARER)",
        )?;
    }
    // Two spellings of the credentials together.
    let families: Vec<&str> = given
        .iter()
        .map(|n| match *n {
            "auth.username" | "auth.password" => "auth.username",
            "kafka.sasl.username" | "kafka.sasl.password" => "kafka.sasl.username",
            other => other,
        })
        .collect();
    if let Some(i) = families.iter().position(|f| *f != families[0]) {
        return Err(conflicting(
            given[i],
            given[0],
            "gives the SASL credentials in another spelling than",
        ));
    }
    let jaas_given = match p.string(jaas::OPTION)? {
        Some(text) => parse_jaas(&text, mechanism, mechanism_option)?,
        None => None,
    };
    match mechanism {
        Mechanism::None => Ok(AuthSettings::None),
        Mechanism::MskIam | Mechanism::OAuthBearer => Ok(AuthSettings::MskIam {
            region: p.string("auth.awsRegion")?,
        }),
        Mechanism::Oidc => oauthbearer::parse_oidc(p),
        Mechanism::Sasl(m) => {
            let credentials = match jaas_given {
                Some(c) => c,
                None => {
                    let (user_opt, pw_opt) =
                        if p.is_set("kafka.sasl.username") || p.is_set("kafka.sasl.password") {
                            spellings[1]
                        } else {
                            spellings[0]
                        };
                    let missing = |name: &str| {
                        Error::new(
                            ErrorCode::MissingOption,
                            format!(
                                "{mechanism_option}={} needs '{name}' (or kafka.sasl.jaas.config)",
                                m.as_str()
                            ),
                        )
                        .with_context("option", name)
                    };
                    SaslCredentials::UserPassword {
                        username: p.string(user_opt)?.ok_or_else(|| missing(user_opt))?,
                        password: Secret::new(p.string(pw_opt)?.ok_or_else(|| missing(pw_opt))?),
                        option: pw_opt,
                    }
                }
            };
            Ok(AuthSettings::Sasl {
                mechanism: m,
                credentials,
            })
        }
    }
}

/// Parses `kafka.sasl.jaas.config` and checks its login module against the mechanism; the
/// credentials of a PLAIN or SCRAM line (MSK IAM and OAUTHBEARER lines carry none).
fn parse_jaas(
    text: &str,
    mechanism: Mechanism,
    mechanism_option: &'static str,
) -> Result<Option<SaslCredentials>> {
    if SecretRef::parse(text).is_some() {
        return Ok(Some(SaslCredentials::JaasReference(Secret::new(text))));
    }
    let parsed = jaas::parse(text)?;
    check_module(parsed.module, mechanism, mechanism_option)?;
    Ok(parsed
        .username
        .zip(parsed.password)
        .map(|(username, password)| SaslCredentials::UserPassword {
            username,
            password,
            option: jaas::OPTION,
        }))
}

/// A login module that does not belong to the mechanism is a conflict.
fn check_module(
    module: LoginModule,
    mechanism: Mechanism,
    mechanism_option: &'static str,
) -> Result<()> {
    let expected = mechanism.module();
    if expected == Some(module)
        || (module == LoginModule::OAuthBearer && mechanism == Mechanism::MskIam)
        || (module == LoginModule::MskIam && mechanism == Mechanism::OAuthBearer)
    {
        return Ok(());
    }
    Err(conflicting(
        jaas::OPTION,
        mechanism_option,
        &format!(
            "uses {}, which does not belong to the SASL mechanism{}",
            module.class_name(),
            match expected {
                Some(m) => format!(" (that needs {})", m.class_name()),
                None => String::new(),
            }
        ),
    ))
}

/// A JAAS line given as a secret reference, once resolved: its user name and password.
pub(crate) fn resolve_jaas(text: &str, mechanism: SaslMechanism) -> Result<(String, Secret)> {
    let parsed = jaas::parse(text)?;
    check_module(
        parsed.module,
        Mechanism::Sasl(mechanism),
        "kafka.sasl.mechanism",
    )?;
    match (parsed.username, parsed.password) {
        (Some(u), Some(pw)) => Ok((u, pw)),
        _ => Err(Error::new(
            ErrorCode::MissingOption,
            format!(
                "option '{}': the line has no username and password",
                jaas::OPTION
            ),
        )
        .with_context("option", jaas::OPTION)),
    }
}

fn parse_tls(
    p: &ParsedOptions,
    auth: &AuthSettings,
    mechanism_option: &'static str,
) -> Result<Option<TlsOptions>> {
    let mut names = TlsOptionNames::default();
    let store = |location: (&'static str, &'static str),
                 kind: (&'static str, &'static str),
                 password: (&'static str, &'static str)|
     -> Result<(Option<StoreSettings>, &'static str, &'static str)> {
        let loc = either(p, location.0, location.1)?;
        let ty = either(p, kind.0, kind.1)?;
        let pw = either(p, password.0, password.1)?;
        let loc_name = loc.as_ref().map_or(location.0, |(n, _)| *n);
        if loc.is_none() {
            if let Some((n, _)) = &ty {
                return Err(conflicting(
                    n,
                    location.0,
                    &format!("is only used with '{}' or '{}'", location.0, location.1),
                ));
            }
            if let Some((n, _)) = &pw {
                return Err(conflicting(
                    n,
                    location.0,
                    &format!("is only used with '{}' or '{}'", location.0, location.1),
                ));
            }
            return Ok((None, loc_name, pw.as_ref().map_or(password.0, |(n, _)| *n)));
        }
        let format = match &ty {
            Some((n, v)) => Some(store_type(n, v)?),
            None => None,
        };
        let pw_name = pw.as_ref().map_or(
            if loc_name == location.1 {
                password.1
            } else {
                password.0
            },
            |(n, _)| *n,
        );
        let settings = loc.map(|(_, path)| StoreSettings {
            path: PathBuf::from(path),
            format,
            password: pw.map(|(_, v)| Secret::new(v)),
        });
        Ok((settings, loc_name, pw_name))
    };
    let (truststore, ts_name, ts_pw) = store(
        ("tls.truststore.location", "kafka.ssl.truststore.location"),
        ("tls.truststore.type", "kafka.ssl.truststore.type"),
        ("tls.truststore.password", "kafka.ssl.truststore.password"),
    )?;
    let (keystore, ks_name, ks_pw) = store(
        ("tls.keystore.location", "kafka.ssl.keystore.location"),
        ("tls.keystore.type", "kafka.ssl.keystore.type"),
        ("tls.keystore.password", "kafka.ssl.keystore.password"),
    )?;
    names.truststore = ts_name;
    names.truststore_password = ts_pw;
    names.keystore = ks_name;
    names.keystore_password = ks_pw;
    let key_password = either(p, "tls.key.password", "kafka.ssl.key.password")?;
    if let Some((n, _)) = &key_password {
        names.key_password = n;
    }
    let key = p.string("tls.key.location")?.map(PathBuf::from);
    if keystore.is_none() {
        p.refuse_ignored(
            "tls.key.location",
            false,
            "tls.keystore.location",
            "needs its certificate in 'tls.keystore.location'",
        )?;
        if let Some((n, _)) = &key_password {
            return Err(conflicting(n, "tls.keystore.location", "is only used with a key store ('tls.keystore.location' or 'kafka.ssl.keystore.location')"));
        }
    }
    if let (Some(ks), true) = (&keystore, key.is_some()) {
        if matches!(ks.format, Some(StoreFormat::Pkcs12 | StoreFormat::Jks)) {
            return Err(conflicting(
                "tls.key.location",
                names.keystore,
                "is only used with a PEM key store (a PKCS12 or JKS store holds its key)",
            ));
        }
    }
    let verify_hostname = match p.string("kafka.ssl.endpoint.identification.algorithm")? {
        None => true,
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "https" => true,
            "" | "none" => false,
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!("invalid value '{other}' for option 'kafka.ssl.endpoint.identification.algorithm': expected 'https' (verify the broker host name, the default) or '' (do not)"),
                )
                .with_context("option", "kafka.ssl.endpoint.identification.algorithm"))
            }
        },
    };
    if p.is_set("tls.verify") && p.is_set("kafka.ssl.endpoint.identification.algorithm") {
        return Err(conflicting(
            "kafka.ssl.endpoint.identification.algorithm",
            "tls.verify",
            "and 'tls.verify' both decide what is verified; give only one of them",
        ));
    }
    let verify = p.bool("tls.verify")?.unwrap_or(true);
    // The options that only mean something with TLS.
    let tls_options = [
        names.truststore,
        names.keystore,
        "tls.key.location",
        "tls.verify",
        "kafka.ssl.endpoint.identification.algorithm",
    ];
    let tls_given = first_given(p, &tls_options);
    let msk = matches!(auth, AuthSettings::MskIam { .. });
    let tls_on = match either(p, "tls.enabled", "kafka.security.protocol")? {
        Some(("kafka.security.protocol", protocol)) => {
            let protocol = protocol.trim().to_ascii_uppercase();
            let (sasl, tls) = match protocol.as_str() {
                "SSL" => (false, true),
                "SASL_PLAINTEXT" => (true, false),
                "SASL_SSL" => (true, true),
                _ => (false, false),
            };
            let uses_sasl = !matches!(auth, AuthSettings::None);
            if uses_sasl && !sasl {
                return Err(conflicting(
                    mechanism_option,
                    "kafka.security.protocol",
                    &format!(
                        "needs kafka.security.protocol SASL_PLAINTEXT or SASL_SSL, not {protocol}"
                    ),
                ));
            }
            if sasl && !uses_sasl {
                return Err(conflicting("kafka.security.protocol", "kafka.sasl.mechanism", &format!("={protocol} needs a SASL mechanism (kafka.sasl.mechanism or auth.mechanism)")));
            }
            if msk && !tls {
                return Err(conflicting(
                    mechanism_option,
                    "kafka.security.protocol",
                    "AWS MSK IAM needs kafka.security.protocol=SASL_SSL",
                ));
            }
            if let (Some(n), false) = (tls_given, tls) {
                return Err(conflicting(
                    n,
                    "kafka.security.protocol",
                    &format!("is only used with TLS (SSL or SASL_SSL), not {protocol}"),
                ));
            }
            tls
        }
        Some((_, enabled)) => {
            let enabled = tributary_sdk::options::parse_bool(&enabled).unwrap_or(false);
            if !enabled {
                if let Some(n) = tls_given {
                    return Err(conflicting(
                        n,
                        "tls.enabled",
                        "needs TLS, and tls.enabled is false",
                    ));
                }
                if msk {
                    return Err(conflicting(
                        mechanism_option,
                        "tls.enabled",
                        "AWS MSK IAM needs TLS, and tls.enabled is false",
                    ));
                }
            }
            enabled
        }
        None => tls_given.is_some() || msk,
    };
    Ok(tls_on.then_some(TlsOptions {
        truststore,
        keystore,
        key,
        key_password: key_password.map(|(_, v)| Secret::new(v)),
        verify,
        verify_hostname,
        names,
    }))
}
