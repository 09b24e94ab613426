#![no_main]
//! Protobuf decoder (Confluent-framed with message indexes, schema id 1): arbitrary bytes must
//! never panic.
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use tributary_sdk::{SchemaFormat, WireFormat};

#[path = "common.rs"]
mod common;

const SCHEMA: &str = r#"syntax = "proto3"; package f;
import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
message Other { string z = 1; }
message M {
  int32 a = 1; int64 b = 2; uint32 c = 3; uint64 d = 4; sint32 e = 5; sint64 f = 6; sfixed32 g = 7;
  sfixed64 h = 8; bool i = 9; float j = 10; double k = 11; string l = 12; bytes m = 13;
  enum C { X = 0; Y = 1; } C n = 14; Inner o = 15; repeated int64 p = 16; repeated Inner q = 17;
  map<string, Inner> r = 18; google.protobuf.Int64Value s = 19; google.protobuf.Timestamp t = 20;
  message Inner { string x = 1; repeated double y = 2; }
}"#;

thread_local! {
    static D: RefCell<[tributary_decode::StreamDecoder; 2]> = RefCell::new(common::decoders(
        SchemaFormat::Protobuf { message: "f.M".into() },
        SCHEMA,
        WireFormat::Confluent,
        Some(1),
    ));
}

fuzz_target!(|data: &[u8]| {
    D.with(|d| common::check(&mut d.borrow_mut(), data));
});
