//! Reading one shard with GetRecords: from a position, until a stop condition.
//!
//! A [`ShardReader`] keeps, per shard, the iterator for where the last fetch ended (so the
//! next batch continues without GetShardIterator), the time of its last call (`minFetchPeriod`
//! apart) and the current fetch size. `ProvisionedThroughputExceeded` halves the fetch size,
//! logs exactly "Hit rate limit. Sleeping for 5 seconds." and retries after 5 s; each
//! successful call afterwards doubles the size back towards `maxRecordsPerFetch`. An expired
//! iterator is re-acquired from the last sequence number read.
//!
//! **Where a read resumes is checked.** A position after a record is read from an iterator AT
//! that record: the first record returned must be it (then skipped); when it is not, or the
//! shard holds nothing at or after it, the record was trimmed and [`Fetched::resume_gap`] says
//! so (the caller reports the possible loss). This covers every fresh iterator: a restart,
//! a replay, an executor's partition, an expired iterator. `maxFetchRate` spaces the calls
//! further after a large page: the next call waits page bytes / rate. The SDK's own retries are off for
//! GetRecords so that throttling is handled here, once.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_kinesis::config::retry::RetryConfig;
use aws_sdk_kinesis::primitives::DateTime;
use aws_sdk_kinesis::types::ShardIteratorType;
use aws_sdk_kinesis::Client;
use tributary_sdk::{Error, Result};

use crate::error::{ApiError, ApiFailure};
use crate::offsets::{compare_sequence, ShardPosition};
use crate::planner::{with_stream, StreamRef};

/// The message logged on throttling (the Databricks connector's text).
pub const RATE_LIMIT_MESSAGE: &str = "Hit rate limit. Sleeping for 5 seconds.";

/// One record as fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedRecord {
    /// Partition key.
    pub partition_key: String,
    /// Data.
    pub data: Vec<u8>,
    /// Sequence number.
    pub sequence: String,
    /// Approximate arrival time (ms).
    pub arrival_ms: Option<i64>,
}

/// When a fetch stops (besides the shard's end).
#[derive(Debug, Clone)]
pub(crate) struct Stop {
    /// Shared record budget (all shards of a batch); `i64::MAX` for none.
    pub records: Arc<AtomicI64>,
    /// Shared byte budget (fetchBufferSize).
    pub bytes: Arc<AtomicI64>,
    /// Planning deadline (maxFetchDuration); `None` when replaying a logged range.
    pub deadline: Option<Instant>,
    /// Replay: stop after this sequence number (inclusive).
    pub until: Option<String>,
    /// availableNow: records that arrived after this time (ms) are not read in this run.
    pub arrival_cutoff: Option<i64>,
    /// Return after one GetRecords page (the background read-ahead hands each page over).
    pub one_page: bool,
}

/// What one fetch produced.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fetched {
    /// The records, in shard order.
    pub records: Vec<FetchedRecord>,
    /// The position after them.
    pub position: Option<ShardPosition>,
    /// The shard is closed and every record was read.
    pub finished: bool,
    /// MillisBehindLatest of the last call.
    pub millis_behind: Option<i64>,
    /// Replay reached `until`.
    pub reached_until: bool,
    /// The shard is gone (stream or shard not found).
    pub not_found: bool,
    /// The record the read resumed after is no longer held (see [`ResumeGap`]).
    pub resume_gap: Option<ResumeGap>,
    /// With `not_found`: the server said it holds no record with this sequence number (the
    /// one the read resumed after) rather than that the shard is gone.
    pub record_not_held: Option<String>,
}

/// A read that resumed after a record the shard no longer holds: it was trimmed (retention),
/// so records written after it may have been trimmed too before they were read. Kinesis
/// sequence numbers are not dense, so whether any was is unknowable: this is the possible
/// loss `failOnDataLoss` is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeGap {
    /// The sequence number the read resumed after.
    pub after: String,
    /// The oldest record the shard holds after it (its trim horizon); `None` when it holds none.
    pub first_held: Option<String>,
}

impl ResumeGap {
    /// The oldest held position, for messages.
    pub fn first_held_text(&self) -> String {
        match &self.first_held {
            Some(s) => format!("sequence number {s}"),
            None => "no record at or after it".to_string(),
        }
    }
}

/// Per-shard fetch state that outlives one batch.
#[derive(Debug)]
pub(crate) struct ShardReader {
    /// The stream.
    pub stream: StreamRef,
    /// The shard id.
    pub shard: String,
    fetch_size: i32,
    max_fetch_size: i32,
    min_fetch_period: Duration,
    last_call: Option<Instant>,
    cached: Option<(ShardPosition, String)>,
    /// Times throttled (metric).
    pub throttled: u64,
    /// Throttle pause (5 s; shorter in tests).
    pub throttle_pause: Duration,
    /// maxFetchRate in bytes per second (`f64::INFINITY`: no limit).
    pub max_fetch_rate: f64,
    /// Bytes (data + partition keys) of the last GetRecords page, paced by `max_fetch_rate`.
    last_page_bytes: usize,
    /// The iterator in use was acquired AT this sequence number (the record a position
    /// resumes after): the first record read must be it, else it was trimmed.
    verify: Option<String>,
}

impl ShardReader {
    /// A reader for one shard.
    pub fn new(
        stream: StreamRef,
        shard: String,
        max_fetch_size: i32,
        min_fetch_period: Duration,
    ) -> Self {
        ShardReader {
            stream,
            shard,
            fetch_size: max_fetch_size,
            max_fetch_size,
            min_fetch_period,
            last_call: None,
            cached: None,
            throttled: 0,
            throttle_pause: Duration::from_secs(5),
            max_fetch_rate: f64::INFINITY,
            last_page_bytes: 0,
            verify: None,
        }
    }

    /// A new reader of the same shard with the same settings (no cached iterator).
    pub fn twin(&self) -> Self {
        let mut r = ShardReader::new(
            self.stream.clone(),
            self.shard.clone(),
            self.max_fetch_size,
            self.min_fetch_period,
        );
        r.throttle_pause = self.throttle_pause;
        r.max_fetch_rate = self.max_fetch_rate;
        r
    }

    async fn iterator(
        &mut self,
        client: &Client,
        from: &ShardPosition,
    ) -> std::result::Result<String, ApiError> {
        if let Some((pos, it)) = self.cached.take() {
            if &pos == from {
                return Ok(it);
            }
        }
        self.verify = None;
        let req = || with_stream!(client.get_shard_iterator(), &self.stream).shard_id(&self.shard);
        let req = match from {
            ShardPosition::TrimHorizon => req().shard_iterator_type(ShardIteratorType::TrimHorizon),
            ShardPosition::AtTimestamp(ms) => req()
                .shard_iterator_type(ShardIteratorType::AtTimestamp)
                .timestamp(DateTime::from_millis(*ms)),
            ShardPosition::After(seq) => {
                // Resuming after a record: start AT it, so the first record read proves the
                // shard still holds it (it is then skipped) and nothing before the next record
                // was trimmed unseen.
                let at = req()
                    .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
                    .starting_sequence_number(seq)
                    .send()
                    .await;
                match at {
                    Ok(out) => {
                        self.verify = Some(seq.clone());
                        return Ok(out.shard_iterator().unwrap_or_default().to_string());
                    }
                    Err(e) => {
                        let e = ApiError::from_sdk(e);
                        if e.failure != ApiFailure::Other {
                            return Err(e);
                        }
                        tracing::debug!(stream = %self.stream.id, shard = %self.shard, error = %e, "AT_SEQUENCE_NUMBER refused; resuming AFTER_SEQUENCE_NUMBER without the trim check");
                        req()
                            .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                            .starting_sequence_number(seq)
                    }
                }
            }
        };
        let out = req.send().await.map_err(ApiError::from_sdk)?;
        Ok(out.shard_iterator().unwrap_or_default().to_string())
    }

    /// The shortest time between two GetRecords calls after a page of `bytes`: `minFetchPeriod`,
    /// or longer when the page was large for `maxFetchRate`.
    fn call_gap(&self, bytes: usize) -> Duration {
        let rated = bytes as f64 / self.max_fetch_rate;
        if rated.is_finite() && rated > 0.0 {
            self.min_fetch_period
                .max(Duration::from_secs_f64(rated.min(3600.0)))
        } else {
            self.min_fetch_period
        }
    }

    async fn pace(&mut self) {
        if let Some(last) = self.last_call {
            let next = last + self.call_gap(self.last_page_bytes);
            let now = Instant::now();
            if next > now {
                tokio::time::sleep(next - now).await;
            }
        }
        self.last_call = Some(Instant::now());
    }

    /// Reads from `from` until `stop` (or the shard's end).
    pub async fn fetch(
        &mut self,
        client: &Client,
        from: &ShardPosition,
        stop: &Stop,
    ) -> Result<Fetched> {
        let mut out = Fetched::default();
        let mut position = from.clone();
        let mut iterator: Option<String> = None;
        let stream_id = self.stream.id.clone();
        let fail = |e: ApiError, what: &str| -> Error { e.into_error(what, &stream_id, true) };
        loop {
            let it = match iterator.take() {
                Some(it) => it,
                None => match self.iterator(client, &position).await {
                    Ok(it) => it,
                    Err(e) if e.failure == ApiFailure::NotFound => {
                        // kinesis-mock: "Unable to find record with provided SequenceNumber"
                        // (a recreated stream, or a record it never wrote).
                        if let ShardPosition::After(seq) = &position {
                            if e.message.contains("SequenceNumber") {
                                out.record_not_held = Some(seq.clone());
                            }
                        }
                        out.not_found = true;
                        break;
                    }
                    Err(e) if e.is_throttled() => {
                        self.throttle().await;
                        continue;
                    }
                    Err(e) => return Err(fail(e, "GetShardIterator")),
                },
            };
            let budget = stop.records.load(Ordering::Relaxed);
            if budget <= 0 && stop.until.is_none() {
                self.cached = Some((position.clone(), it));
                break;
            }
            self.pace().await;
            let limit = if stop.until.is_some() {
                self.fetch_size
            } else {
                self.fetch_size.min(budget.min(i32::MAX as i64) as i32)
            };
            let result = client
                .get_records()
                .shard_iterator(&it)
                .limit(limit.max(1))
                .customize()
                .config_override(
                    aws_sdk_kinesis::config::Builder::default()
                        .retry_config(RetryConfig::disabled()),
                )
                .send()
                .await;
            let mut page = match result {
                Ok(p) => p,
                Err(e) => {
                    let e = ApiError::from_sdk(e);
                    match e.failure {
                        ApiFailure::Throttled => {
                            self.throttle().await;
                            iterator = Some(it);
                            continue;
                        }
                        ApiFailure::ExpiredIterator => {
                            tracing::info!(stream = %self.stream.id, shard = %self.shard, "shard iterator expired; acquiring a new one from {position:?}");
                            continue;
                        }
                        ApiFailure::NotFound => {
                            out.not_found = true;
                            break;
                        }
                        _ => return Err(fail(e, "GetRecords")),
                    }
                }
            };
            if self.fetch_size < self.max_fetch_size {
                self.fetch_size = (self.fetch_size.saturating_mul(2)).min(self.max_fetch_size);
            }
            out.millis_behind = page.millis_behind_latest();
            // The page's records are moved into `FetchedRecord`s (data, key and sequence number
            // without a copy).
            let records = std::mem::take(&mut page.records);
            self.last_page_bytes = records
                .iter()
                .map(|r| r.data.as_ref().len() + r.partition_key.as_ref().map_or(0, String::len))
                .sum();
            let next = page.next_shard_iterator.take();
            let caught_up = records.is_empty() && out.millis_behind.unwrap_or(0) == 0;
            let mut skip = 0;
            if let Some(after) = self.verify.clone() {
                if let Some(first) = records.first() {
                    self.verify = None;
                    if compare_sequence(first.sequence_number(), &after)
                        == std::cmp::Ordering::Equal
                    {
                        skip = 1; // still held: read on after it
                    } else {
                        out.resume_gap.get_or_insert(ResumeGap {
                            after,
                            first_held: Some(first.sequence_number().to_string()),
                        });
                    }
                } else if caught_up || next.is_none() {
                    self.verify = None;
                    out.resume_gap.get_or_insert(ResumeGap {
                        after,
                        first_held: None,
                    });
                }
            }
            let mut stopped = false;
            let (kept_before, mut taken_bytes) = (out.records.len(), 0i64);
            for r in records.into_iter().skip(skip) {
                let arrival_ms = r
                    .approximate_arrival_timestamp
                    .and_then(|t| t.to_millis().ok());
                if let Some(until) = &stop.until {
                    if compare_sequence(&r.sequence_number, until) == std::cmp::Ordering::Greater {
                        stopped = true;
                        break;
                    }
                }
                if let (Some(cut), Some(at)) = (stop.arrival_cutoff, arrival_ms) {
                    if at > cut {
                        stopped = true;
                        break;
                    }
                }
                let data = r.data.into_inner();
                let partition_key = r.partition_key.unwrap_or_default();
                taken_bytes += (data.len() + partition_key.len()) as i64;
                let reached = stop.until.as_deref() == Some(r.sequence_number.as_str());
                out.records.push(FetchedRecord {
                    partition_key,
                    data,
                    sequence: r.sequence_number,
                    arrival_ms,
                });
                if reached {
                    out.reached_until = true;
                    stopped = true;
                    break;
                }
            }
            // The shared budget moves once a page (it is looked at between pages).
            let taken = out.records.len() - kept_before;
            stop.records.fetch_sub(taken as i64, Ordering::Relaxed);
            stop.bytes.fetch_sub(taken_bytes, Ordering::Relaxed);
            if let Some(last) = out.records.last().filter(|_| taken > 0) {
                position = ShardPosition::After(last.sequence.clone());
            }
            if stopped {
                // The rest of this page is read again next time from `position`.
                break;
            }
            let Some(next) = next else {
                out.finished = true;
                break;
            };
            let over_budget = stop.until.is_none()
                && (stop.records.load(Ordering::Relaxed) <= 0
                    || stop.bytes.load(Ordering::Relaxed) <= 0);
            let late = stop.deadline.is_some_and(|d| Instant::now() >= d);
            if caught_up || over_budget || late || stop.one_page {
                self.cached = Some((position.clone(), next));
                break;
            }
            iterator = Some(next);
        }
        if out.records.is_empty() && position == *from {
            out.position = None;
        } else {
            out.position = Some(position);
        }
        Ok(out)
    }

    async fn throttle(&mut self) {
        self.throttled += 1;
        self.fetch_size = (self.fetch_size / 2).max(1);
        tracing::warn!(stream = %self.stream.id, shard = %self.shard, fetch_size = self.fetch_size, "{RATE_LIMIT_MESSAGE}");
        tokio::time::sleep(self.throttle_pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StreamKeying;

    #[test]
    fn max_fetch_rate_spaces_calls_after_large_pages() {
        let stream = StreamRef {
            keying: StreamKeying::Names,
            id: "s".into(),
        };
        let mut r = ShardReader::new(stream, "shard".into(), 100, Duration::from_millis(200));
        assert_eq!(
            r.call_gap(10 << 20),
            Duration::from_millis(200),
            "no limit by default"
        );
        r.max_fetch_rate = 1_048_576.0; // 1 MB/s
        assert_eq!(r.call_gap(0), Duration::from_millis(200));
        assert_eq!(
            r.call_gap(2 << 20),
            Duration::from_secs(2),
            "2 MiB at 1 MiB/s"
        );
        assert_eq!(
            r.call_gap(100 << 10),
            Duration::from_millis(200),
            "minFetchPeriod still holds"
        );
        assert_eq!(
            r.twin().call_gap(2 << 20),
            Duration::from_secs(2),
            "a twin keeps the rate"
        );
    }
}
