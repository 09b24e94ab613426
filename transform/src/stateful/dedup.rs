//! [`Dedup`]: Spark's `dropDuplicates(columns)` and `dropDuplicatesWithinWatermark(columns)` on
//! the stream, before the query (`[transform] dropDuplicates = ["id"]`).
//!
//! A row passes when no row with the same values in the key columns passed before it, in this
//! batch or an earlier one; the first one wins (row order within a batch). The keys seen are
//! the state, each with the time (epoch microseconds) after which it may be forgotten:
//!
//! - `dropDuplicates` without a watermark, or with one whose event-time column is not a key:
//!   never (the state grows with every new key; a warning says so at start, as Spark's
//!   documentation does);
//! - `dropDuplicates` whose keys include the watermark's event-time column: the key's event
//!   time;
//! - `dropDuplicatesWithinWatermark`: the first row's event time plus the delay.
//!
//! Under a watermark, rows at or before the late-rows watermark are dropped first and counted,
//! and at the end of each batch the keys whose time is at or before the eviction watermark are
//! removed ([`super::clock`]). Keys are compared in Arrow's row format
//! ([`datafusion::arrow::row`]), so any key type the row format encodes works, nulls equal to
//! nulls as in Spark. The state is saved as its key columns (not the row bytes, whose encoding
//! Arrow does not promise to keep across versions) with the expiry as one more column. The
//! keys held are in memory or on disk ([`seen`], `stateStore.providerClass = "disk"`).

mod seen;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use tributary_sdk::{Error, ErrorCode, Result, StateOperatorProgress};

use super::clock::{format_ms, micros, Clock};
use super::store::{self, changelog};
use crate::spec::{StateStoreProvider, TransformSpec};
use seen::Seen;

/// The state's column holding each key's expiry (epoch microseconds; `i64::MAX`: never).
const EXPIRES: &str = "__expires_us";
/// The files source's per-row file metadata (Spark's hidden `_metadata` column), left out of
/// "every column".
const HIDDEN_METADATA: &str = "_metadata";
/// Spark's custom metric for the rows a deduplication dropped.
const DROPPED_DUPLICATES: &str = "numDroppedDuplicateRows";

/// When a key may be forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    /// Never.
    Never,
    /// At its event time (the watermark's column is one of the keys).
    EventTimeKey,
    /// The first row's event time plus the delay (`dropDuplicatesWithinWatermark`).
    AfterDelay,
}

/// The watermark a deduplication judges with.
#[derive(Debug, Clone, Copy)]
struct EventTime {
    /// The event-time column's index in the input.
    column: usize,
    delay_us: i64,
}

/// A deduplication with its state.
pub(crate) struct Dedup {
    /// The key columns' indices in the input.
    keys: Vec<usize>,
    state_schema: SchemaRef,
    signature: String,
    converter: RowConverter,
    expiry: Expiry,
    event_time: Option<EventTime>,
    clock: Clock,
    /// Every key held, in the row format, with its expiry (epoch microseconds).
    seen: Seen,
    /// Keys the current batch added and removed, for its changelog.
    added: Vec<Box<[u8]>>,
    removed: Vec<Box<[u8]>>,
    /// Writes snapshots in the background.
    store: store::Store,
    late: u64,
    duplicates: u64,
    progress: StateOperatorProgress,
    /// Real-time mode: the progress of the long batch's chunks so far.
    chunks: Option<StateOperatorProgress>,
    /// Real-time mode: the lengths of `added` and `removed` when the chunk began.
    chunk_start: (usize, usize),
}

impl std::fmt::Debug for Dedup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dedup")
            .field("signature", &self.signature)
            .field("keys", &self.seen.len())
            .field("on_disk", &self.seen.on_disk())
            .finish()
    }
}

fn invalid(option: &str, message: String) -> Error {
    Error::new(ErrorCode::InvalidPipeline, message)
        .with_context("option", format!("transform.{option}"))
}

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transform] deduplication state: {what}: {e}"),
    )
}

/// The deduplication `spec` asks for over a stream of schema `input`, checked: its columns
/// exist and the row format encodes them; the watermark's column is a timestamp of `input`.
pub(crate) fn plan(input: &SchemaRef, spec: &TransformSpec) -> Result<Option<Dedup>> {
    let (option, columns, within) = match (
        &spec.drop_duplicates,
        &spec.drop_duplicates_within_watermark,
    ) {
        (Some(c), None) => ("dropDuplicates", c, false),
        (None, Some(c)) => ("dropDuplicatesWithinWatermark", c, true),
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(invalid(
            "dropDuplicatesWithinWatermark",
            "[transform] dropDuplicates and dropDuplicatesWithinWatermark are both set; choose one"
                .into(),
        )),
    };
    let names: Vec<&str> = input.fields().iter().map(|f| f.name().as_str()).collect();
    let mut keys: Vec<usize> = Vec::new();
    if columns.is_empty() {
        // every column but the file-metadata one, which Spark hides from `df.columns` (a
        // path and modification time would make every file's rows distinct)
        keys = (0..input.fields().len())
            .filter(|&i| input.field(i).name() != HIDDEN_METADATA)
            .collect();
    }
    for c in columns {
        let Some((i, _)) = input.column_with_name(c) else {
            return Err(invalid(
                option,
                format!(
                    "[transform] {option}: '{c}' is not a column of source (columns: {})",
                    names.join(", ")
                ),
            ));
        };
        if !keys.contains(&i) {
            keys.push(i);
        }
    }
    let fields: Vec<Field> = keys
        .iter()
        .map(|&i| {
            let f = input.field(i);
            Field::new(f.name(), f.data_type().clone(), true)
        })
        .collect();
    let sort_fields: Vec<SortField> = fields
        .iter()
        .map(|f| SortField::new(f.data_type().clone()))
        .collect();
    let converter = RowConverter::new(sort_fields.clone()).map_err(|e| {
        invalid(
            option,
            format!("[transform] {option}: a key column's type cannot be compared ({e}); deduplicate on columns of other types"),
        )
    })?;
    let event_time = match &spec.watermark {
        None => None,
        Some(w) => {
            let column = super::watermark_column(input, w)?;
            let delay = super::watermark_delay(w)?;
            Some(EventTime {
                column,
                delay_us: delay.as_micros().min(i64::MAX as u128) as i64,
            })
        }
    };
    let expiry = match (within, event_time) {
        (true, _) => Expiry::AfterDelay,
        (false, Some(t)) if keys.contains(&t.column) => Expiry::EventTimeKey,
        (false, _) => Expiry::Never,
    };
    if expiry == Expiry::Never {
        tracing::warn!(
            "[transform] dropDuplicates on ({}) keeps every key forever: state grows with each new key. Set a watermark and include its event-time column in the keys, or use dropDuplicatesWithinWatermark",
            fields.iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    let key_list = fields
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect::<Vec<_>>()
        .join(", ");
    let signature = match within {
        false => format!("DEDUP [{key_list}]"),
        true => format!("DEDUP WITHIN WATERMARK [{key_list}]"),
    };
    let mut state_fields = fields;
    state_fields.push(Field::new(EXPIRES, DataType::Int64, false));
    let name = if within {
        "dedupeWithinWatermark"
    } else {
        "dedupe"
    };
    Ok(Some(Dedup {
        keys,
        state_schema: Arc::new(Schema::new(state_fields)),
        signature,
        converter,
        expiry,
        event_time,
        clock: Clock::new(event_time.map_or(0, |t| t.delay_us / 1000)),
        seen: Seen::new(
            spec.state_store_provider()? == StateStoreProvider::Disk,
            sort_fields,
        ),
        added: Vec::new(),
        removed: Vec::new(),
        store: store::Store::default(),
        late: 0,
        duplicates: 0,
        progress: StateOperatorProgress {
            operator_name: name.into(),
            ..Default::default()
        },
        chunks: None,
        chunk_start: (0, 0),
    }))
}

impl Dedup {
    /// The part without its late rows and duplicates; the part's latest event time (epoch ms)
    /// when there is a watermark, for an operator after this one.
    pub(crate) fn filter(&mut self, part: &RecordBatch) -> Result<(RecordBatch, Option<i64>)> {
        let mut part = part.clone();
        let mut times = None;
        let mut max_ms = None;
        if let Some(t) = self.event_time {
            let mut us = micros(part.column(t.column))?;
            // Spark's watermark is in milliseconds: the event time divided by 1000
            max_ms = datafusion::arrow::compute::max(&us).map(|m| m / 1000);
            if let Some(m) = max_ms {
                self.clock.observe(m);
            }
            if let Some(late) = self.clock.late() {
                let bound = late.saturating_mul(1000);
                let keep: BooleanArray = us
                    .iter()
                    .map(|t| Some(t.is_none_or(|t| t > bound)))
                    .collect();
                if keep.false_count() > 0 {
                    self.late += keep.false_count() as u64;
                    part = filter(&part, &keep)?;
                    us = datafusion::arrow::compute::filter(&us, &keep)
                        .map_err(|e| internal("dropping late rows", e))?
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .cloned()
                        .ok_or_else(|| internal("dropping late rows", "event times"))?;
                }
            }
            times = Some(us);
        }
        let columns: Vec<ArrayRef> = self
            .keys
            .iter()
            .map(|&i| Arc::clone(part.column(i)))
            .collect();
        let rows = self
            .converter
            .convert_columns(&columns)
            .map_err(|e| internal("encoding keys", e))?;
        let delay = self.event_time.map_or(0, |t| t.delay_us);
        let mut keep = Vec::with_capacity(rows.num_rows());
        for (i, row) in rows.iter().enumerate() {
            let bytes = row.as_ref();
            if self.seen.contains(bytes)? {
                keep.push(false);
                continue;
            }
            let t = times
                .as_ref()
                .and_then(|t| (!t.is_null(i)).then(|| t.value(i)));
            // a null event time never expires a key, as Spark's `ts <= watermark` is null
            let expires = match self.expiry {
                Expiry::Never => i64::MAX,
                Expiry::EventTimeKey => t.unwrap_or(i64::MAX),
                Expiry::AfterDelay => t.unwrap_or(0).saturating_add(delay),
            };
            self.seen.insert(bytes, expires);
            self.added.push(bytes.into());
            keep.push(true);
        }
        let dropped = keep.iter().filter(|k| !**k).count();
        self.duplicates += dropped as u64;
        if dropped > 0 {
            part = filter(&part, &BooleanArray::from(keep))?;
        }
        Ok((part, max_ms))
    }

    /// The watermark this batch evicts with (the previous batch's), when there is one.
    pub(crate) fn batch_watermark(&self) -> Option<i64> {
        self.event_time.as_ref().and(self.clock.eviction())
    }

    /// Ends the batch: evicts the keys the eviction watermark passed, fills the progress.
    pub(crate) fn end_batch(&mut self) -> Result<()> {
        self.finish(false)
    }

    /// Real-time mode: the chunk's parts were filtered. As [`Dedup::end_batch`], and the
    /// chunk's watermark becomes the next chunk's; the keys added and removed add up until
    /// [`Dedup::save`].
    pub(crate) fn end_chunk(&mut self) -> Result<()> {
        self.finish(true)?;
        self.clock.commit();
        self.chunk_start = (self.added.len(), self.removed.len());
        self.progress = super::add_chunk(&mut self.chunks, &self.progress);
        Ok(())
    }

    fn finish(&mut self, chunk: bool) -> Result<()> {
        let wm = self
            .event_time
            .is_some()
            .then(|| self.clock.end_batch())
            .flatten();
        if !chunk {
            self.removed.clear();
        }
        self.seen.flush(None)?;
        if let Some(evict) = self.clock.eviction() {
            if self.expiry != Expiry::Never {
                self.seen
                    .evict(evict.saturating_mul(1000), &mut self.removed)?;
            }
        }
        self.progress.num_rows_total = self.seen.len();
        // in real-time mode `added` and `removed` hold the earlier chunks' keys too
        self.progress.num_rows_updated = (self.added.len() - self.chunk_start.0) as u64;
        self.progress.num_rows_removed = (self.removed.len() - self.chunk_start.1) as u64;
        self.progress.num_rows_dropped_by_watermark = std::mem::take(&mut self.late);
        self.progress.custom_metrics.insert(
            DROPPED_DUPLICATES.into(),
            std::mem::take(&mut self.duplicates),
        );
        self.progress.memory_used_bytes = self.seen.memory();
        self.progress.watermark = wm.map(format_ms);
        Ok(())
    }

    /// Starts from the state saved as `version` under `dir` (`None`: empty).
    pub(crate) fn restore(&mut self, dir: &Path, version: Option<u64>) -> Result<()> {
        self.store.reset(dir)?;
        self.seen.clear(dir)?;
        self.added.clear();
        self.removed.clear();
        self.chunks = None;
        self.chunk_start = (0, 0);
        (self.late, self.duplicates) = (0, 0);
        let Some(v) = version else {
            self.clock.restore((None, None));
            return Ok(());
        };
        let n = self.keys.len();
        if self.seen.on_disk() {
            let marks = self
                .seen
                .restore_disk(dir, v, &self.signature, &self.converter, n)?;
            self.clock.restore(marks);
            self.progress.num_rows_total = self.seen.len();
            return Ok(());
        }
        let (state, marks) = store::load(dir, v, &self.signature, &self.state_schema)?;
        self.clock.restore(marks);
        let rows = self
            .converter
            .convert_columns(&state.columns()[..n])
            .map_err(|e| internal("decoding keys", e))?;
        let expires = state
            .column(n)
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| internal("decoding", "the expiry column is not Int64"))?;
        for (i, row) in rows.iter().enumerate() {
            self.seen.insert(row.as_ref(), expires.value(i));
        }
        self.progress.num_rows_total = self.seen.len();
        Ok(())
    }

    /// Makes the state after batch `version` durable under `dir`: the keys the batch added
    /// and removed, or every key held (see [`store`]).
    pub(crate) fn save(&mut self, dir: &Path, version: u64) -> Result<()> {
        let t = Instant::now();
        self.seen.flush(Some(dir))?;
        self.clock.commit();
        self.chunks = None;
        self.chunk_start = (0, 0);
        let added = std::mem::take(&mut self.added);
        let removed = std::mem::take(&mut self.removed);
        let changes = self.changes(&added, &removed)?;
        let header = store::Header {
            signature: &self.signature,
            keys: self.keys.len(),
            marks: self.clock.marks(),
        };
        let mut disk = std::mem::take(&mut self.store);
        let this = &*self;
        let full = match (this.seen.scan(&this.state_schema)?, this.seen.in_memory()) {
            (Some(scan), _) => store::Full::Scan(Arc::clone(&this.state_schema), scan),
            (None, Some(keys)) => store::Full::Memory(Box::new(move || {
                this.rows(keys.iter().map(|(k, e)| (k.as_ref(), *e)))
            })),
            (None, None) => {
                return Err(internal(
                    "saving",
                    "the keys are neither in memory nor on disk",
                ))
            }
        };
        let saved = store::save(
            dir,
            version,
            &header,
            Some(changes),
            self.seen.len() as usize,
            &mut disk,
            full,
        );
        self.store = disk;
        saved?;
        self.progress.commit_time_ms = t.elapsed().as_millis() as u64;
        Ok(())
    }

    /// Keys with their expiry as rows of the state's schema.
    fn rows<'a>(&self, keys: impl Iterator<Item = (&'a [u8], i64)>) -> Result<RecordBatch> {
        let parser = self.converter.parser();
        let mut rows = Vec::new();
        let mut expires = Vec::new();
        for (k, e) in keys {
            rows.push(parser.parse(k));
            expires.push(e);
        }
        let mut columns = self
            .converter
            .convert_rows(rows)
            .map_err(|e| internal("decoding keys", e))?;
        columns.push(Arc::new(Int64Array::from(expires)));
        RecordBatch::try_new(Arc::clone(&self.state_schema), columns)
            .map_err(|e| internal("the saved keys", e))
    }

    /// The batch's delta: the added keys still held, the removed ones.
    fn changes(&self, added: &[Box<[u8]>], removed: &[Box<[u8]>]) -> Result<RecordBatch> {
        let mut held = Vec::with_capacity(added.len());
        for k in added {
            if let Some(e) = self.seen.expiry(k)? {
                held.push((k.as_ref(), e));
            }
        }
        let upserts = self.rows(held.into_iter())?;
        let parser = self.converter.parser();
        // a key removed and then added again (in a later chunk) is held: an upsert only
        let mut gone = Vec::with_capacity(removed.len());
        for k in removed {
            if !self.seen.contains(k)? {
                gone.push(parser.parse(k));
            }
        }
        let deleted = self
            .converter
            .convert_rows(gone)
            .map_err(|e| internal("decoding keys", e))?;
        changelog::changes(&self.state_schema, &upserts, &deleted)
    }

    pub(crate) fn progress(&self) -> StateOperatorProgress {
        self.progress.clone()
    }

    /// Spark's `noDataMicroBatches` for a deduplication: the watermark moved and keys may
    /// expire with it.
    pub(crate) fn needs_no_data_batch(&self) -> bool {
        self.event_time.is_some() && self.clock.moved() && self.seen.len() > 0
    }
}

fn filter(part: &RecordBatch, keep: &BooleanArray) -> Result<RecordBatch> {
    datafusion::arrow::compute::filter_record_batch(part, keep)
        .map_err(|e| internal("dropping rows", e))
}
