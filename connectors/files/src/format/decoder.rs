//! The push interface every format implements: a file's bytes go in as they are fetched, in
//! chunks of any size, and batches come out as they fill.
//!
//! Record formats (JSON lines, CSV, text lines) hold at most one window of [`super::BATCH_SIZE`]
//! records of undecoded bytes plus the chunk being pushed, so memory is bounded by the batch
//! size, not the file size; so do Avro container files (their pull reader runs on a thread fed
//! the chunks, `super::pull`). Formats whose unit is the whole file (`multiLine` JSON,
//! `wholeText`, `binaryFile`) or that need random access (Parquet's footer) buffer the file in
//! [`Buffered`] and decode it at [`FileDecoder::finish`].

use arrow_array::RecordBatch;
use arrow_schema::Field;
use tributary_sdk::Result;

use super::Decoded;

/// What the decoder knows of the file besides its bytes.
#[derive(Debug, Clone, Copy)]
pub struct FileInfo<'a> {
    /// The file's path (or URL), named in errors and in binaryFile's `path` column.
    pub path: &'a str,
    /// Size in bytes, as listed.
    pub size: u64,
    /// Modification time, ms since the epoch, as listed.
    pub modification_time_ms: i64,
}

/// What a file told the decoder besides its rows, known once it has been read to the end.
#[derive(Debug, Default)]
pub struct FileEnd {
    /// Records that did not fit (nulls + rescued text).
    pub malformed: u64,
    /// JSON: top-level (or nested) fields that are not columns, with a sample value each, when
    /// the schema evolution mode is addNewColumns or failOnNewColumns.
    pub new_columns: serde_json::Map<String, serde_json::Value>,
    /// Parquet / Avro: columns the stream's schema lacks, with their types (same modes). When
    /// set, the batches of this file must be discarded: it is read again after evolution.
    pub new_fields: Vec<Field>,
}

impl FileEnd {
    /// True when the file has columns the schema lacks (its batches must be discarded).
    pub fn has_new_columns(&self) -> bool {
        !self.new_columns.is_empty() || !self.new_fields.is_empty()
    }
}

/// One file being decoded.
pub trait FileDecoder: Send {
    /// Feeds the next chunk of the file; batches that filled are appended to `out`, each with
    /// the context's `decoded_schema`.
    fn push(&mut self, chunk: &[u8], out: &mut Vec<RecordBatch>) -> Result<()>;

    /// The end of the file: the last rows go to `out`.
    fn finish(self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd>;
}

/// A decoder that needs the whole file: buffers the chunks and decodes them at the end.
pub(crate) struct Buffered<F>
where
    F: FnOnce(bytes::Bytes) -> Result<Decoded> + Send,
{
    bytes: Vec<u8>,
    decode: F,
}

impl<F> Buffered<F>
where
    F: FnOnce(bytes::Bytes) -> Result<Decoded> + Send,
{
    /// Buffers a file of about `size` bytes and decodes it with `decode`.
    pub(crate) fn new(size: u64, decode: F) -> Buffered<F> {
        Buffered {
            // The listed size is a hint; a file that grew just reallocates.
            bytes: Vec::with_capacity(usize::try_from(size).unwrap_or(0).min(1 << 30)),
            decode,
        }
    }
}

impl<F> FileDecoder for Buffered<F>
where
    F: FnOnce(bytes::Bytes) -> Result<Decoded> + Send,
{
    fn push(&mut self, chunk: &[u8], _out: &mut Vec<RecordBatch>) -> Result<()> {
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    fn finish(self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        let this = *self;
        let decoded = (this.decode)(bytes::Bytes::from(this.bytes))?;
        out.extend(decoded.batches);
        Ok(FileEnd {
            malformed: decoded.malformed,
            new_columns: decoded.new_columns,
            new_fields: decoded.new_fields,
        })
    }
}
