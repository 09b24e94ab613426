//! Checking a chunk of a listing against the file state without holding the state in memory.
//!
//! The chunk is sorted by path (byte order, SQLite's `BINARY` collation) and merged with one
//! range scan of the `files_by_path` index over `[first path, last path]`. A listing that walks
//! the tree in path order (the local walk, and every object store, which lists keys in
//! lexical order) hands over chunks whose ranges do not overlap, so a whole listing reads each
//! index entry once, in order: the cost is the listing's length, the memory one chunk.

use rusqlite::types::Type;

use super::{FileStateStore, ListedFile};
use crate::error::state_err;
use tributary_sdk::Result;

/// What [`FileStateStore::sift`] found in one chunk of a listing.
#[derive(Debug, Default)]
pub(crate) struct Sifted {
    /// The files to queue: paths the state does not know and, with `allow_overwrites`, known
    /// paths whose latest entry has another modification time. A path given twice in the chunk
    /// appears once, with its newest modification time.
    pub fresh: Vec<ListedFile>,
    /// The greatest path of the chunk that the state knew (for `useIncrementalListing=auto`).
    pub max_known: Option<String>,
    /// The least path of the chunk that the state did not know.
    pub min_new: Option<String>,
}

impl FileStateStore {
    /// Sorts `chunk` by path and splits it against the file state (see [`Sifted`]).
    pub(crate) fn sift(
        &self,
        mut chunk: Vec<ListedFile>,
        allow_overwrites: bool,
    ) -> Result<Sifted> {
        // Newest version of each path first, then one per path.
        chunk.sort_unstable_by(|a, b| {
            (&a.path, b.modification_time_ms).cmp(&(&b.path, a.modification_time_ms))
        });
        chunk.dedup_by(|later, first| later.path == first.path);
        let mut out = Sifted::default();
        let (Some(first), Some(last)) = (chunk.first(), chunk.last()) else {
            return Ok(out);
        };
        // The latest entry's modification time of each path of the chunk the state knows.
        let mut known: Vec<Option<i64>> = vec![None; chunk.len()];
        {
            let fail = || state_err("cannot check a listing against the file state");
            let mut stmt = self
                .conn
                .prepare_cached(
                    "SELECT path, mtime_ms FROM files WHERE path >= ?1 AND path <= ?2 \
                     ORDER BY path, seq",
                )
                .map_err(fail())?;
            let mut rows = stmt
                .query([first.path.as_str(), last.path.as_str()])
                .map_err(fail())?;
            let mut i = 0;
            while let Some(row) = rows.next().map_err(fail())? {
                let path = row
                    .get_ref(0)
                    .and_then(|v| {
                        v.as_str().map_err(|e| {
                            rusqlite::Error::FromSqlConversionFailure(0, Type::Text, Box::new(e))
                        })
                    })
                    .map_err(fail())?;
                while i < chunk.len() && chunk[i].path.as_str() < path {
                    i += 1;
                }
                if i == chunk.len() {
                    break;
                }
                if chunk[i].path == path {
                    // Rows of one path come in seq order: the last is the latest entry.
                    known[i] = Some(row.get(1).map_err(fail())?);
                }
            }
        }
        let mut last_known: Option<ListedFile> = None;
        for (file, known) in chunk.into_iter().zip(known) {
            match known {
                None => {
                    if out.min_new.is_none() {
                        out.min_new = Some(file.path.clone());
                    }
                    out.fresh.push(file);
                }
                Some(mtime) if allow_overwrites && mtime != file.modification_time_ms => {
                    out.max_known = Some(file.path.clone());
                    last_known = None;
                    out.fresh.push(file);
                }
                Some(_) => last_known = Some(file),
            }
        }
        if let Some(file) = last_known {
            out.max_known = Some(file.path);
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn f(path: &str, mtime: i64) -> ListedFile {
        ListedFile {
            path: path.into(),
            size: 1,
            modification_time_ms: mtime,
        }
    }

    fn paths(files: &[ListedFile]) -> Vec<&str> {
        files.iter().map(|f| f.path.as_str()).collect()
    }

    #[test]
    fn a_chunk_is_merged_with_the_known_paths_in_its_range() {
        let mut s = FileStateStore::open(None).unwrap();
        s.record_listing(vec![f("/d/b", 1), f("/d/d", 1), f("/z", 1)], false, 0)
            .unwrap();
        let sifted = s
            .sift(
                vec![f("/d/e", 2), f("/d/b", 1), f("/d/a", 2), f("/d/d", 1)],
                false,
            )
            .unwrap();
        assert_eq!(paths(&sifted.fresh), ["/d/a", "/d/e"]);
        assert_eq!(sifted.max_known.as_deref(), Some("/d/d"));
        assert_eq!(sifted.min_new.as_deref(), Some("/d/a"));
        // Nothing known in range: everything is new.
        let sifted = s.sift(vec![f("/d/c", 1)], false).unwrap();
        assert_eq!(paths(&sifted.fresh), ["/d/c"]);
        assert_eq!(sifted.max_known, None);
    }

    #[test]
    fn the_latest_entry_of_a_path_decides_an_overwrite() {
        let mut s = FileStateStore::open(None).unwrap();
        s.record_listing(vec![f("/a", 1)], true, 0).unwrap();
        s.record_listing(vec![f("/a", 5)], true, 0).unwrap();
        assert_eq!(s.len(), 2);
        // The latest entry has mtime 5: the same version is not new, the first one is again.
        assert!(s.sift(vec![f("/a", 5)], true).unwrap().fresh.is_empty());
        assert_eq!(s.sift(vec![f("/a", 1)], true).unwrap().fresh.len(), 1);
        // Without allowOverwrites a known path is never new.
        assert!(s.sift(vec![f("/a", 9)], false).unwrap().fresh.is_empty());
    }

    #[test]
    fn a_path_twice_in_a_chunk_keeps_its_newest_version() {
        let s = FileStateStore::open(None).unwrap();
        let sifted = s.sift(vec![f("/a", 1), f("/a", 7)], false).unwrap();
        assert_eq!(sifted.fresh, vec![f("/a", 7)]);
    }

    #[test]
    fn paths_compare_as_bytes_like_sqlite() {
        // '/' sorts after '.', so "/d.json" comes before "/d/x": both orders must agree.
        let mut s = FileStateStore::open(None).unwrap();
        s.record_listing(vec![f("/d/x", 1), f("/d.json", 1)], false, 0)
            .unwrap();
        let sifted = s
            .sift(vec![f("/d/x", 1), f("/d.json", 1), f("/d/y", 1)], false)
            .unwrap();
        assert_eq!(paths(&sifted.fresh), ["/d/y"]);
    }
}
