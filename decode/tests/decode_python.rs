//! Wire format from an independent encoder: Python `confluent-kafka` serializers register
//! schemas in the test registry over HTTP and frame records; the Rust side resolves and decodes
//! them. Needs `TRIBUTARY_REGISTRY_PYTHON` (set by `scripts/services/registry-python.sh`);
//! skipped (recorded by `tributary-skip-log`) without it, a failure under CI.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(all(feature = "registry", feature = "json"))]

#[path = "decode_util.rs"]
mod util;

use tributary_decode::{DecodeConfig, DecodeMode, RegistrySchemaProvider};
use tributary_sdk::{FileSecretStore, Options, SchemaProvider};
use tributary_test_registry::TestRegistry;
use util::*;

fn python() -> Option<String> {
    tributary_skip_log::require_env(
        "TRIBUTARY_REGISTRY_PYTHON",
        "scripts/services/registry-python.sh",
    )
}

#[tokio::test]
async fn confluent_kafka_python_records_decode() {
    let Some(py) = python() else { return };
    let registry = TestRegistry::start_with_auth("svc", "pa55").unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testkit/schema-registry/python/produce.py"
    );
    // The registry serves from its own thread, so a blocking child process is fine here.
    let out = std::process::Command::new(py)
        .args([script, &registry.url(), "svc", "pa55"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut records: Vec<(String, Vec<u8>)> = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let hex = v["hex"].as_str().unwrap();
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        records.push((v["kind"].as_str().unwrap().to_string(), bytes));
    }
    let of = |kind: &str| -> Vec<Option<Vec<u8>>> {
        records
            .iter()
            .filter(|r| r.0 == kind)
            .map(|r| Some(r.1.clone()))
            .collect()
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sr")).unwrap();
    std::fs::write(dir.path().join("sr/pw"), "pa55").unwrap();
    let secrets = FileSecretStore::new(dir.path());
    let resolve = |locator: &str, topic: &'static str| {
        let o = Options::new()
            .with("schema_registry_url", registry.url())
            .with("schema_registry_key", "svc")
            .with("schema_registry_secret", "{{secrets/sr/pw}}")
            .with("payload_schema_locator", locator);
        let cfg = DecodeConfig::from_options(&o, &secrets).unwrap();
        async move {
            RegistrySchemaProvider::new(&cfg)
                .unwrap()
                .resolve(topic)
                .await
                .unwrap()
        }
    };

    let avro = resolve("strategy=TopicNameStrategy,format=AVRO", "orders").await;
    let (_, rows, m) = decode_values(&avro, DecodeMode::Permissive, of("avro")).unwrap();
    assert_eq!(
        rows,
        [
            r#"{"id":0,"name":"n0","price":0.25,"tags":["a","t0"],"ts":"2024-01-01T00:00:00Z"}"#,
            r#"{"id":1,"name":"n1","price":1.25,"tags":["a","t1"],"ts":"2024-01-01T00:00:01Z","note":"x1"}"#,
            r#"{"id":2,"name":"n2","price":2.25,"tags":["a","t2"],"ts":"2024-01-01T00:00:02Z","note":"x2"}"#,
        ]
    );
    assert_eq!(metric(&m, "malformedRecords"), 0);

    // Shipment references com.shared.Address, registered under another subject.
    let shipments = resolve("strategy=TopicNameStrategy,format=AVRO", "shipments").await;
    let (_, rows, m) = decode_values(&shipments, DecodeMode::Permissive, of("avro_ref")).unwrap();
    assert_eq!(
        rows,
        [
            r#"{"id":1,"to":{"city":"Oslo","zip":"0150"}}"#,
            r#"{"id":2,"to":{"city":"Bergen"},"back":{"city":"Oslo"}}"#,
        ]
    );
    assert_eq!(metric(&m, "malformedRecords"), 0);

    // Event is the second message of the file: framed with indexes [1].
    let events = resolve(
        "strategy=TopicNameStrategy,format=PROTOBUF,message=com.example.Event",
        "events",
    )
    .await;
    let (_, rows, m) = decode_values(&events, DecodeMode::Permissive, of("event")).unwrap();
    assert_eq!(
        rows,
        [
            r#"{"name":"e1","n":18446744073709551615,"at":"2023-11-14T22:13:20.000005Z","tags":["p","q"]}"#
        ]
    );
    assert_eq!(metric(&m, "malformedRecords"), 0);

    // Other is the first message: framed with the single byte 0; found without a message name.
    let others = resolve("strategy=TopicNameStrategy,format=PROTOBUF", "others").await;
    let (_, rows, _) = decode_values(&others, DecodeMode::Permissive, of("other")).unwrap();
    assert_eq!(rows, [r#"{"z":"zz"}"#]);
}
