//! A connector's own checkpoint state, described by the connector (`tributary state`).
//!
//! The runtime never looks inside an offset. When a user asks what a checkpoint holds, the host
//! gives the connector its state directory and the checkpoint's offsets log
//! ([`StateRequest`]); the connector answers with a table ([`StateReport`]) — the files source
//! lists every discovered file with the batch that read it, as Databricks' `cloud_files_state`.

use std::path::Path;

use serde::Serialize;

use crate::offset::Offset;

/// One entry of the checkpoint's offsets log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedBatch {
    /// The batch id.
    pub batch_id: u64,
    /// Where the batch starts.
    pub start: Offset,
    /// Where it ends (exclusive).
    pub end: Offset,
    /// True when the batch has a commit entry.
    pub committed: bool,
}

/// What the host hands a connector to describe its state.
#[derive(Debug, Clone, Copy)]
pub struct StateRequest<'a> {
    /// The connector's state directory in the checkpoint (may not exist).
    pub state_dir: &'a Path,
    /// The offsets log, oldest first.
    pub batches: &'a [LoggedBatch],
}

/// A connector's state as a table: ordered column names and one JSON object per row.
///
/// A column whose name ends in `TimeMs` holds milliseconds since the epoch: JSON keeps the
/// number, the text table shows it as a UTC time (`2026-11-30 05:33:12.345`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateReport {
    /// Column names, in display order (the keys of each row).
    pub columns: Vec<String>,
    /// The rows; a missing key is shown empty.
    pub rows: Vec<serde_json::Map<String, serde_json::Value>>,
    /// A line printed under the table ("11 files, 11 committed"), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl StateReport {
    /// The rows as a JSON array of objects.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.rows
                .iter()
                .cloned()
                .map(serde_json::Value::Object)
                .collect(),
        )
    }

    /// The rows as an aligned text table with a header line.
    pub fn to_table(&self) -> String {
        let cell = |column: &str, v: Option<&serde_json::Value>| match v {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) if column.ends_with("TimeMs") => n
                .as_i64()
                .map(utc_millis_text)
                .unwrap_or_else(|| n.to_string()),
            Some(other) => other.to_string(),
        };
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| self.columns.iter().map(|c| cell(c, r.get(c))).collect())
            .collect();
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                cells
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([c.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            row.iter()
                .zip(&widths)
                .map(|(v, w)| format!("{v:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let mut out = line(&self.columns);
        out.push('\n');
        for r in &cells {
            out.push_str(&line(r));
            out.push('\n');
        }
        if let Some(summary) = &self.summary {
            out.push_str(summary);
            out.push('\n');
        }
        out
    }
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS.mmm` (UTC), by the civil-from-days
/// algorithm (H. Hinnant), so the SDK needs no date library for one column format.
fn utc_millis_text(ms: i64) -> String {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table_aligns_columns_and_json_keeps_rows() {
        let row = |p: &str, b: serde_json::Value| {
            let mut m = serde_json::Map::new();
            m.insert("path".into(), json!(p));
            m.insert("batchId".into(), b);
            m
        };
        let r = StateReport {
            columns: vec!["path".into(), "batchId".into()],
            rows: vec![row("/a/long-name.json", json!(0)), row("/b", json!(null))],
            summary: Some("2 files".into()),
        };
        assert_eq!(
            r.to_table(),
            "path               batchId\n/a/long-name.json  0\n/b\n2 files\n"
        );
        assert_eq!(r.to_json()[0]["batchId"], json!(0));
    }

    #[test]
    fn time_ms_columns_print_as_utc_times() {
        assert_eq!(utc_millis_text(0), "1970-01-01 00:00:00.000");
        assert_eq!(utc_millis_text(951_782_400_000), "2000-02-29 00:00:00.000");
        assert_eq!(
            utc_millis_text(1_796_015_481_123),
            "2026-11-30 05:11:21.123"
        );
        assert_eq!(utc_millis_text(-1), "1969-12-31 23:59:59.999");
        let mut m = serde_json::Map::new();
        m.insert("seenTimeMs".into(), json!(1_796_015_481_123i64));
        let r = StateReport {
            columns: vec!["seenTimeMs".into()],
            rows: vec![m],
            summary: None,
        };
        assert!(
            r.to_table().contains("2026-11-30 05:11:21.123"),
            "{}",
            r.to_table()
        );
        assert_eq!(r.to_json()[0]["seenTimeMs"], json!(1_796_015_481_123i64));
    }
}
