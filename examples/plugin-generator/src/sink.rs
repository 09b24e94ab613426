//! The JSON-lines sink: the typed connector ([`JsonLinesSinkFactory`]) and the [`JsonLinesSink`]
//! it builds, one file per micro-batch, replaced atomically when a batch is replayed.
//!
//! `write(batch_id, ..)` writes `<path>/.batch-<id>.jsonl.tmp`, syncs it and renames it to
//! `<path>/batch-<id>.jsonl`. A replayed batch id overwrites the earlier attempt, so with the
//! runtime's checkpoint the output is exactly-once.
//!
//! In real-time mode ([`StreamingSink`]) the records of long batch `id` are appended to
//! `<path>/batch-<id>.jsonl` as they come — the file is truncated by the first chunk of the batch
//! in this run, so a long batch restarted after a crash rewrites it from its start — and each
//! chunk is acknowledged once it reached the operating system; `end_batch` syncs the file. A long
//! batch replayed after a crash goes through `write`, which replaces the file as above.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use arrow_array::RecordBatch;
use arrow_json::LineDelimitedWriter;
use async_trait::async_trait;
use tributary_sdk::{
    Ack, ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, ParsedOptions, Result, Sink,
    SinkConnector, StreamingSink,
};

use crate::config::{jsonlines_options, JsonLinesConfig};

/// The `jsonlines` connector.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLinesSinkFactory;

impl SinkConnector for JsonLinesSinkFactory {
    type Config = JsonLinesConfig;

    fn name(&self) -> &str {
        "jsonlines"
    }

    fn options(&self) -> Vec<OptionSpec> {
        jsonlines_options()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<JsonLinesConfig> {
        JsonLinesConfig::parse(options)
    }

    fn build(&self, config: JsonLinesConfig, _context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        Ok(Box::new(JsonLinesSink {
            config,
            streaming: None,
        }))
    }
}

/// Writes each micro-batch to its own JSON-lines file.
#[derive(Debug)]
pub struct JsonLinesSink {
    config: JsonLinesConfig,
    /// The running long batch's id and open file (real-time mode).
    streaming: Option<(u64, BufWriter<File>)>,
}

impl JsonLinesSink {
    /// The file that holds batch `batch_id` in the output directory `dir`.
    pub fn batch_file_in(dir: &std::path::Path, batch_id: u64) -> PathBuf {
        dir.join(format!("batch-{batch_id}.jsonl"))
    }

    /// The file that holds batch `batch_id`.
    pub fn batch_file(&self, batch_id: u64) -> PathBuf {
        Self::batch_file_in(&self.config.path, batch_id)
    }

    fn io_error(&self, what: &str, path: &std::path::Path, e: std::io::Error) -> Error {
        Error::new(
            ErrorCode::SinkWrite,
            format!("jsonlines sink cannot {what} {}", path.display()),
        )
        .with_context("path", path.display())
        .with_cause(e)
    }
}

#[async_trait]
impl Sink for JsonLinesSink {
    fn delivery(&self) -> Delivery {
        Delivery::ExactlyOnce
    }

    async fn open(&mut self, _schema: arrow_schema::SchemaRef) -> Result<()> {
        fs::create_dir_all(&self.config.path)
            .map_err(|e| self.io_error("create directory", &self.config.path, e))
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        let target = self.batch_file(batch_id);
        let tmp = self
            .config
            .path
            .join(format!(".batch-{batch_id}.jsonl.tmp"));
        let file = File::create(&tmp).map_err(|e| self.io_error("create", &tmp, e))?;
        let mut writer = LineDelimitedWriter::new(BufWriter::new(file));
        for b in batches {
            writer.write(b).map_err(|e| {
                Error::new(ErrorCode::SinkWrite, "jsonlines sink cannot encode a batch")
                    .with_context("batch", batch_id)
                    .with_cause(e)
            })?;
        }
        writer.finish().map_err(|e| {
            Error::new(ErrorCode::SinkWrite, "jsonlines sink cannot finish a batch").with_cause(e)
        })?;
        let file = writer
            .into_inner()
            .into_inner()
            .map_err(|e| self.io_error("flush", &tmp, e.into_error()))?;
        file.sync_all()
            .map_err(|e| self.io_error("sync", &tmp, e))?;
        fs::rename(&tmp, &target).map_err(|e| self.io_error("rename into", &target, e))?;
        if let Ok(dir) = File::open(&self.config.path) {
            // Make the rename durable; a failure here only weakens crash durability.
            let _ = dir.sync_all();
        }
        Ok(())
    }

    async fn stop(&mut self) -> Result<()> {
        if let Some((id, _)) = self.streaming {
            self.end_batch(id).await?;
        }
        Ok(())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSink> {
        Some(self)
    }
}

#[async_trait]
impl StreamingSink for JsonLinesSink {
    async fn write_records(&mut self, batch_id: u64, batch: &RecordBatch) -> Result<Ack> {
        if self
            .streaming
            .as_ref()
            .is_some_and(|(id, _)| *id != batch_id)
        {
            if let Some((id, _)) = self.streaming {
                self.end_batch(id).await?;
            }
        }
        if self.streaming.is_none() {
            let path = self.batch_file(batch_id);
            let file = File::create(&path).map_err(|e| self.io_error("create", &path, e))?;
            self.streaming = Some((batch_id, BufWriter::new(file)));
        }
        let path = self.batch_file(batch_id);
        let encoded = match self.streaming.as_mut() {
            Some((_, out)) => {
                let mut writer = LineDelimitedWriter::new(&mut *out);
                writer
                    .write(batch)
                    .and_then(|()| writer.finish())
                    .map_err(|e| {
                        Error::new(ErrorCode::SinkWrite, "jsonlines sink cannot encode a batch")
                            .with_context("batch", batch_id)
                            .with_cause(e)
                    })
                    .and_then(|()| {
                        out.flush().map_err(|e| {
                            Error::new(
                                ErrorCode::SinkWrite,
                                format!("jsonlines sink cannot write {}", path.display()),
                            )
                            .with_context("path", path.display())
                            .with_cause(e)
                        })
                    })
            }
            None => Ok(()),
        };
        encoded?;
        // The records reached the operating system: acknowledged.
        Ok(Box::pin(async { Ok(()) }))
    }

    async fn end_batch(&mut self, batch_id: u64) -> Result<()> {
        let Some((id, out)) = self.streaming.take() else {
            return Ok(());
        };
        let path = self.batch_file(id);
        let file = out
            .into_inner()
            .map_err(|e| self.io_error("flush", &path, e.into_error()))?;
        file.sync_all()
            .map_err(|e| self.io_error("sync", &path, e))?;
        if id != batch_id {
            return Err(Error::new(
                ErrorCode::SinkWrite,
                format!("jsonlines sink asked to end batch {batch_id} while batch {id} runs"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tributary_sdk::{Options, SinkFactoryExt};

    #[tokio::test]
    async fn rewriting_a_batch_id_replaces_it() {
        let dir = std::env::temp_dir().join(format!("tributary-jsonl-{}", std::process::id()));
        let o: Options = [("path", dir.to_str().unwrap())].into_iter().collect();
        let mut sink = JsonLinesSinkFactory
            .create(&o, &ConnectorContext::default())
            .unwrap();
        let schema = crate::rows::row_schema();
        sink.open(schema.clone()).await.unwrap();
        let b = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(arrow_array::Int64Array::from(vec![1, 2])),
                Arc::new(arrow_array::StringArray::from(vec!["a", "b"])),
                Arc::new(arrow_array::Int32Array::from(vec![0, 0])),
            ],
        )
        .unwrap();
        sink.write(3, std::slice::from_ref(&b)).await.unwrap();
        sink.write(3, std::slice::from_ref(&b)).await.unwrap();
        let text = fs::read_to_string(dir.join("batch-3.jsonl")).unwrap();
        assert_eq!(
            text,
            "{\"id\":1,\"value\":\"a\",\"partition\":0}\n{\"id\":2,\"value\":\"b\",\"partition\":0}\n"
        );
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
