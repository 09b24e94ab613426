//! Authentication against real peers: SCRAM-SHA-256/512 on tansu with --authentication, TLS and
//! mutual TLS through stunnel with a test CA (all started by scripts/services/kafka.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use tributary_sdk::{ErrorCode, Options, ReadLimit, Source};

/// Creates a topic with one record through `admin_cfg`, then reads it with a source built from
/// `source_opts`; returns the record values.
async fn round_trip(admin_cfg: &rdkafka::ClientConfig, source_opts: Options) -> Vec<String> {
    let topic = unique("auth");
    create_topic(admin_cfg, &topic, 1, &[]).await;
    produce(admin_cfg, &topic, &[Rec::new(0, "secret-handshake")]).await;
    let mut o = source_opts;
    o.set("subscribe", &topic);
    o.set("startingOffsets", "earliest");
    let mut src = source(&o);
    let start = src.initial_offset().await.unwrap();
    let (_, rows) = batch(&mut src, &start, &ReadLimit::All).await;
    values(&rows)
}

fn scram_admin(b: &str, mech: &str, user: &str, pw: &str) -> rdkafka::ClientConfig {
    client_config(
        b,
        &[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", mech),
            ("sasl.username", user),
            ("sasl.password", pw),
        ],
    )
}

#[tokio::test]
async fn scram_sha_256_and_512_authenticate_with_secret_references() {
    let Some(b) = env("TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP") else {
        return;
    };
    for (mech, bits) in [("SCRAM-SHA-256", "256"), ("SCRAM-SHA-512", "512")] {
        let user = var(&format!("TRIBUTARY_KAFKA_SCRAM{bits}_USER")).unwrap();
        let pw_var = format!("TRIBUTARY_KAFKA_SCRAM{bits}_PASSWORD");
        let pw = var(&pw_var).unwrap();
        let pw_ref = format!("{{{{secrets/env/{pw_var}}}}}");
        let o = opts(
            &b,
            &[
                ("auth.mechanism", mech),
                ("auth.username", &user),
                ("auth.password", &pw_ref),
            ],
        );
        // The password never shows in the source's Debug output.
        let shown = format!("{:?}", source(&o.clone().with("subscribe", "t")));
        assert!(!shown.contains(&pw), "{shown}");
        let got = round_trip(&scram_admin(&b, mech, &user, &pw), o).await;
        assert_eq!(got, vec!["secret-handshake"], "{mech}");
    }
}

#[tokio::test]
async fn scram_wrong_password_is_an_authentication_error_in_bounded_time() {
    let Some(b) = env("TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP") else {
        return;
    };
    let user = var("TRIBUTARY_KAFKA_SCRAM512_USER").unwrap();
    let o = opts(
        &b,
        &[
            ("subscribe", "anything"),
            ("auth.mechanism", "SCRAM-SHA-512"),
            ("auth.username", &user),
            ("auth.password", "not-the-password"),
            ("fetchOffset.timeoutMs", "4000"),
            ("fetchOffset.numRetries", "2"),
        ],
    );
    let t0 = Instant::now();
    let err = source(&o).initial_offset().await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Authentication, "{err}");
    assert!(!err.to_string().contains("not-the-password"));
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
}

#[tokio::test]
async fn tls_with_the_right_ca_works_and_a_wrong_ca_is_refused() {
    let Some(b) = env("TRIBUTARY_KAFKA_TLS_BOOTSTRAP") else {
        return;
    };
    let ca = var("TRIBUTARY_KAFKA_CA").unwrap();
    let admin = client_config(
        &b,
        &[("security.protocol", "SSL"), ("ssl.ca.location", &ca)],
    );
    let got = round_trip(&admin, opts(&b, &[("tls.truststore.location", &ca)])).await;
    assert_eq!(got, vec!["secret-handshake"]);
    // The same CA as a PKCS#12 trust store.
    let p12 = var("TRIBUTARY_KAFKA_CA_P12").unwrap();
    let o = opts(
        &b,
        &[
            ("tls.truststore.location", &p12),
            (
                "tls.truststore.password",
                "{{secrets/env/TRIBUTARY_KAFKA_P12_PASSWORD}}",
            ),
        ],
    );
    assert_eq!(round_trip(&admin, o).await, vec!["secret-handshake"]);

    let wrong = var("TRIBUTARY_KAFKA_WRONG_CA").unwrap();
    let o = opts(
        &b,
        &[
            ("subscribe", "x"),
            ("tls.truststore.location", &wrong),
            ("fetchOffset.timeoutMs", "4000"),
            ("fetchOffset.numRetries", "1"),
        ],
    );
    let err = source(&o).initial_offset().await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Authentication, "{err}");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
}

#[tokio::test]
async fn mutual_tls_needs_a_client_certificate() {
    let Some(b) = env("TRIBUTARY_KAFKA_MTLS_BOOTSTRAP") else {
        return;
    };
    let ca = var("TRIBUTARY_KAFKA_CA").unwrap();
    let cert = var("TRIBUTARY_KAFKA_CLIENT_CERT").unwrap();
    let key = var("TRIBUTARY_KAFKA_CLIENT_KEY").unwrap();
    let admin = client_config(
        &b,
        &[
            ("security.protocol", "SSL"),
            ("ssl.ca.location", &ca),
            ("ssl.certificate.location", &cert),
            ("ssl.key.location", &key),
        ],
    );
    let pem = opts(
        &b,
        &[
            ("tls.truststore.location", &ca),
            ("tls.keystore.location", &cert),
            ("tls.key.location", &key),
        ],
    );
    assert_eq!(round_trip(&admin, pem).await, vec!["secret-handshake"]);
    let p12 = var("TRIBUTARY_KAFKA_CLIENT_P12").unwrap();
    let pkcs12 = opts(
        &b,
        &[
            ("tls.truststore.location", &ca),
            ("tls.keystore.location", &p12),
            (
                "tls.keystore.password",
                "{{secrets/env/TRIBUTARY_KAFKA_P12_PASSWORD}}",
            ),
        ],
    );
    assert_eq!(round_trip(&admin, pkcs12).await, vec!["secret-handshake"]);
    let enc = var("TRIBUTARY_KAFKA_CLIENT_KEY_ENCRYPTED").unwrap();
    let encrypted = opts(
        &b,
        &[
            ("tls.truststore.location", &ca),
            ("tls.keystore.location", &cert),
            ("tls.key.location", &enc),
            (
                "tls.key.password",
                "{{secrets/env/TRIBUTARY_KAFKA_P12_PASSWORD}}",
            ),
        ],
    );
    assert_eq!(
        round_trip(&admin, encrypted).await,
        vec!["secret-handshake"]
    );

    let without = opts(
        &b,
        &[
            ("subscribe", "x"),
            ("tls.truststore.location", &ca),
            ("fetchOffset.timeoutMs", "4000"),
            ("fetchOffset.numRetries", "1"),
        ],
    );
    let err = source(&without).initial_offset().await.unwrap_err();
    assert!(
        matches!(
            err.code(),
            ErrorCode::Authentication | ErrorCode::Connection
        ),
        "{err}"
    );

    // A wrong key store password is caught before connecting, naming the file.
    let mut bad = opts(
        &b,
        &[
            ("subscribe", "x"),
            ("tls.keystore.location", &p12),
            ("tls.keystore.password", "nope"),
        ],
    );
    bad.set("tls.truststore.location", &ca);
    let err = tributary_kafka::KafkaSource::new(&bad, &Default::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption);
    assert_eq!(err.context_value("file"), Some(p12.as_str()));
}
