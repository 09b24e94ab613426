//! [`FilesSource`]: drives discovery, the file-state store and the format decoders through the
//! SDK's micro-batch contract.
//!
//! Offsets are `{"seq": N}`: the next file sequence number to read. A batch `[start, end)` is
//! exactly the files queued under those sequence numbers, so replaying it reads the same files
//! in the same order.
//!
//! For scale-out the source splits a range into groups of files ([`partitions`]) that a source
//! built elsewhere from the same options, with no state directory, reads.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, StringArray, StructArray, TimestampMillisecondArray};
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use tributary_sdk::{
    BatchStream, ConnectorContext, DataLossEvent, DataLossKind, DataLossTracker, Error, ErrorCode,
    InputPartition, Offset, ReadLimit, Result, Source, SourceIdentity, SourceMetrics,
};

use crate::config::FilesConfig;
use crate::discovery::{now_ms, Discovery};
use crate::format::DecodeContext;
use crate::schema::{file_metadata_fields, output_schema, resolve_schema};
use crate::state::{FileStateStore, QueuedFile};
use crate::CONNECTOR;

mod partitions;
mod read;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct SeqOffset {
    seq: u64,
}

/// The sequence number an offset of the files source denotes (the first file it does not
/// cover).
pub(crate) fn seq_range(offset: &Offset) -> Result<u64> {
    offset.to_typed::<SeqOffset>().map(|o| o.seq)
}

/// File-state metadata key: notification mode listed the input once (its first run).
const NOTIFICATIONS_LISTED: &str = "notifications.listed";

fn offset(seq: u64) -> Result<Offset> {
    Offset::from_typed(&SeqOffset { seq })
}

/// An incremental file source (see the crate documentation).
#[derive(Debug)]
pub(crate) struct FilesSource {
    config: FilesConfig,
    identity: SourceIdentity,
    discovery: Discovery,
    lister: crate::listing::Lister,
    /// Notification mode's event source, opened at the first discovery.
    notifier: Option<crate::notifications::Notifier>,
    /// The checkpoint's id (names the queue notification mode sets up).
    checkpoint_id: Option<String>,
    state: FileStateStore,
    state_dir: Option<PathBuf>,
    /// Where the inferred schema is kept (and evolves).
    schema_store: Option<crate::schema_store::SchemaStore>,
    decode: DecodeContext,
    /// Hive-style partition columns, read from each file's path.
    partitions: Vec<arrow_schema::Field>,
    schema: SchemaRef,
    /// An available-now run (its end is fixed once its listing is over).
    available_now: bool,
    available_now_end: Option<u64>,
    outstanding: (u64, u64),
    data_loss: DataLossTracker,
    malformed: u64,
    /// Files read by this instance (for progress: read + outstanding = the run's total).
    files_read: u64,
    /// `cloudFiles.cleanSource` totals of this instance.
    cleaned: crate::clean::Cleaned,
    /// File-state entries expired by `cloudFiles.maxFileAge` in this instance.
    expired: u64,
}

impl FilesSource {
    /// Resolves the path, opens the file-state store (refusing one written for another
    /// target) and resolves the schema (inferring and storing it on first use).
    pub(crate) fn open(config: FilesConfig, context: &ConnectorContext) -> Result<FilesSource> {
        let identity = SourceIdentity {
            connector: CONNECTOR.into(),
            target: config.target(),
        };
        let state_dir = context.state_dir.clone();
        let state = FileStateStore::open(state_dir.as_deref())?;
        let stored_identity = state.meta("identity")?;
        let discovery =
            Discovery::new(&config, context.secrets.as_ref(), stored_identity.is_some())?;
        match stored_identity {
            Some(stored) if stored != identity.target => {
                return Err(Error::new(
                    ErrorCode::CheckpointIncompatible,
                    format!(
                        "the file state in this checkpoint was written for '{stored}', the options now say '{}'",
                        identity.target
                    ),
                )
                .with_context("expected", stored)
                .with_context("actual", &identity.target));
            }
            Some(_) => {}
            None => state.set_meta("identity", &identity.target)?,
        }
        let schema_store = crate::schema_store::SchemaStore::new(
            config.schema_location.as_ref(),
            state_dir.as_deref(),
            &config.cloud,
            context.secrets.as_ref(),
        )?;
        if let Some(store) = &schema_store {
            if config.schema_ddl.is_none() {
                store.adopt_checkpoint(state_dir.as_deref())?;
            }
        }
        let resolved = resolve_schema(&config, &discovery, schema_store.as_ref())?;
        let decode = decode_context(&config, resolved.file);
        let schema = output_schema(&decode.decoded_schema, &resolved.partitions);
        if config.max_file_age.is_some() {
            state.enable_expiry()?;
        }
        Ok(FilesSource {
            identity,
            data_loss: DataLossTracker::new(!config.ignore_missing_files),
            lister: crate::listing::Lister::new(
                config.incremental_listing,
                config.path.as_cloud().is_some(),
                config.allow_overwrites,
                config.backfill_interval,
            ),
            notifier: None,
            checkpoint_id: context.checkpoint_id.clone(),
            config,
            discovery,
            state,
            state_dir,
            schema_store,
            decode,
            partitions: resolved.partitions,
            schema,
            available_now: false,
            available_now_end: None,
            outstanding: (0, 0),
            malformed: 0,
            files_read: 0,
            cleaned: Default::default(),
            expired: 0,
        })
    }

    /// Lists the input and queues the new files (durably) before any offset covers them.
    async fn discover(&mut self) -> Result<usize> {
        let Some(kind) = self.config.notifications.clone() else {
            let n = self.lister.list(&self.discovery, &mut self.state).await?;
            if n > 0 {
                tracing::debug!(new_files = n, path = %self.discovery.root_text(), "files discovered");
            }
            return Ok(n);
        };
        // Notification mode: watch first, then list (first run; every start for inotify), so
        // nothing lands unseen in between.
        let mut n = 0;
        if self.notifier.is_none() {
            let notifier = crate::notifications::Notifier::open(
                &kind,
                &self.config.queue,
                &self.discovery,
                self.checkpoint_id.as_deref(),
            )
            .await?;
            let first_run = self.state.meta(NOTIFICATIONS_LISTED)?.is_none();
            if first_run || notifier.lists_at_every_start() {
                n += self.lister.full(&self.discovery, &mut self.state).await?;
            }
            self.notifier = Some(notifier);
        }
        let polled = match self.notifier.as_mut() {
            Some(n) => n.poll(&self.discovery).await?,
            None => Default::default(),
        };
        n += self
            .lister
            .backfill(&self.discovery, &mut self.state)
            .await?;
        let listed = polled.files;
        let n = n + self.record(listed)?;
        self.state.set_meta(NOTIFICATIONS_LISTED, "true")?;
        if let Some(notifier) = self.notifier.as_mut() {
            // Recorded durably: the queue may forget these events now.
            notifier.ack(polled.receipts).await?;
        }
        Ok(n)
    }

    /// Reads `file_schema` from now on (an input partition planned with another schema).
    fn use_file_schema(&mut self, file_schema: SchemaRef) {
        self.decode = decode_context(&self.config, file_schema);
        self.schema = output_schema(&self.decode.decoded_schema, &self.partitions);
    }

    /// The queued files of `[start, end)`, in sequence order: what `read` reads.
    fn range_files(&self, start: &Offset, end: &Offset) -> Result<Vec<QueuedFile>> {
        let (start, end) = (seq_range(start)?, seq_range(end)?);
        if end < start {
            return Err(DataLossEvent::new(
                DataLossKind::EndBeforeStart,
                self.discovery.target(),
                "the batch's end offset is before its start",
            )
            .with_positions(start, end)
            .into_error());
        }
        self.state
            .files_in(start, end)
            .map_err(|e| match &self.state_dir {
                Some(dir) => e.with_context("path", dir.display()),
                None => e,
            })
    }

    /// Queues the new files of a listing (or of events) durably.
    fn record(&mut self, listed: Vec<crate::state::ListedFile>) -> Result<usize> {
        let n = self
            .state
            .record_listing(listed, self.config.allow_overwrites, now_ms())?;
        if n > 0 {
            tracing::debug!(new_files = n, path = %self.discovery.root_text(), "files discovered");
        }
        Ok(n)
    }
}

impl FilesSource {
    /// A queued file is gone: `CLOUD_FILES_FILE_NOT_FOUND`, or with `ignoreMissingFiles=true` a
    /// warning and a count (`dataLoss.CLOUD_FILES_FILE_NOT_FOUND`).
    fn vanished(&mut self, file: &QueuedFile) -> Result<()> {
        let event = DataLossEvent::new(
            DataLossKind::FileVanished,
            &file.path,
            format!(
                "file (seq {}) was discovered but no longer exists when its batch is read",
                file.seq
            ),
        );
        if !self.data_loss.fails() {
            return self.data_loss.report(event);
        }
        // The SDK's generic text names failOnDataLoss; for files the switch is ignoreMissingFiles.
        Err(Error::new(
            ErrorCode::DataLoss(DataLossKind::FileVanished),
            format!(
                "file {} (seq {}) was discovered but no longer exists when its batch is read. \
                 Set ignoreMissingFiles=true to skip missing files and continue.",
                file.path, file.seq
            ),
        )
        .with_context("location", &file.path)
        .with_context("file", &file.path))
    }
}

/// The decoding of `file_schema` with the config's format options.
pub(crate) fn decode_context(config: &FilesConfig, file_schema: SchemaRef) -> DecodeContext {
    DecodeContext::new(
        config.format,
        file_schema,
        &config.rescued_column,
        config.mode,
        config.csv,
    )
    .with_multi_line(config.multi_line)
    .with_schema_evolution(config.schema_evolution)
    .with_options(config.format_options.clone())
    .with_formats(config.formats.clone())
    .with_allow_comments(config.allow_comments)
}

fn metadata_column(file: &QueuedFile, rows: usize) -> ArrayRef {
    let name = file.path.rsplit('/').next().unwrap_or(&file.path);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            &file.path, rows,
        ))),
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            name, rows,
        ))),
        Arc::new(Int64Array::from_value(file.size as i64, rows)),
        Arc::new(
            TimestampMillisecondArray::from_value(file.modification_time_ms, rows)
                .with_timezone("UTC"),
        ),
    ];
    Arc::new(StructArray::new(file_metadata_fields(), columns, None))
}

/// The bodies of `latest_offset` and `commit`; their file-state errors are located there.
impl FilesSource {
    /// `latest_offset`'s work: discovery, then the next range.
    async fn plan_files(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        let start = seq_range(start)?;
        if self.available_now && self.available_now_end.is_none() {
            // The run's listing goes on: wait only when nothing past `start` is queued yet.
            loop {
                let wait = self.state.next_seq() <= start;
                self.lister
                    .advance(&self.discovery, &mut self.state, wait)
                    .await?;
                if !self.lister.is_running() {
                    self.available_now_end = Some(self.state.next_seq());
                    break;
                }
                if self.state.next_seq() > start {
                    break;
                }
            }
        } else if self.available_now_end.is_none() {
            self.discover().await?;
        }
        let end = self.state.plan(
            start,
            self.available_now_end,
            limit.max_files(),
            limit.max_bytes(),
        )?;
        self.outstanding = self.state.outstanding(end)?;
        offset(end)
    }

    /// `commit`'s work: the file state, expiry, clean-up.
    async fn commit_files(&mut self, end: &Offset) -> Result<()> {
        let end = seq_range(end)?;
        let now = now_ms();
        self.state.commit(end, now)?;
        if let Some(age) = self.discovery.max_file_age_ms() {
            // Entries whose file is older than maxFileAge: the listing ignores such files, so
            // forgetting them never re-ingests one (a file still to be cleaned is kept).
            let expired = self.state.expire(
                now - age,
                self.config.clean_source != crate::config::CleanSource::Off,
            )?;
            self.expired += expired as u64;
        }
        let pass = crate::clean::clean(
            &mut self.state,
            &self.config.clean_source,
            self.config.clean_retention,
            &self.discovery,
            now,
        )
        .await?;
        self.cleaned.done += pass.done;
        self.cleaned.skipped += pass.skipped;
        self.cleaned.failed += pass.failed;
        Ok(())
    }
}

#[async_trait]
impl Source for FilesSource {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn identity(&self) -> SourceIdentity {
        self.identity.clone()
    }

    fn default_read_limit(&self) -> ReadLimit {
        self.config.read_limit()
    }

    async fn initial_offset(&mut self) -> Result<Offset> {
        if self.config.include_existing_files {
            return offset(0);
        }
        // The files present now are recorded (so they are never queued later) and skipped.
        self.discover().await?;
        offset(self.state.next_seq())
    }

    /// A local directory's listing starts here and goes on while [`Source::latest_offset`]
    /// hands out what it has queued so far, so the first batch is read during discovery, as
    /// Auto Loader overlaps them. The run's snapshot is exact all the same: files modified
    /// after this call are left out ([`crate::discovery::snapshot_time`]), and its end is fixed
    /// when the listing ends. An object store (whose modification times come from the
    /// server's clock) and notification mode list at once, as before.
    async fn prepare_available_now(&mut self) -> Result<()> {
        if self.config.notifications.is_some() || self.discovery.local_root().is_none() {
            self.discover().await?;
            self.available_now_end = Some(self.state.next_seq());
            return Ok(());
        }
        self.available_now = true;
        let snapshot = crate::discovery::snapshot_time();
        self.lister.start(&self.discovery, Some(snapshot));
        Ok(())
    }

    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        let planned = self.plan_files(start, limit).await;
        planned.map_err(|e| self.state.locate(e))
    }

    async fn read_stream<'a>(
        &'a mut self,
        start: &Offset,
        end: &Offset,
    ) -> Result<BatchStream<'a>> {
        let files = self.range_files(start, end)?;
        Ok(read::RangeReader::new(self, files).into_stream())
    }

    /// The range's files (exactly those `read` reads, in its order) in groups packed as Spark
    /// packs file partitions (see [`partitions`]).
    async fn plan_partitions(
        &mut self,
        start: &Offset,
        end: &Offset,
        parallelism: usize,
    ) -> Result<Option<Vec<InputPartition>>> {
        let files = self.range_files(start, end)?;
        partitions::plan(
            &self.identity.target,
            &self.decode.file_schema,
            &self.partitions,
            files,
            parallelism,
        )
        .map(Some)
    }

    /// One group of files, read as `read_stream` reads a range (parts of at most 8192 rows,
    /// `_metadata` included), without the file-state store. Errors name the partition
    /// (context `partition`).
    async fn read_partition<'a>(
        &'a mut self,
        partition: &InputPartition,
    ) -> Result<BatchStream<'a>> {
        let files = self.partition_files(partition)?;
        let label = format!("{} ({})", partition.index, partition.label);
        Ok(Box::pin(
            read::RangeReader::new(self, files)
                .into_stream()
                .map_err(move |e| e.with_context("partition", &label)),
        ))
    }

    async fn commit(&mut self, end: &Offset) -> Result<()> {
        let committed = self.commit_files(end).await;
        committed.map_err(|e| self.state.locate(e))
    }

    fn metrics(&self) -> SourceMetrics {
        let mut m = SourceMetrics::new();
        m.insert("numFilesOutstanding".into(), self.outstanding.0.into());
        m.insert("numBytesOutstanding".into(), self.outstanding.1.into());
        m.insert("numMalformedRecords".into(), self.malformed.into());
        m.insert("numFilesRead".into(), self.files_read.into());
        if self.config.clean_source != crate::config::CleanSource::Off {
            m.insert("numFilesCleaned".into(), self.cleaned.done.into());
            m.insert("numFilesCleanSkipped".into(), self.cleaned.skipped.into());
            m.insert("numFilesCleanFailed".into(), self.cleaned.failed.into());
        }
        m.insert("numFilesTracked".into(), (self.state.next_seq()).into());
        if self.config.max_file_age.is_some() {
            m.insert("numFileStateEntries".into(), self.state.len().into());
            m.insert("numFilesExpired".into(), self.expired.into());
        }
        let listings = self.lister.counts;
        m.insert("numFullListings".into(), listings.full.into());
        m.insert("numIncrementalListings".into(), listings.incremental.into());
        if let Some(n) = &self.notifier {
            m.insert(
                "approximateQueueSize".into(),
                n.approximate_queue_size().into(),
            );
        }
        if self.config.backfill_interval.is_some() {
            m.insert("numBackfillListings".into(), listings.backfill.into());
        }
        self.data_loss.write_metrics(&mut m);
        m
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}
