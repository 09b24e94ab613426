//! Schema registry: the provider against the project's test registry over real HTTP
//! (basic auth, strategies, retries on outage, protobuf message indexes, restart picks the
//! latest version), and decoding of Confluent-framed records.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(all(feature = "registry", feature = "json"))]
#![allow(deprecated)] // to_avro_datum

#[path = "decode_util.rs"]
mod util;

use apache_avro::types::Value;
use tributary_decode::{
    confluent_frame, DecodeConfig, DecodeMode, RegistrySchemaProvider, StreamDecoder,
};
use tributary_sdk::{ErrorCode, FileSecretStore, Options, SchemaFormat, SchemaProvider};
use tributary_test_registry::TestRegistry;
use util::*;

const AVRO: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"]}]}"#;
const AVRO_V2: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"]},{"name":"qty","type":"int","default":0}]}"#;
const PROTO: &str = r#"syntax = "proto3"; package com.example; message Other { string z = 1; } message Outer { message Event { string name = 1; int64 n = 2; } }"#;

struct Env {
    registry: TestRegistry,
    secrets: FileSecretStore,
    _dir: tempfile::TempDir,
}

fn env(password: &str) -> Env {
    let registry = TestRegistry::start_with_auth("svc", "pa55").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sr")).unwrap();
    std::fs::write(dir.path().join("sr/secret"), format!("{password}\n")).unwrap();
    Env {
        registry,
        secrets: FileSecretStore::new(dir.path()),
        _dir: dir,
    }
}

fn config(e: &Env, locator: &str, extra: &[(&str, &str)]) -> tributary_sdk::Result<DecodeConfig> {
    let mut o = Options::new()
        .with("schema_registry_url", e.registry.url())
        .with("schema_registry_key", "svc")
        .with("schema_registry_secret", "{{secrets/sr/secret}}")
        .with("payload_schema_locator", locator)
        .with("schema_registry_max_retries", "2");
    for (k, v) in extra {
        o.set(*k, *v);
    }
    DecodeConfig::from_options(&o, &e.secrets)
}

fn avro_record(id: i64) -> Vec<u8> {
    let schema = apache_avro::Schema::parse_str(AVRO).unwrap();
    let v = Value::Record(vec![
        ("id".into(), Value::Long(id)),
        (
            "note".into(),
            Value::Union(1, Box::new(Value::String(format!("n{id}")))),
        ),
    ]);
    apache_avro::to_avro_datum(&schema, v).unwrap()
}

#[tokio::test]
async fn avro_topic_name_strategy_decodes_and_checks_schema_id() {
    let e = env("pa55");
    let id = e.registry.register("orders-value", "AVRO", AVRO).unwrap();
    let other = e.registry.register("misc-value", "AVRO", AVRO_V2).unwrap();
    let cfg = config(&e, "strategy=TopicNameStrategy,format=AVRO", &[]).unwrap();
    let provider = RegistrySchemaProvider::new(&cfg).unwrap();
    assert!(!format!("{provider:?}").contains("pa55"));
    let schemas = provider.resolve("orders").await.unwrap();
    let p = schemas.payload.clone().unwrap();
    assert_eq!(p.registry_id, Some(id));
    assert_eq!(p.format, SchemaFormat::Avro);
    let (_, rows, m) = decode_values(
        &schemas,
        DecodeMode::Permissive,
        vec![
            Some(confluent_frame(id, None, &avro_record(1))),
            Some(confluent_frame(other, None, &avro_record(2))),
            Some(avro_record(3)), // not framed: first byte is the zig-zag id 6
            Some(confluent_frame(id, None, &avro_record(4))),
        ],
    )
    .unwrap();
    assert_eq!(
        rows,
        [
            r#"{"id":1,"note":"n1"}"#,
            "null",
            "null",
            r#"{"id":4,"note":"n4"}"#
        ]
    );
    assert_eq!(metric(&m, "malformed.wrongSchemaId"), 1);
    assert_eq!(metric(&m, "malformed.badMagicByte"), 1);
}

const ADDRESS: &str = r#"{"type":"record","name":"Address","namespace":"com.shared","fields":[{"name":"city","type":"string"}]}"#;
const CUSTOMER: &str = r#"{"type":"record","name":"Customer","namespace":"com.shared","fields":[{"name":"name","type":"string"},{"name":"address","type":"Address"}]}"#;
const ORDER_WITH_REFS: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"buyer","type":"com.shared.Customer"},{"name":"ship_to","type":["null","com.shared.Address"]}]}"#;
/// The same Order written out by hand: the writer schema of the test records.
const ORDER_SELF_CONTAINED: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},
 {"name":"buyer","type":{"type":"record","name":"Customer","namespace":"com.shared","fields":[{"name":"name","type":"string"},
   {"name":"address","type":{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}}]}},
 {"name":"ship_to","type":["null","com.shared.Address"]}]}"#;

#[tokio::test]
async fn avro_references_to_other_subjects_are_resolved() {
    use tributary_test_registry::SchemaReference;
    let e = env("pa55");
    let reference = |name: &str, subject: &str| SchemaReference {
        name: name.into(),
        subject: subject.into(),
        version: 1,
    };
    e.registry.register("address", "AVRO", ADDRESS).unwrap();
    e.registry
        .register_with_references(
            "customer",
            "AVRO",
            CUSTOMER,
            vec![reference("com.shared.Address", "address")],
        )
        .unwrap();
    let id = e
        .registry
        .register_with_references(
            "orders-value",
            "AVRO",
            ORDER_WITH_REFS,
            vec![
                reference("com.shared.Customer", "customer"),
                reference("com.shared.Address", "address"),
            ],
        )
        .unwrap();
    let cfg = config(&e, "strategy=TopicNameStrategy,format=AVRO", &[]).unwrap();
    let schemas = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("orders")
        .await
        .unwrap();
    let writer = apache_avro::Schema::parse_str(ORDER_SELF_CONTAINED).unwrap();
    let address = |city: &str| Value::Record(vec![("city".into(), Value::String(city.into()))]);
    let record = Value::Record(vec![
        ("id".into(), Value::Long(7)),
        (
            "buyer".into(),
            Value::Record(vec![
                ("name".into(), Value::String("Ada".into())),
                ("address".into(), address("Oslo")),
            ]),
        ),
        (
            "ship_to".into(),
            Value::Union(1, Box::new(address("Bergen"))),
        ),
    ]);
    let datum = apache_avro::to_avro_datum(&writer, record).unwrap();
    let (_, rows, _) = decode_values(
        &schemas,
        DecodeMode::Permissive,
        vec![Some(confluent_frame(id, None, &datum))],
    )
    .unwrap();
    assert_eq!(
        rows,
        [
            r#"{"id":7,"buyer":{"name":"Ada","address":{"city":"Oslo"}},"ship_to":{"city":"Bergen"}}"#
        ]
    );

    // A reference to a subject that is not there is a schema error naming it.
    e.registry
        .register_with_references(
            "broken-value",
            "AVRO",
            ORDER_WITH_REFS,
            vec![reference("com.shared.Customer", "nobody")],
        )
        .unwrap();
    let err = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("broken")
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Schema);
    assert!(err.message().contains("nobody"), "{}", err.message());
}

#[tokio::test]
async fn a_restart_resolves_the_latest_version_again() {
    let e = env("pa55");
    let v1 = e.registry.register("orders-value", "AVRO", AVRO).unwrap();
    let cfg = config(&e, "subject=orders-value,format=AVRO", &[]).unwrap();
    let provider = RegistrySchemaProvider::new(&cfg).unwrap();
    let first = provider.resolve("orders").await.unwrap();
    let v2 = e
        .registry
        .register("orders-value", "AVRO", AVRO_V2)
        .unwrap();
    // The decoder built at start keeps v1: a v2 record is null and counted.
    let mut d = StreamDecoder::new(&first, DecodeMode::Permissive, "value").unwrap();
    d.decode(&kafka_batch(vec![Some(confluent_frame(
        v2,
        None,
        &[2, 0, 0],
    ))]))
    .unwrap();
    assert_eq!(metric(&d.metrics(), "malformed.wrongSchemaId"), 1);
    let again = provider.resolve("orders").await.unwrap();
    assert_eq!(first.payload.unwrap().registry_id, Some(v1));
    assert_eq!(again.payload.unwrap().registry_id, Some(v2));
    // A fixed version stays.
    let cfg = config(&e, "subject=orders-value,format=AVRO,version=1", &[]).unwrap();
    let pinned = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("orders")
        .await
        .unwrap();
    assert_eq!(pinned.payload.unwrap().registry_id, Some(v1));
}

#[tokio::test]
async fn protobuf_record_name_strategy_and_both_index_encodings() {
    let e = env("pa55");
    let id = e
        .registry
        .register("com.example.Outer.Event", "PROTOBUF", PROTO)
        .unwrap();
    let cfg = config(
        &e,
        "strategy=RecordNameStrategy,record=com.example.Outer.Event,format=PROTOBUF",
        &[],
    )
    .unwrap();
    let schemas = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("events")
        .await
        .unwrap();
    let msg = [0x0a, 0x01, b'e', 0x10, 0x05]; // name "e", n 5
    let (_, rows, m) = decode_values(
        &schemas,
        DecodeMode::Permissive,
        vec![
            Some(confluent_frame(id, Some(&[1, 0]), &msg)),
            Some(confluent_frame(id, Some(&[0]), &msg)), // names message Other
        ],
    )
    .unwrap();
    assert_eq!(rows, [r#"{"name":"e","n":5}"#, "null"]);
    assert_eq!(metric(&m, "malformed.wrongMessageIndex"), 1);

    // The first message, written both ways: the single byte 0, and count 1 + index 0.
    let first = e
        .registry
        .register("other-value", "PROTOBUF", PROTO)
        .unwrap();
    let cfg = config(&e, "strategy=TopicNameStrategy,format=PROTOBUF", &[]).unwrap();
    let schemas = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("other")
        .await
        .unwrap();
    let other = [0x0a, 0x01, b'z'];
    let mut long_form = vec![0, 0, 0, 0, first as u8, 2, 0];
    long_form.extend(other);
    let (_, rows, _) = decode_values(
        &schemas,
        DecodeMode::Permissive,
        vec![
            Some(confluent_frame(first, Some(&[0]), &other)),
            Some(long_form),
        ],
    )
    .unwrap();
    assert_eq!(rows, [r#"{"z":"z"}"#, r#"{"z":"z"}"#]);
}

#[tokio::test]
async fn wrong_credentials_are_an_authentication_error() {
    let e = env("wrong");
    e.registry.register("orders-value", "AVRO", AVRO).unwrap();
    let cfg = config(&e, "subject=orders-value,format=AVRO", &[]).unwrap();
    let err = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("orders")
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Authentication);
    assert!(!err.to_string().contains("wrong"));
}

#[tokio::test]
async fn an_outage_is_retried_then_a_connection_error_not_malformed_data() {
    let e = env("pa55");
    e.registry.register("orders-value", "AVRO", AVRO).unwrap();
    e.registry.set_unavailable(true);
    let cfg = config(&e, "subject=orders-value,format=AVRO", &[]).unwrap();
    let before = e.registry.request_count();
    let err = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("orders")
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Connection);
    assert!(err.is_retryable());
    assert_eq!(
        e.registry.request_count() - before,
        3,
        "first try + 2 retries"
    );
    // Unreachable port: a connection error too.
    let mut cfg2 = cfg.clone();
    cfg2.registry.as_mut().unwrap().url = "http://127.0.0.1:9".into();
    cfg2.registry.as_mut().unwrap().max_retries = 0;
    let err = RegistrySchemaProvider::new(&cfg2)
        .unwrap()
        .resolve("orders")
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Connection);
    // Back up: resolves.
    e.registry.set_unavailable(false);
    assert!(RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("orders")
        .await
        .is_ok());
}

#[tokio::test]
async fn unknown_subject_and_wrong_format_are_schema_errors() {
    let e = env("pa55");
    e.registry.register("orders-value", "AVRO", AVRO).unwrap();
    let cfg = config(&e, "subject=nope-value,format=AVRO", &[]).unwrap();
    let err = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("orders")
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Schema);
    assert!(err
        .message()
        .contains("subject 'nope-value' version latest is not in the schema registry"));
    let cfg = config(&e, "subject=orders-value,format=PROTOBUF", &[]).unwrap();
    let err = RegistrySchemaProvider::new(&cfg)
        .unwrap()
        .resolve("orders")
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "subject 'orders-value' holds a AVRO schema but the locator says format=PROTOBUF"
    );
}

#[test]
fn option_validation() {
    let e = env("pa55");
    let err = config(&e, "subject=orders-value,format=JSON", &[]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption);
    assert!(
        err.message()
            .contains("declare the schema inline with json_schema"),
        "{}",
        err.message()
    );
    let err = config(&e, "strategy=RecordNameStrategy,format=AVRO", &[]).unwrap_err();
    assert!(err
        .message()
        .contains("RecordNameStrategy needs record=<name>"));
    let err = config(
        &e,
        "subject=a,format=AVRO",
        &[("schema_registry_secret", "plaintext-pw")],
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption);
    assert!(!err.to_string().contains("plaintext-pw"));
    let err = config(&e, "subject=a,format=AVRO", &[("avro_schema", AVRO)]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConflictingOptions);
    let err = DecodeConfig::from_options(&Options::new().with("mode", "FAILFAST"), &e.secrets)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::MissingOption);
    let err = DecodeConfig::from_options(&Options::new().with("json_shema", "{}"), &e.secrets)
        .unwrap_err();
    assert!(
        err.message().contains("did you mean 'json_schema'"),
        "{}",
        err.message()
    );
    let err = DecodeConfig::from_options(&Options::new().with("proto_schema", PROTO), &e.secrets)
        .unwrap_err();
    assert_eq!(err.context_value("option"), Some("message_name"));
    let ok = DecodeConfig::from_options(
        &Options::new()
            .with("key_avro_schema", AVRO)
            .with("MODE", "failfast"),
        &e.secrets,
    )
    .unwrap();
    assert_eq!(ok.mode, DecodeMode::FailFast);
    assert!(ok.payload.is_none() && ok.key.is_some());
    assert_eq!(tributary_decode::topic_name_subject("t", true), "t-key");
    let loc = tributary_decode::SchemaLocator::parse(
        "strategy=TopicRecordNameStrategy,record=com.x.R,format=AVRO",
        "payload_schema_locator",
    )
    .unwrap();
    assert_eq!(loc.subject("t", false), "t-com.x.R");
}
