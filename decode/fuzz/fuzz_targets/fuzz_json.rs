#![no_main]
//! JSON decoder: arbitrary bytes must never panic; permissive and FAILFAST agree.
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use tributary_sdk::{SchemaFormat, WireFormat};

#[path = "common.rs"]
mod common;

const SCHEMA: &str = r#"{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},
 "p":{"type":"number"},"ok":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}},
 "at":{"type":"string","format":"date-time"},"d":{"type":"string","format":"date"},
 "o":{"type":"object","properties":{"x":{"type":["null","integer"]}}},
 "m":{"type":"object","additionalProperties":{"type":"number"}},"raw":{}}}"#;

thread_local! {
    static D: RefCell<[tributary_decode::StreamDecoder; 2]> =
        RefCell::new(common::decoders(SchemaFormat::JsonSchema, SCHEMA, WireFormat::Plain, None));
}

fuzz_target!(|data: &[u8]| {
    D.with(|d| common::check(&mut d.borrow_mut(), data));
});
