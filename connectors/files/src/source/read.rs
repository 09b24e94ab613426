//! Reading one micro-batch range as a stream of parts ([`tributary_sdk::Source::read_stream`]):
//! file by file, chunk by chunk, each part a batch of at most [`BATCH_SIZE`] rows with the
//! `_metadata` column, so memory is bounded by a part and a fetched chunk, not by the range.
//!
//! [`FilesSource::read`](tributary_sdk::Source::read) collects this stream: both ways yield the
//! same rows in the same order. A file whose columns the schema lacks ends its stream with the
//! schema-evolution error once the file has been read; the parts already yielded belong to a
//! batch that fails and is replayed with the evolved schema, as when `read` fails.

use std::collections::VecDeque;

use arrow_array::RecordBatch;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::TryStreamExt;
use tributary_sdk::Result;

use super::{metadata_column, FilesSource};
use crate::format::{self, FileDecoder, BATCH_SIZE};
use crate::state::QueuedFile;

/// The file being read: its chunks and its decoder.
struct OpenFile {
    file: QueuedFile,
    chunks: BoxStream<'static, Result<Bytes>>,
    decoder: Box<dyn FileDecoder>,
}

/// The state of one range's stream.
pub(super) struct RangeReader<'a> {
    source: &'a mut FilesSource,
    files: std::vec::IntoIter<QueuedFile>,
    open: Option<OpenFile>,
    ready: VecDeque<RecordBatch>,
}

impl<'a> RangeReader<'a> {
    /// Reads `files` (the range's queued files, in sequence order) from `source`.
    pub(super) fn new(source: &'a mut FilesSource, files: Vec<QueuedFile>) -> RangeReader<'a> {
        RangeReader {
            source,
            files: files.into_iter(),
            open: None,
            ready: VecDeque::new(),
        }
    }

    /// The range as a stream of parts.
    pub(super) fn into_stream(self) -> BoxStream<'a, Result<RecordBatch>> {
        Box::pin(futures::stream::try_unfold(self, |mut reader| async move {
            Ok(reader.next_part().await?.map(|part| (part, reader)))
        }))
    }

    /// The next part; `None` at the end of the range.
    async fn next_part(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(part) = self.ready.pop_front() {
                return Ok(Some(part));
            }
            let Some(open) = self.open.as_mut() else {
                let Some(file) = self.files.next() else {
                    return Ok(None);
                };
                self.open = self.source.open_file(file).await?;
                continue;
            };
            match open.chunks.try_next().await? {
                Some(chunk) => {
                    let mut decoded = Vec::new();
                    open.decoder.push(&chunk, &mut decoded)?;
                    self.source
                        .with_metadata(&open.file, decoded, &mut self.ready)?;
                }
                None => {
                    if let Some(open) = self.open.take() {
                        let mut decoded = Vec::new();
                        let end = open.decoder.finish(&mut decoded)?;
                        self.source
                            .with_metadata(&open.file, decoded, &mut self.ready)?;
                        self.source.file_done(&open.file, end)?;
                    }
                }
            }
        }
    }
}

impl FilesSource {
    /// Opens a queued file for reading; `None` when it vanished and `ignoreMissingFiles`
    /// allows skipping it (counted as read).
    async fn open_file(&mut self, file: QueuedFile) -> Result<Option<OpenFile>> {
        let location = self.discovery.location(&file.path)?;
        let Some(body) = crate::fetch::open(self.discovery.store(), &location, &file.path).await?
        else {
            self.vanished(&file)?;
            self.files_read += 1;
            return Ok(None);
        };
        let info = format::FileInfo {
            path: &file.path,
            size: file.size,
            modification_time_ms: file.modification_time_ms,
        };
        let decoder = format::decoder(self.config.format, info, &self.decode)?;
        Ok(Some(OpenFile {
            file,
            chunks: body.into_stream(),
            decoder,
        }))
    }

    /// Decoded batches of `file` become parts: the `_metadata` column added, empty ones
    /// dropped, larger ones sliced to [`BATCH_SIZE`] rows (zero-copy).
    fn with_metadata(
        &self,
        file: &QueuedFile,
        batches: Vec<RecordBatch>,
        out: &mut VecDeque<RecordBatch>,
    ) -> Result<()> {
        for batch in batches {
            let mut at = 0;
            while at < batch.num_rows() {
                let rows = (batch.num_rows() - at).min(BATCH_SIZE);
                let slice = batch.slice(at, rows);
                let mut columns = slice.columns().to_vec();
                if !self.partitions.is_empty() {
                    let relative = self.discovery.relative_path(&file.path).unwrap_or_default();
                    columns.extend(crate::hive::columns(&relative, &self.partitions, rows)?);
                }
                columns.push(metadata_column(file, rows));
                out.push_back(RecordBatch::try_new(self.schema.clone(), columns)?);
                at += rows;
            }
        }
        Ok(())
    }

    /// The end of `file`: its malformed-record count, or the schema-evolution error when it
    /// has columns the schema lacks.
    fn file_done(
        &mut self,
        file: &QueuedFile,
        mut decoded: format::decoder::FileEnd,
    ) -> Result<()> {
        // A JSON field named like a partition column is not new: the path's value wins (the
        // row is read as usual).
        if !self.partitions.is_empty() {
            let partitions = &self.partitions;
            decoded
                .new_columns
                .retain(|k, _| !partitions.iter().any(|f| f.name().eq_ignore_ascii_case(k)));
        }
        if decoded.has_new_columns() {
            let mut added = std::mem::take(&mut decoded.new_fields);
            let mut names: Vec<String> = added.iter().map(|f| f.name().clone()).collect();
            if !decoded.new_columns.is_empty() {
                names.extend(format::unknown_fields::paths(&decoded.new_columns));
                added.extend(crate::evolution::json_fields(
                    &self.config,
                    &file.path,
                    std::mem::take(&mut decoded.new_columns),
                )?);
            }
            names.sort();
            let fields: Vec<_> = self
                .decode
                .file_schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            return Err(crate::evolution::on_new_columns(
                &self.config,
                &fields,
                self.schema_store.as_ref(),
                &file.path,
                added,
                names,
                &self.partitions,
            )?);
        }
        self.malformed += decoded.malformed;
        self.files_read += 1;
        Ok(())
    }
}
