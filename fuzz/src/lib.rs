//! What the fuzz targets share: decoders over fixed, feature-rich schemas, and the invariants
//! every decode must keep whatever the bytes (checked here, so a broken one is a crash the
//! fuzzer reports):
//!
//! - `PERMISSIVE` never fails a batch: a record that does not decode is a null row and a count;
//! - the decoded column is valid Arrow data (offsets, UTF-8, child lengths);
//! - the output has exactly the input's rows, and the payload column stays where it was;
//! - every non-null record is counted once, as decoded or as malformed (then its row is null);
//! - `FAILFAST` may refuse the batch, with an error, never a panic; it refuses exactly the
//!   batches `PERMISSIVE` nulled something in (a malformed record, a JSON value of another
//!   type), and decodes the others to the same rows.

use std::sync::Arc;

use arrow_array::{Array, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use tributary_decode::{DecodeMode, StreamDecoder};
use tributary_sdk::{ResolvedSchema, SchemaFormat, StreamSchemas, WireFormat};

/// A JSON Schema with every mapped type: nested objects, arrays of objects, maps, timestamps,
/// dates, nullable unions, an open (raw) value and a local `$ref`.
pub const JSON_SCHEMA: &str = r##"{
  "type": "object",
  "definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}},
  "properties": {
    "id": {"type": "integer"},
    "name": {"type": ["null", "string"]},
    "amount": {"type": "number"},
    "ok": {"type": "boolean"},
    "at": {"type": "string", "format": "date-time"},
    "day": {"type": "string", "format": "date"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
    "points": {"type": "array", "items": {"$ref": "#/definitions/point"}},
    "nested": {"type": "object", "properties": {
      "deep": {"type": "object", "properties": {"list": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}}},
      "any": {}
    }}
  }
}"##;

/// An Avro record with every mapped type: unions (nullable and general), enums, fixed,
/// decimals (bytes and fixed), logical times, arrays of records and maps.
pub const AVRO_SCHEMA: &str = r#"{
  "type": "record", "name": "Order", "namespace": "fuzz",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "n", "type": "int"},
    {"name": "name", "type": ["null", "string"]},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "b", "type": "boolean"},
    {"name": "raw", "type": "bytes"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "big", "type": {"type": "fixed", "name": "Sixteen", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 4}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "either", "type": ["null", "long", "string", {"type": "record", "name": "Inner", "fields": [{"name": "v", "type": "int"}]}]},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
      {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
      {"name": "tags", "type": {"type": "array", "items": "string"}}]}}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "double"]}}
  ]
}"#;

/// A proto3 message with every mapped kind: nested and repeated messages, maps, enums, oneofs,
/// the unsigned and zig-zag integers, wrappers and a timestamp.
pub const PROTO_SCHEMA: &str = r#"
syntax = "proto3";
package fuzz;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Order {
  enum Kind { UNKNOWN = 0; A = 1; B = 2; }
  message Item { string sku = 1; int32 qty = 2; repeated string tags = 3; }
  int64 id = 1;
  int32 n = 2;
  sint64 s = 3;
  uint32 u32 = 4;
  uint64 u64 = 5;
  sfixed32 sf = 6;
  float f = 7;
  double d = 8;
  bool b = 9;
  string name = 10;
  bytes raw = 11;
  Kind kind = 12;
  repeated Item items = 13;
  map<string, int64> attrs = 14;
  google.protobuf.Timestamp at = 15;
  google.protobuf.Int32Value maybe = 16;
  oneof choice { string text = 17; int64 number = 18; Item item = 19; }
  repeated sint32 packed = 20;
}
"#;

fn schemas(format: SchemaFormat, text: &str, wire: WireFormat) -> StreamSchemas {
    StreamSchemas {
        key: None,
        payload: Some(ResolvedSchema {
            format,
            text: text.into(),
            registry_id: matches!(wire, WireFormat::Confluent).then_some(7),
            wire,
        }),
    }
}

/// The payload format a target fuzzes (each over its schema here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// [`JSON_SCHEMA`].
    Json,
    /// [`AVRO_SCHEMA`].
    Avro,
    /// [`PROTO_SCHEMA`], message `fuzz.Order`.
    Protobuf,
}

/// The decoders of one format, PERMISSIVE and FAILFAST, built once per process.
pub struct Decoders {
    permissive: StreamDecoder,
    failfast: StreamDecoder,
}

impl Decoders {
    /// Decoders for `format` over its schema here, plain or Confluent-framed.
    pub fn new(format: Format, wire: WireFormat) -> Decoders {
        let (schema_format, text) = match format {
            Format::Json => (SchemaFormat::JsonSchema, JSON_SCHEMA),
            Format::Avro => (SchemaFormat::Avro, AVRO_SCHEMA),
            Format::Protobuf => (
                SchemaFormat::Protobuf {
                    message: "fuzz.Order".into(),
                },
                PROTO_SCHEMA,
            ),
        };
        let s = schemas(schema_format, text, wire);
        let build = |mode| {
            let d = if format == Format::Protobuf {
                StreamDecoder::with_protobuf(&s, mode, "value", proto_options())
            } else {
                StreamDecoder::new(&s, mode, "value")
            };
            d.and_then(|d| d.with_key_column(None))
                .unwrap_or_else(|e| panic!("the fuzz schema must compile: {e}"))
        };
        Decoders {
            permissive: build(DecodeMode::Permissive),
            failfast: build(DecodeMode::FailFast),
        }
    }

    /// Decodes `records` (a null for `None`) as one batch in both modes, checking the
    /// invariants above.
    pub fn check(&mut self, records: &[Option<&[u8]>]) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("offset", DataType::Int64, false),
            Field::new("value", DataType::Binary, true),
        ]));
        let offsets = arrow_array::Int64Array::from_iter_values(0..records.len() as i64);
        let values: BinaryArray = records.iter().copied().collect();
        let batch = RecordBatch::try_new(schema, vec![Arc::new(offsets), Arc::new(values)])
            .expect("a batch of binary records");
        let before = Counts::of(&self.permissive);
        let out = match self.permissive.decode(&batch) {
            Ok(out) => out,
            Err(e) => panic!("PERMISSIVE decoding failed a batch: {e}"),
        };
        let after = Counts::of(&self.permissive);
        assert_eq!(out.num_rows(), batch.num_rows(), "rows lost or added");
        assert_eq!(out.schema().field(1).name(), "value");
        assert!(matches!(out.column(1).data_type(), DataType::Struct(_)));
        assert_eq!(out.column(0), batch.column(0), "the other columns are passed through");
        // The builders skip some checks (strings already validated are trusted as UTF-8): the
        // column must be valid Arrow data all the same.
        if let Err(e) = out.column(1).to_data().validate_full() {
            panic!("PERMISSIVE decoded an invalid column: {e}");
        }
        // Every non-null record is counted once, decoded or malformed; a malformed one is null.
        let null_records = records.iter().filter(|r| r.is_none()).count() as u64;
        let decoded = after.decoded - before.decoded;
        let malformed = after.malformed - before.malformed;
        let mismatches = after.mismatches - before.mismatches;
        assert_eq!(
            decoded + malformed,
            records.len() as u64 - null_records,
            "records not counted once (decoded {decoded}, malformed {malformed})"
        );
        assert!(
            out.column(1).null_count() as u64 >= null_records + malformed,
            "a null or malformed record is not a null row"
        );
        // FAILFAST differs only in refusing what PERMISSIVE nulls (a malformed record, a JSON
        // value of another type): it accepts exactly the clean batches, with the same rows.
        match self.failfast.decode(&batch) {
            Ok(strict) => {
                assert_eq!(malformed + mismatches, 0, "FAILFAST accepted a batch PERMISSIVE nulled parts of");
                assert_eq!(strict, out, "FAILFAST and PERMISSIVE decoded a clean batch differently");
            }
            Err(e) => assert!(
                malformed + mismatches > 0,
                "FAILFAST refused a batch PERMISSIVE decoded cleanly: {e}"
            ),
        }
    }
}

/// The counters the invariants compare, before and after a batch.
struct Counts {
    decoded: u64,
    malformed: u64,
    mismatches: u64,
}

impl Counts {
    fn of(d: &StreamDecoder) -> Counts {
        let m = d.metrics();
        let n = |k: &str| m.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        Counts {
            decoded: n("decodedValues"),
            malformed: n("malformedRecords"),
            mismatches: n("typeMismatchFields"),
        }
    }
}

fn proto_options() -> tributary_decode::options::ProtobufOptions {
    tributary_decode::options::ProtobufOptions::default()
}

/// Splits fuzz bytes into records: `sep` separates them, a record that is exactly `[0xFE]` is a
/// null record (so batches mix nulls, empty and arbitrary records).
pub fn records(data: &[u8], sep: u8) -> Vec<Option<&[u8]>> {
    data.split(|b| *b == sep)
        .map(|r| if r == [0xFE] { None } else { Some(r) })
        .collect()
}
