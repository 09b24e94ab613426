//! A checkpoint that proves itself: the checks run before a pipeline resumes and by
//! `tributary checkpoint verify`.
//!
//! The runtime's own parts must agree with each other:
//!
//! - `metadata.json` (the checkpoint's identity, which the sinks record as their owner) exists
//!   whenever anything else does;
//! - `offsets/` and `commits/` exist beside it and hold only batch ids;
//! - the offsets log is continuous: ids `0..=n` without a hole, each entry's `batchId` is its
//!   file name, and each batch starts where the previous one ended;
//! - the commits log is the offsets log's prefix: commits `0..=c` without a hole, every commit
//!   has its range, and only the last logged batch may be uncommitted (a batch is planned only
//!   after the previous one committed).
//!
//! The connectors' parts are checked against the same logs by the connectors themselves
//! ([`tributary_sdk::SourceFactory::verify_state`] for a source's own state,
//! [`tributary_sdk::Sink::ledger`] for a sink's committed batches and owner), in
//! [`crate::core`]. Each finding names the damaged part; the error says what the user can do
//! instead of re-creating the part (which would re-read, and so duplicate, or skip rows).

use std::fmt;
use std::fs;
use std::path::Path;

use tributary_sdk::{Error, ErrorCode, LoggedBatch, Result, SinkLedger};

use super::{CommitEntry, OffsetEntry};

/// What the user can do about a damaged checkpoint.
pub const REMEDY: &str =
    "restore the checkpoint directory from a backup, or start over with a new \
     checkpoint location and a new, empty output (a new checkpoint alone would read everything \
     again into the old output)";

/// One damaged part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The part, as a path relative to the checkpoint (`offsets/3`, `metadata.json`) or a
    /// connector's name (`source 'files'`, `sink 'parquet'`).
    pub part: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.part, self.problem)
    }
}

/// What the logs of a checkpoint hold once checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogSummary {
    /// Whether `metadata.json` exists.
    pub has_metadata: bool,
    /// The last batch id in `offsets/`.
    pub last_planned: Option<u64>,
    /// The last batch id in `commits/`.
    pub last_committed: Option<u64>,
    /// The offsets log with each batch's commit state, as read by the inspection (complete
    /// only when nothing is damaged), so that nothing parses the log a second time.
    pub batches: Vec<LoggedBatch>,
}

/// The findings of one inspection.
#[derive(Debug, Clone, Default)]
pub struct Inspection {
    /// What the logs hold.
    pub logs: LogSummary,
    /// Every damaged part found, in the order checked.
    pub damages: Vec<Damage>,
}

impl Inspection {
    /// `Ok` when nothing is damaged, else one `CHECKPOINT_DAMAGED` error naming every damaged
    /// part (the first one in the message's head) and the remedy.
    pub fn into_result(self, dir: &Path) -> Result<LogSummary> {
        if self.damages.is_empty() {
            return Ok(self.logs);
        }
        Err(damaged(dir, &self.damages))
    }
}

/// The error for a damaged checkpoint.
pub fn damaged(dir: &Path, damages: &[Damage]) -> Error {
    let list: Vec<String> = damages.iter().map(|d| d.to_string()).collect();
    let mut e = Error::new(
        ErrorCode::CheckpointDamaged,
        format!(
            "checkpoint {} is damaged, so resuming would lose or duplicate rows: {}; {REMEDY}",
            dir.display(),
            list.join("; ")
        ),
    )
    .with_context("path", dir.display());
    if let Some(first) = damages.first() {
        e = e.with_context("part", &first.part);
    }
    e
}

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorCode::Checkpoint,
        format!("checkpoint: cannot read {}", path.display()),
    )
    .with_context("path", path.display())
    .with_cause(e)
}

/// The batch ids of one log directory; names that are not ids are findings (temporary files of
/// an interrupted atomic write, which start with `.`, are not).
fn log_ids(dir: &Path, sub: &str, damages: &mut Vec<Damage>) -> Result<Vec<u64>> {
    let p = dir.join(sub);
    let mut ids = Vec::new();
    for entry in fs::read_dir(&p).map_err(|e| io_err(&p, e))? {
        let entry = entry.map_err(|e| io_err(&p, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        match name.parse::<u64>() {
            Ok(id) if id.to_string() == name => ids.push(id),
            _ => damages.push(Damage {
                part: format!("{sub}/{name}"),
                problem: "is not a batch id (the log holds only files named 0, 1, 2, ...)".into(),
            }),
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// The first id missing from `0..=last` in a sorted list, if any.
fn first_hole(ids: &[u64]) -> Option<u64> {
    ids.iter()
        .enumerate()
        .find(|(i, id)| **id != *i as u64)
        .map(|(i, _)| i as u64)
}

fn read_entry<T: serde::de::DeserializeOwned>(
    dir: &Path,
    sub: &str,
    id: u64,
    damages: &mut Vec<Damage>,
) -> Result<Option<T>> {
    let p = dir.join(sub).join(id.to_string());
    let text = fs::read_to_string(&p).map_err(|e| io_err(&p, e))?;
    match serde_json::from_str(&text) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            damages.push(Damage {
                part: format!("{sub}/{id}"),
                problem: format!("cannot be parsed ({e})"),
            });
            Ok(None)
        }
    }
}

fn non_empty(p: &Path) -> bool {
    fs::read_dir(p)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
}

/// Inspects the runtime's parts of the checkpoint at `dir` without changing anything. A
/// directory that does not exist (or is empty) is a new checkpoint: nothing to check.
pub fn inspect(dir: &Path) -> Result<Inspection> {
    let mut out = Inspection::default();
    if !dir.exists() {
        return Ok(out);
    }
    let damages = &mut out.damages;
    let metadata = dir.join("metadata.json");
    out.logs.has_metadata = metadata.is_file();
    if out.logs.has_metadata {
        let text = fs::read_to_string(&metadata).map_err(|e| io_err(&metadata, e))?;
        if let Err(e) = serde_json::from_str::<super::CheckpointMetadata>(&text) {
            damages.push(Damage {
                part: "metadata.json".into(),
                problem: format!("cannot be parsed ({e})"),
            });
        }
    }
    let mut logs = Vec::new();
    for sub in ["offsets", "commits"] {
        if dir.join(sub).is_dir() {
            logs.push(log_ids(dir, sub, damages)?);
        } else {
            if out.logs.has_metadata {
                damages.push(Damage {
                    part: format!("{sub}/"),
                    problem: "is missing although metadata.json exists (it is created with the \
                              checkpoint)"
                        .into(),
                });
            }
            logs.push(Vec::new());
        }
    }
    let (offsets, commits) = (&logs[0], &logs[1]);
    if !out.logs.has_metadata && (!offsets.is_empty() || !commits.is_empty()) {
        damages.push(Damage {
            part: "metadata.json".into(),
            problem: format!(
                "is missing but the checkpoint logs {} batches: its identity, which the sinks \
                 record as the owner of their output, is lost",
                offsets.len().max(commits.len())
            ),
        });
    } else if !out.logs.has_metadata && non_empty(&dir.join("sources").join("0")) {
        damages.push(Damage {
            part: "metadata.json".into(),
            problem: "is missing but sources/0 holds the source's state".into(),
        });
    }
    out.logs.last_planned = offsets.last().copied();
    out.logs.last_committed = commits.last().copied();
    let entries = check_offsets(dir, offsets, damages)?;
    check_commits(dir, offsets, commits, damages)?;
    let committed: std::collections::BTreeSet<u64> = commits.iter().copied().collect();
    out.logs.batches = entries
        .into_iter()
        .map(|o| LoggedBatch {
            committed: committed.contains(&o.batch_id),
            batch_id: o.batch_id,
            start: o.start,
            end: o.end,
        })
        .collect();
    Ok(out)
}

/// Checks the offsets log and returns the entries it could parse, in batch order.
fn check_offsets(dir: &Path, ids: &[u64], damages: &mut Vec<Damage>) -> Result<Vec<OffsetEntry>> {
    let mut entries: Vec<OffsetEntry> = Vec::with_capacity(ids.len());
    if let Some(hole) = first_hole(ids) {
        damages.push(Damage {
            part: format!("offsets/{hole}"),
            problem: format!(
                "is missing: the offsets log holds batches up to {} with a hole",
                ids.last().copied().unwrap_or(0)
            ),
        });
    }
    // Whether the last entry of `entries` is the previous id's (no unparsable entry between).
    let mut follows = false;
    for &id in ids {
        let Some(entry) = read_entry::<OffsetEntry>(dir, "offsets", id, damages)? else {
            follows = false;
            continue;
        };
        if entry.batch_id != id {
            damages.push(Damage {
                part: format!("offsets/{id}"),
                problem: format!(
                    "records batchId {} (an entry was renamed or rewritten)",
                    entry.batch_id
                ),
            });
        }
        if let Some(prev) = entries.last().filter(|_| follows) {
            if prev.batch_id.checked_add(1) == Some(id) && prev.end != entry.start {
                damages.push(Damage {
                    part: format!("offsets/{id}"),
                    problem: format!(
                        "starts at {} but batch {} ended at {} (the log was edited)",
                        bounded(&entry.start.to_json_string()),
                        prev.batch_id,
                        bounded(&prev.end.to_json_string())
                    ),
                });
            }
        }
        follows = true;
        entries.push(entry);
    }
    Ok(entries)
}

fn check_commits(
    dir: &Path,
    offsets: &[u64],
    commits: &[u64],
    damages: &mut Vec<Damage>,
) -> Result<()> {
    if offsets.is_empty() && !commits.is_empty() {
        if damages.iter().any(|d| d.part == "offsets/") {
            return Ok(());
        }
        damages.push(Damage {
            part: "offsets/".into(),
            problem: format!(
                "is empty but commits/ holds {} committed batches: the offsets log was lost",
                commits.len()
            ),
        });
        return Ok(());
    }
    if let Some(hole) = first_hole(commits) {
        damages.push(Damage {
            part: format!("commits/{hole}"),
            problem: format!(
                "is missing: the commits log holds batches up to {} with a hole",
                commits.last().copied().unwrap_or(0)
            ),
        });
    }
    let planned: std::collections::BTreeSet<u64> = offsets.iter().copied().collect();
    for &id in commits {
        if !planned.contains(&id) {
            damages.push(Damage {
                part: format!("offsets/{id}"),
                problem: format!("is missing but commits/{id} records the batch as committed"),
            });
        }
        if let Some(entry) = read_entry::<CommitEntry>(dir, "commits", id, damages)? {
            if entry.batch_id != id {
                damages.push(Damage {
                    part: format!("commits/{id}"),
                    problem: format!(
                        "records batchId {} (an entry was renamed or rewritten)",
                        entry.batch_id
                    ),
                });
            }
        }
    }
    // Only the last planned batch may be uncommitted.
    if let Some(&last) = offsets.last() {
        let committed: std::collections::BTreeSet<u64> = commits.iter().copied().collect();
        if let Some(gap) = offsets
            .iter()
            .copied()
            .find(|id| *id < last && !committed.contains(id))
        {
            if first_hole(commits).is_none() {
                damages.push(Damage {
                    part: format!("commits/{gap}"),
                    problem: format!(
                        "is missing but later batches up to {last} are logged (a batch is planned \
                         only after the previous one committed)"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A sink's own record against the checkpoint: the output must be this checkpoint's (when the
/// sink names an owner) and hold no batch beyond the offsets log (a sink publishes batch `n`
/// only after `offsets/n` is written). `label` names the sink (`sink 'parquet'`).
pub fn check_sink(
    label: &str,
    checkpoint_id: &str,
    logs: &LogSummary,
    ledger: &SinkLedger,
) -> Option<Damage> {
    if let Some(owner) = &ledger.owner {
        if owner != checkpoint_id {
            return Some(Damage {
                part: label.to_string(),
                problem: format!(
                    "its output is written by checkpoint {owner}, not by this one ({checkpoint_id}): two checkpoints writing one output overwrite or duplicate each other's batches (give each pipeline its own output, or point this one at the checkpoint that owns it)"
                ),
            });
        }
    }
    let last = ledger.last_batch?;
    match logs.last_planned {
        None => Some(Damage {
            part: label.to_string(),
            problem: format!(
                "its output holds batches up to {last} but this checkpoint has logged none (the checkpoint was replaced, or lost its offsets log)"
            ),
        }),
        Some(planned) if last > planned => Some(Damage {
            part: label.to_string(),
            problem: format!(
                "its output holds batch {last} but the checkpoint's offsets log ends at batch {planned} (the log lost batches)"
            ),
        }),
        Some(_) => None,
    }
}

/// A position quoted in a finding: at most 200 characters.
fn bounded(text: &str) -> String {
    if text.chars().count() <= 200 {
        return text.to_string();
    }
    let head: String = text.chars().take(200).collect();
    format!("{head}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Checkpoint;
    use tributary_sdk::{Offset, SourceIdentity};

    fn off(n: u64) -> Offset {
        Offset::from_json(serde_json::json!({ "seq": n }))
    }

    /// A checkpoint with `n` committed batches and one planned.
    fn checkpoint(n: u64) -> (tempfile::TempDir, Checkpoint) {
        let dir = tempfile::tempdir().unwrap();
        let ck = Checkpoint::open(dir.path()).unwrap();
        ck.bind(&SourceIdentity {
            connector: "files".into(),
            target: "/in".into(),
        })
        .unwrap();
        for b in 0..n {
            ck.write_offsets(b, &off(b * 10), &off(b * 10 + 10))
                .unwrap();
            ck.write_commit(b, 10).unwrap();
        }
        ck.write_offsets(n, &off(n * 10), &off(n * 10 + 10))
            .unwrap();
        (dir, ck)
    }

    fn parts(dir: &Path) -> Vec<String> {
        inspect(dir)
            .unwrap()
            .damages
            .into_iter()
            .map(|d| d.part)
            .collect()
    }

    #[test]
    fn a_whole_checkpoint_has_no_findings() {
        let (dir, _) = checkpoint(3);
        let i = inspect(dir.path()).unwrap();
        assert!(i.damages.is_empty(), "{:?}", i.damages);
        assert_eq!(i.logs.last_planned, Some(3));
        assert_eq!(i.logs.last_committed, Some(2));
        assert!(inspect(&dir.path().join("absent"))
            .unwrap()
            .damages
            .is_empty());
    }

    #[test]
    fn a_lost_offsets_log_is_found() {
        let (dir, _) = checkpoint(3);
        std::fs::remove_dir_all(dir.path().join("offsets")).unwrap();
        assert_eq!(parts(dir.path()), vec!["offsets/"]);
        std::fs::create_dir(dir.path().join("offsets")).unwrap();
        assert_eq!(parts(dir.path()), vec!["offsets/"]);
        let e = inspect(dir.path())
            .unwrap()
            .into_result(dir.path())
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::CheckpointDamaged);
        assert!(e.message().contains("offsets log was lost"), "{e}");
        assert!(e.message().contains("new checkpoint location"), "{e}");
    }

    #[test]
    fn holes_renames_and_edits_are_found() {
        let (dir, _) = checkpoint(4);
        std::fs::remove_file(dir.path().join("offsets/1")).unwrap();
        assert_eq!(parts(dir.path()), vec!["offsets/1", "offsets/1"]);

        let (dir, _) = checkpoint(4);
        std::fs::remove_file(dir.path().join("commits/1")).unwrap();
        assert_eq!(parts(dir.path()), vec!["commits/1"]);

        let (dir, _) = checkpoint(2);
        let text = std::fs::read_to_string(dir.path().join("offsets/2")).unwrap();
        std::fs::write(dir.path().join("offsets/7"), text).unwrap();
        let found = inspect(dir.path()).unwrap().damages;
        assert!(found.iter().any(|d| d.part == "offsets/3"), "{found:?}");
        assert!(
            found
                .iter()
                .any(|d| d.part == "offsets/7" && d.problem.contains("batchId 2")),
            "{found:?}"
        );

        let (dir, _) = checkpoint(2);
        let edited = r#"{"batchId":1,"start":{"seq":999},"end":{"seq":1000},"timestampMs":0}"#;
        std::fs::write(dir.path().join("offsets/1"), edited).unwrap();
        assert_eq!(parts(dir.path()), vec!["offsets/1", "offsets/2"]);

        let (dir, _) = checkpoint(2);
        std::fs::write(dir.path().join("commits/notes.txt"), "x").unwrap();
        assert_eq!(parts(dir.path()), vec!["commits/notes.txt"]);
    }

    #[test]
    fn a_lost_identity_is_found() {
        let (dir, _) = checkpoint(2);
        std::fs::remove_file(dir.path().join("metadata.json")).unwrap();
        assert_eq!(parts(dir.path()), vec!["metadata.json"]);
        std::fs::write(dir.path().join("metadata.json"), "{").unwrap();
        assert_eq!(parts(dir.path()), vec!["metadata.json"]);
    }

    #[test]
    fn a_sink_ahead_of_the_log_or_of_another_checkpoint_is_found() {
        let logs = LogSummary {
            has_metadata: true,
            last_planned: Some(4),
            last_committed: Some(3),
            batches: Vec::new(),
        };
        let ledger = |owner: Option<&str>, last_batch| SinkLedger {
            owner: owner.map(str::to_string),
            last_batch,
        };
        assert_eq!(
            check_sink("s", "me", &logs, &ledger(Some("me"), Some(4))),
            None
        );
        assert_eq!(check_sink("s", "me", &logs, &ledger(None, Some(2))), None);
        assert_eq!(check_sink("s", "me", &logs, &ledger(None, None)), None);
        let other = check_sink("s", "me", &logs, &ledger(Some("them"), Some(1))).unwrap();
        assert!(other.problem.contains("checkpoint them"), "{other}");
        let ahead = check_sink("s", "me", &logs, &ledger(Some("me"), Some(5))).unwrap();
        assert!(ahead.problem.contains("ends at batch 4"), "{ahead}");
        let fresh = LogSummary::default();
        let replaced = check_sink("s", "me", &fresh, &ledger(None, Some(0))).unwrap();
        assert!(replaced.problem.contains("logged none"), "{replaced}");
    }

    #[test]
    fn a_commit_beyond_the_log_is_found() {
        let (dir, ck) = checkpoint(1);
        ck.write_commit(5, 1).unwrap();
        let found = parts(dir.path());
        assert!(found.contains(&"offsets/5".to_string()), "{found:?}");
        assert!(found.contains(&"commits/1".to_string()), "{found:?}");
    }
}
