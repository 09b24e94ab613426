//! The file-state store: which files were discovered, with which sequence number, and whether
//! their batch was committed.
//!
//! One SQLite database (`files.db`, WAL journal, `synchronous=FULL`) in the connector's state
//! directory inside the checkpoint; in memory when the run has no checkpoint. Every discovered
//! file gets the next sequence number (`seq`) and is written in one transaction before the source
//! hands out an offset that covers it, so a replayed range `[start, end)` always names the same
//! files. A path already known is never queued again, unless `cloudFiles.allowOverwrites` is set
//! and its modification time changed (then it is queued again under a new `seq`).
//!
//! With `cloudFiles.maxFileAge`, entries of committed files whose modification time is older
//! than the age are deleted at each commit ([`FileStateStore::expire`]), so the state stays
//! bounded by the files of the last `maxFileAge`: the listing ignores files that old, so a
//! forgotten file is never queued again (a new version, with a new modification time, is a new
//! file). The next sequence number is kept in `meta` so it never goes back.
//!
//! Memory does not grow with the number of tracked files: nothing of the state is loaded at
//! open, and a listing is checked against it chunk by chunk ([`sift`]): each chunk, sorted by
//! path, is merged with one range scan of the `files_by_path` index, so a second run over
//! millions of tracked files reads the index once, in order, as the listing walks the tree.
//!
//! The database is the queryable file state of the stream ([`read_file_state`], reported by
//! `tributary state <checkpoint>` through [`crate::state_report`]), in the manner of Auto
//! Loader's `cloud_files_state`.

use std::path::Path;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use tributary_sdk::{Error, ErrorCode, Result};

use crate::error::state_err;

mod sift;

/// The database file name inside the state directory.
pub const STATE_DB: &str = "files.db";

/// One row of the file state: a file and the sequence number it was queued under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStateEntry {
    /// Absolute path of the file.
    pub path: String,
    /// Size in bytes at discovery.
    pub size: u64,
    /// Modification time at discovery, milliseconds since the epoch.
    pub modification_time_ms: i64,
    /// When the file was discovered, milliseconds since the epoch.
    pub discovery_time_ms: i64,
    /// The sequence number; offsets are ranges of these.
    pub seq: u64,
    /// When the batch that read the file was committed (by the source).
    pub commit_time_ms: Option<i64>,
    /// When `cloudFiles.cleanSource` deleted or moved the file (or found it gone or replaced).
    pub cleaned_time_ms: Option<i64>,
}

/// A file as listed, before it has a sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    /// Absolute path of the file.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, milliseconds since the epoch.
    pub modification_time_ms: i64,
}

/// A queued file: what `read` needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedFile {
    /// Sequence number.
    pub seq: u64,
    /// Absolute path.
    pub path: String,
    /// Size in bytes at discovery.
    pub size: u64,
    /// Modification time at discovery (ms).
    pub modification_time_ms: i64,
}

/// The SQLite-backed store.
#[derive(Debug)]
pub struct FileStateStore {
    conn: Connection,
    next_seq: u64,
    /// Rows in `files`.
    rows: u64,
    /// The database file, named in errors (`None` in memory).
    location: Option<std::path::PathBuf>,
}

/// `meta` key: the next sequence number, kept when expiry deletes the newest entries.
const NEXT_SEQ: &str = "next_seq";
/// `meta` key: the number of rows in `files`, kept in the transaction that changes it (a
/// `COUNT(*)` at every open would read the whole table).
const ROWS: &str = "rows";

const SCHEMA_SQL: &str = "
CREATE TABLE IF NOT EXISTS files (
    seq INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms INTEGER NOT NULL,
    discovery_ms INTEGER NOT NULL,
    committed INTEGER NOT NULL DEFAULT 0,
    commit_ms INTEGER
);
CREATE INDEX IF NOT EXISTS files_by_path ON files(path, seq, mtime_ms);
DROP INDEX IF EXISTS files_path;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

impl FileStateStore {
    /// Opens (creating if needed) the store in `state_dir`, or an in-memory store.
    pub fn open(state_dir: Option<&Path>) -> Result<FileStateStore> {
        let conn = match state_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| {
                    Error::new(
                        ErrorCode::Checkpoint,
                        format!(
                            "cannot create the files source state directory {}",
                            dir.display()
                        ),
                    )
                    .with_context("path", dir.display())
                    .with_cause(e)
                })?;
                let db = dir.join(STATE_DB);
                let conn = Connection::open(&db)
                    .map_err(state_err(format!("cannot open {}", db.display())))?;
                conn.pragma_update(None, "journal_mode", "WAL")
                    .map_err(state_err("cannot enable the WAL journal"))?;
                conn.pragma_update(None, "synchronous", "FULL")
                    .map_err(state_err("cannot set synchronous=FULL"))?;
                conn
            }
            None => Connection::open_in_memory().map_err(state_err("cannot open in memory"))?,
        };
        conn.execute_batch(SCHEMA_SQL)
            .map_err(state_err("cannot create the tables"))?;
        // Checkpoints written before cleanSource existed lack the column.
        if !has_cleaned_column(&conn)? {
            conn.execute_batch("ALTER TABLE files ADD COLUMN cleaned_ms INTEGER")
                .map_err(state_err("cannot add the cleaned_ms column"))?;
        }
        // `cleanable` runs at every commit with cleanSource on: only the files still waiting
        // are indexed, so it does not scan every file ever ingested.
        conn.execute_batch(
            "CREATE INDEX IF NOT EXISTS files_to_clean ON files(commit_ms) \
             WHERE committed = 1 AND cleaned_ms IS NULL",
        )
        .map_err(state_err("cannot create the clean-up index"))?;
        let max_seq: Option<i64> = conn
            .query_row("SELECT MAX(seq) FROM files", [], |r| r.get(0))
            .map_err(state_err("cannot read the last sequence number"))?;
        let mut next_seq = max_seq.map_or(0, |m| m as u64 + 1);
        let kept: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [NEXT_SEQ], |r| {
                r.get(0)
            })
            .optional()
            .map_err(state_err("cannot read the next sequence number"))?;
        if let Some(kept) = kept.and_then(|v| v.parse::<u64>().ok()) {
            next_seq = next_seq.max(kept);
        }
        let counted: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [ROWS], |r| {
                r.get(0)
            })
            .optional()
            .map_err(state_err("cannot read the row count"))?;
        let count = match counted.and_then(|v| v.parse::<u64>().ok()) {
            Some(n) => n,
            // A store written before the count was kept (or a new one): counted once.
            None => {
                let n: i64 = conn
                    .query_row("SELECT COUNT(*) FROM files", [], |r| r.get(0))
                    .map_err(state_err("cannot count the file state"))?;
                set_meta(&conn, ROWS, &n.to_string())?;
                n as u64
            }
        };
        Ok(FileStateStore {
            conn,
            next_seq,
            rows: count,
            location: state_dir.map(|d| d.join(STATE_DB)),
        })
    }

    /// Names the database file in a file-state error (a full disk, a damaged file), so the
    /// user knows which file system or file is the cause; other errors pass unchanged.
    pub fn locate(&self, e: Error) -> Error {
        match &self.location {
            Some(db) if e.code() == ErrorCode::Checkpoint && e.context_value("path").is_none() => e
                .prefixed(format!("{}", db.display()))
                .with_context("path", db.display()),
            _ => e,
        }
    }

    /// True when `path` was queued before (one index lookup).
    #[cfg(test)]
    pub fn is_known(&self, path: &str) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM files WHERE path = ?1 LIMIT 1")
            .and_then(|mut stmt| stmt.exists([path]))
            .map_err(state_err(format!("cannot look up {path}")))
    }

    /// The sequence number the next new file will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// A metadata value (`identity`, ...).
    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(state_err(format!("cannot read meta '{key}'")))
    }

    /// Sets a metadata value.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        set_meta(&self.conn, key, value)
    }

    /// Queues the files of one listing that are new (or, with `allow_overwrites`, whose
    /// modification time changed), ordered by modification time then path, in one transaction.
    /// Returns how many were queued.
    pub fn record_listing(
        &mut self,
        listed: Vec<ListedFile>,
        allow_overwrites: bool,
        now_ms: i64,
    ) -> Result<usize> {
        let sifted = self.sift(listed, allow_overwrites)?;
        self.queue(sifted.fresh, now_ms)
    }

    /// Queues `fresh` (files [`FileStateStore::sift`] found new), ordered by modification time
    /// then path, in one transaction; a path given twice is queued once (its newest version).
    /// Returns how many were queued.
    pub fn queue(&mut self, mut fresh: Vec<ListedFile>, now_ms: i64) -> Result<usize> {
        fresh.sort_unstable_by(|a, b| {
            (&a.path, b.modification_time_ms).cmp(&(&b.path, a.modification_time_ms))
        });
        fresh.dedup_by(|later, first| later.path == first.path);
        if fresh.is_empty() {
            return Ok(0);
        }
        fresh.sort_by(|a, b| {
            (a.modification_time_ms, &a.path).cmp(&(b.modification_time_ms, &b.path))
        });
        let tx = self
            .conn
            .transaction()
            .map_err(state_err("cannot begin a transaction"))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO files(seq, path, size, mtime_ms, discovery_ms) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(state_err("cannot prepare the insert"))?;
            for (seq, f) in (self.next_seq..).zip(fresh.iter()) {
                stmt.execute(params![
                    seq as i64,
                    f.path,
                    f.size as i64,
                    f.modification_time_ms,
                    now_ms
                ])
                .map_err(state_err(format!("cannot record {}", f.path)))?;
            }
        }
        let rows = self.rows + fresh.len() as u64;
        set_meta(&tx, ROWS, &rows.to_string())?;
        tx.commit()
            .map_err(state_err("cannot commit the discovered files"))?;
        self.next_seq += fresh.len() as u64;
        self.rows = rows;
        Ok(fresh.len())
    }

    /// Entries in the file state.
    pub fn len(&self) -> u64 {
        self.rows
    }

    /// Indexes modification times, for [`FileStateStore::expire`].
    pub fn enable_expiry(&self) -> Result<()> {
        self.conn
            .execute_batch(
                "CREATE INDEX IF NOT EXISTS files_by_mtime ON files(mtime_ms) WHERE committed = 1",
            )
            .map_err(state_err("cannot create the expiry index"))
    }

    /// Deletes the entries of committed files modified before `cutoff_ms`
    /// (`cloudFiles.maxFileAge`), in one transaction; with `keep_uncleaned` those that
    /// `cloudFiles.cleanSource` has not handled yet stay. Returns how many went.
    pub fn expire(&mut self, cutoff_ms: i64, keep_uncleaned: bool) -> Result<usize> {
        let tx = self
            .conn
            .transaction()
            .map_err(state_err("cannot begin a transaction"))?;
        let removed = tx
            .execute(
                if keep_uncleaned {
                    "DELETE FROM files WHERE committed = 1 AND mtime_ms < ?1 \
                     AND cleaned_ms IS NOT NULL"
                } else {
                    "DELETE FROM files WHERE committed = 1 AND mtime_ms < ?1"
                },
                [cutoff_ms],
            )
            .map_err(state_err("cannot expire file-state entries"))?;
        if removed == 0 {
            return Ok(0);
        }
        set_meta(&tx, NEXT_SEQ, &self.next_seq.to_string())?;
        let rows = self.rows.saturating_sub(removed as u64);
        set_meta(&tx, ROWS, &rows.to_string())?;
        tx.commit().map_err(state_err("cannot commit the expiry"))?;
        self.rows = rows;
        Ok(removed)
    }

    /// Plans a batch: files with `seq >= start` (and `< cap`), in order, at most `max_files`,
    /// and about `max_bytes` (always at least one file). Returns the end offset (`start` when
    /// nothing is queued).
    pub fn plan(
        &self,
        start: u64,
        cap: Option<u64>,
        max_files: Option<u64>,
        max_bytes: Option<u64>,
    ) -> Result<u64> {
        let cap = cap.unwrap_or(u64::MAX).min(i64::MAX as u64) as i64;
        let limit = max_files.unwrap_or(u64::MAX).min(i64::MAX as u64) as i64;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, size FROM files WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(state_err("cannot plan a batch"))?;
        let mut rows = stmt
            .query(params![start.min(i64::MAX as u64) as i64, cap, limit])
            .map_err(state_err("cannot plan a batch"))?;
        let mut end = start;
        let mut bytes = 0u64;
        while let Some(row) = rows.next().map_err(state_err("cannot plan a batch"))? {
            let seq: i64 = row.get(0).map_err(state_err("cannot plan a batch"))?;
            let size: i64 = row.get(1).map_err(state_err("cannot plan a batch"))?;
            if let Some(max) = max_bytes {
                if end > start && bytes.saturating_add(size as u64) > max {
                    break;
                }
            }
            bytes = bytes.saturating_add(size as u64);
            end = seq as u64 + 1;
        }
        Ok(end)
    }

    /// The files with `seq` in `[start, end)`, in seq order. Fails when the store does not know
    /// all of them (the state directory was lost or belongs to another checkpoint).
    pub fn files_in(&self, start: u64, end: u64) -> Result<Vec<QueuedFile>> {
        if end <= start {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, path, size, mtime_ms FROM files WHERE seq >= ?1 AND seq < ?2 ORDER BY seq",
            )
            .map_err(state_err("cannot look up a batch's files"))?;
        let files = stmt
            .query_map(params![start as i64, end as i64], |r| {
                Ok(QueuedFile {
                    seq: r.get::<_, i64>(0)? as u64,
                    path: r.get(1)?,
                    size: r.get::<_, i64>(2)? as u64,
                    modification_time_ms: r.get(3)?,
                })
            })
            .map_err(state_err("cannot look up a batch's files"))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(state_err("cannot look up a batch's files"))?;
        if (files.len() as u64) != end - start {
            return Err(Error::new(
                ErrorCode::Checkpoint,
                format!(
                    "the file state store knows {} of the {} files in offset range [{start}, {end}); \
                     its state directory was removed or belongs to another checkpoint",
                    files.len(),
                    end - start
                ),
            )
            .with_context("offset", format!("{start}..{end}")));
        }
        Ok(files)
    }

    /// Files and bytes queued at or after `from` (not yet planned).
    pub fn outstanding(&self, from: u64) -> Result<(u64, u64)> {
        self.conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE seq >= ?1",
                [from.min(i64::MAX as u64) as i64],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .map_err(state_err("cannot count outstanding files"))
    }

    /// Marks every file below `end` committed, with `now_ms` as commit time.
    pub fn commit(&mut self, end: u64, now_ms: i64) -> Result<usize> {
        self.conn
            .execute(
                "UPDATE files SET committed = 1, commit_ms = ?2 WHERE seq < ?1 AND committed = 0",
                params![end.min(i64::MAX as u64) as i64, now_ms],
            )
            .map_err(state_err("cannot mark files committed"))
    }

    /// Committed files not cleaned yet whose batch committed at or before `committed_by_ms`,
    /// oldest commit first (the order lets SQLite read them from the `files_to_clean` index).
    pub fn cleanable(&self, committed_by_ms: i64) -> Result<Vec<QueuedFile>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT seq, path, size, mtime_ms FROM files \
                 WHERE committed = 1 AND cleaned_ms IS NULL AND commit_ms <= ?1 \
                 ORDER BY commit_ms, seq",
            )
            .map_err(state_err("cannot list the files to clean"))?;
        let rows = stmt
            .query_map([committed_by_ms], |r| {
                Ok(QueuedFile {
                    seq: r.get::<_, i64>(0)? as u64,
                    path: r.get(1)?,
                    size: r.get::<_, i64>(2)? as u64,
                    modification_time_ms: r.get(3)?,
                })
            })
            .map_err(state_err("cannot list the files to clean"))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(state_err("cannot list the files to clean"))
    }

    /// Records that the clean-up of entry `seq` is done.
    pub fn mark_cleaned(&self, seq: u64, now_ms: i64) -> Result<()> {
        self.conn
            .execute(
                "UPDATE files SET cleaned_ms = ?2 WHERE seq = ?1",
                params![seq as i64, now_ms],
            )
            .map(|_| ())
            .map_err(state_err("cannot mark a file cleaned"))
    }

    /// Every entry, in seq order.
    #[cfg(test)]
    pub fn entries(&self) -> Result<Vec<FileStateEntry>> {
        entries(&self.conn)
    }
}

fn set_meta(conn: &Connection, key: &str, value: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta(key, value) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    )
    .and_then(|mut stmt| stmt.execute([key, value]))
    .map(|_| ())
    .map_err(state_err(format!("cannot write meta '{key}'")))
}

fn has_cleaned_column(conn: &Connection) -> Result<bool> {
    conn.query_row(
        "SELECT COUNT(*) FROM pragma_table_info('files') WHERE name = 'cleaned_ms'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(state_err("cannot read the files table's columns"))
}

fn entries(conn: &Connection) -> Result<Vec<FileStateEntry>> {
    // A read-only view of an old checkpoint has no cleaned_ms column.
    let cleaned = if has_cleaned_column(conn)? {
        "cleaned_ms"
    } else {
        "NULL"
    };
    let mut stmt = conn
        .prepare(&format!(
            "SELECT path, size, mtime_ms, discovery_ms, seq, commit_ms, {cleaned} \
             FROM files ORDER BY seq"
        ))
        .map_err(state_err("cannot list the file state"))?;
    let rows = stmt
        .query_map([], |r| {
            Ok(FileStateEntry {
                path: r.get(0)?,
                size: r.get::<_, i64>(1)? as u64,
                modification_time_ms: r.get(2)?,
                discovery_time_ms: r.get(3)?,
                seq: r.get::<_, i64>(4)? as u64,
                commit_time_ms: r.get(5)?,
                cleaned_time_ms: r.get(6)?,
            })
        })
        .map_err(state_err("cannot list the file state"))?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(state_err("cannot list the file state"))
}

/// Reads the file state of a stream from its state directory, read-only (safe while the stream
/// runs: SQLite's WAL lets readers and the writer work at once).
pub(crate) fn read_file_state(state_dir: &Path) -> Result<Vec<FileStateEntry>> {
    let db = state_dir.join(STATE_DB);
    if !db.is_file() {
        return Err(Error::new(
            ErrorCode::Checkpoint,
            format!(
                "no file state at {}: the directory is not a files source's state directory",
                db.display()
            ),
        )
        .with_context("path", db.display()));
    }
    let conn = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(state_err(format!("cannot open {}", db.display())))?;
    entries(&conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, size: u64, mtime: i64) -> ListedFile {
        ListedFile {
            path: path.into(),
            size,
            modification_time_ms: mtime,
        }
    }

    #[test]
    fn new_files_get_consecutive_seqs_in_mtime_order_and_are_never_requeued() {
        let mut s = FileStateStore::open(None).unwrap();
        let n = s
            .record_listing(
                vec![f("/b", 1, 20), f("/a", 1, 10), f("/c", 1, 20)],
                false,
                99,
            )
            .unwrap();
        assert_eq!(n, 3);
        let e = s.entries().unwrap();
        let order: Vec<_> = e.iter().map(|e| (e.seq, e.path.as_str())).collect();
        assert_eq!(order, vec![(0, "/a"), (1, "/b"), (2, "/c")]);
        // Same listing, even with a changed mtime: nothing new without allowOverwrites.
        assert_eq!(
            s.record_listing(vec![f("/a", 5, 11), f("/b", 1, 20)], false, 100)
                .unwrap(),
            0
        );
        // With allowOverwrites the changed file is queued again under a new seq.
        assert_eq!(
            s.record_listing(vec![f("/a", 5, 11), f("/b", 1, 20)], true, 100)
                .unwrap(),
            1
        );
        assert_eq!(s.next_seq(), 4);
        assert_eq!(s.files_in(3, 4).unwrap()[0].path, "/a");
    }

    #[test]
    fn a_path_listed_twice_in_one_call_is_queued_once() {
        let mut s = FileStateStore::open(None).unwrap();
        let n = s
            .record_listing(vec![f("/a", 1, 10), f("/b", 1, 5), f("/a", 2, 12)], true, 0)
            .unwrap();
        assert_eq!(n, 2);
        let e = s.entries().unwrap();
        assert_eq!(
            (e[1].path.as_str(), e[1].size),
            ("/a", 2),
            "the newest version"
        );
    }

    #[test]
    fn plan_honours_hard_file_limit_and_soft_byte_limit() {
        let mut s = FileStateStore::open(None).unwrap();
        let files = (0..10).map(|i| f(&format!("/f{i:02}"), 100, i)).collect();
        s.record_listing(files, false, 0).unwrap();
        assert_eq!(s.plan(0, None, Some(3), None).unwrap(), 3);
        assert_eq!(s.plan(3, None, Some(3), None).unwrap(), 6);
        assert_eq!(s.plan(9, None, Some(3), None).unwrap(), 10);
        assert_eq!(
            s.plan(10, None, Some(3), None).unwrap(),
            10,
            "nothing new: start"
        );
        assert_eq!(s.plan(0, None, None, Some(250)).unwrap(), 2);
        assert_eq!(
            s.plan(0, None, None, Some(1)).unwrap(),
            1,
            "soft: at least one file"
        );
        assert_eq!(
            s.plan(0, Some(4), None, None).unwrap(),
            4,
            "capped by a snapshot"
        );
        assert_eq!(s.outstanding(6).unwrap(), (4, 400));
    }

    #[test]
    fn missing_range_is_a_checkpoint_error() {
        let s = FileStateStore::open(None).unwrap();
        let e = s.files_in(0, 2).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Checkpoint);
    }

    #[test]
    fn state_survives_reopen_and_reads_back_read_only() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut s = FileStateStore::open(Some(dir.path())).unwrap();
            s.record_listing(vec![f("/a", 3, 1), f("/b", 4, 2)], false, 7)
                .unwrap();
            s.commit(1, 42).unwrap();
        }
        let s = FileStateStore::open(Some(dir.path())).unwrap();
        assert_eq!(s.next_seq(), 2);
        let e = read_file_state(dir.path()).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].commit_time_ms, Some(42));
        assert!(e[1].commit_time_ms.is_none());
        assert_eq!((e[0].modification_time_ms, e[0].discovery_time_ms), (1, 7));
        assert!(read_file_state(&dir.path().join("nope")).is_err());
    }

    #[test]
    fn max_file_age_keeps_the_state_bounded_while_old_files_keep_arriving() {
        // 90 simulated days; each day 200 new files and 50 late ones modified 30 days earlier
        // (older than maxFileAge = 14 days, so the listing ignores them, as Discovery does).
        const DAY: i64 = 86_400_000;
        let age = 14 * DAY;
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStateStore::open(Some(dir.path())).unwrap();
        s.enable_expiry().unwrap();
        let mut without = 0u64;
        let mut peak = 0u64;
        println!("day  listed  queued  tracked(maxFileAge=14d)  tracked(no expiry)");
        for day in 1..=90i64 {
            let now = day * DAY;
            let mut listed: Vec<ListedFile> = (0..200)
                .map(|i| f(&format!("/in/d{day}/new{i}"), 10, now - i))
                .collect();
            listed
                .extend((0..50).map(|i| f(&format!("/in/d{day}/late{i}"), 10, now - 30 * DAY - i)));
            let n_listed = listed.len();
            listed.retain(|f| f.modification_time_ms >= now - age);
            let queued = s.record_listing(listed, false, now).unwrap();
            without += 200;
            s.commit(s.next_seq(), now).unwrap();
            s.expire(now - age, false).unwrap();
            peak = peak.max(s.len());
            if day % 10 == 0 || day == 1 {
                println!(
                    "{day:>3}  {n_listed:>6}  {queued:>6}  {:>23}  {without:>18}",
                    s.len()
                );
            }
        }
        // The last 14 days of 200 files (and the one file exactly at the cut-off), whatever
        // the run's length; without expiry 18,000.
        assert_eq!(s.len(), 14 * 200 + 1);
        assert_eq!(peak, 14 * 200 + 1);
        assert_eq!(s.next_seq(), 90 * 200, "sequence numbers never go back");
        // Reopened: the same bound, the next sequence number kept in meta.
        drop(s);
        let s = FileStateStore::open(Some(dir.path())).unwrap();
        assert_eq!((s.len(), s.next_seq()), (2801, 18_000));
    }

    #[test]
    fn expiry_forgets_only_committed_old_entries_and_keeps_newer_versions() {
        let mut s = FileStateStore::open(None).unwrap();
        s.record_listing(
            vec![f("/a", 1, 10), f("/b", 1, 20), f("/c", 1, 30)],
            false,
            0,
        )
        .unwrap();
        s.commit(2, 40).unwrap();
        // /c is older than the cut-off but not committed: it stays (its batch may replay).
        assert_eq!(s.expire(100, false).unwrap(), 2);
        assert!(!s.is_known("/a").unwrap() && s.is_known("/c").unwrap());
        assert_eq!(s.files_in(2, 3).unwrap()[0].path, "/c");
        // A newer version of /c (allowOverwrites) survives the expiry of the old one.
        s.record_listing(vec![f("/c", 1, 500)], true, 0).unwrap();
        s.commit(4, 600).unwrap();
        assert_eq!(s.expire(100, false).unwrap(), 1);
        assert!(s.is_known("/c").unwrap());
        assert_eq!(s.len(), 1);
        // With cleanSource on, an entry not cleaned yet stays.
        s.record_listing(vec![f("/d", 1, 50)], false, 0).unwrap();
        s.commit(5, 700).unwrap();
        assert_eq!(s.expire(1000, true).unwrap(), 0);
        s.mark_cleaned(4, 800).unwrap();
        assert_eq!(s.expire(1000, true).unwrap(), 1);
    }
}
