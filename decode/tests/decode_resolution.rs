//! `schemaResolution`: registry records framed with another schema id than the pinned one,
//! through the decode stage against the project's test registry. `writer` reads them with their
//! writer schema into the pinned columns (Avro schema resolution, protobuf by field number);
//! `pinned` nulls them as `wrongSchemaId`; unknown or incompatible ids are
//! `unresolvableSchemaId` (PERMISSIVE) or an error naming the id (FAILFAST).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(all(feature = "registry", feature = "json"))]
#![allow(deprecated)] // to_avro_datum

#[path = "decode_util.rs"]
mod util;

use apache_avro::types::Value;
use tributary_decode::{confluent_frame, DecodeStageFactory};
use tributary_sdk::{
    EnvSecretStore, ErrorCode, Options, SourceDescription, SourceMetrics, Stage, StageFactory,
};
use tributary_test_registry::TestRegistry;
use util::*;

/// The pinned schema (version 1).
const V1: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null}]}"#;
/// v2 adds a field with a default.
const V2: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"qty","type":"int","default":0},{"name":"note","type":["null","string"],"default":null}]}"#;
/// v3 removes `note` (the reader takes its default) and writes `id` as int (promoted to long).
const V3: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"int"}]}"#;
/// `id` as a string: not readable as v1.
const INCOMPATIBLE: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"}]}"#;

fn datum(schema: &str, fields: Vec<(&str, Value)>) -> Vec<u8> {
    let schema = apache_avro::Schema::parse_str(schema).unwrap();
    let record = Value::Record(fields.into_iter().map(|(k, v)| (k.into(), v)).collect());
    apache_avro::to_avro_datum(&schema, record).unwrap()
}

fn note(text: &str) -> Value {
    Value::Union(1, Box::new(Value::String(text.into())))
}

fn source() -> SourceDescription {
    SourceDescription::new("kafka", "subscribe:orders")
        .with_streams(["orders"])
        .with_payload_column("value")
        .with_key_column("key")
}

async fn stage(registry: &TestRegistry, locator: &str, extra: &[(&str, &str)]) -> Box<dyn Stage> {
    let mut options = Options::new()
        .with("schema_registry_url", registry.url())
        .with("payload_schema_locator", locator)
        .with("schema_registry_max_retries", "0");
    for (k, v) in extra {
        options.set(*k, *v);
    }
    let mut stage = DecodeStageFactory
        .create(&options, &source(), &EnvSecretStore)
        .unwrap();
    stage.open(kafka_batch(Vec::new()).schema()).await.unwrap();
    stage
}

async fn apply(stage: &mut dyn Stage, values: Vec<Vec<u8>>) -> tributary_sdk::Result<Vec<String>> {
    let out = stage
        .apply(&kafka_batch(values.into_iter().map(Some).collect()))
        .await?;
    Ok(rows_json(&out))
}

struct Avro {
    registry: TestRegistry,
    v1: u32,
    v2: u32,
    v3: u32,
    bad: u32,
}

fn avro_registry() -> Avro {
    let registry = TestRegistry::start().unwrap();
    let v1 = registry.register("orders-value", "AVRO", V1).unwrap();
    let v2 = registry.register("orders-value", "AVRO", V2).unwrap();
    let v3 = registry.register("orders-value", "AVRO", V3).unwrap();
    let bad = registry
        .register("other-value", "AVRO", INCOMPATIBLE)
        .unwrap();
    Avro {
        registry,
        v1,
        v2,
        v3,
        bad,
    }
}

const PINNED_V1: &str = "subject=orders-value,format=AVRO,version=1";

fn avro_records(a: &Avro) -> Vec<Vec<u8>> {
    vec![
        confluent_frame(
            a.v1,
            None,
            &datum(V1, vec![("id", Value::Long(1)), ("note", note("one"))]),
        ),
        confluent_frame(
            a.v2,
            None,
            &datum(
                V2,
                vec![
                    ("id", Value::Long(2)),
                    ("qty", Value::Int(9)),
                    ("note", note("two")),
                ],
            ),
        ),
        confluent_frame(a.v3, None, &datum(V3, vec![("id", Value::Int(3))])),
    ]
}

fn counts(m: &SourceMetrics) -> [u64; 4] {
    [
        metric(m, "resolvedSchemaIds"),
        metric(m, "resolvedRecords"),
        metric(m, "malformed.wrongSchemaId"),
        metric(m, "malformed.unresolvableSchemaId"),
    ]
}

#[tokio::test]
async fn avro_writer_versions_resolve_into_the_pinned_columns() {
    let a = avro_registry();
    let mut s = stage(&a.registry, PINNED_V1, &[("schemaResolution", "writer")]).await;
    let expected = [
        r#"{"id":1,"note":"one"}"#,
        r#"{"id":2,"note":"two"}"#,
        r#"{"id":3}"#,
    ];
    assert_eq!(apply(s.as_mut(), avro_records(&a)).await.unwrap(), expected);
    assert_eq!(counts(&s.metrics()), [2, 2, 0, 0]);
    assert_eq!(metric(&s.metrics(), "malformedRecords"), 0);

    // Each writer id is fetched once: the next batch asks the registry nothing.
    let before = a.registry.request_count();
    assert_eq!(apply(s.as_mut(), avro_records(&a)).await.unwrap(), expected);
    assert_eq!(a.registry.request_count(), before);
    assert_eq!(counts(&s.metrics()), [2, 4, 0, 0]);

    // An id the registry does not know, and a writer schema v1 cannot read, are null and
    // counted (once fetched, also not asked again).
    let unknown = confluent_frame(999, None, &datum(V3, vec![("id", Value::Int(4))]));
    let incompatible = confluent_frame(
        a.bad,
        None,
        &datum(INCOMPATIBLE, vec![("id", Value::String("x".into()))]),
    );
    let rows = apply(s.as_mut(), vec![unknown.clone(), incompatible.clone()])
        .await
        .unwrap();
    assert_eq!(rows, ["null", "null"]);
    assert_eq!(counts(&s.metrics()), [2, 4, 0, 2]);
    let before = a.registry.request_count();
    apply(s.as_mut(), vec![unknown, incompatible])
        .await
        .unwrap();
    assert_eq!(a.registry.request_count(), before);
    assert_eq!(metric(&s.metrics(), "malformed.unresolvableSchemaId"), 4);
}

/// A reader union other than `["null", T]` has no direct plan: such ids are resolved through
/// `apache_avro` values, with the same result.
#[tokio::test]
async fn avro_general_unions_resolve_through_values() {
    const U1: &str = r#"{"type":"record","name":"U","fields":[{"name":"id","type":"long"},{"name":"v","type":["null","string","long"],"default":null}]}"#;
    const U2: &str = r#"{"type":"record","name":"U","fields":[{"name":"v","type":["null","string","long"],"default":null},{"name":"extra","type":"int","default":0},{"name":"id","type":"int"}]}"#;
    let registry = TestRegistry::start().unwrap();
    let u1 = registry.register("u-value", "AVRO", U1).unwrap();
    let u2 = registry.register("u-value", "AVRO", U2).unwrap();
    let mut s = stage(
        &registry,
        "subject=u-value,format=AVRO,version=1",
        &[("schemaResolution", "writer")],
    )
    .await;
    let v = |k: u32, x: Value| Value::Union(k, Box::new(x));
    let pinned = vec![
        confluent_frame(
            u1,
            None,
            &datum(
                U1,
                vec![
                    ("id", Value::Long(1)),
                    ("v", v(1, Value::String("s".into()))),
                ],
            ),
        ),
        confluent_frame(
            u1,
            None,
            &datum(
                U1,
                vec![("id", Value::Long(2)), ("v", v(2, Value::Long(5)))],
            ),
        ),
    ];
    let written = vec![
        confluent_frame(
            u2,
            None,
            &datum(
                U2,
                vec![
                    ("v", v(1, Value::String("s".into()))),
                    ("extra", Value::Int(0)),
                    ("id", Value::Int(1)),
                ],
            ),
        ),
        confluent_frame(
            u2,
            None,
            &datum(
                U2,
                vec![
                    ("v", v(2, Value::Long(5))),
                    ("extra", Value::Int(0)),
                    ("id", Value::Int(2)),
                ],
            ),
        ),
    ];
    let expected = apply(s.as_mut(), pinned).await.unwrap();
    assert_eq!(apply(s.as_mut(), written).await.unwrap(), expected);
    assert_eq!(counts(&s.metrics()), [1, 2, 0, 0]);
}

#[tokio::test]
async fn avro_pinned_nulls_other_ids_as_wrong_schema_id() {
    let a = avro_registry();
    for extra in [&[][..], &[("schemaResolution", "pinned")][..]] {
        let mut s = stage(&a.registry, PINNED_V1, extra).await;
        let rows = apply(s.as_mut(), avro_records(&a)).await.unwrap();
        assert_eq!(rows, [r#"{"id":1,"note":"one"}"#, "null", "null"]);
        let m = s.metrics();
        assert_eq!(metric(&m, "malformed.wrongSchemaId"), 2);
        assert!(!m.contains_key("resolvedRecords"), "{m:?}");
    }
}

#[tokio::test]
async fn failfast_names_the_unresolvable_id() {
    let a = avro_registry();
    let failfast = [("schemaResolution", "writer"), ("mode", "FAILFAST")];
    let mut s = stage(&a.registry, PINNED_V1, &failfast).await;
    // Resolvable ids decode in FAILFAST too.
    assert_eq!(apply(s.as_mut(), avro_records(&a)).await.unwrap().len(), 3);
    let unknown = confluent_frame(999, None, &datum(V3, vec![("id", Value::Int(4))]));
    let e = apply(s.as_mut(), vec![unknown]).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::MalformedRecord, "{e}");
    assert_eq!(e.context_value("schema_id"), Some("999"), "{e}");
    assert!(
        e.message()
            .contains("schema id 999 is not in the schema registry"),
        "{e}"
    );
    assert!(e.message().contains("unresolvableSchemaId"), "{e}");

    let incompatible = confluent_frame(
        a.bad,
        None,
        &datum(INCOMPATIBLE, vec![("id", Value::String("x".into()))]),
    );
    let e = apply(s.as_mut(), vec![incompatible]).await.unwrap_err();
    assert_eq!(
        e.context_value("schema_id"),
        Some(a.bad.to_string().as_str())
    );
    assert!(
        e.message().contains("cannot be read as the pinned schema"),
        "{e}"
    );

    // pinned + FAILFAST names the id too.
    let mut s = stage(&a.registry, PINNED_V1, &[("mode", "FAILFAST")]).await;
    let e = apply(s.as_mut(), avro_records(&a)).await.unwrap_err();
    assert_eq!(
        e.context_value("schema_id"),
        Some(a.v2.to_string().as_str())
    );
    assert!(e.message().contains("wrongSchemaId"), "{e}");
}

/// The fetch blocks the calling thread: on a multi-thread runtime (the binary's) it goes
/// through `block_in_place`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_resolution_on_a_multi_thread_runtime() {
    let a = avro_registry();
    let mut s = stage(&a.registry, PINNED_V1, &[("schemaResolution", "writer")]).await;
    let rows = apply(s.as_mut(), avro_records(&a)).await.unwrap();
    assert_eq!(rows[2], r#"{"id":3}"#);
    assert_eq!(counts(&s.metrics()), [2, 2, 0, 0]);
}

#[tokio::test]
async fn an_unreachable_registry_fails_the_batch_not_the_record() {
    let a = avro_registry();
    let mut s = stage(&a.registry, PINNED_V1, &[("schemaResolution", "writer")]).await;
    a.registry.set_unavailable(true);
    let e = apply(s.as_mut(), avro_records(&a)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Connection, "{e}");
    assert!(e.is_retryable());
    // Once the registry is back, the same batch decodes.
    a.registry.set_unavailable(false);
    assert_eq!(apply(s.as_mut(), avro_records(&a)).await.unwrap().len(), 3);
    assert_eq!(counts(&s.metrics()), [2, 2, 0, 0]);
}

const P1: &str =
    r#"syntax = "proto3"; package com.example; message Event { string name = 1; int64 n = 2; }"#;
/// v2: another message first (Event moves to index 1) and a new field.
const P2: &str = r#"syntax = "proto3"; package com.example; message Other { string z = 1; } message Event { string name = 1; int64 n = 2; string extra = 3; }"#;
/// v3: `n` removed.
const P3: &str = r#"syntax = "proto3"; package com.example; message Event { string name = 1; }"#;
/// `name` as a number: not readable as v1.
const P_BAD: &str = r#"syntax = "proto3"; package com.example; message Event { int64 name = 1; }"#;

#[tokio::test]
async fn protobuf_writer_versions_decode_by_field_number() {
    let registry = TestRegistry::start().unwrap();
    let v1 = registry.register("events-value", "PROTOBUF", P1).unwrap();
    let v2 = registry.register("events-value", "PROTOBUF", P2).unwrap();
    let v3 = registry.register("events-value", "PROTOBUF", P3).unwrap();
    let bad = registry.register("bad-value", "PROTOBUF", P_BAD).unwrap();
    let locator = "subject=events-value,format=PROTOBUF,version=1";
    // name "a", n 1 | name "b", n 2, extra "x" | name "c"
    let records = vec![
        confluent_frame(v1, Some(&[0]), &[0x0a, 1, b'a', 0x10, 1]),
        confluent_frame(v2, Some(&[1]), &[0x0a, 1, b'b', 0x10, 2, 0x1a, 1, b'x']),
        confluent_frame(v3, Some(&[0]), &[0x0a, 1, b'c']),
    ];

    let mut s = stage(&registry, locator, &[("schemaResolution", "writer")]).await;
    let rows = apply(s.as_mut(), records.clone()).await.unwrap();
    assert_eq!(
        rows,
        [
            r#"{"name":"a","n":1}"#,
            r#"{"name":"b","n":2}"#,
            r#"{"name":"c"}"#
        ]
    );
    assert_eq!(counts(&s.metrics()), [2, 2, 0, 0]);
    // v2's record framed with v1's message path names `Other` in v2: not the pinned message.
    let other = confluent_frame(v2, Some(&[0]), &[0x0a, 1, b'z']);
    let unknown = confluent_frame(999, Some(&[0]), &[0x0a, 1, b'd']);
    let incompatible = confluent_frame(bad, Some(&[0]), &[0x08, 1]);
    let rows = apply(s.as_mut(), vec![other, unknown, incompatible.clone()])
        .await
        .unwrap();
    assert_eq!(rows, ["null", "null", "null"]);
    let m = s.metrics();
    assert_eq!(metric(&m, "malformed.wrongMessageIndex"), 1);
    assert_eq!(metric(&m, "malformed.unresolvableSchemaId"), 2);

    let failfast = [("schemaResolution", "writer"), ("mode", "FAILFAST")];
    let mut s = stage(&registry, locator, &failfast).await;
    let e = apply(s.as_mut(), vec![incompatible]).await.unwrap_err();
    assert_eq!(e.context_value("schema_id"), Some(bad.to_string().as_str()));
    assert!(
        e.message()
            .contains("is string in the pinned schema but int64"),
        "{e}"
    );

    let mut s = stage(&registry, locator, &[]).await;
    let rows = apply(s.as_mut(), records).await.unwrap();
    assert_eq!(rows, [r#"{"name":"a","n":1}"#, "null", "null"]);
    assert_eq!(counts(&s.metrics())[2], 2);
}

#[test]
fn schema_resolution_without_a_locator_is_refused() {
    let options = Options::new()
        .with("avro_schema", V1)
        .with("schemaResolution", "writer");
    let e = DecodeStageFactory
        .validate(&options, &source())
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{e}");
    assert_eq!(e.context_value("option"), Some("schemaResolution"));
    assert_eq!(
        e.context_value("conflicts_with"),
        Some("payload_schema_locator")
    );
}
