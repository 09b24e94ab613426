//! The files source's checkpoint state as a table (`tributary state` / `files-state`), the
//! equivalent of Databricks' `cloud_files_state`.
//!
//! The file rows come from the source's own store (`files.db` in its state directory, opened
//! read-only, safe while the stream runs); the batch of each file is derived from the
//! checkpoint's offsets log: a file with sequence number `s` belongs to the batch whose range
//! `[start, end)` holds `s` (the latest such batch), and it is committed when that batch has a
//! commit entry.
//!
//! Columns ([`COLUMNS`]) and JSON keys are the same: `path`, `size` (bytes), `modificationTimeMs`
//! and `discoveryTimeMs` (milliseconds since the epoch), `seq`, `batchId` (null: discovered, not
//! yet planned), `committed` (the batch has a commit entry), `commitTimeMs` (when the source
//! committed it: `cloudFiles.cleanSource.retentionDuration` counts from here) and
//! `cleanedTimeMs` (when `cloudFiles.cleanSource` deleted or moved the file); the last two are
//! absent until they happen. Timestamps stay numbers in the table too, so the table and the JSON never
//! disagree and both sort as they read. The table ends with "N files, M committed".

use serde_json::{json, Map, Value};
use tributary_sdk::{Result, StateReport, StateRequest};

use crate::source::seq_range;
use crate::state::{read_file_state, FileStateEntry, STATE_DB};

/// The report's columns, in display order.
pub const COLUMNS: [&str; 9] = [
    "path",
    "size",
    "modificationTimeMs",
    "discoveryTimeMs",
    "seq",
    "batchId",
    "committed",
    "commitTimeMs",
    "cleanedTimeMs",
];

/// One logged batch as a range of sequence numbers.
struct Range {
    start: u64,
    end: u64,
    batch_id: u64,
    committed: bool,
}

/// Every file the source discovered, in sequence order, with the batch that read it. A state
/// directory without a file-state store (the stream never ran) gives no rows.
pub(crate) fn describe(request: &StateRequest<'_>) -> Result<StateReport> {
    let entries = if request.state_dir.join(STATE_DB).is_file() {
        read_file_state(request.state_dir)?
    } else {
        Vec::new()
    };
    let ranges = request
        .batches
        .iter()
        .map(|b| {
            Ok(Range {
                start: seq_range(&b.start)?,
                end: seq_range(&b.end)?,
                batch_id: b.batch_id,
                committed: b.committed,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Entries are in seq order: each batch claims its range by binary search, later batches
    // (a replanned range) over earlier ones.
    let mut batch_of: Vec<Option<&Range>> = vec![None; entries.len()];
    for range in &ranges {
        let first = entries.partition_point(|e| e.seq < range.start);
        for (slot, entry) in batch_of[first..].iter_mut().zip(&entries[first..]) {
            if entry.seq >= range.end {
                break;
            }
            *slot = Some(range);
        }
    }
    let committed = batch_of
        .iter()
        .filter(|r| r.is_some_and(|r| r.committed))
        .count();
    let summary = format!("{} files, {committed} committed", entries.len());
    Ok(StateReport {
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: entries
            .into_iter()
            .zip(batch_of)
            .map(|(entry, range)| row(entry, range))
            .collect(),
        summary: Some(summary),
    })
}

fn row(entry: FileStateEntry, range: Option<&Range>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("path".into(), json!(entry.path));
    m.insert("size".into(), json!(entry.size));
    m.insert(
        "modificationTimeMs".into(),
        json!(entry.modification_time_ms),
    );
    m.insert("discoveryTimeMs".into(), json!(entry.discovery_time_ms));
    m.insert("seq".into(), json!(entry.seq));
    m.insert("batchId".into(), json!(range.map(|r| r.batch_id)));
    m.insert(
        "committed".into(),
        json!(range.is_some_and(|r| r.committed)),
    );
    if let Some(commit) = entry.commit_time_ms {
        m.insert("commitTimeMs".into(), json!(commit));
    }
    if let Some(cleaned) = entry.cleaned_time_ms {
        m.insert("cleanedTimeMs".into(), json!(cleaned));
    }
    m
}
