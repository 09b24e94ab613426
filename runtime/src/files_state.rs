//! `tributary files-state <checkpoint>`: every file the files source discovered, with its batch.
//!
//! The equivalent of Databricks' `cloud_files_state`. The file rows come from the source's own
//! store (`sources/0/` of the checkpoint); the batch of each file is derived from the checkpoint's
//! offsets log (a file with sequence number `s` belongs to the batch whose range holds `s`), and
//! a file is committed when that batch has a commit entry.

use std::collections::BTreeSet;

use serde::Serialize;
use tributary_sdk::Result;

use crate::checkpoint::Checkpoint;

/// One row of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStateRow {
    /// File path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ms since the epoch.
    pub modification_time_ms: i64,
    /// When it was discovered, ms since the epoch.
    pub discovery_time_ms: i64,
    /// Discovery sequence number.
    pub seq: u64,
    /// The batch that read it (None: discovered, not yet planned).
    pub batch_id: Option<u64>,
    /// True when that batch is committed.
    pub committed: bool,
    /// When `cloudFiles.cleanSource` deleted or moved it, ms since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleaned_time_ms: Option<i64>,
}

/// Reads the file state of a checkpoint.
pub fn file_state(checkpoint: &Checkpoint) -> Result<Vec<FileStateRow>> {
    let entries = tributary_files::read_file_state(&checkpoint.source_state_dir())?;
    let mut ranges = Vec::new();
    for o in checkpoint.offsets()? {
        let start = tributary_files::seq_range(&o.start)?;
        let end = tributary_files::seq_range(&o.end)?;
        ranges.push((start, end, o.batch_id));
    }
    let committed: BTreeSet<u64> = checkpoint.committed_ids()?.into_iter().collect();
    Ok(entries
        .into_iter()
        .map(|e| {
            let batch_id = ranges
                .iter()
                .rev()
                .find(|(s, en, _)| e.seq >= *s && e.seq < *en)
                .map(|(_, _, b)| *b);
            FileStateRow {
                committed: batch_id.map(|b| committed.contains(&b)).unwrap_or(false),
                path: e.path,
                size: e.size,
                modification_time_ms: e.modification_time_ms,
                discovery_time_ms: e.discovery_time_ms,
                seq: e.seq,
                batch_id,
                cleaned_time_ms: e.cleaned_time_ms,
            }
        })
        .collect())
}

/// Formats rows as an aligned text table.
pub fn to_table(rows: &[FileStateRow]) -> String {
    let fmt_ms = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_else(|| ms.to_string())
    };
    let header = [
        "path",
        "size",
        "modified",
        "discovered",
        "batch",
        "committed",
        "cleaned",
    ];
    let body: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.path.clone(),
                r.size.to_string(),
                fmt_ms(r.modification_time_ms),
                fmt_ms(r.discovery_time_ms),
                r.batch_id
                    .map(|b| b.to_string())
                    .unwrap_or_else(|| "-".into()),
                r.committed.to_string(),
                r.cleaned_time_ms.map(fmt_ms).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &body {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(&header.map(String::from));
    out.push('\n');
    for row in &body {
        out.push_str(&line(row));
        out.push('\n');
    }
    out.push_str(&format!(
        "{} files, {} committed\n",
        rows.len(),
        rows.iter().filter(|r| r.committed).count()
    ));
    out
}
