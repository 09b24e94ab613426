//! The files source's state against the checkpoint's logs, before a pipeline resumes
//! ([`tributary_sdk::SourceFactory::verify_state`]).
//!
//! Every discovered file is written to `files.db` before the source hands out an offset that
//! covers it, so the file state always reaches at least the end of the last logged batch. A
//! missing database with logged batches, or one whose sequence numbers end before the log's,
//! is damage: a new file state would queue every old file again under new numbers (the logged
//! ranges would then name other files) and skip files whose modification time looks old.

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use tributary_sdk::{Error, ErrorCode, Offset, Result, StateRequest};

use crate::error::state_err;
use crate::state::STATE_DB;

fn seq_of(offset: &Offset) -> Option<u64> {
    offset
        .as_json()
        .get("seq")
        .and_then(serde_json::Value::as_u64)
}

fn damaged(part: &str, problem: String) -> Error {
    Error::new(
        ErrorCode::CheckpointDamaged,
        format!("{part} {problem}; restore the checkpoint from a backup, or start over with a new checkpoint location and a new, empty output"),
    )
    .with_context("part", part)
}

/// Checks the file state in `request.state_dir` against `request.batches`.
pub(crate) fn verify(request: &StateRequest<'_>) -> Result<()> {
    let Some(last) = request.batches.last() else {
        return Ok(());
    };
    let logged_end = seq_of(&last.end).unwrap_or(0);
    let db = request.state_dir.join(STATE_DB);
    let part = format!("sources/0/{STATE_DB}");
    if !db.is_file() {
        return Err(damaged(
            &part,
            format!(
                "is missing but the checkpoint logs {} batches (files up to sequence number \
                 {logged_end}): a new file state would read old files again",
                request.batches.len()
            ),
        ));
    }
    let conn = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(state_err(format!("cannot open {}", db.display())))?;
    let max_seq: Option<i64> = conn
        .query_row("SELECT MAX(seq) FROM files", [], |r| r.get(0))
        .optional()
        .map_err(state_err("cannot read the file state"))?
        .flatten();
    // Expiry (cloudFiles.maxFileAge) removes old rows but keeps the next number in `meta`.
    let kept: Option<u64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'next_seq'", [], |r| {
            r.get::<_, String>(0)
        })
        .optional()
        .map_err(state_err("cannot read the file state"))?
        .and_then(|v| v.parse().ok());
    let known_end = max_seq
        .map_or(0, |s| s.max(-1) as u64 + 1)
        .max(kept.unwrap_or(0));
    if known_end < logged_end {
        return Err(damaged(
            &part,
            format!(
                "knows files up to sequence number {known_end}, but offsets/{} reaches \
                 {logged_end}: the file state is behind the log (replaced by an older copy, or \
                 rows were removed)",
                last.batch_id
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{FileStateStore, ListedFile};
    use tributary_sdk::LoggedBatch;

    fn batch(id: u64, start: u64, end: u64) -> LoggedBatch {
        LoggedBatch {
            batch_id: id,
            start: Offset::from_json(serde_json::json!({ "seq": start })),
            end: Offset::from_json(serde_json::json!({ "seq": end })),
            committed: true,
        }
    }

    fn store_with(dir: &std::path::Path, files: usize) {
        let mut store = FileStateStore::open(Some(dir)).unwrap();
        let listed: Vec<ListedFile> = (0..files)
            .map(|i| ListedFile {
                path: format!("/in/f{i}.json"),
                size: 1,
                modification_time_ms: 1,
            })
            .collect();
        store.record_listing(listed, false, 1).unwrap();
    }

    #[test]
    fn a_missing_or_behind_file_state_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let batches = [batch(0, 0, 2), batch(1, 2, 3)];
        let request = StateRequest {
            state_dir: dir.path(),
            batches: &batches,
        };
        let e = verify(&request).unwrap_err();
        assert_eq!(e.code(), ErrorCode::CheckpointDamaged);
        assert!(e.message().contains("files.db is missing"), "{e}");
        // Nothing logged: nothing to check.
        verify(&StateRequest {
            state_dir: dir.path(),
            batches: &[],
        })
        .unwrap();
        store_with(dir.path(), 2);
        let e = verify(&request).unwrap_err();
        assert!(e.message().contains("behind the log"), "{e}");
        let whole = tempfile::tempdir().unwrap();
        store_with(whole.path(), 3);
        verify(&StateRequest {
            state_dir: whole.path(),
            batches: &batches,
        })
        .unwrap();
    }
}
