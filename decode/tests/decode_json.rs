//! JSON Schema decoding: one golden test per mapping rule, refusals, permissive and FAILFAST.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![cfg(feature = "json")]

#[path = "decode_util.rs"]
mod util;

use arrow_schema::{DataType, TimeUnit};
use tributary_decode::DecodeMode;
use tributary_sdk::{ErrorCode, SchemaFormat};
use util::*;

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "name": {"type": "string"},
    "price": {"type": "number"},
    "active": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "at": {"type": "string", "format": "date-time"},
    "day": {"type": "string", "format": "date"},
    "address": {"type": "object", "properties": {"city": {"type": ["null", "string"]}}},
    "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
    "extra": {}
  }
}"#;

fn run(values: &[&str]) -> (DataType, Vec<String>, tributary_sdk::SourceMetrics) {
    decode_values(
        &payload(SchemaFormat::JsonSchema, SCHEMA),
        DecodeMode::Permissive,
        values.iter().map(|v| Some(v.as_bytes().to_vec())).collect(),
    )
    .unwrap()
}

#[test]
fn types_follow_the_mapping() {
    let (dt, _, _) = run(&[]);
    let DataType::Struct(fields) = dt else {
        panic!("{dt}")
    };
    let ty = |n: &str| fields.find(n).unwrap().1.data_type().clone();
    assert_eq!(ty("id"), DataType::Int64);
    assert_eq!(ty("name"), DataType::Utf8);
    assert_eq!(ty("price"), DataType::Float64);
    assert_eq!(ty("active"), DataType::Boolean);
    assert!(matches!(ty("tags"), DataType::List(f) if *f.data_type() == DataType::Utf8));
    assert_eq!(
        ty("at"),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    );
    assert_eq!(ty("day"), DataType::Date32);
    assert!(matches!(ty("address"), DataType::Struct(f) if f.len() == 1));
    assert!(matches!(ty("attrs"), DataType::Map(_, false)));
    assert_eq!(ty("extra"), DataType::Utf8);
    // Declared order is kept.
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        ["id", "name", "price", "active", "tags", "at", "day", "address", "attrs", "extra"]
    );
}

#[test]
fn values_decode_exactly() {
    let (_, rows, m) = run(&[
        r#"{"id": 7, "name": "caf\u00e9 \"x\"", "price": 2.5e1, "active": true, "tags": ["a", "b"],
            "at": "2024-05-01T12:30:00.250+02:00", "day": "2024-05-01",
            "address": {"city": "Oslo", "zip": 1}, "attrs": {"k": 1, "j": -2}, "extra": {"x": [1, 2]},
            "ignored": {"deep": [1, {"a": null}]}}"#,
        r#"{}"#,
        r#"{"id": -9223372036854775808, "address": {"city": null}, "extra": "text"}"#,
    ]);
    assert_eq!(
        rows[0],
        r#"{"id":7,"name":"café \"x\"","price":25.0,"active":true,"tags":["a","b"],"at":"2024-05-01T10:30:00.250Z","day":"2024-05-01","address":{"city":"Oslo"},"attrs":{"k":1,"j":-2},"extra":"{\"x\": [1, 2]}"}"#
    );
    assert_eq!(rows[1], "{}");
    assert_eq!(
        rows[2],
        r#"{"id":-9223372036854775808,"address":{},"extra":"text"}"#
    );
    assert_eq!(metric(&m, "malformedRecords"), 0);
    assert_eq!(metric(&m, "typeMismatchFields"), 0);
}

#[test]
fn wrong_types_null_only_the_field() {
    let (_, rows, m) = run(&[
        r#"{"id": "7", "name": 5, "price": "x", "active": 1, "tags": "a", "at": "yesterday", "address": [], "day": 3}"#,
        r#"{"id": 1.5, "name": "ok"}"#,
        r#"{"id": 99999999999999999999, "tags": ["a", 1, "c"]}"#,
    ]);
    assert_eq!(rows[0], "{}");
    assert_eq!(rows[1], r#"{"name":"ok"}"#);
    assert_eq!(rows[2], r#"{"tags":["a",null,"c"]}"#);
    assert_eq!(metric(&m, "typeMismatchFields"), 8 + 1 + 2);
    assert_eq!(metric(&m, "malformedRecords"), 0);
}

#[test]
fn duplicate_keys_last_wins() {
    let (_, rows, _) = run(&[r#"{"id": 1, "id": 2, "name": "a", "name": null}"#]);
    assert_eq!(rows[0], r#"{"id":2}"#);
}

#[test]
fn bad_json_is_null_and_counted() {
    let (_, rows, m) = run(&[
        r#"{"id": 1"#,
        r#"[1, 2]"#,
        r#"{"id": 1} trailing"#,
        r#"{"name": "\ud800"}"#,
        "{\"name\": \"\u{1}\"}",
        r#"{"id": 2}"#,
        "null",
    ]);
    assert_eq!(rows[..5], ["null", "null", "null", "null", "null"]);
    assert_eq!(rows[5], r#"{"id":2}"#);
    assert_eq!(rows[6], "null");
    assert_eq!(metric(&m, "malformed.badJson"), 5);
    assert_eq!(metric(&m, "malformedRecords"), 5);
}

#[test]
fn invalid_utf8_is_its_own_reason() {
    let (_, rows, m) = decode_values(
        &payload(SchemaFormat::JsonSchema, SCHEMA),
        DecodeMode::Permissive,
        vec![Some(b"{\"name\": \"\xff\xfe\"}".to_vec())],
    )
    .unwrap();
    assert_eq!(rows, ["null"]);
    assert_eq!(metric(&m, "malformed.invalidUtf8"), 1);
}

#[test]
fn deep_nesting_is_malformed_not_a_crash() {
    let deep = format!(
        "{{\"extra\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let (_, rows, m) = run(&[&deep]);
    assert_eq!(rows, ["null"]);
    assert_eq!(metric(&m, "malformed.badJson"), 1);
}

#[test]
fn failfast_names_partition_and_offset() {
    let err = decode_values(
        &payload(SchemaFormat::JsonSchema, SCHEMA),
        DecodeMode::FailFast,
        vec![Some(b"{}".to_vec()), Some(b"{\"id\": tru}".to_vec())],
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::MalformedRecord);
    assert_eq!(err.context_value("partition"), Some("3"));
    assert_eq!(err.context_value("offset"), Some("101"));
    assert_eq!(err.context_value("topic"), Some("orders"));
    assert!(
        err.message().contains("partition 3 offset 101"),
        "{}",
        err.message()
    );
    // A type mismatch fails too in FAILFAST.
    let err = decode_values(
        &payload(SchemaFormat::JsonSchema, SCHEMA),
        DecodeMode::FailFast,
        vec![Some(b"{\"id\": \"x\"}".to_vec())],
    )
    .unwrap_err();
    assert_eq!(
        err.context_value("reason"),
        Some("malformed.jsonTypeMismatch")
    );
}

fn refusal(schema: &str) -> String {
    let e = decode_values(
        &payload(SchemaFormat::JsonSchema, schema),
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
        refusal(r#"{"type": "array", "items": {"type": "string"}}"#),
        "JSON Schema field '<root>': the root of a JSON Schema must be an object with properties (found List(Field { \"element\": nullable Utf8 }))"
            .replace("List(Field { \"element\": nullable Utf8 })", &DataType::List(std::sync::Arc::new(arrow_schema::Field::new("element", DataType::Utf8, true))).to_string())
    );
    assert_eq!(
        refusal(r##"{"type":"object","properties":{"node":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}"##),
        "JSON Schema field 'node.next': recursive $ref '#/$defs/n' cannot be represented as Arrow columns"
    );
    assert_eq!(
        refusal(r#"{"type":"object","properties":{"a":{"type":"decimal"}}}"#),
        "JSON Schema field 'a': unknown type 'decimal'"
    );
    assert_eq!(
        refusal(r#"{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}"#),
        "JSON Schema field 'a': only local $ref (starting with '#') are supported, found 'other.json#/x'"
    );
    assert!(refusal("{not json").starts_with("json_schema is not valid JSON"));
}

#[test]
fn local_refs_and_nullable_unions_resolve() {
    let schema = r##"{"type":"object","definitions":{"money":{"type":"number"}},
        "properties":{"a":{"$ref":"#/definitions/money"},"b":{"anyOf":[{"type":"null"},{"type":"integer"}]}}}"##;
    let (dt, rows, _) = decode_values(
        &payload(SchemaFormat::JsonSchema, schema),
        DecodeMode::Permissive,
        vec![Some(br#"{"a": 1.5, "b": 3}"#.to_vec())],
    )
    .unwrap();
    let DataType::Struct(f) = dt else { panic!() };
    assert_eq!(f[0].data_type(), &DataType::Float64);
    assert_eq!(f[1].data_type(), &DataType::Int64);
    assert_eq!(rows[0], r#"{"a":1.5,"b":3}"#);
}

/// Found by fuzzing: a record failing inside a map (or list) left its open entries behind.
#[test]
fn failure_inside_an_open_map_or_list_rolls_back() {
    let (_, rows, m) = run(&[
        r#"{"attrs": {"a": 1, "b" , "c": 2}}"#,
        r#"{"tags": ["a", "b" "c"]}"#,
        r#"{"attrs": {"k": 5}, "tags": ["z"]}"#,
    ]);
    assert_eq!(rows, ["null", "null", r#"{"tags":["z"],"attrs":{"k":5}}"#]);
    assert_eq!(metric(&m, "malformed.badJson"), 2);
}
