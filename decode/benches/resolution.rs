//! What `schemaResolution=writer` costs: the decode stage over the same Avro records framed
//! with the pinned schema id (the ordinary path) and with a newer compatible writer id (read
//! with Avro schema resolution, then decoded into the pinned columns), against the in-process
//! test registry. Also checks the pinned path costs the same with `writer` turned on.
//!
//! Run: `cargo bench -p tributary-decode --bench resolution` (`TRIB_BENCH_RECORDS` sets the
//! record count, default 200,000). Prints the best of 5 runs per case and the ratios.
#![allow(missing_docs, deprecated, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use apache_avro::types::Value;
use arrow_array::{BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use tributary_decode::{confluent_frame, DecodeStageFactory};
use tributary_sdk::{EnvSecretStore, Options, SourceDescription, Stage, StageFactory};
use tributary_test_registry::TestRegistry;

const V1: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"customer","type":"string"},{"name":"amount","type":"double"},{"name":"qty","type":"int"},{"name":"note","type":["null","string"],"default":null}]}"#;
/// v1 plus a field with a default, fields in another order.
const V2: &str = r#"{"type":"record","name":"Order","fields":[{"name":"customer","type":"string"},{"name":"id","type":"long"},{"name":"channel","type":"string","default":"web"},{"name":"amount","type":"double"},{"name":"qty","type":"int"},{"name":"note","type":["null","string"],"default":null}]}"#;

fn record(schema: &str, i: i64) -> Vec<u8> {
    let s = apache_avro::Schema::parse_str(schema).unwrap();
    let mut fields = vec![
        ("id".to_string(), Value::Long(i)),
        (
            "customer".to_string(),
            Value::String(format!("customer-{i}")),
        ),
        ("amount".to_string(), Value::Double(i as f64 * 1.5)),
        ("qty".to_string(), Value::Int((i % 10) as i32)),
        (
            "note".to_string(),
            Value::Union(1, Box::new(Value::String("n".into()))),
        ),
    ];
    if schema == V2 {
        fields.insert(2, ("channel".to_string(), Value::String("app".into())));
        fields.swap(0, 1);
    }
    apache_avro::to_avro_datum(&s, Value::Record(fields)).unwrap()
}

fn batches(id: u32, schema: &str, n: usize) -> Vec<RecordBatch> {
    let arrow = Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Binary,
        true,
    )]));
    let values: Vec<Vec<u8>> = (0..n as i64)
        .map(|i| confluent_frame(id, None, &record(schema, i)))
        .collect();
    values
        .chunks(65_536)
        .map(|c| {
            let col: BinaryArray = c.iter().map(|v| Some(v.as_slice())).collect();
            RecordBatch::try_new(arrow.clone(), vec![Arc::new(col)]).unwrap()
        })
        .collect()
}

fn stage(runtime: &tokio::runtime::Runtime, url: &str, resolution: &str) -> Box<dyn Stage> {
    let source = SourceDescription::new("kafka", "subscribe:orders")
        .with_streams(["orders"])
        .with_payload_column("value");
    let options = Options::new()
        .with("schema_registry_url", url)
        .with(
            "payload_schema_locator",
            "subject=orders-value,format=AVRO,version=1",
        )
        .with("schemaResolution", resolution);
    let mut stage = DecodeStageFactory
        .create(&options, &source, &EnvSecretStore)
        .unwrap();
    let input = Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Binary,
        true,
    )]));
    runtime.block_on(stage.open(input)).unwrap();
    stage
}

fn best(
    runtime: &tokio::runtime::Runtime,
    stage: &mut dyn Stage,
    batches: &[RecordBatch],
) -> Duration {
    // Warm-up (fetches the writer schema once).
    for b in batches {
        runtime.block_on(stage.apply(b)).unwrap();
    }
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for b in batches {
                std::hint::black_box(runtime.block_on(stage.apply(b)).unwrap());
            }
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let n: usize = std::env::var("TRIB_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let registry = TestRegistry::start().unwrap();
    let v1 = registry.register("orders-value", "AVRO", V1).unwrap();
    let v2 = registry.register("orders-value", "AVRO", V2).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pinned_records = batches(v1, V1, n);
    let writer_records = batches(v2, V2, n);

    let mut pinned = stage(&runtime, &registry.url(), "pinned");
    let mut writer = stage(&runtime, &registry.url(), "writer");
    let base = best(&runtime, pinned.as_mut(), &pinned_records);
    let same_id = best(&runtime, writer.as_mut(), &pinned_records);
    let resolved = best(&runtime, writer.as_mut(), &writer_records);
    let m = writer.metrics();
    assert!(m["resolvedRecords"].as_u64().unwrap() >= n as u64, "{m:?}");
    assert_eq!(m["malformedRecords"], 0, "{m:?}");
    let per = |d: Duration| d.as_nanos() as f64 / n as f64;
    println!("{n} records, best of 5:");
    println!(
        "  pinned id, schemaResolution=pinned : {:>8.1} ns/record",
        per(base)
    );
    println!(
        "  pinned id, schemaResolution=writer : {:>8.1} ns/record ({:.2}x)",
        per(same_id),
        per(same_id) / per(base)
    );
    println!(
        "  writer id v2, resolved into v1     : {:>8.1} ns/record ({:.1}x)",
        per(resolved),
        per(resolved) / per(base)
    );
}
