//! # tributary-files
//!
//! Incremental file ingestion for Tributary, in the manner of Databricks Auto Loader
//! (`cloudFiles`): a source that discovers new files under a path, remembers every file it has
//! queued in a file-state store inside the checkpoint, and decodes JSON lines (or, with
//! `multiLine=true`, one JSON document per file: an object or an array of rows), CSV or Parquet
//! into Arrow batches.
//!
//! ## Guarantees
//!
//! - **Exactly-once file tracking.** Each newly discovered file gets the next sequence number
//!   and is written to the state store (SQLite, `files.db` in the connector's state directory)
//!   in one transaction before any offset covers it. Offsets are `{"seq": N}`; the batch
//!   `[start, end)` is exactly the files queued under those numbers, read in that order, so a
//!   replayed batch reads the same files and yields the same rows. A path is ingested once
//!   (unless `cloudFiles.allowOverwrites=true` and its modification time changed).
//! - **Restarts** resume from the checkpoint's offsets and the stored file state: files already
//!   queued are never queued again, and an inferred schema is stored (`schema.json`, or with
//!   `cloudFiles.schemaLocation` as versions `_schemas/0`, `1`, ... that several streams may
//!   share) and reused, so a restart never changes the schema by itself.
//! - **Bounded file state** with `cloudFiles.maxFileAge` (at least 14 days, as in Auto Loader):
//!   files older than it are not ingested, and entries of committed files older than it are
//!   forgotten at each commit (metrics `numFileStateEntries`, `numFilesExpired`).
//! - **Schema evolution (JSON, Parquet)** as in Auto Loader (`cloudFiles.schemaEvolutionMode`):
//!   with an inferred schema a new top-level column stops the stream once with
//!   `UNKNOWN_FIELD_EXCEPTION` after being added to the stored schema, and the restart reads the
//!   interrupted batch again with it (`addNewColumns`, the default); `rescue` (JSON; the default
//!   with a given JSON schema) puts the values in `_rescued_data`, `failOnNewColumns` stops
//!   without evolving, `none` (Parquet's default with a given schema) drops them. JSON fields
//!   new inside a struct column count too (rescued with their nesting, or merged into the
//!   struct); fields inside list elements are not inspected.
//! - **Rate limits.** `cloudFiles.maxFilesPerTrigger` (hard, default 1000) and
//!   `cloudFiles.maxBytesPerTrigger` (soft: at least one file per batch). An `availableNow` run
//!   lists once and never reads past that listing; its first batches are read while the
//!   listing goes on (discovery overlaps processing, as in Auto Loader).
//! - **Permissive decoding.** In `PERMISSIVE` mode (the default) a malformed record becomes a
//!   row of nulls with its text in `_rescued_data`, counted in `numMalformedRecords`; values not
//!   in the schema are rescued too. `FAILFAST` stops with `MALFORMED_RECORD` naming file and line.
//! - **Clean-up** (`cloudFiles.cleanSource` = `DELETE` or `MOVE` to
//!   `cloudFiles.cleanSource.moveDestination`): a file is deleted or moved only after its batch
//!   committed and `cloudFiles.cleanSource.retentionDuration` (default 30 days) passed, and only
//!   if it is still the version that was ingested; `tributary state` shows when
//!   ([`FilesSourceFactory`]'s `describe_state`, columns in [`state_report::COLUMNS`]).
//! - **Nothing is skipped silently.** A file that cannot be read is `SOURCE_READ_FAILED` naming
//!   it. A file that vanished between discovery and reading is a `CLOUD_FILES_FILE_NOT_FOUND`
//!   data-loss error, or, with `ignoreMissingFiles=true`, a counted warning.
//!
//! - **Options that would be ignored are refused** (`CONFLICTING_OPTIONS` naming both): CSV
//!   options with another format, `multiLine` outside JSON, inference options with a given
//!   `schema`, `cloudFiles.cleanSource.*` without the mode that uses them, and so on.
//!
//! Output columns: the file's columns, `_rescued_data` (JSON and CSV; [`RESCUED_DATA_COLUMN`],
//! renamed by `rescuedDataColumn`), then the [`METADATA_COLUMN`] struct (`file_path`,
//! `file_name`, `file_size`, `file_modification_time`; [`file_metadata_field`]).
//!
//! The checkpoint identity (`files` and `<absolute path>?format=..&pathGlobFilter=..`) is
//! computed from the options alone ([`FilesConfig::target`]), before anything is opened.
//!
//! ## Where the files are
//!
//! `path` is a local path (or `file://` URL), or an object-store URL: `s3://bucket/prefix`
//! (`s3a://` too), `gs://bucket/prefix`, `abfss://container@account.dfs.core.windows.net/prefix`
//! or `az://container/prefix`. Reading goes through `object_store` either way
//! (`LocalFileSystem` for local paths), and so does listing a bucket, as one request stream
//! or, with `cloudFiles.fetchParallelism` above 1, fanned out across its prefixes in key order
//! (see `prefixes.rs`); a local directory is walked by the source itself, on several threads
//! and in path order (see `walk.rs`), so the file state, `tributary state`, `_metadata` and
//! the exactly-once guarantee are the same. Credentials come from each cloud's standard chain
//! (for S3 the AWS SDK's: environment, profiles, SSO, web identity, container, instance
//! metadata), or from options Databricks documents for Auto Loader, given as
//! `{{secrets/scope/key}}` references and never printed: `cloudFiles.awsAccessKey`/
//! `cloudFiles.awsSecretKey` (+ `cloudFiles.roleArn`, `roleExternalId`, `roleSessionName`,
//! `stsEndpoint`), `cloudFiles.connectionString` or `cloudFiles.clientId`/`clientSecret`/
//! `tenantId` (Azure), `cloudFiles.clientEmail`/`privateKey`/`privateKeyId` (GCS); plus
//! `cloudFiles.region` and `cloudFiles.endpoint` (S3-compatible stores, emulators). Missing or
//! rejected credentials are one `AUTHENTICATION_FAILED` error naming the bucket and what was
//! tried; a bucket or prefix that does not exist is an error, not an empty listing.
//! `cloudFiles.cleanSource` works on object stores too (server-side copy and delete; MOVE only
//! within the source's bucket or container).
//!
//! ## Discovery at scale
//!
//! `cloudFiles.useIncrementalListing` (auto | true | false) lists only the keys after the last
//! one seen, with a full listing after every 7 incremental ones; `cloudFiles.backfillInterval`
//! adds a full listing in the background. `cloudFiles.useNotifications=true` learns new files
//! from events instead (S3 event notifications through the SQS queue `cloudFiles.queueUrl`, or
//! without it a queue and bucket notification the source sets up, named from the checkpoint's
//! id, listed and removed with the `notifications` command ([`commands`]); local directories
//! through inotify), listing once on the first run; metric `approximateQueueSize`. Every
//! listing or event goes through the file state, which queues a path once. A listing reaches
//! the file state in chunks, each checked with one range scan of its path index, so memory
//! does not grow with the number of tracked files; `cloudFiles.maxFileAge` keeps the state
//! itself bounded.
//!
//! ## Options users copy from Spark and Auto Loader
//!
//! Spark's JSON and CSV reader options keep Spark's names and defaults
//! ([`config::reader`]): CSV `header`, `sep`/`delimiter`, `quote`, `escape` (`\`), `comment`,
//! `nullValue`; JSON `multiLine`, `allowComments`, `primitivesAsString`; both `mode`,
//! `timestampFormat`, `dateFormat` (Spark pattern letters), `encoding` (UTF-8 only).
//! Hive-style `key=value` directories become typed partition columns
//! (`cloudFiles.partitionColumns`). Spark's `maxFilesPerTrigger` / `maxBytesPerTrigger` are
//! aliases of the `cloudFiles.` limits. What cannot be honoured is refused naming why
//! (`columnNameOfCorruptRecord`, `cloudFiles.validateOptions=false`, other charsets).
//!
//! ## Scale-out (input partitions)
//!
//! On the driver, `plan_partitions(start, end, parallelism)` groups the batch's files (exactly
//! those `read` reads, in its order) as Spark packs file partitions: at most
//! `min(128 MiB, max(4 MiB, totalBytes / parallelism))` per group, counting 4 MiB of open cost
//! per file; a file is never split. Each partition carries its files' paths, sizes and
//! modification times and the stream's schema, so an executor's source, built from the same
//! options with no state directory, reads it (`read_partition`) without the checkpoint: no
//! listing, no notification queue, no clean-up. With no `schema` option the executor's source
//! still infers one when built (one listing and the sample files); the partition's schema (the
//! checkpoint's, possibly evolved) is the one it reads with.
//!
//! ## Example
//!
//! ```
//! use tributary_files::FilesSourceFactory;
//! use tributary_sdk::{ConnectorContext, Options, SourceFactoryExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> tributary_sdk::Result<()> {
//! let input = tempfile::tempdir()?;
//! std::fs::write(input.path().join("a.json"), "{\"id\": 1, \"name\": \"ann\"}\n{\"id\": 2}\n")?;
//! let path = input.path().display().to_string();
//! let options: Options = [
//!     ("path", path.as_str()),
//!     ("cloudFiles.format", "json"),
//!     ("cloudFiles.inferColumnTypes", "true"),
//! ]
//! .into_iter()
//! .collect();
//!
//! let mut source = FilesSourceFactory.create(&options, &ConnectorContext::default())?;
//! let start = source.initial_offset().await?;
//! let end = source.latest_offset(&start, &source.default_read_limit()).await?;
//! assert_eq!(end.as_json()["seq"], 1); // one file queued
//! let batches = source.read(&start, &end).await?;
//! assert_eq!(batches[0].num_rows(), 2);
//! assert_eq!(batches[0].schema().field(0).name(), "id");
//! source.commit(&end).await?;
//! // Nothing new: the next batch would start and end at the same offset.
//! assert_eq!(source.latest_offset(&end, &source.default_read_limit()).await?, end);
//! # Ok(())
//! # }
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

#[cfg(feature = "bench")]
#[doc(hidden)]
pub mod bench_support;
mod blocking;
mod chunks;
mod clean;
mod columns;
pub mod commands;
pub mod config;
mod connector;
pub mod ddl;
mod discovery;
mod error;
mod evolution;
mod fetch;
mod format;
mod globs;
mod hive;
mod listing;
mod notifications;
mod prefixes;
mod schema;
mod schema_store;
mod source;
mod state;
mod state_check;
pub mod state_report;
mod store;
mod walk;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use config::FilesConfig;
pub use connector::FilesSourceFactory;

/// The connector name (a leaf constant: the source and its partitions name it without
/// importing the connector that builds them).
pub const CONNECTOR: &str = "files";
pub use schema::{
    file_metadata_field, file_metadata_fields, rescued_data_field, METADATA_COLUMN,
    RESCUED_DATA_COLUMN,
};
