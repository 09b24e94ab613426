//! Named streams into Delta ingestion tables (feature `delta`): a Kafka stream with a JSON
//! Schema payload run with `--available-now` (library and `tributary streams run`) against the
//! real broker of `scripts/services/kafka.sh`, and a Kinesis stream against kinesis-mock
//! (`scripts/services/kinesis.sh`), read back by Python `deltalake`
//! (`scripts/services/registry-python.sh`); and the backfill state machine with an injected
//! clock: waits without overlap, merges with it, forced after 2 days, dedup by column and by the
//! default key, and a MERGE whose catalog update was lost (a crash) inserts nothing twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use chrono::{DateTime, TimeZone, Utc};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use serde_json::Value;
use tributary_runtime::streams::backfill::{BackfillState, ManualClock};
use tributary_runtime::streams::backfill_merge::advance;
use tributary_runtime::streams::catalog::Catalog;
use tributary_runtime::streams::runner::{run_stream, RunOptions};
use tributary_runtime::streams::spec::StreamSpec;
use tributary_runtime::streams::stream_registry;
use tributary_sdk::{EnvSecretStore, Sink};
use tributary_sinks::delta::{merge_backfill_with, DeltaConfig, DeltaSink, MergeOptions};

const READ_TABLE: &str = r#"
import json, os, sys
from deltalake import DeltaTable
t = DeltaTable(sys.argv[1]).to_pyarrow_table()
print(json.dumps({"rows": t.to_pylist(), "columns": [[f.name, str(f.type)] for f in t.schema]}, default=str))
# deltalake's runtime threads can abort the interpreter's shutdown ("terminate called without
# an active exception") after the answer is printed: leave without finalising.
sys.stdout.flush()
os._exit(0)
"#;

/// The table as Python deltalake reads it.
fn read_table(python: &str, path: &std::path::Path) -> Value {
    let out = Command::new(python)
        .arg("-c")
        .arg(READ_TABLE)
        .arg(path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python deltalake: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn rows(t: &Value) -> &Vec<Value> {
    t["rows"].as_array().expect("rows")
}

const JSON_SCHEMA: &str =
    r#"{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_stream_with_json_schema_lands_in_its_delta_table() {
    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let python = tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    );
    let topic = format!("streams-{}-{}", std::process::id(), rand::random::<u32>());
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap);
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    admin
        .create_topics(
            &[NewTopic::new(&topic, 2, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    let producer: FutureProducer = cfg.clone().set("linger.ms", "0").create().unwrap();
    let send = |i: i64, payload: String| {
        let producer = producer.clone();
        let topic = topic.clone();
        async move {
            producer
                .send(
                    FutureRecord::to(&topic)
                        .key(&format!("k{i}"))
                        .payload(&payload)
                        .partition((i % 2) as i32),
                    Duration::from_secs(10),
                )
                .await
                .unwrap();
        }
    };
    // Records from before the stream exists are not ingested: it starts at its creation.
    for i in 0..4 {
        send(i, format!(r#"{{"id": {i}, "name": "before"}}"#)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;

    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let spec = format!(
        r#"
name = "main.shop.orders"
[source]
kind = "kafka"
topics = ["{topic}"]
[connection]
options = {{ "kafka.bootstrap.servers" = "{bootstrap}" }}
[schema.payload]
format = "json_schema"
text = '{JSON_SCHEMA}'
[ingestion]
table = "main.shop.orders_raw"
"#
    );
    let entry = catalog
        .create(StreamSpec::parse(&spec, "orders.toml").unwrap())
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    for i in 100..110 {
        let payload = if i == 105 {
            "{\"id\": ".to_string()
        } else {
            format!(r#"{{"id": {i}, "name": "n{i}"}}"#)
        };
        send(i, payload).await;
    }

    let mut options = RunOptions::new(Arc::new(EnvSecretStore));
    options.available_now = true;
    let summary = run_stream(&catalog, &entry.name, &options, Default::default())
        .await
        .unwrap();
    assert_eq!(summary.run.rows, 10, "{summary:?}");
    assert_eq!(summary.backfill.state, BackfillState::None);

    // A second scheduled run through the command line takes only the new records.
    for i in 200..203 {
        send(i, format!(r#"{{"id": {i}, "name": "n{i}"}}"#)).await;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_tributary"))
        .args([
            "streams",
            "run",
            &entry.name,
            "--available-now",
            "--quiet",
            "--catalog-root",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("main.shop.orders: 3 rows"), "{stderr}");

    let Some(python) = python else { return };
    let table = read_table(
        &python,
        &catalog.table_path(&"main.shop.orders_raw".parse().unwrap()),
    );
    let columns: Vec<String> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        columns,
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
    let rows = rows(&table);
    assert_eq!(rows.len(), 13, "{table}");
    let mut positions: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| {
            (
                r["kafka_partition"].as_i64().unwrap(),
                r["kafka_offset"].as_i64().unwrap(),
            )
        })
        .collect();
    positions.sort();
    positions.dedup();
    assert_eq!(positions.len(), 13, "every record exactly once");
    let mut ids: Vec<i64> = rows
        .iter()
        .filter_map(|r| r["value"]["id"].as_i64())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [100, 101, 102, 103, 104, 106, 107, 108, 109, 200, 201, 202]
    );
    assert!(
        rows.iter()
            .any(|r| r["key"] == "k105" && r["value"].is_null()),
        "the malformed payload is a null value"
    );
    assert!(rows
        .iter()
        .all(|r| r["record_source"] == "stream" && r["kafka_topic"] == topic.as_str()));
    let created = entry.created().unwrap();
    for r in rows {
        let t = DateTime::parse_from_rfc3339(
            &r["stream_record_timestamp"]
                .as_str()
                .unwrap()
                .replace(' ', "T"),
        )
        .unwrap();
        assert!(t >= created - chrono::Duration::seconds(1), "{r}");
    }
}

/// A Kinesis stream on kinesis-mock (HTTPS with the test CA): records from before its creation
/// are left out, the others land with the Kinesis metadata columns its binding names; the AWS
/// keys are secret references, resolved at run from a file store.
#[cfg(feature = "kinesis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinesis_stream_lands_in_its_delta_table() {
    use tributary_conformance::Fixture;
    use tributary_kinesis::conformance::KinesisFixture;
    use tributary_sdk::FileSecretStore;

    let Some(endpoint) = tributary_skip_log::require_env(
        "TRIBUTARY_KINESIS_ENDPOINT",
        "scripts/services/kinesis.sh",
    ) else {
        return;
    };
    let python = tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    );
    let ca = std::env::var("TRIBUTARY_KINESIS_CA").ok();
    let mut fixture = KinesisFixture::new(&endpoint, ca.as_deref());
    let stream = fixture.create_target("streams").await.unwrap();
    fixture.produce(&stream, 3).await.unwrap();
    // Arrival times are compared with the creation time: leave a clear gap on both sides.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("secrets");
    std::fs::create_dir_all(secrets.join("aws")).unwrap();
    std::fs::write(secrets.join("aws").join("key"), "AKIDSTREAMS").unwrap();
    std::fs::write(secrets.join("aws").join("secret"), "streams-test-secret\n").unwrap();
    let catalog = Catalog::open(dir.path().join("catalog")).unwrap();
    let truststore = ca
        .map(|c| format!(r#", "tls.truststore.location" = "{c}""#))
        .unwrap_or_default();
    let spec = format!(
        r#"
name = "main.ops.events"
[source]
kind = "kinesis"
streams = ["{stream}"]
options = {{ minFetchPeriod = "200ms" }}
[connection]
options = {{ endpoint = "{endpoint}", region = "us-east-1", awsAccessKey = "{{{{secrets/aws/key}}}}", awsSecretKey = "{{{{secrets/aws/secret}}}}"{truststore} }}
[ingestion]
table = "main.ops.events_raw"
"#
    );
    let entry = catalog
        .create(StreamSpec::parse(&spec, "events.toml").unwrap())
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let produced = fixture.produce(&stream, 5).await.unwrap();

    let mut options = RunOptions::new(Arc::new(FileSecretStore::new(secrets)));
    options.available_now = true;
    let summary = run_stream(&catalog, &entry.name, &options, Default::default())
        .await
        .unwrap();
    assert_eq!(summary.run.rows, 5, "{summary:?}");
    fixture.delete_target(&stream).await.unwrap();

    let Some(python) = python else { return };
    let table = read_table(
        &python,
        &catalog.table_path(&"main.ops.events_raw".parse().unwrap()),
    );
    let columns: Vec<&str> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[0].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "key",
            "value",
            "stream_record_timestamp",
            "record_source",
            "kinesis_stream",
            "kinesis_shard_id",
            "kinesis_sequence_number"
        ]
    );
    let rows = rows(&table);
    let mut values: Vec<&str> = rows.iter().map(|r| r["value"].as_str().unwrap()).collect();
    values.sort();
    let mut want: Vec<&str> = produced.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(values, want, "{table}");
    let mut sequences: Vec<&str> = rows
        .iter()
        .map(|r| r["kinesis_sequence_number"].as_str().unwrap())
        .collect();
    sequences.sort();
    sequences.dedup();
    assert_eq!(sequences.len(), 5, "every record exactly once: {table}");
    assert!(
        rows.iter().all(|r| r["record_source"] == "stream"
            && r["kinesis_stream"] == stream.as_str()
            && r["kinesis_shard_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("shardId-"))
            && r["key"].as_str().is_some_and(|k| k.starts_with("k-"))),
        "{table}"
    );
    let created = entry.created().unwrap();
    for r in rows {
        let t = DateTime::parse_from_rfc3339(
            &r["stream_record_timestamp"]
                .as_str()
                .unwrap()
                .replace(' ', "T"),
        )
        .unwrap();
        assert!(t >= created - chrono::Duration::seconds(1), "{r}");
    }
}

const PRODUCE_AVRO: &str = r#"
import json, sys
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import SerializationContext, MessageField
bootstrap, topic, url, user, password, schema, records = sys.argv[1:8]
registry = SchemaRegistryClient({"url": url, "basic.auth.user.info": user + ":" + password})
serialize = AvroSerializer(registry, schema)
producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
for r in json.loads(records):
    value = serialize(r, SerializationContext(topic, MessageField.VALUE))
    producer.produce(topic, key=r["id"].encode(), value=value)
    producer.flush(10)
"#;

const AVRO: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"amount","type":"long"}]}"#;

/// A registry Avro payload (Confluent framing written by Python confluent-kafka's serializer,
/// the registry behind basic auth with the API key and secret given as secret references).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_stream_with_registry_avro_payload() {
    let Some(bootstrap) =
        tributary_skip_log::require_env("TRIBUTARY_KAFKA_BOOTSTRAP", "scripts/services/kafka.sh")
    else {
        return;
    };
    let Some(encoder) = tributary_skip_log::require_env(
        "TRIBUTARY_REGISTRY_PYTHON",
        "scripts/services/registry-python.sh",
    ) else {
        return;
    };
    let registry =
        tributary_test_registry::TestRegistry::start_with_auth("streams-user", "streams-pw")
            .unwrap();
    let suffix = format!("{}_{}", std::process::id(), rand::random::<u32>());
    // SAFETY of the test: variables of unique names, read by this test only.
    std::env::set_var(format!("STREAMS_REG_KEY_{suffix}"), "streams-user");
    std::env::set_var(format!("STREAMS_REG_SECRET_{suffix}"), "streams-pw");
    let topic = format!("streams-avro-{suffix}");
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &bootstrap);
    let admin: AdminClient<DefaultClientContext> = cfg.create().unwrap();
    admin
        .create_topics(
            &[NewTopic::new(&topic, 1, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    // The serializer registers the schema as <topic>-value.
    registry
        .register(&format!("{topic}-value"), "AVRO", AVRO)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let spec = format!(
        r#"
name = "main.shop.avro_orders"
[source]
kind = "kafka"
topics = ["{topic}"]
[connection]
options = {{ "kafka.bootstrap.servers" = "{bootstrap}" }}
schema_registry_url = "{url}"
schema_registry_api_key = "{{{{secrets/env/STREAMS_REG_KEY_{suffix}}}}}"
schema_registry_api_secret = "{{{{secrets/env/STREAMS_REG_SECRET_{suffix}}}}}"
[schema.payload]
format = "avro"
subject = "{topic}-value"
[ingestion]
table = "main.shop.avro_orders_raw"
"#,
        url = registry.url()
    );
    let entry = catalog
        .create(StreamSpec::parse(&spec, "avro.toml").unwrap())
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let records: Vec<Value> = (0..6)
        .map(|i| serde_json::json!({"id": format!("o{i}"), "amount": i * 10}))
        .collect();
    let out = Command::new(&encoder)
        .args([
            "-c",
            PRODUCE_AVRO,
            &bootstrap,
            &topic,
            &registry.url(),
            "streams-user",
            "streams-pw",
            AVRO,
        ])
        .arg(serde_json::to_string(&records).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python producer: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut options = RunOptions::new(Arc::new(EnvSecretStore));
    options.available_now = true;
    let summary = run_stream(&catalog, &entry.name, &options, Default::default())
        .await
        .unwrap();
    assert_eq!(summary.run.rows, 6, "{summary:?}");
    let Some(python) = tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    ) else {
        return;
    };
    let table = read_table(
        &python,
        &catalog.table_path(&"main.shop.avro_orders_raw".parse().unwrap()),
    );
    let mut got: Vec<(String, i64, String)> = rows(&table)
        .iter()
        .map(|r| {
            (
                r["value"]["id"].as_str().unwrap().to_string(),
                r["value"]["amount"].as_i64().unwrap(),
                r["key"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(String, i64, String)> = (0..6)
        .map(|i| (format!("o{i}"), i * 10, format!("o{i}")))
        .collect();
    assert_eq!(got, want, "{table}");
}

fn value_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("id", DataType::Utf8, true),
        Field::new("amount", DataType::Int64, true),
    ]))
}

fn ts_type() -> DataType {
    DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()))
}

/// Rows (key, id, amount, time) as a batch; `kafka` adds the stream's metadata columns.
fn batch(rows: &[(&str, &str, i64, DateTime<Utc>)], kafka: bool) -> RecordBatch {
    let value = StructArray::new(
        match value_type() {
            DataType::Struct(f) => f,
            _ => unreachable!(),
        },
        vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )) as ArrayRef,
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
        None,
    );
    let mut fields = vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", value_type(), true),
        Field::new("stream_record_timestamp", ts_type(), true),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        )),
        Arc::new(value),
        Arc::new(
            TimestampMicrosecondArray::from(
                rows.iter()
                    .map(|r| r.3.timestamp_micros())
                    .collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
    ];
    if kafka {
        fields.push(Field::new("record_source", DataType::Utf8, false));
        fields.push(Field::new("kafka_topic", DataType::Utf8, true));
        fields.push(Field::new("kafka_partition", DataType::Int32, true));
        fields.push(Field::new("kafka_offset", DataType::Int64, true));
        columns.push(Arc::new(StringArray::from(vec!["stream"; rows.len()])));
        columns.push(Arc::new(StringArray::from(vec!["orders"; rows.len()])));
        columns.push(Arc::new(Int32Array::from(vec![0; rows.len()])));
        columns.push(Arc::new(Int64Array::from(
            (0..rows.len() as i64).collect::<Vec<_>>(),
        )));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

async fn write(path: &std::path::Path, batches: &[RecordBatch]) {
    let mut sink = DeltaSink::new(
        DeltaConfig::new(path.display().to_string()),
        HashMap::new(),
        Some(format!("test-{}", rand::random::<u32>())),
    );
    sink.open(batches[0].schema()).await.unwrap();
    for (i, b) in batches.iter().enumerate() {
        sink.write(i as u64, std::slice::from_ref(b)).await.unwrap();
    }
}

fn backfill_spec(name: &str, table: &str, backfill: &str, dedup: &str) -> StreamSpec {
    StreamSpec::parse(
        &format!(
            r#"
name = "{name}"
[source]
kind = "kafka"
topics = ["orders"]
[connection]
options = {{ "kafka.bootstrap.servers" = "127.0.0.1:9" }}
[ingestion]
table = "{table}"
backfill_source = "{backfill}"
{dedup}
"#
        ),
        "backfill.toml",
    )
    .unwrap()
}

fn h(t0: DateTime<Utc>, hours: i64) -> DateTime<Utc> {
    t0 + chrono::Duration::minutes(hours * 60)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_waits_for_overlap_then_merges_once() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let t0 = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    let spec = backfill_spec(
        "main.shop.orders",
        "main.shop.orders_raw",
        "main.shop.orders_history",
        r#"deduplication_columns = ["value.id"]"#,
    );
    let entry = catalog.create_at(spec, &stream_registry(), t0).unwrap();
    let table = catalog.table_path(&"main.shop.orders_raw".parse().unwrap());
    let history = catalog.table_path(&"main.shop.orders_history".parse().unwrap());
    let clock = ManualClock::new(h(t0, 1));

    // Nothing yet: waits.
    let s = advance(&catalog, &entry.name, &clock).await.unwrap();
    assert_eq!(s.state, BackfillState::WaitingForOverlap, "{s:?}");
    assert!(
        s.message.as_deref().unwrap_or_default().contains("no rows"),
        "{s:?}"
    );

    // Stream rows from t0+1h; the backfill ends at t0+1h30: less than an hour of overlap.
    write(
        &table,
        &[batch(
            &[("a", "o1", 10, h(t0, 1)), ("b", "o2", 20, h(t0, 2))],
            true,
        )],
    )
    .await;
    let early = batch(
        &[
            ("x", "o0", 5, h(t0, -5)),
            ("a", "o1", 99, h(t0, 1)),
            ("y", "o9", 7, t0 + chrono::Duration::minutes(90)),
            ("y2", "o9", 8, h(t0, -1)),
        ],
        false,
    );
    write(&history, std::slice::from_ref(&early)).await;
    let s = advance(&catalog, &entry.name, &clock).await.unwrap();
    assert_eq!(s.state, BackfillState::WaitingForOverlap, "{s:?}");
    assert!(
        s.message
            .as_deref()
            .unwrap_or_default()
            .contains("1 hour past the first stream row"),
        "{s:?}"
    );
    assert_eq!(
        catalog.get(&entry.name).unwrap().backfill.state,
        BackfillState::WaitingForOverlap
    );

    // The backfill grows to t0+2h30: the MERGE runs, deduplicated by value.id.
    write(
        &history,
        &[
            early,
            batch(
                &[("z", "o3", 30, h(t0, 2) + chrono::Duration::minutes(30))],
                false,
            ),
        ],
    )
    .await;
    // A crash after the MERGE committed but before the catalog recorded it: the same
    // transaction id makes the re-run insert nothing.
    let crashed = merge_backfill_with(
        &table.display().to_string(),
        &history.display().to_string(),
        &["value.id".to_string()],
        &MergeOptions {
            app_id: Some(format!("tributary-backfill-{}", entry.id)),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(crashed.inserted_rows, 3, "{crashed:?}"); // o0, o9 (once), o3; o1 is in the table
    let s = advance(&catalog, &entry.name, &clock).await.unwrap();
    assert_eq!(s.state, BackfillState::Done, "{s:?}");
    assert_eq!(
        s.merge.as_ref().unwrap()["alreadyDone"],
        Value::Bool(true),
        "{s:?}"
    );
    // Done is final: another check changes nothing.
    assert_eq!(
        advance(&catalog, &entry.name, &clock).await.unwrap().state,
        BackfillState::Done
    );

    if let Some(python) = tributary_skip_log::require_env(
        "TRIBUTARY_DELTA_PYTHON",
        "scripts/services/registry-python.sh",
    ) {
        let t = read_table(&python, &table);
        let mut ids: Vec<(String, String)> = rows(&t)
            .iter()
            .map(|r| {
                (
                    r["value"]["id"].as_str().unwrap().to_string(),
                    r["record_source"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        ids.sort();
        assert_eq!(
            ids,
            [
                ("o0", "backfill"),
                ("o1", "stream"),
                ("o2", "stream"),
                ("o3", "backfill"),
                ("o9", "backfill")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert!(rows(&t)
            .iter()
            .filter(|r| r["record_source"] == "backfill")
            .all(|r| r["kafka_topic"].is_null()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_is_forced_after_two_days_and_dedups_by_the_default_key() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let t0 = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    let history = dir.path().join("elsewhere").join("history");
    let spec = backfill_spec(
        "main.shop.events",
        "main.shop.events_raw",
        &history.display().to_string(),
        "",
    );
    let entry = catalog.create_at(spec, &stream_registry(), t0).unwrap();
    let table = catalog.table_path(&"main.shop.events_raw".parse().unwrap());
    write(&table, &[batch(&[("a", "e1", 1, h(t0, 1))], true)]).await;
    // No overlap: the same record as the stream's (key, value, time) and an older one.
    write(
        &history,
        &[batch(
            &[("a", "e1", 1, h(t0, 1)), ("a", "e1", 1, h(t0, -3))],
            false,
        )],
    )
    .await;
    let clock = ManualClock::new(h(t0, 47));
    assert_eq!(
        advance(&catalog, &entry.name, &clock).await.unwrap().state,
        BackfillState::WaitingForOverlap
    );
    clock.set(h(t0, 48));
    let s = advance(&catalog, &entry.name, &clock).await.unwrap();
    assert_eq!(s.state, BackfillState::Forced, "{s:?}");
    assert_eq!(
        s.merge.as_ref().unwrap()["insertedRows"],
        Value::from(1),
        "{s:?}"
    );
    assert_eq!(
        catalog.get(&entry.name).unwrap().backfill.state,
        BackfillState::Forced
    );
}
