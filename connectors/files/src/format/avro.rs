//! Avro object container files, read with `arrow-avro` (the Arrow project's reader): the schema
//! comes from each file's header, and columns are matched to the stream's schema by name as for
//! Parquet (a column the file lacks is null, a type that differs is cast, columns the schema
//! lacks are reported for `addNewColumns` / `failOnNewColumns` or dropped with `none`).
//! Null, deflate, snappy and zstd blocks are read. A file that is not an Avro container is
//! `SOURCE_READ_FAILED` naming it.
//!
//! `arrow-avro` reads containers through a pull reader (`BufRead`), so the push decoder runs it
//! on its own thread over the pushed chunks ([`super::pull`]): a large file is not held whole.

use std::cell::Cell;
use std::io::{BufRead, Cursor};
use std::rc::Rc;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_avro::reader::ReaderBuilder;
use arrow_schema::{Field, Schema};
use bytes::Bytes;
use tributary_sdk::{Error, ErrorCode, Result};

use super::decoder::{FileDecoder, FileEnd};
use super::parquet::align;
use super::pull::Pulled;
use super::{DecodeContext, BATCH_SIZE};
use crate::config::SchemaEvolution;
use crate::error::unreadable;

/// The push decoder of one Avro container file: `arrow-avro`'s reader on its own thread, fed
/// the chunks as they arrive (memory bounded by a few chunks and the batches being built).
pub(crate) fn decoder(path: &str, ctx: &DecodeContext) -> Result<Box<dyn FileDecoder>> {
    let (path, ctx) = (path.to_string(), ctx.clone());
    let pulled = Pulled::start("avro", move |input, batches| {
        read(input, &path, &ctx, &mut |b| batches.send(b).is_ok())
    })?;
    Ok(Box::new(pulled))
}

/// Reads a container file from `input`, giving each aligned batch to `emit` (which returns
/// false to stop early).
fn read<R: BufRead>(
    input: R,
    path: &str,
    ctx: &DecodeContext,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<FileEnd> {
    let tail = Rc::new(Cell::new([0u8; SYNC_LEN]));
    let input = Tail {
        inner: input,
        tail: tail.clone(),
    };
    let reader = ReaderBuilder::new()
        .with_batch_size(BATCH_SIZE)
        .build(input)
        .map_err(|e| unreadable(path, e))?;
    let sync = reader.avro_header().sync();
    if matches!(
        ctx.evolution,
        SchemaEvolution::AddNewColumns | SchemaEvolution::FailOnNewColumns
    ) {
        let new_fields: Vec<Field> = plain(&reader.schema())
            .fields()
            .iter()
            .filter(|f| ctx.file_schema.field_with_name(f.name()).is_err())
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        if !new_fields.is_empty() {
            return Ok(FileEnd {
                new_fields,
                ..FileEnd::default()
            });
        }
    }
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(path, e))?;
        if !emit(align(&batch, &ctx.file_schema, path)?) {
            return Ok(FileEnd::default());
        }
    }
    // The reader ends quietly on a cut block; a whole container ends with its sync marker.
    if tail.get() != sync {
        return Err(unreadable(
            path,
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the Avro container is truncated (it does not end with its sync marker)",
            ),
        ));
    }
    Ok(FileEnd::default())
}

/// Length of a container's sync marker.
const SYNC_LEN: usize = 16;

/// A `BufRead` that remembers the last [`SYNC_LEN`] bytes read through it.
struct Tail<R> {
    inner: R,
    tail: Rc<Cell<[u8; SYNC_LEN]>>,
}

impl<R: BufRead> std::io::Read for Tail<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Tail<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if let Ok(buf) = self.inner.fill_buf() {
            let consumed = &buf[..amt.min(buf.len())];
            let mut last = self.tail.get();
            if consumed.len() >= SYNC_LEN {
                last.copy_from_slice(&consumed[consumed.len() - SYNC_LEN..]);
            } else {
                last.rotate_left(consumed.len());
                last[SYNC_LEN - consumed.len()..].copy_from_slice(consumed);
            }
            self.tail.set(last);
        }
        self.inner.consume(amt);
    }
}

/// The schema without the Avro metadata `arrow-avro` attaches (schema and field level), so
/// stored and merged schemas compare by names and types only.
fn plain(schema: &Schema) -> Schema {
    Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Arc::new(f.as_ref().clone().with_metadata(Default::default())))
            .collect::<Vec<_>>(),
    )
}

/// The schema of the sample files' headers, merged (columns keep their first file's order).
pub fn infer(samples: &[(String, Bytes)]) -> Result<Schema> {
    let mut merged: Option<Schema> = None;
    for (path, bytes) in samples {
        let reader = ReaderBuilder::new()
            .build(Cursor::new(bytes.clone()))
            .map_err(|e| unreadable(path, e))?;
        let schema = plain(&reader.schema());
        merged = Some(match merged {
            None => schema,
            Some(m) => Schema::try_merge([m, schema]).map_err(|e| {
                Error::new(
                    ErrorCode::Schema,
                    format!("the schema of {path} conflicts with the other sampled Avro files"),
                )
                .with_context("file", path)
                .with_cause(e)
            })?,
        });
    }
    merged.ok_or_else(|| {
        Error::new(
            ErrorCode::Schema,
            "cannot infer a schema: no Avro files yet; give the 'schema' option or add data first",
        )
        .with_context("option", crate::config::names::SCHEMA)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CsvOptions, Format, Mode};
    use arrow_array::{Array, ArrayRef, Int64Array, StringArray};

    fn container(rows: i64) -> Vec<u8> {
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..rows)) as ArrayRef,
            ),
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("n{i}")),
                )),
            ),
        ])
        .unwrap();
        let mut w =
            arrow_avro::writer::AvroWriter::new(Vec::new(), batch.schema().as_ref().clone())
                .unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        w.into_inner()
    }

    fn ctx() -> DecodeContext {
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", arrow_schema::DataType::Utf8, true),
            Field::new("id", arrow_schema::DataType::Int64, true),
        ]));
        DecodeContext::new(
            Format::Avro,
            schema,
            "_rescued_data",
            Mode::Permissive,
            CsvOptions::default(),
        )
        .with_schema_evolution(SchemaEvolution::None)
    }

    #[test]
    fn a_container_pushed_in_small_chunks_streams_its_batches_by_name() {
        let bytes = container(20_000);
        let mut d = decoder("f.avro", &ctx()).unwrap();
        let mut out = Vec::new();
        for chunk in bytes.chunks(1000) {
            d.push(chunk, &mut out).unwrap();
        }
        d.finish(&mut out).unwrap();
        assert!(out.len() >= 3);
        let mut next = 0;
        for b in &out {
            assert_eq!(b.schema().field(0).name(), "name");
            let id = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
            for i in 0..id.len() {
                assert_eq!(id.value(i), next);
                next += 1;
            }
        }
        assert_eq!(next, 20_000);

        // A truncated file is SOURCE_READ_FAILED naming it, never a panic.
        let mut d = decoder("/in/cut.avro", &ctx()).unwrap();
        d.push(&bytes[..bytes.len() / 2], &mut out).unwrap();
        let e = d.finish(&mut out).unwrap_err();
        assert_eq!(e.code(), ErrorCode::SourceRead);
        assert_eq!(e.context_value("file"), Some("/in/cut.avro"));
    }
}
