//! Spark's own Kafka security options against real peers (started by
//! `scripts/services/kafka.sh`): SCRAM-SHA-512 on tansu with `kafka.security.protocol`,
//! `kafka.sasl.mechanism` and `kafka.sasl.jaas.config`; mutual TLS through stunnel with trust
//! and key stores written by Java's `keytool` (JKS and PKCS12), named with `kafka.ssl.*`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use tributary_sdk::{ErrorCode, Options, ReadLimit, Source};

const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// Creates a topic with one record through `admin`, reads it with a source built from
/// `source_opts`; returns the values.
async fn round_trip(admin: &rdkafka::ClientConfig, source_opts: Options) -> Vec<String> {
    let topic = unique("spark-security");
    create_topic(admin, &topic, 1, &[]).await;
    produce(admin, &topic, &[Rec::new(0, "spark-handshake")]).await;
    let mut o = source_opts;
    o.set("subscribe", &topic);
    o.set("startingOffsets", "earliest");
    let mut src = source(&o);
    let start = src.initial_offset().await.unwrap();
    let (_, rows) = batch(&mut src, &start, &ReadLimit::All).await;
    src.stop().await.unwrap();
    values(&rows)
}

fn jaas(user: &str, password: &str) -> String {
    format!(r#"{SCRAM_MODULE} required username="{user}" password="{password}";"#)
}

fn scram_options(b: &str, jaas_line: &str) -> Options {
    opts(
        b,
        &[
            ("kafka.security.protocol", "SASL_PLAINTEXT"),
            ("kafka.sasl.mechanism", "SCRAM-SHA-512"),
            ("kafka.sasl.jaas.config", jaas_line),
        ],
    )
}

#[tokio::test]
async fn scram_with_spark_options_and_a_secret_in_the_jaas_line() {
    let Some(b) = env("TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP") else {
        return;
    };
    let user = var("TRIBUTARY_KAFKA_SCRAM512_USER").unwrap();
    let pw = var("TRIBUTARY_KAFKA_SCRAM512_PASSWORD").unwrap();
    let admin = client_config(
        &b,
        &[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.username", &user),
            ("sasl.password", &pw),
        ],
    );
    // The password as a secret reference inside the JAAS line, and in the clear.
    for password in [
        "{{secrets/env/TRIBUTARY_KAFKA_SCRAM512_PASSWORD}}",
        pw.as_str(),
    ] {
        let o = scram_options(&b, &jaas(&user, password));
        assert!(!format!("{o:?}").contains(&pw), "{o:?}");
        let shown = format!("{:?}", source(&o.clone().with("subscribe", "t")));
        assert!(!shown.contains(&pw), "{shown}");
        assert_eq!(round_trip(&admin, o).await, vec!["spark-handshake"]);
    }
}

#[tokio::test]
async fn scram_wrong_password_in_the_jaas_line_is_an_authentication_error() {
    let Some(b) = env("TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP") else {
        return;
    };
    let user = var("TRIBUTARY_KAFKA_SCRAM512_USER").unwrap();
    let wrong = "n0t-the-Passw0rd";
    let o = scram_options(&b, &jaas(&user, wrong))
        .with("subscribe", "anything")
        .with("fetchOffset.timeoutMs", "4000")
        .with("fetchOffset.numRetries", "2");
    let mut src = source(&o);
    assert!(!format!("{src:?}").contains(wrong));
    let err = src.initial_offset().await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Authentication, "{err}");
    assert!(
        !format!("{err} {err:?} {}", err.to_json()).contains(wrong),
        "{err}"
    );
}

fn mtls_admin(b: &str) -> rdkafka::ClientConfig {
    client_config(
        b,
        &[
            ("security.protocol", "SSL"),
            ("ssl.ca.location", &var("TRIBUTARY_KAFKA_CA").unwrap()),
            (
                "ssl.certificate.location",
                &var("TRIBUTARY_KAFKA_CLIENT_CERT").unwrap(),
            ),
            (
                "ssl.key.location",
                &var("TRIBUTARY_KAFKA_CLIENT_KEY").unwrap(),
            ),
        ],
    )
}

#[tokio::test]
async fn mutual_tls_with_keytool_jks_and_pkcs12_stores() {
    let Some(b) = env("TRIBUTARY_KAFKA_MTLS_BOOTSTRAP") else {
        return;
    };
    let admin = mtls_admin(&b);
    let store_pw = "{{secrets/env/TRIBUTARY_KAFKA_JKS_PASSWORD}}";
    let key_pw = "{{secrets/env/TRIBUTARY_KAFKA_JKS_KEY_PASSWORD}}";
    let ca_jks = var("TRIBUTARY_KAFKA_CA_JKS").unwrap();
    let ca_p12 = var("TRIBUTARY_KAFKA_CA_KEYTOOL_P12").unwrap();
    let client_jks = var("TRIBUTARY_KAFKA_CLIENT_JKS").unwrap();
    let client_p12 = var("TRIBUTARY_KAFKA_CLIENT_KEYTOOL_P12").unwrap();
    // JKS trust store + JKS key store whose key has its own password, as Spark spells them.
    let jks = opts(
        &b,
        &[
            ("kafka.security.protocol", "SSL"),
            ("kafka.ssl.truststore.location", &ca_jks),
            ("kafka.ssl.truststore.type", "JKS"),
            ("kafka.ssl.truststore.password", store_pw),
            ("kafka.ssl.keystore.location", &client_jks),
            ("kafka.ssl.keystore.type", "JKS"),
            ("kafka.ssl.keystore.password", store_pw),
            ("kafka.ssl.key.password", key_pw),
        ],
    );
    assert_eq!(round_trip(&admin, jks).await, vec!["spark-handshake"]);
    // PKCS12 stores written by keytool, types recognised from the files.
    let p12 = opts(
        &b,
        &[
            ("kafka.security.protocol", "SSL"),
            ("kafka.ssl.truststore.location", &ca_p12),
            ("kafka.ssl.truststore.password", store_pw),
            ("kafka.ssl.keystore.location", &client_p12),
            ("kafka.ssl.keystore.password", store_pw),
        ],
    );
    assert_eq!(round_trip(&admin, p12).await, vec!["spark-handshake"]);
    // A JKS trust store with a PKCS12 key store, and the host name check turned off the
    // Spark way (the certificate is still verified).
    let mixed = opts(
        &b,
        &[
            ("kafka.security.protocol", "SSL"),
            ("kafka.ssl.truststore.location", &ca_jks),
            ("kafka.ssl.keystore.location", &client_p12),
            ("kafka.ssl.keystore.password", store_pw),
            ("kafka.ssl.endpoint.identification.algorithm", ""),
        ],
    );
    assert_eq!(round_trip(&admin, mixed).await, vec!["spark-handshake"]);
}

#[tokio::test]
async fn wrong_store_passwords_are_named_before_connecting_and_never_shown() {
    let Some(b) = env("TRIBUTARY_KAFKA_MTLS_BOOTSTRAP") else {
        return;
    };
    let ca_jks = var("TRIBUTARY_KAFKA_CA_JKS").unwrap();
    let client_jks = var("TRIBUTARY_KAFKA_CLIENT_JKS").unwrap();
    let store_pw = var("TRIBUTARY_KAFKA_JKS_PASSWORD").unwrap();
    let wrong = "Wr0ng-st0re-pw";
    for (option, o) in [
        (
            "kafka.ssl.truststore.location",
            opts(
                &b,
                &[
                    ("subscribe", "x"),
                    ("kafka.ssl.truststore.location", &ca_jks),
                    ("kafka.ssl.truststore.password", wrong),
                ],
            ),
        ),
        (
            "kafka.ssl.keystore.location",
            opts(
                &b,
                &[
                    ("subscribe", "x"),
                    ("kafka.ssl.keystore.location", &client_jks),
                    ("kafka.ssl.keystore.password", &store_pw),
                    ("kafka.ssl.key.password", wrong),
                ],
            ),
        ),
    ] {
        let err = tributary_kafka::KafkaSource::new(&o, &context()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidOption, "{err}");
        assert_eq!(err.context_value("option"), Some(option), "{err}");
        assert!(
            !format!("{err} {err:?} {}", err.to_json()).contains(wrong),
            "{err}"
        );
    }
}
