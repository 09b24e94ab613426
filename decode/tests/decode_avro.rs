//! Avro decoding: golden tests per mapping rule (data encoded by `apache-avro`, an independent
//! encoder), refusals, malformed input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(feature = "avro")]
#![allow(deprecated)] // to_avro_datum: the plain datum encoder is what we want here

#[path = "decode_util.rs"]
mod util;

use apache_avro::types::Value;
use apache_avro::{to_avro_datum, Decimal, Schema};
use arrow_schema::{DataType, TimeUnit};
use tributary_decode::DecodeMode;
use tributary_sdk::{ErrorCode, SchemaFormat};
use util::*;

const SCHEMA: &str = r#"{
  "type": "record", "name": "Order", "namespace": "com.example",
  "fields": [
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"},
    {"name": "s", "type": "string"},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "F2", "size": 2}},
    {"name": "arr", "type": {"type": "array", "items": "int"}},
    {"name": "m", "type": {"type": "map", "values": "string"}},
    {"name": "ns", "type": ["null", "string"]},
    {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "decf", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "nested", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
    {"name": "again", "type": "Inner"},
    {"name": "event", "type": ["null",
        {"type": "record", "name": "Click", "fields": [{"name": "url", "type": "string"}]},
        {"type": "record", "name": "View", "fields": [{"name": "ms", "type": "long"}]}]}
  ]
}"#;

fn record(event: Value, ns: Option<&str>) -> Value {
    Value::Record(vec![
        ("b".into(), Value::Boolean(true)),
        ("i".into(), Value::Int(-5)),
        ("l".into(), Value::Long(1 << 40)),
        ("f".into(), Value::Float(1.5)),
        ("d".into(), Value::Double(-2.25)),
        ("by".into(), Value::Bytes(vec![0, 255])),
        ("s".into(), Value::String("héllo".into())),
        ("e".into(), Value::Enum(1, "GREEN".into())),
        ("fx".into(), Value::Fixed(2, vec![1, 2])),
        (
            "arr".into(),
            Value::Array(vec![Value::Int(1), Value::Int(2), Value::Int(3)]),
        ),
        (
            "m".into(),
            Value::Map([("k".to_string(), Value::String("v".into()))].into()),
        ),
        (
            "ns".into(),
            match ns {
                Some(s) => Value::Union(1, Box::new(Value::String(s.into()))),
                None => Value::Union(0, Box::new(Value::Null)),
            },
        ),
        ("ts_ms".into(), Value::TimestampMillis(1_700_000_000_123)),
        (
            "ts_us".into(),
            Value::TimestampMicros(1_700_000_000_123_456),
        ),
        ("day".into(), Value::Date(19_000)),
        (
            "dec".into(),
            Value::Decimal(Decimal::from(vec![0xff, 0x85])),
        ),
        (
            "decf".into(),
            Value::Decimal(Decimal::from(vec![0, 0, 0, 0, 0, 0, 0x30, 0x39])),
        ),
        (
            "id".into(),
            Value::Uuid("6ba7b810-9dad-11d1-80b4-00c04fd430c8".parse().unwrap()),
        ),
        (
            "nested".into(),
            Value::Record(vec![("x".into(), Value::Int(1))]),
        ),
        (
            "again".into(),
            Value::Record(vec![("x".into(), Value::Int(2))]),
        ),
        ("event".into(), event),
    ])
}

fn encode(v: Value) -> Vec<u8> {
    let schema = Schema::parse_str(SCHEMA).unwrap();
    to_avro_datum(&schema, v).unwrap()
}

fn click(url: &str) -> Value {
    Value::Union(
        1,
        Box::new(Value::Record(vec![(
            "url".into(),
            Value::String(url.into()),
        )])),
    )
}

#[test]
fn types_follow_the_mapping() {
    let (dt, _, _) = decode_values(
        &payload(SchemaFormat::Avro, SCHEMA),
        DecodeMode::Permissive,
        vec![],
    )
    .unwrap();
    let DataType::Struct(fields) = dt else {
        panic!()
    };
    let ty = |n: &str| fields.find(n).unwrap().1.data_type().clone();
    assert_eq!(ty("b"), DataType::Boolean);
    assert_eq!(ty("i"), DataType::Int32);
    assert_eq!(ty("l"), DataType::Int64);
    assert_eq!(ty("f"), DataType::Float32);
    assert_eq!(ty("d"), DataType::Float64);
    assert_eq!(ty("by"), DataType::Binary);
    assert_eq!(ty("s"), DataType::Utf8);
    assert_eq!(ty("e"), DataType::Utf8);
    assert_eq!(ty("fx"), DataType::FixedSizeBinary(2));
    assert!(matches!(ty("arr"), DataType::List(f) if *f.data_type() == DataType::Int32));
    assert!(matches!(ty("m"), DataType::Map(_, _)));
    assert_eq!(ty("ns"), DataType::Utf8);
    assert_eq!(
        ty("ts_ms"),
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    );
    assert_eq!(
        ty("ts_us"),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    );
    assert_eq!(ty("day"), DataType::Date32);
    assert_eq!(ty("dec"), DataType::Decimal128(9, 2));
    assert_eq!(ty("decf"), DataType::Decimal128(18, 3));
    assert_eq!(ty("id"), DataType::Utf8);
    assert_eq!(ty("again"), ty("nested"));
    let DataType::Struct(ev) = ty("event") else {
        panic!()
    };
    let names: Vec<&str> = ev.iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["Click", "View"]);
    assert!(ev.iter().all(|f| f.is_nullable()));
}

#[test]
fn values_decode_exactly() {
    let view = Value::Union(
        2,
        Box::new(Value::Record(vec![("ms".into(), Value::Long(42))])),
    );
    let (_, rows, m) = decode_values(
        &payload(SchemaFormat::Avro, SCHEMA),
        DecodeMode::Permissive,
        vec![
            Some(encode(record(click("/a"), Some("x")))),
            Some(encode(record(view, None))),
            Some(encode(record(Value::Union(0, Box::new(Value::Null)), None))),
        ],
    )
    .unwrap();
    assert_eq!(
        rows[0],
        r#"{"b":true,"i":-5,"l":1099511627776,"f":1.5,"d":-2.25,"by":"00ff","s":"héllo","e":"GREEN","fx":"0102","arr":[1,2,3],"m":{"k":"v"},"ns":"x","ts_ms":"2023-11-14T22:13:20.123Z","ts_us":"2023-11-14T22:13:20.123456Z","day":"2022-01-08","dec":-1.23,"decf":12.345,"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","nested":{"x":1},"again":{"x":2},"event":{"Click":{"url":"/a"}}}"#
    );
    assert!(
        rows[1].ends_with(r#""event":{"View":{"ms":42}}}"#),
        "{}",
        rows[1]
    );
    assert!(!rows[1].contains("\"ns\""));
    assert!(!rows[2].contains("\"event\""), "{}", rows[2]);
    assert_eq!(metric(&m, "malformedRecords"), 0);
}

#[test]
fn malformed_avro_is_null_and_counted_by_reason() {
    let good = encode(record(click("/a"), Some("x")));
    let mut bad_union = good.clone();
    *bad_union.last_mut().unwrap() = 0x7e; // the url string is last: corrupt its last byte..
    let mut wrong_branch = encode(record(Value::Union(0, Box::new(Value::Null)), None));
    *wrong_branch.last_mut().unwrap() = 0x0a; // union branch 5 of 3
    let mut trailing = good.clone();
    trailing.push(0);
    let (rows, m) = {
        let (_, rows, m) = decode_values(
            &payload(SchemaFormat::Avro, SCHEMA),
            DecodeMode::Permissive,
            vec![
                Some(good[..good.len() / 2].to_vec()),
                Some(wrong_branch),
                Some(trailing),
                Some(vec![]),
                Some(good.clone()),
            ],
        )
        .unwrap();
        (rows, m)
    };
    assert_eq!(rows[..4], ["null", "null", "null", "null"]);
    assert_ne!(rows[4], "null");
    assert_eq!(metric(&m, "malformed.truncatedAvro"), 2);
    assert_eq!(metric(&m, "malformed.badAvro"), 1);
    assert_eq!(metric(&m, "malformed.avroTrailingBytes"), 1);
    assert_eq!(metric(&m, "malformedRecords"), 4);
    let _ = bad_union;
}

#[test]
fn huge_block_counts_do_not_allocate() {
    let schema = r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"null"}}]}"#;
    // count = 2^40 (zig-zag), items take no bytes.
    let mut bytes = vec![];
    let mut z: u64 = (1u64 << 40) << 1;
    while z >= 0x80 {
        bytes.push((z as u8) | 0x80);
        z >>= 7;
    }
    bytes.push(z as u8);
    let (_, rows, m) = decode_values(
        &payload(SchemaFormat::Avro, schema),
        DecodeMode::Permissive,
        vec![Some(bytes)],
    )
    .unwrap();
    assert_eq!(rows, ["null"]);
    assert_eq!(metric(&m, "malformed.badAvro"), 1);
}

fn refusal(schema: &str) -> String {
    let e = decode_values(
        &payload(SchemaFormat::Avro, schema),
        DecodeMode::Permissive,
        vec![],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Schema);
    e.message().to_string()
}

#[test]
fn refusals_name_the_field() {
    assert_eq!(
        refusal(
            r#"{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}"#
        ),
        "Avro schema field 'next': recursive type 'Node' cannot be represented as Arrow columns"
    );
    assert_eq!(
        refusal(
            r#"{"type":"record","name":"R","fields":[{"name":"big","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}}]}"#
        ),
        "Avro schema field 'big': decimal precision 40 is outside 1..=38 (Arrow decimal128)"
    );
    assert_eq!(
        refusal(r#""string""#),
        "the Avro schema must be a record (or a union of records), found Utf8"
    );
    assert!(refusal("{").starts_with("avro_schema is not a valid Avro schema"));
}
