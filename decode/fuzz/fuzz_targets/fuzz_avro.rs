#![no_main]
//! Avro decoder (Confluent-framed, schema id 1): arbitrary bytes must never panic.
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use tributary_sdk::{SchemaFormat, WireFormat};

#[path = "common.rs"]
mod common;

const SCHEMA: &str = r#"{"type":"record","name":"R","fields":[
 {"name":"b","type":"boolean"},{"name":"i","type":"int"},{"name":"l","type":"long"},
 {"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"by","type":"bytes"},
 {"name":"s","type":"string"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
 {"name":"fx","type":{"type":"fixed","name":"F","size":3}},
 {"name":"a","type":{"type":"array","items":["null","int"]}},
 {"name":"m","type":{"type":"map","values":{"type":"record","name":"In","fields":[{"name":"x","type":"null"}]}}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":2}},
 {"name":"u","type":{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}},
 {"name":"un","type":["null","In",{"type":"record","name":"Two","fields":[{"name":"y","type":"string"}]}]}]}"#;

thread_local! {
    static D: RefCell<[tributary_decode::StreamDecoder; 2]> =
        RefCell::new(common::decoders(SchemaFormat::Avro, SCHEMA, WireFormat::Confluent, Some(1)));
}

fuzz_target!(|data: &[u8]| {
    D.with(|d| common::check(&mut d.borrow_mut(), data));
});
