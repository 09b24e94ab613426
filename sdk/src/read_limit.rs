//! Read limits: how much one micro-batch may take.
//!
//! A source states its default limit from its own options (`maxOffsetsPerTrigger`,
//! `cloudFiles.maxFilesPerTrigger`, `cloudFiles.maxBytesPerTrigger`); the runtime passes a limit
//! to [`crate::Source::latest_offset`]. The `once` trigger passes [`ReadLimit::All`]; a
//! `processingTime` or `availableNow` trigger passes the source's default.

use serde::{Deserialize, Serialize};

/// The most one batch may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadLimit {
    /// Everything available.
    All,
    /// At most this many records (a hard limit).
    MaxRows(u64),
    /// At most this many files (a hard limit).
    MaxFiles(u64),
    /// About this many bytes (a soft limit: at least one unit is always taken).
    MaxBytes(u64),
    /// Wait for at least `rows` records, unless `max_delay_ms` passed since the last batch.
    MinRows {
        /// Minimum records.
        rows: u64,
        /// Longest wait, in milliseconds.
        max_delay_ms: u64,
    },
    /// Every one of these limits at once.
    Composite(Vec<ReadLimit>),
}

impl ReadLimit {
    /// The smallest file limit in this limit, if any.
    pub fn max_files(&self) -> Option<u64> {
        self.find(&|l| match l {
            ReadLimit::MaxFiles(n) => Some(*n),
            _ => None,
        })
    }

    /// The smallest byte limit in this limit, if any.
    pub fn max_bytes(&self) -> Option<u64> {
        self.find(&|l| match l {
            ReadLimit::MaxBytes(n) => Some(*n),
            _ => None,
        })
    }

    /// The smallest row limit in this limit, if any.
    pub fn max_rows(&self) -> Option<u64> {
        self.find(&|l| match l {
            ReadLimit::MaxRows(n) => Some(*n),
            _ => None,
        })
    }

    fn find(&self, pick: &dyn Fn(&ReadLimit) -> Option<u64>) -> Option<u64> {
        match self {
            ReadLimit::Composite(ls) => ls.iter().filter_map(|l| l.find(pick)).min(),
            other => pick(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_takes_the_smallest_of_each_kind() {
        let l = ReadLimit::Composite(vec![
            ReadLimit::MaxFiles(10),
            ReadLimit::MaxBytes(1 << 20),
            ReadLimit::Composite(vec![ReadLimit::MaxFiles(3)]),
        ]);
        assert_eq!(l.max_files(), Some(3));
        assert_eq!(l.max_bytes(), Some(1 << 20));
        assert_eq!(l.max_rows(), None);
        assert_eq!(ReadLimit::All.max_files(), None);
    }
}
