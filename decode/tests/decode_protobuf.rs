//! Protobuf decoding: golden tests per mapping rule (data encoded by prost-reflect's
//! `DynamicMessage`, an independent encoder), refusals naming the field, malformed input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(feature = "protobuf")]

#[path = "decode_util.rs"]
mod util;

use arrow_schema::{DataType, TimeUnit};
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, Value};
use tributary_decode::DecodeMode;
use tributary_sdk::{ErrorCode, SchemaFormat};
use util::*;

const PROTO: &str = r#"
syntax = "proto3";
package com.example;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Event {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  sfixed32 sf32 = 7; sfixed64 sf64 = 8; bool flag = 9; float fl = 10; double db = 11;
  string name = 12; bytes raw = 13; Color color = 14; Inner inner = 15;
  repeated int32 nums = 16; repeated string words = 17; map<string, int64> counts = 18;
  google.protobuf.Int32Value maybe = 19; google.protobuf.StringValue label = 20;
  google.protobuf.Timestamp at = 21; repeated Inner items = 22;
  enum Color { RED = 0; GREEN = 1; }
  message Inner { string x = 1; }
}
"#;

fn pool(text: &str) -> DescriptorPool {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.proto"), text).unwrap();
    let fds = protox::compile(["t.proto"], [dir.path()]).unwrap();
    DescriptorPool::from_file_descriptor_set(fds).unwrap()
}

fn schemas(text: &str, message: &str) -> tributary_sdk::StreamSchemas {
    payload(
        SchemaFormat::Protobuf {
            message: message.into(),
        },
        text,
    )
}

fn event() -> DynamicMessage {
    let pool = pool(PROTO);
    let desc = pool.get_message_by_name("com.example.Event").unwrap();
    let inner_desc = pool.get_message_by_name("com.example.Event.Inner").unwrap();
    let mut m = DynamicMessage::new(desc.clone());
    m.set_field_by_name("i32", Value::I32(-7));
    m.set_field_by_name("i64", Value::I64(-(1 << 40)));
    m.set_field_by_name("u32", Value::U32(u32::MAX));
    m.set_field_by_name("u64", Value::U64(u64::MAX));
    m.set_field_by_name("s32", Value::I32(-3));
    m.set_field_by_name("s64", Value::I64(-4));
    m.set_field_by_name("sf32", Value::I32(-5));
    m.set_field_by_name("sf64", Value::I64(-6));
    m.set_field_by_name("flag", Value::Bool(true));
    m.set_field_by_name("fl", Value::F32(0.5));
    m.set_field_by_name("db", Value::F64(-1.25));
    m.set_field_by_name("name", Value::String("ünï".into()));
    m.set_field_by_name("raw", Value::Bytes(vec![1u8, 2].into()));
    m.set_field_by_name("color", Value::EnumNumber(1));
    let mut inner = DynamicMessage::new(inner_desc.clone());
    inner.set_field_by_name("x", Value::String("in".into()));
    m.set_field_by_name("inner", Value::Message(inner.clone()));
    m.set_field_by_name(
        "nums",
        Value::List(vec![Value::I32(1), Value::I32(-2), Value::I32(300)]),
    );
    m.set_field_by_name(
        "words",
        Value::List(vec![Value::String("a".into()), Value::String("b".into())]),
    );
    m.set_field_by_name(
        "counts",
        Value::Map([(MapKey::String("k".into()), Value::I64(9))].into()),
    );
    let int32_value = pool
        .get_message_by_name("google.protobuf.Int32Value")
        .unwrap();
    m.set_field_by_name("maybe", Value::Message(DynamicMessage::new(int32_value))); // present, value 0
    let ts = pool
        .get_message_by_name("google.protobuf.Timestamp")
        .unwrap();
    let mut at = DynamicMessage::new(ts);
    at.set_field_by_name("seconds", Value::I64(1_700_000_000));
    at.set_field_by_name("nanos", Value::I32(123_456_000));
    m.set_field_by_name("at", Value::Message(at));
    m.set_field_by_name(
        "items",
        Value::List(vec![Value::Message(inner.clone()), Value::Message(inner)]),
    );
    m
}

#[test]
fn types_follow_the_mapping() {
    let (dt, _, _) = decode_values(
        &schemas(PROTO, "com.example.Event"),
        DecodeMode::Permissive,
        vec![],
    )
    .unwrap();
    let DataType::Struct(fields) = dt else {
        panic!()
    };
    let ty = |n: &str| fields.find(n).unwrap().1.data_type().clone();
    assert_eq!(ty("i32"), DataType::Int32);
    assert_eq!(ty("i64"), DataType::Int64);
    assert_eq!(ty("u32"), DataType::Int64);
    assert_eq!(ty("u64"), DataType::Decimal128(20, 0));
    assert_eq!(ty("s32"), DataType::Int32);
    assert_eq!(ty("sf64"), DataType::Int64);
    assert_eq!(ty("fl"), DataType::Float32);
    assert_eq!(ty("raw"), DataType::Binary);
    assert_eq!(ty("color"), DataType::Utf8);
    assert!(matches!(ty("inner"), DataType::Struct(f) if f.len() == 1));
    assert!(matches!(ty("nums"), DataType::List(f) if *f.data_type() == DataType::Int32));
    assert!(matches!(ty("counts"), DataType::Map(_, _)));
    assert_eq!(ty("maybe"), DataType::Int32);
    assert_eq!(ty("label"), DataType::Utf8);
    assert_eq!(
        ty("at"),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    );
}

#[test]
fn values_decode_exactly() {
    let bytes = event().encode_to_vec();
    let (_, rows, m) = decode_values(
        &schemas(PROTO, "com.example.Event"),
        DecodeMode::Permissive,
        vec![Some(bytes), Some(vec![])],
    )
    .unwrap();
    assert_eq!(
        rows[0],
        r#"{"i32":-7,"i64":-1099511627776,"u32":4294967295,"u64":18446744073709551615,"s32":-3,"s64":-4,"sf32":-5,"sf64":-6,"flag":true,"fl":0.5,"db":-1.25,"name":"ünï","raw":"0102","color":"GREEN","inner":{"x":"in"},"nums":[1,-2,300],"words":["a","b"],"counts":{"k":9},"maybe":0,"at":"2023-11-14T22:13:20.123456Z","items":[{"x":"in"},{"x":"in"}]}"#
    );
    // An empty message: absent scalars are null, repeated and maps empty.
    assert_eq!(rows[1], r#"{"nums":[],"words":[],"counts":{},"items":[]}"#);
    assert_eq!(metric(&m, "malformedRecords"), 0);
}

#[test]
fn unpacked_repeated_merged_messages_and_unknown_fields() {
    // nums unpacked (tag 16, wire 0) twice; inner sent twice (merged); unknown field 99 (varint)
    // and an unknown group 98 are skipped.
    let mut b = vec![];
    b.extend([0x80, 0x01, 0x05, 0x80, 0x01, 0x06]); // nums = 5, nums = 6
    b.extend([0x7a, 0x03, 0x0a, 0x01, b'p']); // inner { x: "p" }
    b.extend([0x98, 0x06, 0x01]); // field 99 varint 1
    b.extend([0x93, 0x06, 0x08, 0x01, 0x94, 0x06]); // group 98 { 1: 1 }
    b.extend([0x7a, 0x03, 0x0a, 0x01, b'q']); // inner { x: "q" } merges: last x wins
    let (_, rows, _) = decode_values(
        &schemas(PROTO, "com.example.Event"),
        DecodeMode::Permissive,
        vec![Some(b)],
    )
    .unwrap();
    assert_eq!(
        rows[0],
        r#"{"inner":{"x":"q"},"nums":[5,6],"words":[],"counts":{},"items":[]}"#
    );
}

#[test]
fn proto2_decodes() {
    let text = r#"syntax = "proto2"; package p; message P2 { optional int32 a = 1; required string b = 2; repeated int32 c = 3 [packed = true]; optional int32 d = 4 [default = 5]; }"#;
    let pool = pool(text);
    let mut m = DynamicMessage::new(pool.get_message_by_name("p.P2").unwrap());
    m.set_field_by_name("b", Value::String("x".into()));
    m.set_field_by_name("c", Value::List(vec![Value::I32(1), Value::I32(2)]));
    let (_, rows, _) = decode_values(
        &schemas(text, "p.P2"),
        DecodeMode::Permissive,
        vec![Some(m.encode_to_vec())],
    )
    .unwrap();
    assert_eq!(rows[0], r#"{"b":"x","c":[1,2]}"#);
}

#[test]
fn malformed_protobuf_is_null_and_counted_by_reason() {
    let good = event().encode_to_vec();
    let (_, rows, m) = decode_values(
        &schemas(PROTO, "com.example.Event"),
        DecodeMode::Permissive,
        vec![
            Some(vec![0x60, 0x01]),             // name (string) sent as varint
            Some(vec![0x62, 0x05, b'a']),       // name length 5, 1 byte
            Some(vec![0x62, 0x02, 0xff, 0xfe]), // name not UTF-8
            Some(vec![0x0f]),                   // wire type 7
            Some(good.clone()),
        ],
    )
    .unwrap();
    assert_eq!(rows[..4], ["null", "null", "null", "null"]);
    assert!(rows[4].starts_with(r#"{"i32":-7"#));
    assert_eq!(metric(&m, "malformed.protobufWireType"), 2);
    assert_eq!(metric(&m, "malformed.truncatedProtobuf"), 1);
    assert_eq!(metric(&m, "malformed.invalidUtf8"), 1);
    assert_eq!(metric(&m, "malformedRecords"), 4);
}

fn refusal(body: &str) -> String {
    let text = format!(
        "syntax = \"proto3\"; package r; import \"google/protobuf/duration.proto\"; import \"google/protobuf/struct.proto\"; import \"google/protobuf/any.proto\"; message M {{ {body} }}"
    );
    let e = decode_values(&schemas(&text, "r.M"), DecodeMode::Permissive, vec![]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Schema);
    e.message().to_string()
}

#[test]
fn refusals_name_the_field() {
    assert_eq!(
        refusal("google.protobuf.Duration d = 1;"),
        "protobuf field 'M.d': type google.protobuf.Duration is not supported"
    );
    assert_eq!(
        refusal("google.protobuf.Struct s = 1;"),
        "protobuf field 'M.s': type google.protobuf.Struct is not supported"
    );
    assert_eq!(
        refusal("google.protobuf.Any a = 1;"),
        "protobuf field 'M.a': type google.protobuf.Any is not supported"
    );
    assert_eq!(
        refusal("fixed32 f = 1;"),
        "protobuf field 'M.f': type fixed32 is not supported (use uint32/uint64 or sfixed32/sfixed64)"
    );
    assert_eq!(
        refusal("repeated fixed64 f = 1;"),
        "protobuf field 'M.f': type fixed64 is not supported (use uint32/uint64 or sfixed32/sfixed64)"
    );
    assert_eq!(
        refusal("map<int32, string> m = 1;"),
        "protobuf field 'M.m': maps with int32 keys are not supported; only string keys map to Arrow maps"
    );
    assert_eq!(
        refusal("message Node { Node next = 1; } Node n = 1;"),
        "protobuf field 'M.n.next': recursive message r.M.Node cannot be represented as Arrow columns"
    );
    let e = decode_values(
        &schemas(PROTO, "com.example.Nope"),
        DecodeMode::Permissive,
        vec![],
    )
    .unwrap_err();
    assert!(
        e.message()
            .starts_with("message_name 'com.example.Nope' is not in the protobuf schema"),
        "{}",
        e.message()
    );
    let e = decode_values(&schemas("message {", "x"), DecodeMode::Permissive, vec![]).unwrap_err();
    assert!(
        e.message().starts_with("proto_schema does not parse"),
        "{}",
        e.message()
    );
}

const DEFAULTS: &str = r#"
syntax = "proto3";
package d;
message M {
  int32 a = 1; string s = 2; bool b = 3; Color c = 4; optional int32 o = 5; Inner inner = 6;
  repeated int32 r = 7; uint64 u = 8; bytes raw = 9;
  enum Color { RED = 0; GREEN = 1; }
  message Inner { int32 x = 1; }
}
"#;

/// Decodes an empty message and one with `c = GREEN` through the stage with these options.
async fn decode_with(extra: &[(&str, &str)]) -> (DataType, Vec<String>) {
    use tributary_sdk::{EnvSecretStore, Options, SourceDescription, StageFactory};
    let pool = pool(DEFAULTS);
    let desc = pool.get_message_by_name("d.M").unwrap();
    let mut green = DynamicMessage::new(desc);
    green.set_field_by_name("c", Value::EnumNumber(1));
    let mut options = Options::new()
        .with("proto_schema", DEFAULTS)
        .with("message_name", "d.M");
    for (k, v) in extra {
        options.set(*k, *v);
    }
    let source = SourceDescription::new("kafka", "subscribe:t")
        .with_streams(["t"])
        .with_payload_column("value")
        .with_key_column("key");
    let factory = tributary_decode::DecodeStageFactory;
    let mut stage = factory.create(&options, &source, &EnvSecretStore).unwrap();
    let batch = kafka_batch(vec![Some(Vec::new()), Some(green.encode_to_vec())]);
    stage.open(batch.schema()).await.unwrap();
    let out = stage.apply(&batch).await.unwrap();
    let dt = out.column_by_name("value").unwrap().data_type().clone();
    (dt, rows_json(&out))
}

#[tokio::test]
async fn absent_proto3_scalars_are_null_unless_emit_default_values() {
    let (_, rows) = decode_with(&[]).await;
    assert_eq!(rows[0], r#"{"r":[]}"#);
    assert_eq!(rows[1], r#"{"c":"GREEN","r":[]}"#);
    let (_, rows) = decode_with(&[("emit.default.values", "true")]).await;
    // Fields with presence (optional, messages) stay null; repeated stay empty.
    assert_eq!(
        rows[0],
        r#"{"a":0,"s":"","b":false,"c":"RED","r":[],"u":0,"raw":""}"#
    );
    assert_eq!(
        rows[1],
        r#"{"a":0,"s":"","b":false,"c":"GREEN","r":[],"u":0,"raw":""}"#
    );
}

#[tokio::test]
async fn enums_as_ints_gives_the_number() {
    let (dt, rows) = decode_with(&[("enums.as.ints", "true")]).await;
    let DataType::Struct(fields) = dt else {
        panic!("struct expected")
    };
    assert_eq!(fields.find("c").unwrap().1.data_type(), &DataType::Int32);
    assert_eq!(rows[1], r#"{"c":1,"r":[]}"#);
    let (_, rows) =
        decode_with(&[("enums.as.ints", "true"), ("emit.default.values", "true")]).await;
    assert!(rows[0].contains(r#""c":0"#), "{}", rows[0]);
}

#[test]
fn protobuf_options_without_a_protobuf_side_are_refused() {
    use tributary_sdk::Options;
    for option in ["emit.default.values", "enums.as.ints"] {
        let o = Options::new()
            .with("json_schema", r#"{"type":"object"}"#)
            .with(option, "true");
        let e = tributary_decode::DecodeConfig::validate(&o).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert_eq!(e.context_value("option"), Some(option));
    }
}
