//! Decoder benchmarks, side by side with the libraries underneath, in one run.
//!
//! Each group decodes the same N records (default 1,000,000; `TRIB_BENCH_RECORDS` overrides) of
//! an 8-field record. Every side reads the same bytes: the records of one `BinaryArray` per
//! 65,536 (JSON: each record with its newline, so the array's value buffer is byte for byte the
//! NDJSON text arrow-json reads).
//! - `avro`: ours vs `arrow-avro` (the same datums in an uncompressed object container file) vs
//!   `apache-avro` `from_avro_datum` to `Value`; and, like for like, ours vs arrow-avro's
//!   streaming `Decoder` on the same records with Confluent framing;
//! - `protobuf`: ours vs prost-reflect `DynamicMessage::decode`;
//! - `json`: ours vs `arrow-json`'s decoder;
//! - each with `_10pct_malformed`: ours with every 10th record corrupted;
//! - `utf8_build`: what the unchecked utf8 path of the Avro and Protobuf decoders buys: building
//!   a `StringArray` of 1M strings with UTF-8 validation (`try_new`, the checked path) vs
//!   without (`new_unchecked`).
//!
//! Before anything is timed, each pair's outputs are compared (module `check`): row counts, null
//! counts per column and every 10,000th row's values as text; a difference panics. After the
//! run the ratios of the median times are printed.
//!
//! Run: `cargo bench -p tributary-decode --bench decode` (add `-- --quick` and a small
//! `TRIB_BENCH_RECORDS` for a check of the setup).
#![allow(missing_docs, deprecated, clippy::unwrap_used, clippy::expect_used)]

#[path = "decode/check.rs"]
mod check;

use std::hint::black_box;
use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use apache_avro::types::Value as AvroValue;
use arrow_array::{Array, BinaryArray, RecordBatch, StringArray};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};
use check::{assert_same, Table};
use criterion::{criterion_group, Criterion};
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

fn decode_all(schemas: &StreamSchemas, input: &[RecordBatch]) -> Vec<RecordBatch> {
    let mut d = StreamDecoder::new(schemas, DecodeMode::Permissive, "value").unwrap();
    input.iter().map(|b| d.decode(b).unwrap()).collect()
}

/// Our output as a table (every record of a pair must decode).
fn ours_table(schemas: &StreamSchemas, input: &[RecordBatch], names: &[&str]) -> Table {
    let mut t = Table::new(names, rows_of(input));
    for b in decode_all(schemas, input) {
        t.add_struct(&b);
    }
    t
}

/// Every value of the `value` column of `input`, in order.
fn each_value<'a>(input: &'a [RecordBatch]) -> impl Iterator<Item = &'a [u8]> + 'a {
    input.iter().flat_map(|b| {
        let a = b.column(0).as_any().downcast_ref::<BinaryArray>().unwrap();
        (0..a.len()).map(move |i| a.value(i))
    })
}

fn rows_of(input: &[RecordBatch]) -> usize {
    input.iter().map(|b| b.num_rows()).sum()
}

/// With every 10th record corrupted, exactly those decode to null.
fn check_malformed(schemas: &StreamSchemas, bad: &[RecordBatch]) {
    let n = rows_of(bad);
    let nulls: usize = decode_all(schemas, bad)
        .iter()
        .map(|b| b.column_by_name("value").unwrap().null_count())
        .sum();
    assert_eq!(nulls, n.div_ceil(10), "malformed records decoded to null");
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
        ("paid".into(), AvroValue::Boolean(i.is_multiple_of(3))),
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
            if i.is_multiple_of(2) {
                AvroValue::Union(0, Box::new(AvroValue::Null))
            } else {
                AvroValue::Union(1, Box::new(AvroValue::String("gift wrap".into())))
            },
        ),
    ])
}

const AVRO_FIELDS: [&str; 8] = [
    "id", "customer", "price", "qty", "paid", "country", "ts", "note",
];

/// An apache-avro value as the checks' text (null for null and the null branch of a union).
fn avro_text(v: &AvroValue) -> Option<String> {
    Some(match v {
        AvroValue::Null => return None,
        AvroValue::Union(_, inner) => return avro_text(inner),
        AvroValue::Long(x) | AvroValue::TimestampMillis(x) => x.to_string(),
        AvroValue::Int(x) => x.to_string(),
        AvroValue::Double(x) => x.to_string(),
        AvroValue::Boolean(x) => x.to_string(),
        AvroValue::String(x) => x.clone(),
        other => panic!("no text form for {other:?}"),
    })
}

fn avro_values_table(schema: &apache_avro::Schema, input: &[RecordBatch]) -> Table {
    let mut t = Table::new(&AVRO_FIELDS, rows_of(input));
    for d in each_value(input) {
        let AvroValue::Record(fields) =
            apache_avro::from_avro_datum(schema, &mut &d[..], None).unwrap()
        else {
            panic!("a record expected")
        };
        let texts: Vec<Option<String>> = fields.iter().map(|(_, v)| avro_text(v)).collect();
        let nulls: Vec<bool> = texts.iter().map(Option::is_none).collect();
        let sample = t.wants_sample().then(|| {
            texts
                .into_iter()
                .map(|v| v.unwrap_or_else(|| "null".into()))
                .collect()
        });
        t.push(&nulls, sample);
    }
    t
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
    drop(datums);
    let bad = batches(&corrupt(
        &each_value(&input).map(<[u8]>::to_vec).collect::<Vec<_>>(),
        |v| v[..v.len() / 2].to_vec(),
    ));
    let s = schemas(SchemaFormat::Avro, AVRO);
    let arrow_ocf = || -> Vec<RecordBatch> {
        arrow_avro::reader::ReaderBuilder::new()
            .with_batch_size(BATCH)
            .build(Cursor::new(&ocf))
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    };
    // The same records as Confluent-framed messages (magic byte, schema id): arrow-avro's
    // streaming `Decoder`, the like-for-like comparison with a stream of separate records.
    let framed_input = batches(
        &each_value(&input)
            .map(|d| tributary_decode::confluent_frame(7, None, d))
            .collect::<Vec<_>>(),
    );
    let framed_schemas = StreamSchemas {
        key: None,
        payload: Some(ResolvedSchema {
            format: SchemaFormat::Avro,
            text: AVRO.into(),
            wire: WireFormat::Confluent,
            registry_id: Some(7),
        }),
    };
    let arrow_decoder = || -> Vec<RecordBatch> {
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
        let mut out = Vec::new();
        for b in &framed_input {
            let a = b.column(0).as_any().downcast_ref::<BinaryArray>().unwrap();
            for i in 0..a.len() {
                let mut buf = a.value(i);
                while !buf.is_empty() {
                    let used = decoder.decode(buf).unwrap();
                    if used == 0 {
                        break;
                    }
                    buf = &buf[used..];
                }
            }
            out.extend(decoder.flush().unwrap());
        }
        out
    };

    // Checked once, outside the timing.
    let ours_plain = ours_table(&s, &input, &AVRO_FIELDS);
    let mut reference = Table::new(&AVRO_FIELDS, n);
    arrow_ocf().iter().for_each(|b| reference.add_batch(b));
    assert_same("avro: tributary vs arrow_avro_ocf", &ours_plain, &reference);
    let mut reference = Table::new(&AVRO_FIELDS, n);
    arrow_decoder().iter().for_each(|b| reference.add_batch(b));
    assert_same(
        "avro: tributary_confluent vs arrow_avro_decoder_confluent",
        &ours_table(&framed_schemas, &framed_input, &AVRO_FIELDS),
        &reference,
    );
    assert_same(
        "avro: tributary vs apache_avro_value",
        &ours_plain,
        &avro_values_table(&schema, &input),
    );
    check_malformed(&s, &bad);

    let mut g = tune(c, "avro");
    g.bench_function("tributary", |b| b.iter(|| black_box(ours(&s, &input))));
    g.bench_function("tributary_10pct_malformed", |b| {
        b.iter(|| black_box(ours(&s, &bad)))
    });
    g.bench_function("arrow_avro_ocf", |b| {
        b.iter(|| black_box(arrow_ocf().len()))
    });
    g.bench_function("tributary_confluent", |b| {
        b.iter(|| black_box(ours(&framed_schemas, &framed_input)))
    });
    g.bench_function("arrow_avro_decoder_confluent", |b| {
        b.iter(|| black_box(arrow_decoder().len()))
    });
    g.bench_function("apache_avro_value", |b| {
        b.iter(|| {
            let mut k = 0;
            for d in each_value(&input) {
                let v = apache_avro::from_avro_datum(&schema, &mut &d[..], None).unwrap();
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

const PROTO_FIELDS: [&str; 8] = [
    "id", "customer", "price", "qty", "paid", "country", "ts", "tags",
];

/// A prost-reflect value as the checks' text.
fn proto_text(v: &PValue) -> String {
    match v {
        PValue::I64(x) => x.to_string(),
        PValue::I32(x) => x.to_string(),
        PValue::U64(x) => x.to_string(),
        PValue::F64(x) => x.to_string(),
        PValue::Bool(x) => x.to_string(),
        PValue::String(x) => x.clone(),
        PValue::List(items) => {
            let texts: Vec<String> = items.iter().map(proto_text).collect();
            format!("[{}]", texts.join(","))
        }
        other => panic!("no text form for {other:?}"),
    }
}

/// prost-reflect's messages as a table: a proto3 scalar absent from the wire is null (what our
/// decoder gives it), a repeated field is never null.
fn proto_values_table(desc: &MessageDescriptor, input: &[RecordBatch]) -> Table {
    let mut t = Table::new(&PROTO_FIELDS, rows_of(input));
    for m in each_value(input) {
        let d = DynamicMessage::decode(desc.clone(), m).unwrap();
        let nulls: Vec<bool> = PROTO_FIELDS
            .iter()
            .map(|f| *f != "tags" && !d.has_field_by_name(f))
            .collect();
        let sample = t.wants_sample().then(|| {
            PROTO_FIELDS
                .iter()
                .zip(&nulls)
                .map(|(f, null)| {
                    if *null {
                        "null".to_string()
                    } else {
                        proto_text(&d.get_field_by_name(f).unwrap())
                    }
                })
                .collect()
        });
        t.push(&nulls, sample);
    }
    t
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
    // Cut inside the last field (2 bytes: its value goes, its tag and length stay); cutting 3
    // would drop the whole last `tags` item and leave a valid message.
    let bad = batches(&corrupt(&msgs, |v| v[..v.len() - 2].to_vec()));
    drop(msgs);
    let s = schemas(
        SchemaFormat::Protobuf {
            message: "bench.Order".into(),
        },
        PROTO,
    );
    assert_same(
        "protobuf: tributary vs prost_reflect_dynamic",
        &ours_table(&s, &input, &PROTO_FIELDS),
        &proto_values_table(&desc, &input),
    );
    check_malformed(&s, &bad);

    let mut g = tune(c, "protobuf");
    g.bench_function("tributary", |b| b.iter(|| black_box(ours(&s, &input))));
    g.bench_function("tributary_10pct_malformed", |b| {
        b.iter(|| black_box(ours(&s, &bad)))
    });
    g.bench_function("prost_reflect_dynamic", |b| {
        b.iter(|| {
            let mut k = 0;
            for m in each_value(&input) {
                let d = DynamicMessage::decode(desc.clone(), m).unwrap();
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

const JSON_FIELDS: [&str; 8] = [
    "id", "customer", "price", "qty", "paid", "country", "ts", "note",
];

fn bench_json(c: &mut Criterion) {
    let n = records();
    // One record per line; each record keeps its newline, so that our input's value buffer is
    // byte for byte the NDJSON text arrow-json reads.
    let docs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            format!(
                "{{\"id\":{},\"customer\":\"customer-{}\",\"price\":{},\"qty\":{},\"paid\":{},\"country\":\"{}\",\"ts\":{},\"note\":{}}}\n",
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
    let bad = batches(&corrupt(&docs, |v| v[..v.len() - 6].to_vec()));
    let ndjson: Vec<u8> = docs.concat();
    drop(docs);
    let same_bytes: Vec<u8> = input
        .iter()
        .flat_map(|b| {
            let a = b.column(0).as_any().downcast_ref::<BinaryArray>().unwrap();
            a.values().as_slice().to_vec()
        })
        .collect();
    assert!(same_bytes == ndjson, "both JSON sides read the same bytes");
    drop(same_bytes);
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
    let arrow_json = || -> Vec<RecordBatch> {
        let mut dec = arrow_json::ReaderBuilder::new(arrow_schema.clone())
            .with_batch_size(BATCH)
            .build_decoder()
            .unwrap();
        let mut out = Vec::new();
        let mut buf = ndjson.as_slice();
        while !buf.is_empty() {
            let used = dec.decode(buf).unwrap();
            buf = &buf[used..];
            out.extend(dec.flush().unwrap());
        }
        out.extend(dec.flush().unwrap());
        out
    };
    let mut reference = Table::new(&JSON_FIELDS, n);
    arrow_json().iter().for_each(|b| reference.add_batch(b));
    assert_same(
        "json: tributary vs arrow_json",
        &ours_table(&s, &input, &JSON_FIELDS),
        &reference,
    );
    check_malformed(&s, &bad);

    let mut g = tune(c, "json");
    g.bench_function("tributary", |b| b.iter(|| black_box(ours(&s, &input))));
    g.bench_function("tributary_10pct_malformed", |b| {
        b.iter(|| black_box(ours(&s, &bad)))
    });
    g.bench_function("arrow_json", |b| b.iter(|| black_box(arrow_json().len())));
    g.finish();
}

/// What `Col::trust_utf8` buys: a 1M-string utf8 column built with and without validation.
fn bench_utf8(c: &mut Criterion) {
    let n = 1_000_000;
    let mut data = Vec::new();
    let mut offsets = vec![0i32];
    for i in 0..n {
        let s = if i % 4 == 0 {
            format!("gr\u{fc}n-{i}")
        } else {
            format!("customer-{i}")
        };
        data.extend_from_slice(s.as_bytes());
        offsets.push(data.len() as i32);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    let values = Buffer::from_vec(data);
    let checked = || StringArray::try_new(offsets.clone(), values.clone(), None).unwrap();
    // SAFETY: the values are Rust strings, the offsets their boundaries.
    let unchecked = || unsafe { StringArray::new_unchecked(offsets.clone(), values.clone(), None) };
    assert_eq!(checked(), unchecked(), "both paths build the same column");
    println!("checked utf8_build: {n} strings, both paths equal");
    let mut g = tune(c, "utf8_build");
    g.bench_function("checked", |b| b.iter(|| black_box(checked().len())));
    g.bench_function("unchecked", |b| b.iter(|| black_box(unchecked().len())));
    g.finish();
}

/// The median of one benchmark from criterion's estimates, in ms.
fn median_ms(group: &str, bench: &str) -> Option<f64> {
    let root = std::env::var_os("CRITERION_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .map(|t| std::path::PathBuf::from(t).join("criterion"))
        })
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion")
        });
    let path = root.join(group).join(bench).join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    Some(v["median"]["point_estimate"].as_f64()? / 1e6)
}

/// Prints each pair's medians and their ratio (reference / ours: above 1 means ours is faster).
fn print_ratios() {
    let pairs = [
        ("avro", "tributary", "arrow_avro_ocf"),
        (
            "avro",
            "tributary_confluent",
            "arrow_avro_decoder_confluent",
        ),
        ("avro", "tributary", "apache_avro_value"),
        ("avro", "tributary", "tributary_10pct_malformed"),
        ("protobuf", "tributary", "prost_reflect_dynamic"),
        ("protobuf", "tributary", "tributary_10pct_malformed"),
        ("json", "tributary", "arrow_json"),
        ("json", "tributary", "tributary_10pct_malformed"),
        ("utf8_build", "unchecked", "checked"),
    ];
    println!("\n| group | ours | ms | other | ms | other / ours |\n|---|---|---|---|---|---|");
    for (group, ours, other) in pairs {
        if let (Some(a), Some(b)) = (median_ms(group, ours), median_ms(group, other)) {
            println!(
                "| {group} | {ours} | {a:.1} | {other} | {b:.1} | {:.2}x |",
                b / a
            );
        }
    }
}

criterion_group!(benches, bench_avro, bench_protobuf, bench_json, bench_utf8);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
