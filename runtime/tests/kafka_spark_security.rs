//! Pipelines written with Spark's own Kafka security options, run by the `tributary` binary
//! against the real brokers of `scripts/services/kafka.sh`: SCRAM-SHA-512 through
//! `kafka.sasl.jaas.config` (the password a secret reference resolved from `--secrets-dir`), and
//! mutual TLS with a JKS trust store and a JKS key store written by Java's `keytool`. Each reads
//! every record into Parquet; a wrong secret fails with one clear error that shows no password.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{stderr, tributary, Layout};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;

fn env(var: &str) -> Option<String> {
    tributary_skip_log::require_env(var, "scripts/services/kafka.sh")
}

fn var(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set by kafka.sh"))
}

/// Creates `topic` and produces `{"id": i}` for i in 0..n through a client configured by `cfg`.
async fn produce(cfg: &ClientConfig, topic: &str, n: i64) {
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    admin
        .create_topics(
            &[NewTopic::new(topic, 1, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    let producer: FutureProducer = cfg.create().unwrap();
    for i in 0..n {
        let payload = format!("{{\"id\": {i}}}");
        producer
            .send(
                FutureRecord::<(), _>::to(topic).payload(&payload),
                Duration::from_secs(15),
            )
            .await
            .unwrap();
    }
}

fn write_secret(dir: &Path, key: &str, value: &str) {
    let scope = dir.join("kafka");
    std::fs::create_dir_all(&scope).unwrap();
    std::fs::write(scope.join(key), format!("{value}\n")).unwrap();
}

/// A pipeline file reading `topic` with `security` (TOML key/value pairs) into Parquet.
fn pipeline(l: &Layout, bootstrap: &str, topic: &str, security: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
checkpoint = "{ck}"
[source]
connector = "kafka"
options = {{ "kafka.bootstrap.servers" = "{bootstrap}", subscribe = "{topic}", startingOffsets = "earliest", {security} }}
decode = {{ json_schema = '{{"type":"object","properties":{{"id":{{"type":"integer"}}}}}}' }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        out = l.output().display()
    );
    let path = l.checkpoint().with_extension("toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run(p: &Path, secrets: &Path) -> std::process::Output {
    tributary()
        .args(["run", "-q", "--secrets-dir"])
        .arg(secrets)
        .arg(p)
        .output()
        .unwrap()
}

/// The ids in the Parquet output (the decoded `value.id`).
fn ids(dir: &Path) -> Vec<i64> {
    use arrow::array::{AsArray, Int64Array};
    let mut out = Vec::new();
    for b in tributary_sinks::parquet::read_dir_batches(dir).unwrap() {
        let value = b.column_by_name("value").unwrap().as_struct();
        let id: &Int64Array = value.column_by_name("id").unwrap().as_primitive();
        out.extend(id.values().iter().copied());
    }
    out.sort_unstable();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_with_sparks_jaas_config_reads_the_scram_broker() {
    let Some(bootstrap) = env("TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP") else {
        return;
    };
    let user = var("TRIBUTARY_KAFKA_SCRAM512_USER");
    let password = var("TRIBUTARY_KAFKA_SCRAM512_PASSWORD");
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap)
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "SCRAM-SHA-512")
        .set("sasl.username", &user)
        .set("sasl.password", &password);
    let topic = format!(
        "spark-jaas-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    );
    produce(&cfg, &topic, 12).await;

    let l = Layout::new();
    let secrets = l.checkpoint().with_extension("secrets");
    write_secret(&secrets, "password", &password);
    let security = format!(
        r#""kafka.security.protocol" = "SASL_PLAINTEXT", "kafka.sasl.mechanism" = "SCRAM-SHA-512", "kafka.sasl.jaas.config" = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{{{{secrets/kafka/password}}}}";'"#
    );
    let p = pipeline(&l, &bootstrap, &topic, &security);
    let o = run(&p, &secrets);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ids(&l.output()), (0..12).collect::<Vec<_>>());
    assert!(!String::from_utf8_lossy(&o.stdout).contains(&password));
    assert!(!stderr(&o).contains(&password));

    // A wrong password: one clear error, no password in it, nothing written.
    let l2 = Layout::new();
    let wrong = l2.checkpoint().with_extension("secrets");
    write_secret(&wrong, "password", "not-the-password");
    let p2 = pipeline(&l2, &bootstrap, &topic, &security);
    let o = run(&p2, &wrong);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("AUTHENTICATION_FAILED"), "{err}");
    assert!(
        !err.contains("not-the-password") && !err.contains(&password),
        "{err}"
    );
    assert!(!l2.output().exists() || ids(&l2.output()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_with_jks_stores_reads_through_mutual_tls() {
    let Some(bootstrap) = env("TRIBUTARY_KAFKA_MTLS_BOOTSTRAP") else {
        return;
    };
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap)
        .set("security.protocol", "SSL")
        .set("ssl.ca.location", var("TRIBUTARY_KAFKA_CA"))
        .set(
            "ssl.certificate.location",
            var("TRIBUTARY_KAFKA_CLIENT_CERT"),
        )
        .set("ssl.key.location", var("TRIBUTARY_KAFKA_CLIENT_KEY"));
    let topic = format!("spark-jks-{}-{}", std::process::id(), rand::random::<u32>());
    produce(&cfg, &topic, 7).await;

    let l = Layout::new();
    let secrets = l.checkpoint().with_extension("secrets");
    let store_password = var("TRIBUTARY_KAFKA_JKS_PASSWORD");
    let key_password = var("TRIBUTARY_KAFKA_JKS_KEY_PASSWORD");
    write_secret(&secrets, "store", &store_password);
    write_secret(&secrets, "key", &key_password);
    let security = format!(
        r#""kafka.security.protocol" = "SSL", "kafka.ssl.truststore.location" = "{ca}", "kafka.ssl.truststore.type" = "JKS", "kafka.ssl.truststore.password" = "{{{{secrets/kafka/store}}}}", "kafka.ssl.keystore.location" = "{ks}", "kafka.ssl.keystore.type" = "JKS", "kafka.ssl.keystore.password" = "{{{{secrets/kafka/store}}}}", "kafka.ssl.key.password" = "{{{{secrets/kafka/key}}}}""#,
        ca = var("TRIBUTARY_KAFKA_CA_JKS"),
        ks = var("TRIBUTARY_KAFKA_CLIENT_JKS"),
    );
    let p = pipeline(&l, &bootstrap, &topic, &security);
    let o = run(&p, &secrets);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ids(&l.output()), (0..7).collect::<Vec<_>>());
    let shown = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(
        !shown.contains(&store_password) && !shown.contains(&key_password),
        "{shown}"
    );
}
