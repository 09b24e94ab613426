//! Restoring a version chunk by chunk ([`replay`]): the snapshot's and the deltas' record
//! batches handed over one at a time, in order, so a state that does not fit in memory (a
//! spilled one) is rebuilt without holding it whole.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use tributary_sdk::Result;

use super::catalog::{self, Place};
use super::{chain, marks, missing, same_query, Marks, SIGNATURE};

/// A chunk of one of the files a version is restored from.
pub(crate) enum Replayed {
    /// Rows of the snapshot the chain starts from.
    Snapshot(RecordBatch),
    /// Rows of a delta after it, in [`super::changelog::changes_schema`]: upserted rows and
    /// deleted keys, later rows over earlier ones.
    Delta(RecordBatch),
}

/// Hands version `version` of the state under `dir` to `apply`: its snapshot's chunks, then
/// each delta's, oldest first; every file is checked against the query's `signature` before
/// its rows. Returns the watermarks saved with `version`.
pub(crate) fn replay(
    dir: &Path,
    version: u64,
    signature: &str,
    apply: &mut dyn FnMut(Replayed) -> Result<()>,
) -> Result<Marks> {
    let mut chain = chain(dir, version)?.into_iter();
    let first = chain.next().ok_or_else(|| missing(dir, version))?;
    let mut metadata = each(dir, &first, signature, &mut |rows| {
        apply(Replayed::Snapshot(rows))
    })?;
    for place in chain {
        metadata = each(dir, &place, signature, &mut |rows| {
            apply(Replayed::Delta(rows))
        })?;
    }
    Ok(marks(&metadata))
}

/// Reads one version's record batches into `f`, after checking its signature; returns its
/// metadata.
fn each(
    dir: &Path,
    place: &Place,
    signature: &str,
    f: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<HashMap<String, String>> {
    let check = |metadata: &HashMap<String, String>| {
        same_query(
            metadata
                .get(SIGNATURE)
                .map(String::as_str)
                .unwrap_or_default(),
            signature,
        )
    };
    catalog::each(dir, place, &check, f).map(|(metadata, _)| metadata)
}
