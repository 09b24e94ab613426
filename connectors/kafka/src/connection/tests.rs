//! Unit tests of the connection options: both spellings of each security setting, the
//! refusals of ignored and conflicting options, and resolution of secrets at build time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tributary_sdk::{ErrorCode, OptionSpec, Options, Result, Secret, SecretRef, SecretStore};

use super::settings::{AuthSettings, SaslCredentials};
use super::*;

const SCRAM_JAAS: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="{{secrets/kafka/pw}}";"#;

#[derive(Debug)]
struct Store;

impl SecretStore for Store {
    fn resolve(&self, r: &SecretRef) -> Result<Secret> {
        match (r.scope.as_str(), r.key.as_str()) {
            ("kafka", "pw") => Ok(Secret::new("hunter2")),
            ("kafka", "jaas") => Ok(Secret::new(
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="{{secrets/kafka/pw}}";"#,
            )),
            _ => Err(tributary_sdk::Error::new(
                ErrorCode::SecretNotFound,
                format!("no {r}"),
            )),
        }
    }
}

fn settings(pairs: &[(&str, &str)]) -> Result<ConnectionSettings> {
    let mut o: Options = pairs.iter().copied().collect();
    o.set("kafka.bootstrap.servers", "127.0.0.1:1");
    ConnectionSettings::parse(&OptionSpec::validate_all(
        &connection_option_specs(),
        &o,
        "kafka",
    )?)
}

fn refused(pairs: &[(&str, &str)], option: &str, other: &str) {
    let e = settings(pairs).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{pairs:?}: {e}");
    assert_eq!(e.context_value("option"), Some(option), "{pairs:?}: {e}");
    assert_eq!(
        e.context_value("conflicts_with"),
        Some(other),
        "{pairs:?}: {e}"
    );
    assert!(!format!("{e} {e:?}").contains("hunter2"), "{e}");
}

#[test]
fn credentials_without_a_sasl_mechanism_are_refused() {
    refused(&[("auth.username", "u")], "auth.username", "auth.mechanism");
    refused(
        &[("auth.password", "hunter2")],
        "auth.password",
        "auth.mechanism",
    );
    refused(
        &[("auth.mechanism", "AWS_MSK_IAM"), ("auth.username", "u")],
        "auth.username",
        "auth.mechanism",
    );
    refused(
        &[("kafka.sasl.jaas.config", SCRAM_JAAS)],
        "kafka.sasl.jaas.config",
        "auth.mechanism",
    );
    refused(
        &[("auth.awsRegion", "eu-west-1")],
        "auth.awsRegion",
        "auth.mechanism",
    );
    refused(
        &[
            ("auth.mechanism", "PLAIN"),
            ("auth.username", "u"),
            ("auth.password", "p"),
            ("auth.awsRegion", "x"),
        ],
        "auth.awsRegion",
        "auth.mechanism",
    );
}

#[test]
fn tls_passwords_and_types_without_their_store_are_refused() {
    refused(
        &[("tls.truststore.password", "hunter2")],
        "tls.truststore.password",
        "tls.truststore.location",
    );
    refused(
        &[("tls.keystore.password", "hunter2")],
        "tls.keystore.password",
        "tls.keystore.location",
    );
    refused(
        &[("kafka.ssl.truststore.password", "hunter2")],
        "kafka.ssl.truststore.password",
        "tls.truststore.location",
    );
    refused(
        &[("kafka.ssl.keystore.type", "JKS")],
        "kafka.ssl.keystore.type",
        "tls.keystore.location",
    );
    refused(
        &[("tls.key.password", "hunter2")],
        "tls.key.password",
        "tls.keystore.location",
    );
    refused(
        &[("kafka.ssl.key.password", "hunter2")],
        "kafka.ssl.key.password",
        "tls.keystore.location",
    );
    refused(
        &[("tls.key.location", "/k.pem")],
        "tls.key.location",
        "tls.keystore.location",
    );
    refused(
        &[
            ("tls.keystore.location", "/k.p12"),
            ("tls.keystore.type", "PKCS12"),
            ("tls.key.location", "/k.pem"),
        ],
        "tls.key.location",
        "tls.keystore.location",
    );
    refused(
        &[
            ("tls.enabled", "false"),
            ("tls.truststore.location", "/ca.pem"),
        ],
        "tls.truststore.location",
        "tls.enabled",
    );
}

#[test]
fn unknown_mechanism_lists_the_allowed_values() {
    for name in ["auth.mechanism", "kafka.sasl.mechanism"] {
        let e = settings(&[(name, "GSSAPI")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert_eq!(e.context_value("option"), Some(name));
        for v in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "AWS_MSK_IAM"] {
            assert!(e.message().contains(v), "{e}");
        }
    }
}

#[test]
fn one_setting_in_two_spellings_is_refused() {
    refused(
        &[
            ("auth.mechanism", "PLAIN"),
            ("kafka.sasl.mechanism", "PLAIN"),
        ],
        "kafka.sasl.mechanism",
        "auth.mechanism",
    );
    refused(
        &[
            ("tls.truststore.location", "/a"),
            ("kafka.ssl.truststore.location", "/b"),
        ],
        "kafka.ssl.truststore.location",
        "tls.truststore.location",
    );
    refused(
        &[
            ("tls.keystore.location", "/a"),
            ("kafka.ssl.keystore.location", "/a"),
            ("tls.keystore.password", "x"),
        ],
        "kafka.ssl.keystore.location",
        "tls.keystore.location",
    );
    refused(
        &[("tls.enabled", "true"), ("kafka.security.protocol", "SSL")],
        "kafka.security.protocol",
        "tls.enabled",
    );
    refused(
        &[
            ("tls.verify", "false"),
            ("kafka.ssl.endpoint.identification.algorithm", ""),
        ],
        "kafka.ssl.endpoint.identification.algorithm",
        "tls.verify",
    );
    refused(
        &[
            ("kafka.sasl.mechanism", "SCRAM-SHA-512"),
            ("auth.username", "u"),
            ("kafka.sasl.jaas.config", SCRAM_JAAS),
        ],
        "kafka.sasl.jaas.config",
        "auth.username",
    );
    refused(
        &[
            ("auth.mechanism", "PLAIN"),
            ("auth.username", "u"),
            ("kafka.sasl.password", "hunter2"),
        ],
        "kafka.sasl.password",
        "auth.username",
    );
    refused(
        &[
            ("tls.truststore.location", "/a"),
            ("kafka.ssl.ca.location", "/b"),
        ],
        "kafka.ssl.ca.location",
        "tls.truststore.location",
    );
}

#[test]
fn security_protocol_must_agree_with_mechanism_and_tls_options() {
    refused(
        &[
            ("kafka.security.protocol", "PLAINTEXT"),
            ("kafka.sasl.mechanism", "SCRAM-SHA-512"),
            ("kafka.sasl.jaas.config", SCRAM_JAAS),
        ],
        "kafka.sasl.mechanism",
        "kafka.security.protocol",
    );
    refused(
        &[("kafka.security.protocol", "SASL_SSL")],
        "kafka.security.protocol",
        "kafka.sasl.mechanism",
    );
    refused(
        &[
            ("kafka.security.protocol", "PLAINTEXT"),
            ("kafka.ssl.truststore.location", "/ca.jks"),
        ],
        "kafka.ssl.truststore.location",
        "kafka.security.protocol",
    );
    refused(
        &[
            ("kafka.security.protocol", "SASL_PLAINTEXT"),
            ("kafka.sasl.mechanism", "AWS_MSK_IAM"),
        ],
        "kafka.sasl.mechanism",
        "kafka.security.protocol",
    );
    refused(
        &[
            ("kafka.sasl.mechanism", "PLAIN"),
            ("kafka.sasl.jaas.config", SCRAM_JAAS),
        ],
        "kafka.sasl.jaas.config",
        "kafka.sasl.mechanism",
    );
    let s = settings(&[("kafka.security.protocol", "SSL")]).unwrap();
    assert!(s.uses_tls() && !s.uses_sasl());
    let s = settings(&[("kafka.security.protocol", "PLAINTEXT")]).unwrap();
    assert!(!s.uses_tls());
}

#[test]
fn java_only_options_are_refused_with_what_to_use_instead() {
    for (k, hint) in [
        ("kafka.ssl.engine.factory.class", "kafka.ssl.truststore"),
        ("kafka.sasl.login.callback.handler.class", "AWS_MSK_IAM"),
        ("kafka.sasl.client.callback.handler.class", "AWS_MSK_IAM"),
        ("kafka.ssl.keystore.key", "tls.key.location"),
    ] {
        let e = settings(&[(k, "com.example.Thing")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption, "{k}");
        assert_eq!(e.context_value("option"), Some(k));
        assert!(e.message().contains(hint), "{e}");
    }
    // The MSK IAM handlers of the Spark/Databricks pages mean what the connector does natively.
    let s = settings(&[
        ("kafka.security.protocol", "SASL_SSL"),
        ("kafka.sasl.mechanism", "AWS_MSK_IAM"),
        (
            "kafka.sasl.jaas.config",
            "shadedmskiam.software.amazon.msk.auth.iam.IAMLoginModule required;",
        ),
        (
            "kafka.sasl.client.callback.handler.class",
            "shadedmskiam.software.amazon.msk.auth.iam.IAMClientCallbackHandler",
        ),
    ])
    .unwrap();
    assert!(matches!(s.auth, AuthSettings::MskIam { .. }));
    assert!(s.pass_through.iter().all(|(k, _)| !k.contains("callback")));
    let s = settings(&[
        ("kafka.sasl.mechanism", "OAUTHBEARER"),
        (
            "kafka.sasl.login.callback.handler.class",
            "kafkashaded.software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
        ),
    ])
    .unwrap();
    assert!(matches!(s.auth, AuthSettings::MskIam { .. }) && s.uses_tls());
}

#[test]
fn spark_scram_options_resolve_the_password_at_build_only() {
    let s = settings(&[
        ("kafka.security.protocol", "SASL_PLAINTEXT"),
        ("kafka.sasl.mechanism", "SCRAM-SHA-512"),
        ("kafka.sasl.jaas.config", SCRAM_JAAS),
    ])
    .unwrap();
    match &s.auth {
        AuthSettings::Sasl {
            credentials:
                SaslCredentials::UserPassword {
                    username, password, ..
                },
            ..
        } => {
            assert_eq!(username, "alice");
            assert_eq!(password.expose(), "{{secrets/kafka/pw}}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!s.uses_tls());
    let profile = ConnectionProfile::resolve(&s, &Store).unwrap();
    let c = profile.client_config();
    assert_eq!(c.get("security.protocol"), Some("SASL_PLAINTEXT"));
    assert_eq!(c.get("sasl.mechanism"), Some("SCRAM-SHA-512"));
    assert_eq!(c.get("sasl.username"), Some("alice"));
    assert_eq!(c.get("sasl.password"), Some("hunter2"));
    assert!(!format!("{s:?} {profile:?}").contains("hunter2"));
    // A secret that cannot be resolved fails the build naming the option, not the parse.
    let s = settings(&[
        ("auth.mechanism", "SCRAM-SHA-256"),
        ("auth.username", "u"),
        ("auth.password", "{{secrets/kafka/missing}}"),
    ])
    .unwrap();
    let e = ConnectionProfile::resolve(&s, &Store).unwrap_err();
    assert_eq!(e.code(), ErrorCode::SecretNotFound);
    assert_eq!(e.context_value("option"), Some("auth.password"));
}

#[test]
fn a_whole_jaas_line_may_be_a_secret_reference() {
    let s = settings(&[
        ("kafka.security.protocol", "SASL_SSL"),
        ("kafka.sasl.mechanism", "PLAIN"),
        ("kafka.sasl.jaas.config", "{{secrets/kafka/jaas}}"),
    ])
    .unwrap();
    let c = ConnectionProfile::resolve(&s, &Store)
        .unwrap()
        .client_config();
    assert_eq!(c.get("security.protocol"), Some("SASL_SSL"));
    assert_eq!(c.get("sasl.username"), Some("bob"));
    assert_eq!(c.get("sasl.password"), Some("hunter2"));
    // The resolved line is checked against the mechanism too.
    let s = settings(&[
        ("kafka.security.protocol", "SASL_SSL"),
        ("kafka.sasl.mechanism", "SCRAM-SHA-256"),
        ("kafka.sasl.jaas.config", "{{secrets/kafka/jaas}}"),
    ])
    .unwrap();
    let e = ConnectionProfile::resolve(&s, &Store).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
}

#[test]
fn librdkafka_spelling_of_credentials_and_endpoint_identification() {
    let s = settings(&[
        ("kafka.sasl.mechanism", "PLAIN"),
        ("kafka.sasl.username", "u"),
        ("kafka.sasl.password", "{{secrets/kafka/pw}}"),
        ("kafka.security.protocol", "SASL_SSL"),
        ("kafka.ssl.endpoint.identification.algorithm", ""),
    ])
    .unwrap();
    assert!(!s.tls.as_ref().unwrap().verify_hostname);
    assert!(s.tls.as_ref().unwrap().verify);
    let c = ConnectionProfile::resolve(&s, &Store)
        .unwrap()
        .client_config();
    assert_eq!(c.get("sasl.password"), Some("hunter2"));
    assert_eq!(c.get("ssl.endpoint.identification.algorithm"), Some("none"));
    let e = settings(&[("kafka.ssl.endpoint.identification.algorithm", "ldap")]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
}

#[test]
fn sensitive_spark_options_are_hidden_from_debug() {
    let o: Options = [
        ("kafka.bootstrap.servers", "127.0.0.1:1"),
        ("kafka.sasl.mechanism", "PLAIN"),
        (
            "kafka.sasl.jaas.config",
            r#"x.PlainLoginModule required username="u" password="hunter2";"#,
        ),
        ("kafka.ssl.truststore.location", "/t.jks"),
        ("kafka.ssl.truststore.password", "hunter2"),
    ]
    .into_iter()
    .collect();
    let p = OptionSpec::validate_all(&connection_option_specs(), &o, "kafka").unwrap();
    let s = ConnectionSettings::parse(&p).unwrap();
    let shown = format!("{:?} {p:?} {s:?}", p.options());
    assert!(!shown.contains("hunter2"), "{shown}");
}

#[test]
fn a_misspelled_bootstrap_option_is_named() {
    let o: Options = [("kafka.bootstrap.server", "127.0.0.1:1")]
        .into_iter()
        .collect();
    let p = OptionSpec::validate_all(&connection_option_specs(), &o, "kafka");
    let e = match p {
        Ok(p) => ConnectionSettings::parse(&p).unwrap_err(),
        Err(e) => e,
    };
    assert!(
        e.message().contains(
            "'kafka.bootstrap.server' was given: did you mean 'kafka.bootstrap.servers'?"
        ),
        "{e}"
    );
}
