//! Whole files as bytes, as Spark's `binaryFile` format: one row per file with `path` (string),
//! `modificationTime` (timestamp, UTC), `length` (long) and `content` (binary). Which files are
//! read is chosen by `pathGlobFilter` like for every format. The file is held in memory: it is
//! the row.

use std::sync::Arc;

use arrow_array::TimestampMillisecondArray;
use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use super::decoder::{Buffered, FileDecoder, FileInfo};
use super::{DecodeContext, Decoded};

/// The columns of a binaryFile stream.
pub fn schema() -> Schema {
    Schema::new(vec![
        Field::new("path", DataType::Utf8, true),
        Field::new(
            "modificationTime",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("length", DataType::Int64, true),
        Field::new("content", DataType::Binary, true),
    ])
}

/// The push decoder of one file: buffers it, then one row.
pub(crate) fn decoder(file: FileInfo<'_>, ctx: &DecodeContext) -> Box<dyn FileDecoder> {
    let (path, mtime, ctx) = (
        file.path.to_string(),
        file.modification_time_ms,
        ctx.clone(),
    );
    Box::new(Buffered::new(file.size, move |bytes| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![path.as_str()])),
            Arc::new(TimestampMillisecondArray::from(vec![mtime]).with_timezone("UTC")),
            Arc::new(Int64Array::from(vec![bytes.len() as i64])),
            Arc::new(BinaryArray::from(vec![bytes.as_ref()])),
        ];
        Ok(Decoded {
            batches: vec![RecordBatch::try_new(ctx.decoded_schema.clone(), columns)?],
            ..Decoded::default()
        })
    }))
}
