//! Decoder benchmarks, side by side with the libraries underneath, in one run.
//!
//! Each group decodes the same N records (default 1,000,000; `TRIB_BENCH_RECORDS` overrides) of
//! an 8-field record:
//! - `avro`: ours (one Avro datum per binary value) vs `arrow-avro` (the same datums in an
//!   uncompressed object container file) vs `apache-avro` `from_avro_datum` to `Value`; and,
//!   like for like, ours vs arrow-avro's streaming `Decoder` on the same records with Confluent
//!   framing;
//! - `protobuf`: ours vs prost-reflect `DynamicMessage::decode`;
//! - `json`: ours vs `arrow-json`'s decoder (newline-delimited);
//! - each with `_10pct_malformed`: ours with every 10th record corrupted.
//!
//! Run: `cargo bench -p tributary-sdk --features json,avro,protobuf --bench decode`.
#![allow(missing_docs, deprecated, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use apache_avro::types::Value as AvroValue;
use arrow_array::{BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, Criterion};
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value as PValue};
use tributary_decode::{DecodeMode, StreamDecoder};
use tributary_sdk::{ResolvedSchema, SchemaFormat, StreamSchemas, WireFormat};

const BATCH: usize = 65_536;

fn records() -> usize {
    std::env::var("TRIB_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn batches(values: &[Vec<u8>]) -> Vec<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Binary,
        true,
    )]));
    values
        .chunks(BATCH)
        .map(|c| {
            let arr: BinaryArray = c.iter().map(|v| Some(v.as_slice())).collect();
            RecordBatch::try_new(schema.clone(), vec![Arc::new(arr)]).unwrap()
        })
        .collect()
}

fn schemas(format: SchemaFormat, text: &str) -> StreamSchemas {
    StreamSchemas {
        key: None,
        payload: Some(ResolvedSchema {
            format,
            text: text.into(),
            wire: WireFormat::Plain,
            registry_id: None,
        }),
    }
}

fn ours(schemas: &StreamSchemas, input: &[RecordBatch]) -> usize {
    let mut d = StreamDecoder::new(schemas, DecodeMode::Permissive, "value").unwrap();
    let mut rows = 0;
    for b in input {
        rows += d.decode(b).unwrap().num_rows();
    }
    rows
}

fn corrupt(values: &[Vec<u8>], f: impl Fn(&[u8]) -> Vec<u8>) -> Vec<Vec<u8>> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| if i % 10 == 0 { f(v) } else { v.clone() })
        .collect()
}

fn tune<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    g
}

const AVRO: &str = r#"{"type":"record","name":"Order","fields":[
 {"name":"id","type":"long"},{"name":"customer","type":"string"},{"name":"price","type":"double"},
 {"name":"qty","type":"int"},{"name":"paid","type":"boolean"},{"name":"country","type":"string"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"note","type":["null","string"]}]}"#;

fn avro_value(i: usize) -> AvroValue {
    AvroValue::Record(vec![
        ("id".into(), AvroValue::Long(i as i64 * 7919)),
        (
            "customer".into(),
            AvroValue::String(format!("customer-{}", i % 5000)),
        ),
        ("price".into(), AvroValue::Double(i as f64 * 0.25)),
        ("qty".into(), AvroValue::Int((i % 100) as i32)),
        ("paid".into(), AvroValue::Boolean(i % 3 == 0)),
        (
            "country".into(),
            AvroValue::String(["NO", "DE", "US", "JP"][i % 4].into()),
        ),
        (
            "ts".into(),
            AvroValue::TimestampMillis(1_700_000_000_000 + i as i64),
        ),
        (
            "note".into(),
            if i % 2 == 0 {
                AvroValue::Union(0, Box::new(AvroValue::Null))
            } else {
                AvroValue::Union(1, Box::new(AvroValue::String("gift wrap".into())))
            },
        ),
    ])
}

fn bench_avro(c: &mut Criterion) {
    let n = records();
    let schema = apache_avro::Schema::parse_str(AVRO).unwrap();
    let datums: Vec<Vec<u8>> = (0..n)
        .map(|i| apache_avro::to_avro_datum(&schema, avro_value(i)).unwrap())
        .collect();
    let mut ocf = apache_avro::Writer::new(&schema, Vec::new()).unwrap();
    for i in 0..n {
        ocf.append(avro_value(i)).unwrap();
    }
    let ocf = ocf.into_inner().unwrap();
    let input = batches(&datums);
    let bad = batches(&corrupt(&datums, |v| v[..v.len() / 2].to_vec()));
    let s = schemas(SchemaFormat::Avro, AVRO);
    let mut g = tune(c, "avro");
    g.bench_function("tributary", |b| b.iter(|| black_box(ours(&s, &input))));
    g.bench_function("tributary_10pct_malformed", |b| {
        b.iter(|| black_box(ours(&s, &bad)))
    });
    g.bench_function("arrow_avro_ocf", |b| {
        b.iter(|| {
            let reader = arrow_avro::reader::ReaderBuilder::new()
                .with_batch_size(BATCH)
                .build(Cursor::new(&ocf))
                .unwrap();
            let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
            black_box(rows)
        })
    });
    // The same records as Confluent-framed messages (magic byte, schema id): arrow-avro's
    // streaming `Decoder`, the like-for-like comparison with a stream of separate records.
    let framed: Vec<Vec<u8>> = datums
        .iter()
        .map(|d| tributary_decode::confluent_frame(7, None, d))
        .collect();
    let framed_input = batches(&framed);
    let framed_schemas = StreamSchemas {
        key: None,
        payload: Some(ResolvedSchema {
            format: SchemaFormat::Avro,
            text: AVRO.into(),
            wire: WireFormat::Confluent,
            registry_id: Some(7),
        }),
    };
    g.bench_function("tributary_confluent", |b| {
        b.iter(|| black_box(ours(&framed_schemas, &framed_input)))
    });
    let arrow_decoder = || {
        use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};
        let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
        store
            .set(Fingerprint::Id(7), AvroSchema::new(AVRO.to_string()))
            .unwrap();
        let mut decoder = arrow_avro::reader::ReaderBuilder::new()
            .with_batch_size(BATCH)
            .with_writer_schema_store(store)
            .build_decoder()
            .unwrap();
        let mut rows = 0;
        for chunk in framed.chunks(BATCH) {
            for m in chunk {
                let mut buf = m.as_slice();
                while !buf.is_empty() {
                    let used = decoder.decode(buf).unwrap();
                    if used == 0 {
                        break;
                    }
                    buf = &buf[used..];
                }
            }
            rows += decoder.flush().unwrap().map_or(0, |b| b.num_rows());
        }
        rows
    };
    // Both sides decode every record (checked once, outside the timing).
    assert_eq!(arrow_decoder(), n);
    assert_eq!(ours(&framed_schemas, &framed_input), n);
    g.bench_function("arrow_avro_decoder_confluent", |b| {
        b.iter(|| black_box(arrow_decoder()))
    });
    g.bench_function("apache_avro_value", |b| {
        b.iter(|| {
            let mut k = 0;
            for d in &datums {
                let v = apache_avro::from_avro_datum(&schema, &mut d.as_slice(), None).unwrap();
                k += matches!(v, AvroValue::Record(_)) as usize;
            }
            black_box(k)
        })
    });
    g.finish();
}

const PROTO: &str = r#"syntax = "proto3"; package bench;
message Order { int64 id = 1; string customer = 2; double price = 3; int32 qty = 4; bool paid = 5;
  string country = 6; uint64 ts = 7; repeated string tags = 8; }"#;

fn proto_desc() -> MessageDescriptor {
    let dir = std::env::temp_dir().join(format!("trib-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("b.proto"), PROTO).unwrap();
    let fds = protox::compile(["b.proto"], [&dir]).unwrap();
    let pool = DescriptorPool::from_file_descriptor_set(fds).unwrap();
    pool.get_message_by_name("bench.Order").unwrap()
}

fn bench_protobuf(c: &mut Criterion) {
    let n = records();
    let desc = proto_desc();
    let msgs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut m = DynamicMessage::new(desc.clone());
            m.set_field_by_name("id", PValue::I64(i as i64 * 7919));
            m.set_field_by_name("customer", PValue::String(format!("customer-{}", i % 5000)));
            m.set_field_by_name("price", PValue::F64(i as f64 * 0.25));
            m.set_field_by_name("qty", PValue::I32((i % 100) as i32));
            m.set_field_by_name("paid", PValue::Bool(i % 3 == 0));
            m.set_field_by_name(
                "country",
                PValue::String(["NO", "DE", "US", "JP"][i % 4].into()),
            );
            m.set_field_by_name("ts", PValue::U64(1_700_000_000_000 + i as u64));
            m.set_field_by_name(
                "tags",
                PValue::List(vec![PValue::String("a".into()), PValue::String("b".into())]),
            );
            m.encode_to_vec()
        })
        .collect();
    let input = batches(&msgs);
    let bad = batches(&corrupt(&msgs, |v| v[..v.len() - 3].to_vec()));
    let s = schemas(
        SchemaFormat::Protobuf {
            message: "bench.Order".into(),
        },
        PROTO,
    );
    let mut g = tune(c, "protobuf");
    g.bench_function("tributary", |b| b.iter(|| black_box(ours(&s, &input))));
    g.bench_function("tributary_10pct_malformed", |b| {
        b.iter(|| black_box(ours(&s, &bad)))
    });
    g.bench_function("prost_reflect_dynamic", |b| {
        b.iter(|| {
            let mut k = 0;
            for m in &msgs {
                let d = DynamicMessage::decode(desc.clone(), m.as_slice()).unwrap();
                k += d.has_field_by_name("id") as usize;
            }
            black_box(k)
        })
    });
    g.finish();
}

const JSON_SCHEMA: &str = r#"{"type":"object","properties":{
 "id":{"type":"integer"},"customer":{"type":"string"},"price":{"type":"number"},"qty":{"type":"integer"},
 "paid":{"type":"boolean"},"country":{"type":"string"},"ts":{"type":"integer"},"note":{"type":"string"}}}"#;

fn bench_json(c: &mut Criterion) {
    let n = records();
    let docs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            format!(
                r#"{{"id":{},"customer":"customer-{}","price":{},"qty":{},"paid":{},"country":"{}","ts":{},"note":{}}}"#,
                i * 7919,
                i % 5000,
                i as f64 * 0.25,
                i % 100,
                i % 3 == 0,
                ["NO", "DE", "US", "JP"][i % 4],
                1_700_000_000_000u64 + i as u64,
                if i % 2 == 0 { "null".to_string() } else { "\"gift wrap\"".into() }
            )
            .into_bytes()
        })
        .collect();
    let input = batches(&docs);
    let bad = batches(&corrupt(&docs, |v| v[..v.len() - 5].to_vec()));
    let s = schemas(SchemaFormat::JsonSchema, JSON_SCHEMA);
    let arrow_schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("customer", DataType::Utf8, true),
        Field::new("price", DataType::Float64, true),
        Field::new("qty", DataType::Int64, true),
        Field::new("paid", DataType::Boolean, true),
        Field::new("country", DataType::Utf8, true),
        Field::new("ts", DataType::Int64, true),
        Field::new("note", DataType::Utf8, true),
    ]));
    let ndjson: Vec<u8> = docs
        .iter()
        .flat_map(|d| d.iter().copied().chain([b'\n']))
        .collect();
    let mut g = tune(c, "json");
    g.bench_function("tributary", |b| b.iter(|| black_box(ours(&s, &input))));
    g.bench_function("tributary_10pct_malformed", |b| {
        b.iter(|| black_box(ours(&s, &bad)))
    });
    g.bench_function("arrow_json", |b| {
        b.iter(|| {
            let mut dec = arrow_json::ReaderBuilder::new(arrow_schema.clone())
                .with_batch_size(BATCH)
                .build_decoder()
                .unwrap();
            let mut rows = 0;
            let mut buf = ndjson.as_slice();
            while !buf.is_empty() {
                let used = dec.decode(buf).unwrap();
                buf = &buf[used..];
                if let Some(batch) = dec.flush().unwrap() {
                    rows += batch.num_rows();
                }
            }
            if let Some(batch) = dec.flush().unwrap() {
                rows += batch.num_rows();
            }
            black_box(rows)
        })
    });
    g.finish();
}

criterion_group!(benches, bench_avro, bench_protobuf, bench_json);
criterion_main!(benches);
