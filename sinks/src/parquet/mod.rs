//! The Parquet directory sink: exactly-once, one file per micro-batch.
//!
//! Batch `n` is written to `part-<n, 20 digits>.parquet`: first to a hidden temp file in the same
//! directory, fsynced, then renamed over the final name, then the directory is fsynced. A replay
//! of batch `n` (after a crash between the write and the checkpoint commit) renames a new file
//! over the old one: readers see the batch's rows once. Readers must ignore names starting with
//! `.` (temp files of an interrupted write, removed at the next start).
//!
//! The batch streams into its temp file part by part ([`PartWriter`]); a row group is flushed
//! every 64 MiB, so memory does not grow with the batch.
//!
//! On a distributed engine the sink is a [`tributary_sdk::PartitionStager`] (see [`stager`]):
//! executors stage one file per input partition under `_staging/`, and the driver publishes
//! batch `n` as `part-<n, 20 digits>-<partition, 5 digits>.parquet`, recording the commit under
//! `_commits/`. Readers must ignore names starting with `_` as well (Spark and pyarrow do).
//!
//! The directory names the checkpoint that writes it (`_owner.json`, see [`owner`]): a second
//! pipeline pointed at it, or a checkpoint that lost its log, is refused before writing.
//!
//! Options: `path` (required), `compression` (`snappy` default, as Spark's
//! `spark.sql.parquet.compression.codec`; `zstd`, `none`).

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use tributary_sdk::{
    ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, ParsedOptions, PartWriter,
    PartitionStager, Result, Sink, SinkConnector, SinkLedger,
};

mod owner;
pub mod stager;

pub use owner::OWNER_FILE;

/// Writes each batch as one Parquet file, atomically and idempotently.
#[derive(Debug)]
pub struct ParquetSink {
    dir: PathBuf,
    compression: Compression,
    schema: Option<SchemaRef>,
    /// The batch being written (between begin and commit).
    batch: Option<u64>,
    staged: Option<Staged>,
    /// The input partition being staged by [`PartitionStager`] (its file is created with the
    /// first non-empty part at the path given here, instead of the batch's temp file).
    partition: Option<stager::PartitionAttempt>,
    /// The checkpoint writing the directory (its owner, see [`owner`]); `None` without one.
    checkpoint_id: Option<String>,
    /// The owner record was checked (and written if absent) by this sink.
    claimed: bool,
}

impl ParquetSink {
    /// A sink writing into `dir` (created if missing) with snappy compression (Spark's default).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ParquetSink {
            dir: dir.into(),
            compression: Compression::SNAPPY,
            schema: None,
            batch: None,
            staged: None,
            partition: None,
            checkpoint_id: None,
            claimed: false,
        }
    }

    /// The file a batch is written to.
    pub fn batch_file(&self, batch_id: u64) -> PathBuf {
        self.dir.join(format!("part-{batch_id:020}.parquet"))
    }

    fn io_err(&self, what: &str, path: &Path, e: std::io::Error) -> Error {
        Error::new(
            ErrorCode::SinkWrite,
            format!("parquet sink cannot {what} {}", path.display()),
        )
        .with_context("path", path.display())
        .with_cause(e)
    }

    fn temp_file(&self, batch_id: u64) -> PathBuf {
        self.dir.join(format!(
            ".part-{batch_id:020}.parquet.{}.tmp",
            std::process::id()
        ))
    }

    /// Stages one part: the batch's temp file (or the partition's staged file) is created with
    /// its first non-empty part (an empty batch writes no file), and a row group is flushed once
    /// it holds [`ROW_GROUP_BYTES`] so memory stays bounded whatever the batch's size.
    fn append_part(&mut self, part: &RecordBatch) -> Result<()> {
        if part.num_rows() == 0 {
            return Ok(());
        }
        let Some(batch_id) = self.batch else {
            return Err(Error::new(
                ErrorCode::SinkWrite,
                "parquet sink got a part outside a batch (no begin_batch)",
            ));
        };
        if self.staged.is_none() {
            let (tmp, file) = match &self.partition {
                // A staged file's name is unique to its attempt: never truncate another's.
                Some(attempt) => {
                    let path = attempt.path.clone();
                    let file = OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&path)
                        .map_err(|e| self.io_err("create", &path, e))?;
                    (path, file)
                }
                None => {
                    let tmp = self.temp_file(batch_id);
                    let file = File::create(&tmp).map_err(|e| self.io_err("create", &tmp, e))?;
                    (tmp, file)
                }
            };
            let props = WriterProperties::builder()
                .set_compression(self.compression)
                .build();
            let schema = self.schema.clone().unwrap_or_else(|| part.schema());
            let writer = ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| {
                Error::new(ErrorCode::SinkWrite, "parquet sink cannot start a file").with_cause(e)
            })?;
            self.staged = Some(Staged {
                tmp,
                writer,
                rows: 0,
            });
        }
        let Some(staged) = self.staged.as_mut() else {
            return Ok(());
        };
        let encode = |e| {
            Error::new(ErrorCode::SinkWrite, "parquet sink cannot encode a batch")
                .with_context("batch", batch_id)
                .with_cause(e)
        };
        staged.writer.write(part).map_err(encode)?;
        staged.rows += part.num_rows() as u64;
        if staged.writer.in_progress_size() >= ROW_GROUP_BYTES {
            staged.writer.flush().map_err(encode)?;
        }
        Ok(())
    }

    /// Finishes the staged file: fsync, rename over the batch's final name, fsync the directory.
    /// Files a distributed commit of the same batch published are then removed (a batch
    /// replayed on the embedded engine after a distributed attempt, see [`stager`]).
    fn publish_batch(&mut self) -> Result<()> {
        let Some(batch_id) = self.batch.take() else {
            return Ok(());
        };
        self.claim()?;
        let Some(staged) = self.staged.take() else {
            self.drop_distributed_commit(batch_id)?;
            return Ok(());
        };
        let (tmp, _, _) = self.finish_file(staged)?;
        let dest = self.batch_file(batch_id);
        fs::rename(&tmp, &dest).map_err(|e| self.io_err("rename into", &dest, e))?;
        sync_dir(&self.dir).map_err(|e| self.io_err("fsync directory", &self.dir, e))?;
        self.drop_distributed_commit(batch_id)?;
        Ok(())
    }

    /// Closes a staged file (footer written, fsynced): its path, rows and bytes.
    fn finish_file(&self, staged: Staged) -> Result<(PathBuf, u64, u64)> {
        let Staged { tmp, writer, rows } = staged;
        let file = writer.into_inner().map_err(|e| {
            Error::new(ErrorCode::SinkWrite, "parquet sink cannot finish a file").with_cause(e)
        })?;
        file.sync_all().map_err(|e| self.io_err("fsync", &tmp, e))?;
        let bytes = file
            .metadata()
            .map_err(|e| self.io_err("stat", &tmp, e))?
            .len();
        Ok((tmp, rows, bytes))
    }

    /// Drops an unfinished attempt's temp (or staged) file.
    fn discard_staged(&mut self) {
        self.partition = None;
        if let Some(Staged { tmp, writer, .. }) = self.staged.take() {
            drop(writer);
            let _ = fs::remove_file(tmp);
        }
    }
}

/// The in-progress row group is flushed at this encoded size (64 MiB).
const ROW_GROUP_BYTES: usize = 64 << 20;

/// The temp file of the batch being written (or the staged file of a partition).
struct Staged {
    tmp: PathBuf,
    writer: ArrowWriter<File>,
    rows: u64,
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged").field("tmp", &self.tmp).finish()
    }
}

/// Flushes a directory entry change (a rename) to disk.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[async_trait]
impl Sink for ParquetSink {
    fn delivery(&self) -> Delivery {
        Delivery::ExactlyOnce
    }

    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        fs::create_dir_all(&self.dir).map_err(|e| self.io_err("create directory", &self.dir, e))?;
        // Temp files of an interrupted earlier run.
        let entries = fs::read_dir(&self.dir).map_err(|e| self.io_err("list", &self.dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if (name.starts_with(".part-") || name.starts_with("._owner.json."))
                && name.ends_with(".tmp")
            {
                let _ = fs::remove_file(entry.path());
            }
        }
        self.schema = Some(schema);
        Ok(())
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        self.discard_staged();
        self.batch = Some(batch_id);
        for b in batches {
            self.append_part(b)?;
        }
        self.publish_batch()
    }

    async fn stop(&mut self) -> Result<()> {
        self.discard_staged();
        Ok(())
    }

    async fn ledger(&mut self) -> Result<Option<SinkLedger>> {
        self.read_ledger()
    }

    fn as_part_writer(&mut self) -> Option<&mut dyn PartWriter> {
        Some(self)
    }

    fn as_stager(&mut self) -> Option<&mut dyn PartitionStager> {
        Some(self)
    }
}

/// Batch `n` streams into its temp file part by part; the rename at commit publishes it.
#[async_trait]
impl PartWriter for ParquetSink {
    async fn begin_batch(&mut self, batch_id: u64, _schema: SchemaRef) -> Result<()> {
        self.discard_staged();
        self.batch = Some(batch_id);
        Ok(())
    }

    async fn write_part(&mut self, part: &RecordBatch) -> Result<()> {
        self.append_part(part)
    }

    async fn commit_batch(&mut self) -> Result<()> {
        self.publish_batch()
    }
}

/// Counts the rows of every committed `part-*.parquet` file in a directory (for tests and checks).
pub fn read_dir_rows(dir: &Path) -> Result<usize> {
    let mut rows = 0;
    for batch in read_dir_batches(dir)? {
        rows += batch.num_rows();
    }
    Ok(rows)
}

/// Reads every committed `part-*.parquet` file in a directory, in batch order.
pub fn read_dir_batches(dir: &Path) -> Result<Vec<RecordBatch>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().starts_with("part-"))
                .unwrap_or(false)
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let file = File::open(&path)?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.build())
            .map_err(|e| {
                Error::new(
                    ErrorCode::SourceRead,
                    format!("cannot read {}", path.display()),
                )
                .with_cause(e)
            })?;
        for b in reader {
            out.push(b?);
        }
    }
    Ok(out)
}

/// Factory for the `parquet` sink.
#[derive(Debug, Default, Clone, Copy)]
pub struct ParquetSinkFactory;

/// The parsed options of a `parquet` sink.
#[derive(Debug, Clone)]
pub struct ParquetConfig {
    /// The directory.
    pub path: PathBuf,
    /// Page compression.
    pub compression: Compression,
}

impl SinkConnector for ParquetSinkFactory {
    type Config = ParquetConfig;

    fn name(&self) -> &str {
        "parquet"
    }

    fn options(&self) -> Vec<OptionSpec> {
        vec![
            OptionSpec::string("path", "Directory the Parquet files are written to.").required(),
            OptionSpec::one_of(
                "compression",
                &["snappy", "zstd", "none"],
                "Compression codec of the Parquet pages (snappy by default, as Spark's spark.sql.parquet.compression.codec).",
            )
            .default_value("snappy"),
        ]
    }

    fn parse(&self, p: &ParsedOptions) -> Result<ParquetConfig> {
        Ok(ParquetConfig {
            path: PathBuf::from(p.required_string("path")?),
            compression: match p.word("compression")?.as_deref() {
                Some("zstd") => Compression::ZSTD(ZstdLevel::default()),
                Some("none") => Compression::UNCOMPRESSED,
                _ => Compression::SNAPPY,
            },
        })
    }

    fn build(&self, config: ParquetConfig, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        let mut sink = ParquetSink::new(config.path);
        sink.compression = config.compression;
        sink.checkpoint_id = context.checkpoint_id.clone();
        Ok(Box::new(sink))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    use tributary_sdk::{Options, SinkFactoryExt};

    fn batch(v: Vec<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(v))]).unwrap()
    }

    #[tokio::test]
    async fn replayed_batch_replaces_and_stale_temp_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".part-00000000000000000009.parquet.1.tmp"),
            b"junk",
        )
        .unwrap();
        let mut s = ParquetSink::new(dir.path());
        s.open(batch(vec![]).schema()).await.unwrap();
        s.write(0, &[batch(vec![1, 2, 3])]).await.unwrap();
        s.write(1, &[batch(vec![4])]).await.unwrap();
        s.write(1, &[batch(vec![4])]).await.unwrap();
        s.write(2, &[batch(vec![])]).await.unwrap();
        assert_eq!(read_dir_rows(dir.path()).unwrap(), 4);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[tokio::test]
    async fn parts_make_one_file_and_an_unfinished_attempt_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = ParquetSink::new(dir.path());
        s.open(batch(vec![]).schema()).await.unwrap();
        let w = s.as_part_writer().unwrap();
        w.begin_batch(0, batch(vec![]).schema()).await.unwrap();
        w.write_part(&batch(vec![1, 2])).await.unwrap();
        // crash-like: a new attempt of the same batch starts before the first committed
        w.begin_batch(0, batch(vec![]).schema()).await.unwrap();
        for part in [vec![1, 2], vec![], vec![3]] {
            w.write_part(&batch(part)).await.unwrap();
        }
        w.commit_batch().await.unwrap();
        let got: Vec<i64> = read_dir_batches(dir.path())
            .unwrap()
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(got, vec![1, 2, 3]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn path_is_required() {
        let e = ParquetSinkFactory
            .create(&Options::new(), &ConnectorContext::default())
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
    }
}
