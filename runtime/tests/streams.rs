//! Named streams: catalog round trips (create / get / list / delete), every validation error
//! of a stream spec, secrets never shown, the stream's pipeline shape and the ingestion stage.
//! Nothing here connects to a server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use arrow::array::{
    Array, BinaryArray, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use chrono::{TimeZone, Utc};
use tributary_runtime::streams::backfill::BackfillState;
use tributary_runtime::streams::catalog::{Catalog, ListRequest};
use tributary_runtime::streams::ingest::{IngestionStageFactory, STAGE_NAME};
use tributary_runtime::streams::pipeline::pipeline_spec;
use tributary_runtime::streams::spec::StreamSpec;
use tributary_runtime::streams::stream_registry;
use tributary_runtime::streams::view::describe;
use tributary_runtime::trigger::Trigger;
use tributary_sdk::{EnvSecretStore, Options, SourceDescription, StageFactory};

const AVRO: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"amount","type":"long"}]}"#;

fn spec_text(name: &str, table: &str) -> String {
    format!(
        r#"
name = "{name}"
description = "orders from the shop"

[source]
kind = "kafka"
topics = ["orders"]
options = {{ maxOffsetsPerTrigger = 1000 }}

[connection]
options = {{ "kafka.bootstrap.servers" = "127.0.0.1:9", "kafka.security.protocol" = "SASL_PLAINTEXT", "kafka.sasl.mechanism" = "SCRAM-SHA-256", "kafka.sasl.jaas.config" = "{{{{secrets/kafka/jaas}}}}" }}
schema_registry_url = "http://127.0.0.1:8081"
schema_registry_api_key = "{{{{secrets/registry/key}}}}"
schema_registry_api_secret = "{{{{secrets/registry/secret}}}}"

[schema.payload]
format = "avro"
subject = "orders-value"

[schema.key]
format = "json_schema"
text = '{{"type":"object","properties":{{"user":{{"type":"string"}}}}}}'

[ingestion]
table = "{table}"
backfill_source = "main.sales.orders_history"
deduplication_columns = ["value.id"]
"#
    )
}

fn spec(name: &str, table: &str) -> StreamSpec {
    StreamSpec::parse(&spec_text(name, table), "orders.toml").unwrap()
}

fn catalog() -> (tempfile::TempDir, Catalog) {
    let dir = tempfile::tempdir().unwrap();
    let c = Catalog::open(dir.path()).unwrap();
    (dir, c)
}

#[test]
fn create_get_list_delete_round_trip() {
    let (_dir, c) = catalog();
    let e = c
        .create(spec("Main.Sales.Orders", "main.sales.orders_raw"))
        .unwrap();
    assert_eq!(e.name, "main.sales.orders");
    assert_eq!(e.backfill.state, BackfillState::Pending);
    let got = c.get("main.sales.orders").unwrap();
    assert_eq!(got.id, e.id);
    assert_eq!(
        got.spec.source.names["topics"],
        serde_json::json!(["orders"])
    );

    c.create(spec("main.sales.refunds", "main.sales.refunds_raw"))
        .unwrap();
    c.create(spec("main.ops.events", "main.ops.events_raw"))
        .unwrap();
    c.create(spec("dev.sales.orders", "dev.sales.orders_raw"))
        .unwrap();
    let names = |r: ListRequest| {
        c.list(&r)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(ListRequest::default()),
        [
            "dev.sales.orders",
            "main.ops.events",
            "main.sales.orders",
            "main.sales.refunds"
        ]
    );
    assert_eq!(
        names(ListRequest {
            catalog: Some("main".into()),
            schema: Some("sales".into()),
            ..Default::default()
        }),
        ["main.sales.orders", "main.sales.refunds"]
    );
    assert_eq!(
        names(ListRequest {
            max_results: Some(2),
            ..Default::default()
        })
        .len(),
        2
    );
    // Schemas are left out unless asked.
    let listed = c.list(&ListRequest::default()).unwrap();
    assert!(listed
        .iter()
        .all(|e| e.spec.schema.payload.is_none() && e.spec.schema.key.is_none()));
    let listed = c
        .list(&ListRequest {
            include_schemas: true,
            ..Default::default()
        })
        .unwrap();
    assert!(listed.iter().all(|e| e.spec.schema.payload.is_some()));
    assert!(c
        .list(&ListRequest {
            max_results: Some(0),
            ..Default::default()
        })
        .is_err());

    // Creating it again, or another stream into the same table, is refused.
    let again = c
        .create(spec("main.sales.orders", "main.sales.other"))
        .unwrap_err();
    assert!(
        again.message().contains("already exists"),
        "{}",
        again.message()
    );
    let same_table = c
        .create(spec("main.sales.orders2", "main.sales.orders_raw"))
        .unwrap_err();
    assert!(
        same_table
            .message()
            .contains("already the ingestion table of stream 'main.sales.orders'"),
        "{}",
        same_table.message()
    );

    // Delete without confirmation says what it would delete and deletes nothing.
    std::fs::create_dir_all(c.checkpoint_path(&"main.sales.orders".parse().unwrap())).unwrap();
    let plan = c.delete("main.sales.orders", false).unwrap();
    assert!(!plan.deleted);
    assert!(
        plan.checkpoint.ends_with("checkpoints/main/sales/orders"),
        "{plan:?}"
    );
    assert!(
        plan.table.ends_with("warehouse/main/sales/orders_raw"),
        "{plan:?}"
    );
    assert!(c.get("main.sales.orders").is_ok() && plan.checkpoint.exists());
    let plan = c.delete("main.sales.orders", true).unwrap();
    assert!(plan.deleted && !plan.checkpoint.exists());
    let gone = c.get("main.sales.orders").unwrap_err();
    assert!(
        gone.message()
            .contains("no stream named 'main.sales.orders'"),
        "{}",
        gone.message()
    );
    assert!(c.delete("main.sales.orders", true).is_err());
}

/// An entry whose recorded name differs from its file name (copied or edited by hand) is
/// refused by name, and deleting it removes nothing of the stream it records; a table two
/// entries claim is not deleted either.
#[test]
fn delete_only_ever_removes_what_belongs_to_the_name_given() {
    let (dir, c) = catalog();
    c.create(spec("main.sales.aaa", "main.sales.aaa_raw"))
        .unwrap();
    c.create(spec("main.sales.bbb", "main.sales.bbb_raw"))
        .unwrap();
    let bbb = c.get("main.sales.bbb").unwrap();
    let bbb_checkpoint = c.checkpoint_path(&"main.sales.bbb".parse().unwrap());
    let bbb_table = c.table_path(&"main.sales.bbb_raw".parse().unwrap());
    std::fs::create_dir_all(&bbb_checkpoint).unwrap();
    std::fs::create_dir_all(&bbb_table).unwrap();
    let streams = dir.path().join("streams").join("main").join("sales");
    std::fs::copy(streams.join("bbb.json"), streams.join("aaa.json")).unwrap();

    let e = c.delete("main.sales.aaa", true).unwrap_err();
    assert!(
        e.to_string()
            .contains("records stream 'main.sales.bbb', not 'main.sales.aaa'"),
        "{e}"
    );
    assert!(
        bbb_checkpoint.exists() && bbb_table.exists(),
        "bbb untouched"
    );
    assert_eq!(c.get("main.sales.bbb").unwrap().id, bbb.id);

    // An entry edited to write another stream's table: that table is not deleted with it.
    std::fs::remove_file(streams.join("aaa.json")).unwrap();
    c.create(spec("main.sales.ccc", "main.sales.ccc_raw"))
        .unwrap();
    let text = std::fs::read_to_string(streams.join("ccc.json"))
        .unwrap()
        .replace("main.sales.ccc_raw", "main.sales.bbb_raw");
    std::fs::write(streams.join("ccc.json"), text).unwrap();
    let e = c.delete("main.sales.ccc", true).unwrap_err();
    assert!(
        e.to_string()
            .contains("also the ingestion table of stream 'main.sales.bbb'"),
        "{e}"
    );
    assert!(bbb_table.exists(), "the shared table stays");
}

#[test]
fn get_and_list_never_show_secrets() {
    let (_dir, c) = catalog();
    let e = c
        .create(spec("main.sales.orders", "main.sales.orders_raw"))
        .unwrap();
    let shown = serde_json::to_string(&describe(&e, &c, &stream_registry())).unwrap();
    for secret in [
        "secrets/registry/key",
        "secrets/registry/secret",
        "secrets/kafka/jaas",
    ] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(
        shown.contains("\"schema_registry_api_secret\":\"***\""),
        "{shown}"
    );
    assert!(
        shown.contains("127.0.0.1:9") && shown.contains("warehouse/main/sales/orders_raw"),
        "{shown}"
    );
    assert!(!format!("{e:?}").contains("secrets/registry"));
}

/// Each edit of the good spec and the words its error must contain.
#[test]
fn every_validation_error_is_named() {
    let good = spec_text("main.sales.orders", "main.sales.orders_raw");
    let cases: Vec<(String, &str)> = vec![
        (good.replace("main.sales.orders\"", "main.orders\""), "exactly three parts"),
        (good.replace("main.sales.orders\"", "main.sa les.orders\""), "contains ' '"),
        (good.replace("table = \"main.sales.orders_raw\"", "table = \"orders_raw\""), "option 'ingestion.table'"),
        (good.replace("kind = \"kafka\"", "kind = \"pulsar\""), "option 'source.kind': no source connector named 'pulsar'"),
        (good.replace("kind = \"kafka\"", "kind = \"files\""), "the 'files' source cannot back a stream (it has no stream binding); the sources that can: kafka"),
        (good.replace("topics = [\"orders\"]", "topics = \"orders\""), "option 'source.topics' must be a list of names"),
        (good.replace("topics = [\"orders\"]", "topics = []"), "option 'source.topics' is required"),
        (good.replace("topics = [\"orders\"]", "topics = [\"a,b\"]"), "is not a name"),
        (good.replace("topics = [\"orders\"]", "topics = [\"orders\"]\nstreams = [\"s\"]"), "'source.streams' does not apply to a kafka source; it reads source.topics, source.subscribe_pattern or source.assign"),
        (good.replace("topics = [\"orders\"]", "topics = [\"orders\"]\nsubscribe_pattern = \"o.*\""), "'source.topics' conflicts with 'source.subscribe_pattern'"),
        (good.replace("topics = [\"orders\"]", "subscribe_pattern = \"\""), "'source.subscribe_pattern' must be a non-empty regular expression"),
        (good.replace("topics = [\"orders\"]", "subscribe_pattern = [\"o\"]"), "'source.subscribe_pattern' must be a non-empty regular expression"),
        (good.replace("topics = [\"orders\"]", "subscribe_pattern = \"(orders\""), "subscribePattern"),
        (good.replace("topics = [\"orders\"]", "assign = [\"orders\"]"), "'source.assign' must be a table of names to partition numbers"),
        (good.replace("topics = [\"orders\"]", "assign = { orders = [] }"), "'orders' needs a non-empty list of partitions"),
        (good.replace("topics = [\"orders\"]", "assign = { orders = [-1] }"), "the partitions of 'orders' are not numbers >= 0"),
        (good.replace("topics = [\"orders\"]\n", ""), "option 'source.topics' is required: the kafka source reads source.topics, source.subscribe_pattern or source.assign (one of them)"),
        (good.replace("maxOffsetsPerTrigger = 1000", "subscribePattern = \"x\""), "option 'subscribePattern' is set by the stream itself"),
        (good.replace("maxOffsetsPerTrigger = 1000", "startingOffsets = \"earliest\""), "startingOffsets"),
        (good.replace("maxOffsetsPerTrigger = 1000", "subscribe = \"x\""), "subscribe"),
        (good.replace("maxOffsetsPerTrigger = 1000", "maxOffsetsPerTriger = 1000"), "did you mean 'maxOffsetsPerTrigger'"),
        (good.replace("maxOffsetsPerTrigger = 1000", "maxOffsetsPerTrigger = 0"), "maxOffsetsPerTrigger"),
        (good.replace("maxOffsetsPerTrigger = 1000", "\"kafka.bootstrap.servers\" = \"x:1\""), "given twice"),
        (good.replace("colour", "x").replace("description =", "colour = 1\ndescription ="), "unknown field `colour`"),
        (good.replace("\"{{secrets/kafka/jaas}}\"", "\"org.apache.kafka.common.security.plain.PlainLoginModule required username='u' password='p';\""), "holds a secret"),
        (good.replace("schema_registry_api_secret = \"{{secrets/registry/secret}}\"", "schema_registry_api_secret = \"hunter2\""), "must be a {{secrets/<scope>/<key>}} reference"),
        (good.replace("schema_registry_api_key = \"{{secrets/registry/key}}\"", "schema_registry_api_key = \"AKIA\""), "not the API key itself"),
        (good.replace("schema_registry_api_key = \"{{secrets/registry/key}}\"\n", ""), "an API secret needs its key"),
        (good.replace("schema_registry_url = \"http://127.0.0.1:8081\"\n", "")
                .replace("schema_registry_api_key = \"{{secrets/registry/key}}\"\n", "")
                .replace("schema_registry_api_secret = \"{{secrets/registry/secret}}\"\n", ""), "'connection.schema_registry_url' is required"),
        (good.replace("subject = \"orders-value\"", &format!("text = '{AVRO}'")), "no schema is read from the registry"),
        (good.replace("subject = \"orders-value\"", &format!("subject = \"orders-value\"\ntext = '{AVRO}'")), "not both"),
        (good.replace("format = \"avro\"\nsubject = \"orders-value\"", "format = \"avro\""), "needs 'text'"),
        (good.replace("format = \"avro\"", "format = \"json_schema\""), "json_schema is not read from the registry"),
        (good.replace("format = \"avro\"", "format = \"protobuf\"").replace("subject = \"orders-value\"", "subject = \"orders-value\"\nwire_format = \"plain\""), "always Confluent-framed"),
        (good.replace("text = '{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"string\"}}}'", "text = '{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"string\"}}}'\nversion = 2"), "only applies to a registry subject"),
        (good.replace("format = \"json_schema\"", "format = \"protobuf\""), "'schema.key.message_name' is required"),
        (good.replace("text = '{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"string\"}}}'", "text = '{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"string\"}}}'\nmessage_name = \"x.Y\""), "only applies to protobuf"),
        (good.replace("text = '{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"string\"}}}'", "text = '{\"type\":'"), "[schema.key] text"),
        (good.replace("http://127.0.0.1", "http://u:pw@127.0.0.1"), "holds a password"),
        (good.replace("\"value.id\"", "\"payload.id\""), "deduplication column 'payload.id'"),
        (good.replace("\"value.id\"", "\"kafka_offset.x\""), "only key and value have nested fields"),
        (good.replace("main.sales.orders_history", "orders history"), "option 'ingestion.backfill_source'"),
        (good.replace("kind = \"kafka\"", "kind = \"kinesis\"").replace("topics = [\"orders\"]", "streams = [\"orders\"]"), "does not apply to a kinesis stream"),
    ];
    let (_dir, c) = catalog();
    for (text, expected) in cases {
        let err = match StreamSpec::parse(&text, "orders.toml").and_then(|s| c.create(s)) {
            Ok(_) => panic!("accepted, expected '{expected}'"),
            Err(e) => e,
        };
        assert!(
            err.to_string().contains(expected),
            "expected '{expected}' in: {err}"
        );
    }
    assert!(
        c.list(&ListRequest::default()).unwrap().is_empty(),
        "a refused spec left an entry"
    );
}

#[test]
fn a_stream_with_no_schema_reads_plain_strings_and_starts_at_its_creation() {
    let (_dir, c) = catalog();
    let text = spec_text("main.raw.events", "main.raw.events_t")
        .split("[schema.payload]")
        .next()
        .unwrap()
        .replace("schema_registry_url = \"http://127.0.0.1:8081\"\n", "")
        .replace(
            "schema_registry_api_key = \"{{secrets/registry/key}}\"\n",
            "",
        )
        .replace(
            "schema_registry_api_secret = \"{{secrets/registry/secret}}\"\n",
            "",
        )
        + "[ingestion]\ntable = \"main.raw.events_t\"\n";
    let created = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let e = c
        .create_at(
            StreamSpec::parse(&text, "raw.toml").unwrap(),
            &stream_registry(),
            created,
        )
        .unwrap();
    assert_eq!(e.backfill.state, BackfillState::None);
    let p = pipeline_spec(&c, &e, Trigger::AvailableNow, None).unwrap();
    assert_eq!(p.source, "kafka");
    assert_eq!(p.source_options.get("subscribe"), Some("orders"));
    assert_eq!(
        p.source_options.get("startingTimestamp"),
        Some(created.timestamp_millis().to_string().as_str())
    );
    assert_eq!(
        p.source_options.get("startingOffsetsByTimestampStrategy"),
        Some("latest")
    );
    assert_eq!(
        p.stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
        [STAGE_NAME]
    );
    assert_eq!(p.sinks[0].0, "delta");
    assert!(p.checkpoint.ends_with("checkpoints/main/raw/events"));

    let e = c
        .create(spec("main.sales.orders", "main.sales.orders_raw"))
        .unwrap();
    let p = pipeline_spec(&c, &e, Trigger::AvailableNow, Some("resolved-key")).unwrap();
    assert_eq!(
        p.stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
        ["decode", STAGE_NAME]
    );
    let decode = p.stages[0].options().unwrap();
    assert_eq!(
        decode.get("payload_schema_locator"),
        Some("subject=orders-value,format=AVRO")
    );
    assert_eq!(
        decode.get("key_json_schema"),
        Some(r#"{"type":"object","properties":{"user":{"type":"string"}}}"#)
    );
    assert_eq!(decode.get("schema_registry_key"), Some("resolved-key"));
}

/// Kafka's other subscriptions (Spark's subscribePattern and assign) compile to the source
/// options with the stream's start; the registry credentials' older spelling still reads.
#[test]
fn a_kafka_stream_subscribes_by_pattern_or_assignment() {
    let (_dir, c) = catalog();
    let created = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let base = spec_text("main.sales.orders", "main.sales.orders_raw");
    let cases = [
        (
            "subscribe_pattern = \"orders-.*\"",
            "subscribePattern",
            "orders-.*",
        ),
        (
            "assign = { orders = [0, 2], refunds = [1] }",
            "assign",
            r#"{"orders":[0,2],"refunds":[1]}"#,
        ),
    ];
    for (i, (field, option, value)) in cases.into_iter().enumerate() {
        let name = format!("main.sales.orders{i}");
        let text = spec_text(&name, &format!("main.sales.orders{i}_raw"))
            .replace("topics = [\"orders\"]", field);
        let e = c
            .create_at(
                StreamSpec::parse(&text, "orders.toml").unwrap(),
                &stream_registry(),
                created,
            )
            .unwrap();
        let p = pipeline_spec(&c, &e, Trigger::AvailableNow, None).unwrap();
        assert_eq!(p.source_options.get(option), Some(value), "{field}");
        assert_eq!(p.source_options.get("subscribe"), None);
        assert_eq!(
            p.source_options.get("startingTimestamp"),
            Some(created.timestamp_millis().to_string().as_str())
        );
        // The catalog keeps the field as written.
        let shown = serde_json::to_string(&c.get(&name).unwrap().spec).unwrap();
        assert!(shown.contains(field.split(' ').next().unwrap()), "{shown}");
    }
    // Catalogs written before the stream API's spelling hold schema_registry_key/_secret.
    let old = base
        .replace("schema_registry_api_key", "schema_registry_key")
        .replace("schema_registry_api_secret", "schema_registry_secret");
    let s = StreamSpec::parse(&old, "old.toml").unwrap();
    assert_eq!(
        s.connection.schema_registry_api_key.as_deref(),
        Some("{{secrets/registry/key}}")
    );
    assert!(s.connection.schema_registry_api_secret.is_some());
}

/// The Kinesis source's binding: its names field, its starting position, its columns.
#[cfg(feature = "kinesis")]
#[test]
fn a_kinesis_stream_is_bound_by_its_connector() {
    let (_dir, c) = catalog();
    let text = |dedup: &str| {
        format!(
            r#"
name = "main.ops.events"
[source]
kind = "kinesis"
streams = ["events", "audit"]
[connection]
options = {{ region = "eu-west-1" }}
[ingestion]
table = "main.ops.events_raw"
backfill_source = "main.ops.events_history"
deduplication_columns = ["{dedup}"]
"#
        )
    };
    let e = c
        .create(StreamSpec::parse(&text("kafka_offset"), "events.toml").unwrap())
        .unwrap_err();
    assert!(
        e.message().contains("deduplication column 'kafka_offset' is not a dot path into the ingestion table's columns (key, value, stream_record_timestamp, record_source, kinesis_stream, kinesis_shard_id, kinesis_sequence_number)"),
        "{}",
        e.message()
    );
    let e = c
        .create(
            StreamSpec::parse(
                &text("kinesis_sequence_number").replace("region", "startingOffsets"),
                "events.toml",
            )
            .unwrap(),
        )
        .unwrap_err();
    assert!(e.message().contains("startingOffsets"), "{}", e.message());
    let e = c
        .create(
            StreamSpec::parse(
                &text("kinesis_sequence_number").replace("region = ", "initialPosition = "),
                "events.toml",
            )
            .unwrap(),
        )
        .unwrap_err();
    assert!(
        e.message().contains("option 'initialPosition' is set by the stream itself: it reads its streams from its creation time on"),
        "{}",
        e.message()
    );
    let created = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let e = c
        .create_at(
            StreamSpec::parse(&text("kinesis_sequence_number"), "events.toml").unwrap(),
            &stream_registry(),
            created,
        )
        .unwrap();
    let p = pipeline_spec(&c, &e, Trigger::AvailableNow, None).unwrap();
    assert_eq!(p.source, "kinesis");
    assert_eq!(p.source_options.get("streamName"), Some("events,audit"));
    let at: serde_json::Value =
        serde_json::from_str(p.source_options.get("initialPosition").unwrap()).unwrap();
    assert_eq!(
        at,
        serde_json::json!({"at_timestamp": created.timestamp_millis()})
    );
    assert_eq!(p.source_options.get("region"), Some("eu-west-1"));
    assert!(p.source_options.get("subscribe").is_none());
}

#[cfg(not(feature = "delta"))]
#[tokio::test]
async fn run_without_the_delta_sink_says_which_feature() {
    use tributary_runtime::streams::runner::{run_stream, RunOptions};
    let (_dir, c) = catalog();
    c.create(spec("main.sales.orders", "main.sales.orders_raw"))
        .unwrap();
    let mut o = RunOptions::new(Arc::new(EnvSecretStore));
    o.available_now = true;
    let e = run_stream(&c, "main.sales.orders", &o, Default::default())
        .await
        .unwrap_err();
    assert!(e.message().contains("--features delta"), "{}", e.message());
}

#[tokio::test]
async fn ingestion_stage_shapes_kafka_records() {
    let description = SourceDescription::new("kafka", "subscribe:orders")
        .with_streams(["orders"])
        .with_payload_column("value")
        .with_key_column("key");
    let mut stage = IngestionStageFactory::new(&stream_registry())
        .create(&Options::new(), &description, &EnvSecretStore)
        .unwrap();
    let batch = RecordBatch::try_from_iter(vec![
        (
            "key",
            Arc::new(BinaryArray::from(vec![Some(b"k1".as_ref()), None])) as Arc<dyn Array>,
        ),
        (
            "value",
            Arc::new(BinaryArray::from(vec![
                Some(b"hello".as_ref()),
                Some(&[0xff, 0xfe][..]),
            ])),
        ),
        (
            "topic",
            Arc::new(StringArray::from(vec!["orders", "orders"])),
        ),
        ("partition", Arc::new(Int32Array::from(vec![0, 1]))),
        ("offset", Arc::new(Int64Array::from(vec![7, 8]))),
        (
            "timestamp",
            Arc::new(
                TimestampMillisecondArray::from(vec![1_700_000_000_123, 1_700_000_000_456])
                    .with_timezone("UTC"),
            ),
        ),
        ("timestampType", Arc::new(Int32Array::from(vec![0, 0]))),
    ])
    .unwrap();
    let schema = stage.open(batch.schema()).await.unwrap();
    let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "key",
            "value",
            "stream_record_timestamp",
            "record_source",
            "kafka_topic",
            "kafka_partition",
            "kafka_offset"
        ]
    );
    let out = stage.apply(&batch).await.unwrap();
    let text = arrow::util::pretty::pretty_format_batches(&[out])
        .unwrap()
        .to_string();
    assert!(text.contains("| k1  | hello | 2023-11-14T22:13:20.123Z | stream        | orders      | 0               | 7            |"), "{text}");
    // Bytes that are not UTF-8 become null and are counted.
    assert_eq!(
        stage.metrics().get("malformed.invalidUtf8"),
        Some(&serde_json::json!(1))
    );
    let e = IngestionStageFactory::new(&stream_registry())
        .validate(
            &Options::new(),
            &SourceDescription::new("files", "/data").with_payload_column("value"),
        )
        .unwrap_err();
    assert!(
        e.message().contains("kafka or kinesis, not 'files'"),
        "{}",
        e.message()
    );
}
