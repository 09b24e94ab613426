//! PERMISSIVE decoding under 10% malformed input: the good records decode exactly as they do
//! alone, every bad one is a null, and the counters say why.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(all(feature = "json", feature = "avro", feature = "protobuf"))]
#![allow(deprecated)] // to_avro_datum

#[path = "decode_util.rs"]
mod util;

use apache_avro::types::Value;
use tributary_decode::{confluent_frame, DecodeMode};
use tributary_sdk::{ResolvedSchema, SchemaFormat, StreamSchemas, WireFormat};
use util::*;

type Corrupt = (&'static str, fn(&[u8]) -> Vec<u8>);

/// 1000 records, every 10th corrupted (kinds in turn); checks rows and counters.
fn check(schemas: &StreamSchemas, good: impl Fn(usize) -> Vec<u8>, corrupt: &[Corrupt]) {
    let n = 1000;
    let mut mixed = Vec::new();
    let mut clean = Vec::new();
    let mut expected: std::collections::BTreeMap<&str, u64> = Default::default();
    for i in 0..n {
        let g = good(i);
        if i % 10 == 0 {
            let (reason, f) = corrupt[(i / 10) % corrupt.len()];
            mixed.push(Some(f(&g)));
            *expected.entry(reason).or_default() += 1;
        } else {
            mixed.push(Some(g.clone()));
            clean.push(Some(g));
        }
    }
    let (_, rows, m) = decode_values(schemas, DecodeMode::Permissive, mixed).unwrap();
    let (_, clean_rows, cm) = decode_values(schemas, DecodeMode::Permissive, clean).unwrap();
    assert_eq!(metric(&cm, "malformedRecords"), 0);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r == "null", i % 10 == 0, "row {i}: {r}");
    }
    let good_rows: Vec<&String> = rows.iter().filter(|r| *r != "null").collect();
    assert_eq!(good_rows.len(), clean_rows.len());
    assert!(good_rows.iter().zip(&clean_rows).all(|(a, b)| *a == b));
    for (reason, count) in &expected {
        assert_eq!(metric(&m, reason), *count, "{reason}: {m:?}");
    }
    assert_eq!(metric(&m, "malformedRecords"), n as u64 / 10);
}

fn side(format: SchemaFormat, text: &str, wire: WireFormat, id: Option<u32>) -> StreamSchemas {
    StreamSchemas {
        key: None,
        payload: Some(ResolvedSchema {
            format,
            text: text.into(),
            wire,
            registry_id: id,
        }),
    }
}

#[test]
fn json_ten_percent_malformed() {
    let schema = r#"{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"v":{"type":"array","items":{"type":"number"}}}}"#;
    check(
        &side(SchemaFormat::JsonSchema, schema, WireFormat::Plain, None),
        |i| format!(r#"{{"id": {i}, "name": "n{i}", "v": [{i}.5, 2]}}"#).into_bytes(),
        &[
            ("malformed.badJson", |g| g[..g.len() - 3].to_vec()),
            ("malformed.badJson", |g| {
                g.iter()
                    .map(|&c| if c == b':' { b'=' } else { c })
                    .collect()
            }),
            ("malformed.invalidUtf8", |g| {
                let mut v = g.to_vec();
                let at = v.iter().position(|&c| c == b'n').unwrap_or(0) + 1;
                v.insert(at, 0xff);
                v
            }),
        ],
    );
}

const AVRO: &str = r#"{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"s","type":"string"},{"name":"a","type":{"type":"array","items":"int"}},{"name":"u","type":["null","double"]}]}"#;

fn avro_good(i: usize) -> Vec<u8> {
    let schema = apache_avro::Schema::parse_str(AVRO).unwrap();
    let v = Value::Record(vec![
        ("id".into(), Value::Long(i as i64)),
        ("s".into(), Value::String(format!("s{i}"))),
        (
            "a".into(),
            Value::Array(vec![Value::Int(i as i32), Value::Int(1)]),
        ),
        (
            "u".into(),
            Value::Union(1, Box::new(Value::Double(i as f64))),
        ),
    ]);
    confluent_frame(42, None, &apache_avro::to_avro_datum(&schema, v).unwrap())
}

#[test]
fn avro_ten_percent_malformed() {
    check(
        &side(SchemaFormat::Avro, AVRO, WireFormat::Confluent, Some(42)),
        avro_good,
        &[
            ("malformed.truncatedAvro", |g| g[..g.len() - 4].to_vec()),
            ("malformed.badMagicByte", |g| {
                let mut v = g.to_vec();
                v[0] = 1;
                v
            }),
            ("malformed.wrongSchemaId", |g| {
                let mut v = g.to_vec();
                v[4] = 43;
                v
            }),
            ("malformed.badAvro", |g| {
                let mut v = g.to_vec();
                let n = v.len();
                v[n - 9] = 0x08; // union branch 4
                v
            }),
        ],
    );
}

const PROTO: &str = r#"syntax = "proto3"; package b; message M { int64 id = 1; string s = 2; repeated int32 a = 3; double d = 4; }"#;

fn proto_good(i: usize) -> Vec<u8> {
    let mut v = vec![0x08];
    let mut z = i as u64;
    while z >= 0x80 {
        v.push(z as u8 | 0x80);
        z >>= 7;
    }
    v.push(z as u8);
    let s = format!("s{i}");
    v.extend([0x12, s.len() as u8]);
    v.extend(s.as_bytes());
    v.extend([0x1a, 0x02, 0x05, 0x06, 0x21]);
    v.extend((i as f64).to_le_bytes());
    v
}

#[test]
fn protobuf_ten_percent_malformed() {
    check(
        &side(
            SchemaFormat::Protobuf {
                message: "b.M".into(),
            },
            PROTO,
            WireFormat::Plain,
            None,
        ),
        proto_good,
        &[
            ("malformed.truncatedProtobuf", |g| g[..g.len() - 3].to_vec()),
            ("malformed.protobufWireType", |g| {
                let mut v = g.to_vec();
                v.extend([0x10, 0x01]); // field 2 (string) as varint
                v
            }),
            ("malformed.invalidUtf8", |g| {
                let mut v = g.to_vec();
                let at = v.iter().position(|&c| c == b's').unwrap();
                v[at] = 0xff;
                v
            }),
        ],
    );
}
