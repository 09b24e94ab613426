//! [`describe`]: what the version a restart resumes from (the last committed batch's) of each
//! stateful operator holds (`tributary state --operators`), and [`stored_versions`]: which
//! versions are on disk.

use std::fs;
use std::path::{Path, PathBuf};

use tributary_sdk::Result;

use super::catalog::Catalog;
use super::{io, load_chain, SIGNATURE, WATERMARK};

/// What one version of one stateful operator's state holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorState {
    /// The stage's position in the pipeline's stage list (its directory name).
    pub stage: String,
    /// The operator, as progress events name it (`dedupe`, `dedupeWithinWatermark`,
    /// `stateStoreSave`).
    pub operator: String,
    /// The version (batch id) described: the one a restart resumes from.
    pub version: u64,
    /// Rows held (groups of an aggregation, keys of a deduplication).
    pub rows: u64,
    /// The state's size in memory, as Arrow holds it.
    pub bytes: u64,
    /// The eviction watermark the next batch uses (epoch milliseconds), when there is one.
    pub watermark_ms: Option<i64>,
    /// What the operator computes: grouping keys and aggregate functions, or the columns it
    /// deduplicates on.
    pub signature: String,
}

/// Every stateful operator under `dir` (`checkpoint/state`) as of `committed`, the last
/// committed batch (a version saved after it, by a batch whose commit never came, is not what
/// a restart resumes from), or as of the newest version on disk when `committed` is `None`; in
/// stage order and, within a stage, in the order rows meet them. An operator with no version
/// at or before `committed` is left out; empty when the pipeline keeps no state.
pub fn describe(dir: &Path, committed: Option<u64>) -> Result<Vec<OperatorState>> {
    let mut stages: Vec<(u64, PathBuf)> = Vec::new();
    match fs::read_dir(dir) {
        Ok(entries) => {
            for e in entries {
                let e = e.map_err(|e| io("list", dir, e))?;
                if let Ok(i) = e.file_name().to_string_lossy().parse::<u64>() {
                    stages.push((i, e.path()));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("list", dir, e)),
    }
    stages.sort();
    let mut out = Vec::new();
    let operators = stages
        .into_iter()
        .flat_map(|(i, path)| [(i, path.join("dedup")), (i, path)]);
    for (i, path) in operators {
        let catalog = Catalog::scan(&path)?;
        let version = match committed {
            Some(c) => catalog.newest_at_or_before(c),
            None => catalog.newest(),
        };
        let Some(version) = version else {
            continue;
        };
        let (state, metadata) = load_chain(&path, version, &|_| Ok(()))?;
        let signature = metadata.get(SIGNATURE).cloned().unwrap_or_default();
        let operator = if signature.starts_with("DEDUP WITHIN WATERMARK") {
            "dedupeWithinWatermark"
        } else if signature.starts_with("DEDUP") {
            "dedupe"
        } else {
            "stateStoreSave"
        };
        out.push(OperatorState {
            stage: i.to_string(),
            operator: operator.into(),
            version,
            rows: state.num_rows() as u64,
            bytes: state.get_array_memory_size() as u64,
            watermark_ms: metadata.get(WATERMARK).and_then(|w| w.parse().ok()),
            signature,
        });
    }
    Ok(out)
}

/// One version of one operator's state on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredVersion {
    /// The batch id.
    pub version: u64,
    /// Every row (`true`), or the rows the batch changed.
    pub snapshot: bool,
    /// In the state log (`true`), or a file of its own.
    pub in_log: bool,
}

/// The versions of one operator's state under `dir` (a stage's directory, or its `dedup`
/// one), ascending, each as the one that serves a restore is stored.
pub fn stored_versions(dir: &Path) -> Result<Vec<StoredVersion>> {
    let catalog = Catalog::scan(dir)?;
    Ok(catalog
        .kinds()
        .into_iter()
        .filter_map(|(version, kind)| {
            let (_, place) = catalog.place(dir, version)?;
            Some(StoredVersion {
                version,
                snapshot: kind == super::Stored::Snapshot,
                in_log: matches!(place, super::catalog::Place::Log(_)),
            })
        })
        .collect())
}
