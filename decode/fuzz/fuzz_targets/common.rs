//! Shared by the fuzz targets: decode one record with a schema, in both modes.
use std::sync::Arc;

use arrow_array::{Array, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use tributary_decode::{DecodeMode, StreamDecoder};
use tributary_sdk::{ResolvedSchema, SchemaFormat, StreamSchemas, WireFormat};

pub fn decoders(format: SchemaFormat, text: &str, wire: WireFormat, id: Option<u32>) -> [StreamDecoder; 2] {
    let schemas = StreamSchemas {
        key: None,
        payload: Some(ResolvedSchema { format, text: text.into(), wire, registry_id: id }),
    };
    [
        StreamDecoder::new(&schemas, DecodeMode::Permissive, "value").unwrap(),
        StreamDecoder::new(&schemas, DecodeMode::FailFast, "value").unwrap(),
    ]
}

/// Decodes `data` as one record and as a 3-record batch around a null; the permissive result must
/// have one row per record, pass Arrow's full validation, and have a null exactly where
/// FAILFAST fails.
pub fn check(decoders: &mut [StreamDecoder; 2], data: &[u8]) {
    let schema = Arc::new(Schema::new(vec![Field::new("value", DataType::Binary, true)]));
    let values = BinaryArray::from(vec![Some(data), None, Some(data)]);
    let batch = RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap();
    let out = decoders[0].decode(&batch).unwrap();
    assert_eq!(out.num_rows(), 3);
    let col = out.column(0);
    // The decoders build some arrays without Arrow's checks (strings they validated
    // themselves); the full validation here is the oracle that they were right to.
    col.to_data().validate_full().unwrap();
    assert!(col.is_null(1));
    assert_eq!(col.is_null(0), col.is_null(2));
    if let Err(e) = decoders[1].decode(&batch) {
        // FAILFAST also fails on a JSON field of another type, which PERMISSIVE nulls alone.
        if e.context_value("reason") != Some("malformed.jsonTypeMismatch") {
            assert!(col.is_null(0), "FAILFAST failed on a record PERMISSIVE decoded: {e}");
        }
    }
}
