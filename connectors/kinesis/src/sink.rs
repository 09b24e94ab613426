//! The Kinesis sink: rows to PutRecords calls, at-least-once.
//!
//! Each row becomes one record: its data from `dataColumn` (binary or utf8, default `data`), its
//! partition key from `partitionKeyColumn` (utf8, default `partitionKey`) or the fixed
//! `partitionKey` option. Rows are sent in calls of at most 500 records and 5 MiB (data plus
//! partition keys, Kinesis' limits); a record over 1 MiB, a null data value or a missing key is
//! an error naming its row before anything of the batch is sent. A call whose response marks
//! some entries failed (throttled, internal failure) is followed by a call with **only those
//! entries**, after an exponential backoff (100 ms doubling, at most 5 s), up to `maxRetries`
//! times; throttling, timeouts and dropped connections of a whole call are retried the same way.
//! Entries still failing after the last attempt fail the batch with the first row and the
//! service's error code. A replayed batch (after a crash) is written again: the sink is
//! [`Delivery::AtLeastOnce`]. In real-time mode rows are written as they come
//! ([`StreamingSink`]).

use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use async_trait::async_trait;
use aws_sdk_kinesis::config::retry::RetryConfig;
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::PutRecordsRequestEntry;
use aws_sdk_kinesis::Client;
use tributary_sdk::typed::SinkConnector;
use tributary_sdk::{
    Ack, ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, ParsedOptions, Result,
    SecretStore, Sink, StreamingSink,
};

use crate::client::LazyClient;
use crate::config::{sink_option_specs, PartitionKeySource, SinkConfig, StreamKeying};
use crate::error::{ApiError, ApiFailure};

/// Most records in one PutRecords call.
pub const MAX_RECORDS_PER_CALL: usize = 500;
/// Most bytes (data plus partition keys) in one PutRecords call.
pub const MAX_BYTES_PER_CALL: usize = 5 << 20;
/// Most bytes (data plus partition key) of one record.
pub const MAX_RECORD_BYTES: usize = 1 << 20;
/// First backoff before retrying failed entries.
const BASE_BACKOFF: Duration = Duration::from_millis(100);
/// Longest backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Builds Kinesis sinks (connector name `kinesis`).
#[derive(Debug, Default, Clone, Copy)]
pub struct KinesisSinkFactory;

impl SinkConnector for KinesisSinkFactory {
    type Config = SinkConfig;

    fn name(&self) -> &str {
        "kinesis"
    }

    /// Every mode: `update` writes one record per changed group (its partition key from the
    /// columns the query selects), `complete` every group every batch.
    fn output_modes(&self) -> &'static [tributary_sdk::OutputMode] {
        &tributary_sdk::OutputMode::ALL
    }

    fn options(&self) -> Vec<OptionSpec> {
        sink_option_specs()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<SinkConfig> {
        SinkConfig::parse(options)
    }

    fn build(&self, config: SinkConfig, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        Ok(Box::new(KinesisSink::new(
            config,
            Arc::clone(&context.secrets),
        )))
    }
}

/// The Kinesis sink.
pub struct KinesisSink {
    config: SinkConfig,
    secrets: Arc<dyn SecretStore>,
    client: LazyClient,
    base_backoff: Duration,
    /// Records written since the sink was built (for tests and metrics).
    written: u64,
    /// Entries sent again after a partial failure, since the sink was built.
    retried: u64,
}

impl std::fmt::Debug for KinesisSink {
    /// The stream and counters only: the client's configuration holds credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KinesisSink")
            .field("stream", &self.config.stream)
            .field("partition_key", &self.config.partition_key)
            .field("data_column", &self.config.data_column)
            .field("written", &self.written)
            .field("retried", &self.retried)
            .finish_non_exhaustive()
    }
}

/// One record ready to send: the row it came from, its key and data.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Row number within the write (over all batches).
    pub row: usize,
    /// Partition key.
    pub key: String,
    /// Data.
    pub data: Vec<u8>,
}

impl Entry {
    fn size(&self) -> usize {
        self.key.len() + self.data.len()
    }
}

/// The outcome of one PutRecords call: per entry, `None` when written, else the error code and
/// message.
pub(crate) type CallResult = std::result::Result<Vec<Option<(String, String)>>, ApiError>;

impl KinesisSink {
    /// A sink for a parsed config (nothing is contacted until the first write).
    pub fn new(config: SinkConfig, secrets: Arc<dyn SecretStore>) -> Self {
        KinesisSink {
            config,
            secrets,
            client: LazyClient::default(),
            base_backoff: BASE_BACKOFF,
            written: 0,
            retried: 0,
        }
    }

    /// Shortens the first backoff (tests only).
    #[doc(hidden)]
    pub fn set_base_backoff(&mut self, backoff: Duration) {
        self.base_backoff = backoff;
    }

    /// Records written since the sink was built.
    pub fn records_written(&self) -> u64 {
        self.written
    }

    /// Entries sent again after a partial failure.
    pub fn entries_retried(&self) -> u64 {
        self.retried
    }

    fn check_schema(&self, schema: &SchemaRef) -> Result<()> {
        let data = &self.config.data_column;
        match schema.field_with_name(data).map(|f| f.data_type().clone()) {
            Ok(DataType::Binary | DataType::LargeBinary | DataType::Utf8 | DataType::LargeUtf8) => {}
            Ok(other) => {
                return Err(Error::new(
                    ErrorCode::Schema,
                    format!("column '{data}' (dataColumn) must be binary or string to be written to Kinesis, not {other}"),
                )
                .with_context("field", data.as_str())
                .with_context("option", "dataColumn"))
            }
            Err(_) => {
                return Err(Error::new(
                    ErrorCode::Schema,
                    format!("the Kinesis sink needs the column '{data}' named by 'dataColumn' (binary or string)"),
                )
                .with_context("field", data.as_str())
                .with_context("option", "dataColumn"))
            }
        }
        if let PartitionKeySource::Column(key) = &self.config.partition_key {
            match schema.field_with_name(key).map(|f| f.data_type().clone()) {
                Ok(DataType::Utf8 | DataType::LargeUtf8) => {}
                Ok(other) => {
                    return Err(Error::new(
                        ErrorCode::Schema,
                        format!("column '{key}' (partitionKeyColumn) must be a string, not {other}"),
                    )
                    .with_context("field", key.as_str())
                    .with_context("option", "partitionKeyColumn"))
                }
                Err(_) => {
                    return Err(Error::new(
                        ErrorCode::Schema,
                        format!(
                            "the Kinesis sink needs the column '{key}' named by 'partitionKeyColumn', or a fixed 'partitionKey' option"
                        ),
                    )
                    .with_context("field", key.as_str())
                    .with_context("option", "partitionKeyColumn"))
                }
            }
        }
        Ok(())
    }

    /// Every row of `batches` as an entry; the first invalid row is an error naming it.
    pub(crate) fn entries(&self, batch_id: u64, batches: &[RecordBatch]) -> Result<Vec<Entry>> {
        let mut out = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
        let mut base = 0usize;
        for batch in batches {
            self.check_schema(&batch.schema())?;
            let data_col = batch
                .column_by_name(&self.config.data_column)
                .ok_or_else(|| Error::new(ErrorCode::Schema, "data column missing"))?;
            let key_col = match &self.config.partition_key {
                PartitionKeySource::Column(k) => {
                    Some(batch.column_by_name(k).ok_or_else(|| {
                        Error::new(ErrorCode::Schema, "partition key column missing")
                    })?)
                }
                PartitionKeySource::Fixed(_) => None,
            };
            for i in 0..batch.num_rows() {
                let row = base + i;
                let row_error = |what: String| {
                    Error::new(
                        ErrorCode::SinkWrite,
                        format!("batch {batch_id}: row {row} {what}"),
                    )
                    .with_context("batch", batch_id)
                    .with_context("row", row)
                    .with_context("stream", self.config.stream.as_str())
                };
                let Some(data) = bytes_at(data_col, i) else {
                    return Err(row_error(format!(
                        "has a null '{}' (dataColumn): Kinesis records need data",
                        self.config.data_column
                    )));
                };
                let key = match (&self.config.partition_key, key_col) {
                    (PartitionKeySource::Fixed(k), _) => k.clone(),
                    (PartitionKeySource::Column(name), Some(col)) => match text_at(col, i) {
                        Some(k) if !k.is_empty() && k.chars().count() <= 256 => k.to_string(),
                        Some(k) => {
                            return Err(row_error(format!(
                                "has a partition key of {} characters in '{name}' (partitionKeyColumn): Kinesis allows 1 to 256",
                                k.chars().count()
                            )))
                        }
                        None => {
                            return Err(row_error(format!(
                                "has a null partition key in '{name}' (partitionKeyColumn)"
                            )))
                        }
                    },
                    (PartitionKeySource::Column(_), None) => {
                        return Err(Error::new(ErrorCode::Internal, "partition key column missing"))
                    }
                };
                let entry = Entry {
                    row,
                    key,
                    data: data.to_vec(),
                };
                if entry.size() > MAX_RECORD_BYTES {
                    return Err(row_error(format!(
                        "is {} bytes (data plus partition key), over Kinesis' limit of 1 MiB ({MAX_RECORD_BYTES} bytes) per record",
                        entry.size()
                    ))
                    .with_context("bytes", entry.size()));
                }
                out.push(entry);
            }
            base += batch.num_rows();
        }
        Ok(out)
    }

    async fn client(&mut self) -> Result<Arc<Client>> {
        self.client
            .get(&self.config.connection, self.secrets.as_ref())
            .await
    }

    async fn put_all(&mut self, batch_id: u64, entries: Vec<Entry>) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let client = self.client().await?;
        let stream = self.config.stream.clone();
        let keying = self.config.keying;
        let policy = RetryPolicy {
            max_retries: self.config.max_retries,
            base: self.base_backoff,
        };
        for call in split_calls(entries) {
            let n = call.len() as u64;
            let send = |batch: Vec<Entry>| {
                let client = Arc::clone(&client);
                let stream = stream.clone();
                async move { put_records(&client, keying, &stream, &batch).await }
            };
            let retried = put_with_retries(call, &policy, send)
                .await
                .map_err(|e| e.into_error(batch_id, &stream))?;
            self.retried += retried;
            self.written += n;
        }
        Ok(())
    }
}

fn bytes_at(col: &ArrayRef, i: usize) -> Option<&[u8]> {
    if !col.is_valid(i) {
        return None;
    }
    match col.data_type() {
        DataType::Binary => Some(col.as_binary::<i32>().value(i)),
        DataType::LargeBinary => Some(col.as_binary::<i64>().value(i)),
        DataType::Utf8 => Some(col.as_string::<i32>().value(i).as_bytes()),
        DataType::LargeUtf8 => Some(col.as_string::<i64>().value(i).as_bytes()),
        _ => None,
    }
}

fn text_at(col: &ArrayRef, i: usize) -> Option<&str> {
    if !col.is_valid(i) {
        return None;
    }
    match col.data_type() {
        DataType::Utf8 => Some(col.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Some(col.as_string::<i64>().value(i)),
        _ => None,
    }
}

/// Splits entries into calls of at most 500 records and 5 MiB, in order.
pub(crate) fn split_calls(entries: Vec<Entry>) -> Vec<Vec<Entry>> {
    let mut calls: Vec<Vec<Entry>> = Vec::new();
    let mut bytes = 0usize;
    for e in entries {
        let size = e.size();
        match calls.last_mut() {
            Some(c) if c.len() < MAX_RECORDS_PER_CALL && bytes + size <= MAX_BYTES_PER_CALL => {
                bytes += size;
                c.push(e);
            }
            _ => {
                bytes = size;
                calls.push(vec![e]);
            }
        }
    }
    calls
}

/// How failed entries are retried.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// maxRetries.
    pub max_retries: u32,
    /// The first backoff (doubles each attempt, at most 5 s).
    pub base: Duration,
}

impl RetryPolicy {
    fn backoff(&self, attempt: u32) -> Duration {
        self.base
            .saturating_mul(1u32 << attempt.min(16))
            .min(MAX_BACKOFF)
    }
}

/// Why entries could not be written.
#[derive(Debug)]
pub(crate) enum PutFailure {
    /// The whole call failed with an error that is not retried (or retries ran out).
    Call(ApiError),
    /// Entries still failed after the last retry: (row, code, message) of the first, and how many.
    Entries {
        row: usize,
        code: String,
        message: String,
        failed: usize,
        attempts: u32,
    },
}

impl PutFailure {
    fn into_error(self, batch_id: u64, stream: &str) -> Error {
        match self {
            PutFailure::Call(e) => e.into_error("PutRecords", stream, false).with_context("batch", batch_id),
            PutFailure::Entries { row, code, message, failed, attempts } => Error::new(
                ErrorCode::SinkWrite,
                format!(
                    "batch {batch_id}: {failed} record(s) could not be written to Kinesis stream '{stream}' after {attempts} attempt(s) (maxRetries); first: row {row}: {code}: {message}"
                ),
            )
            .with_context("batch", batch_id)
            .with_context("row", row)
            .with_context("stream", stream)
            .with_context("option", "maxRetries"),
        }
    }
}

fn retryable(e: &ApiError) -> bool {
    match e.failure {
        ApiFailure::Throttled | ApiFailure::Timeout | ApiFailure::Connection => true,
        ApiFailure::Other => matches!(
            e.code.as_deref(),
            Some("InternalFailure" | "ServiceUnavailable" | "InternalServerError")
        ),
        _ => false,
    }
}

/// Sends `entries` with `send`, then re-sends only the entries the response marked failed,
/// after a backoff, up to `maxRetries` times. Returns how many entries were sent again.
pub(crate) async fn put_with_retries<F, Fut>(
    entries: Vec<Entry>,
    policy: &RetryPolicy,
    mut send: F,
) -> std::result::Result<u64, PutFailure>
where
    F: FnMut(Vec<Entry>) -> Fut,
    Fut: std::future::Future<Output = CallResult>,
{
    let mut pending = entries;
    let mut retried = 0u64;
    let mut attempt = 0u32;
    loop {
        let result = send(pending.clone()).await;
        let failed: Vec<(Entry, String, String)> = match result {
            Ok(codes) => pending
                .drain(..)
                .zip(codes.into_iter().chain(std::iter::repeat(Some((
                    "MissingResult".to_string(),
                    "no result entry for this record".to_string(),
                )))))
                .filter_map(|(e, code)| code.map(|(c, m)| (e, c, m)))
                .collect(),
            Err(e) if retryable(&e) && attempt < policy.max_retries => {
                tracing::warn!(attempt, error = %e, "PutRecords failed; retrying the call");
                let (c, m) = (
                    e.code.clone().unwrap_or_else(|| format!("{:?}", e.failure)),
                    e.message.clone(),
                );
                pending
                    .drain(..)
                    .map(|en| (en, c.clone(), m.clone()))
                    .collect()
            }
            Err(e) => return Err(PutFailure::Call(e)),
        };
        if failed.is_empty() {
            return Ok(retried);
        }
        if attempt >= policy.max_retries {
            let failed_n = failed.len();
            let (first, code, message) = failed
                .into_iter()
                .next()
                .map_or((0, String::new(), String::new()), |(e, c, m)| (e.row, c, m));
            return Err(PutFailure::Entries {
                row: first,
                code,
                message,
                failed: failed_n,
                attempts: attempt + 1,
            });
        }
        let delay = policy.backoff(attempt);
        tracing::debug!(
            failed = failed.len(),
            attempt,
            ?delay,
            "PutRecords: retrying only the failed entries"
        );
        tokio::time::sleep(delay).await;
        retried += failed.len() as u64;
        pending = failed.into_iter().map(|(e, _, _)| e).collect();
        attempt += 1;
    }
}

/// One PutRecords call (the SDK's own retries off: failed entries are retried here, once).
async fn put_records(
    client: &Client,
    keying: StreamKeying,
    stream: &str,
    entries: &[Entry],
) -> CallResult {
    let records: Vec<PutRecordsRequestEntry> = entries
        .iter()
        .map(|e| {
            PutRecordsRequestEntry::builder()
                .partition_key(e.key.clone())
                .data(Blob::new(e.data.clone()))
                .build()
        })
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| ApiError {
            failure: ApiFailure::Other,
            code: None,
            message: e.to_string(),
        })?;
    let req = client.put_records().set_records(Some(records));
    let req = match keying {
        StreamKeying::Names => req.stream_name(stream),
        StreamKeying::Arns => req.stream_arn(stream),
    };
    let out = req
        .customize()
        .config_override(
            aws_sdk_kinesis::config::Builder::default().retry_config(RetryConfig::disabled()),
        )
        .send()
        .await
        .map_err(ApiError::from_sdk)?;
    Ok(out
        .records()
        .iter()
        .map(|r| {
            r.error_code().map(|c| {
                (
                    c.to_string(),
                    r.error_message().unwrap_or_default().to_string(),
                )
            })
        })
        .collect())
}

#[async_trait]
impl Sink for KinesisSink {
    fn delivery(&self) -> Delivery {
        Delivery::AtLeastOnce
    }

    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        self.check_schema(&schema)?;
        self.client().await?;
        Ok(())
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        let entries = self.entries(batch_id, batches)?;
        self.put_all(batch_id, entries).await
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSink> {
        Some(self)
    }
}

#[async_trait]
impl StreamingSink for KinesisSink {
    async fn write_records(&mut self, batch_id: u64, batch: &RecordBatch) -> Result<Ack> {
        // PutRecords answers per call: the records are acknowledged when it returns (one call
        // in flight; pipelining several is left for later).
        let entries = self.entries(batch_id, std::slice::from_ref(batch))?;
        self.put_all(batch_id, entries).await?;
        Ok(Box::pin(std::future::ready(Ok(()))))
    }

    async fn end_batch(&mut self, _batch_id: u64) -> Result<()> {
        // Every write_records call returned after Kinesis acknowledged its records.
        Ok(())
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
