//! Input partitions of the files source (scale-out, see [`tributary_sdk::input_partition`]):
//! a planned range's files grouped into partitions on the driver, one group read on an executor.
//!
//! Planning packs files the way Spark's `FilePartition.getFilePartitions` does:
//! `maxSplitBytes = min(128 MiB, max(4 MiB, totalBytes / parallelism))`, where `totalBytes`
//! counts every file's size plus the 4 MiB open cost (`spark.sql.files.maxPartitionBytes`,
//! `spark.sql.files.openCostInBytes`); files are added to the current group until the next one
//! would take it over `maxSplitBytes`, each counting its size plus the open cost. A file is never
//! split (a JSON or CSV file is decoded from its start). Unlike Spark, which first sorts files
//! by size, the range's sequence order is kept: the partitions read in index order give exactly
//! the rows of [`tributary_sdk::Source::read`], in its order, and the same range and
//! parallelism always give the same partitions.
//!
//! A partition's spec ([`FilesPartitionSpec`]) holds everything an executor needs without the
//! checkpoint's file-state store: the files (path, size, modification time for `_metadata`) and
//! the stream's file columns as the driver knows them (an inferred or evolved schema lives in
//! the checkpoint, which executors do not have). The executor's source, built from the same
//! options with no state directory, reads them through the same path as `read`
//! ([`super::read::RangeReader`]): no listing, no notification queue, no clean-up.

use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, InputPartition, Result};

use super::FilesSource;
use crate::state::QueuedFile;
use crate::CONNECTOR;

/// Spark's `spark.sql.files.maxPartitionBytes` default: the largest group (unless one file is
/// larger).
pub(crate) const MAX_PARTITION_BYTES: u64 = 128 * 1024 * 1024;
/// Spark's `spark.sql.files.openCostInBytes` default: what opening a file costs, in bytes.
pub(crate) const OPEN_COST_BYTES: u64 = 4 * 1024 * 1024;

/// What one input partition of the files source reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FilesPartitionSpec {
    /// The source's target (its identity): an executor built from other options refuses it.
    pub target: String,
    /// The stream's file columns (without rescued data and `_metadata`) when the range was
    /// planned.
    pub file_schema: Schema,
    /// The stream's partition columns when the range was planned.
    #[serde(default)]
    pub partition_fields: Vec<arrow_schema::Field>,
    /// The files, in sequence order.
    pub files: Vec<PartitionFile>,
}

/// One file of a partition, as the file-state store queued it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PartitionFile {
    /// Sequence number (for errors and data-loss events).
    pub seq: u64,
    /// Absolute path or object URL (`_metadata.file_path`).
    pub path: String,
    /// Size in bytes at discovery (`_metadata.file_size`).
    pub size: u64,
    /// Modification time at discovery, ms (`_metadata.file_modification_time`).
    pub modification_time_ms: i64,
}

impl From<QueuedFile> for PartitionFile {
    fn from(f: QueuedFile) -> Self {
        PartitionFile {
            seq: f.seq,
            path: f.path,
            size: f.size,
            modification_time_ms: f.modification_time_ms,
        }
    }
}

impl From<PartitionFile> for QueuedFile {
    fn from(f: PartitionFile) -> Self {
        QueuedFile {
            seq: f.seq,
            path: f.path,
            size: f.size,
            modification_time_ms: f.modification_time_ms,
        }
    }
}

/// Spark's `maxSplitBytes` for files of these sizes over `parallelism` task slots (0 counts as
/// 1).
pub(crate) fn max_split_bytes(sizes: &[u64], parallelism: usize) -> u64 {
    let total = sizes.iter().fold(0u64, |acc, s| {
        acc.saturating_add(s.saturating_add(OPEN_COST_BYTES))
    });
    let per_slot = total / parallelism.max(1) as u64;
    MAX_PARTITION_BYTES.min(OPEN_COST_BYTES.max(per_slot))
}

/// Groups files of these sizes (in order) as Spark packs file partitions: the number of files
/// in each group, in order. No file is split; no group is empty.
pub(crate) fn pack(sizes: &[u64], parallelism: usize) -> Vec<usize> {
    let max_split = max_split_bytes(sizes, parallelism);
    let mut groups = Vec::new();
    let (mut current, mut bytes) = (0usize, 0u64);
    for &size in sizes {
        if current > 0 && bytes.saturating_add(size) > max_split {
            groups.push(current);
            (current, bytes) = (0, 0);
        }
        bytes = bytes.saturating_add(size.saturating_add(OPEN_COST_BYTES));
        current += 1;
    }
    if current > 0 {
        groups.push(current);
    }
    groups
}

/// `12.4 MiB`, `512 B`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `3 files, 12.4 MiB (first: s3://b/x.json)`.
fn label(files: &[PartitionFile]) -> String {
    let bytes = files.iter().fold(0u64, |acc, f| acc.saturating_add(f.size));
    let first = files.first().map(|f| f.path.as_str()).unwrap_or_default();
    let plural = if files.len() == 1 { "" } else { "s" };
    format!(
        "{} file{plural}, {} (first: {first})",
        files.len(),
        human_bytes(bytes)
    )
}

/// The input partitions of a range whose files are `files` (in sequence order).
pub(crate) fn plan(
    target: &str,
    file_schema: &Schema,
    partition_fields: &[arrow_schema::Field],
    files: Vec<QueuedFile>,
    parallelism: usize,
) -> Result<Vec<InputPartition>> {
    let sizes: Vec<u64> = files.iter().map(|f| f.size).collect();
    let mut files = files.into_iter().map(PartitionFile::from);
    let mut partitions = Vec::new();
    for (index, count) in pack(&sizes, parallelism).into_iter().enumerate() {
        let group: Vec<PartitionFile> = files.by_ref().take(count).collect();
        let label = label(&group);
        let spec = FilesPartitionSpec {
            target: target.to_string(),
            file_schema: file_schema.clone(),
            partition_fields: partition_fields.to_vec(),
            files: group,
        };
        let spec = serde_json::to_value(&spec).map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("cannot serialise files input partition {index} ({label})"),
            )
            .with_cause(e)
        })?;
        partitions.push(InputPartition::new(index, label, spec));
    }
    Ok(partitions)
}

impl FilesSource {
    /// The files of a partition planned by a files source with the same options; the source
    /// adopts the partition's file schema when its own differs (an inferred schema evolved in
    /// the driver's checkpoint).
    pub(super) fn partition_files(
        &mut self,
        partition: &InputPartition,
    ) -> Result<Vec<QueuedFile>> {
        let spec: FilesPartitionSpec = partition.decode_spec(CONNECTOR)?;
        if spec.target != self.identity.target {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "input partition {} ({}) was planned for '{}', but this files source reads \
                     '{}': the executor's options differ from the driver's",
                    partition.index, partition.label, spec.target, self.identity.target
                ),
            )
            .with_context("expected", &spec.target)
            .with_context("actual", &self.identity.target));
        }
        if spec.file_schema != *self.decode.file_schema || spec.partition_fields != self.partitions
        {
            let schema: SchemaRef = Arc::new(spec.file_schema);
            self.partitions = spec.partition_fields;
            self.use_file_schema(schema);
        }
        Ok(spec.files.into_iter().map(QueuedFile::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn small_files_follow_parallelism() {
        let sizes = vec![10_000; 10];
        assert_eq!(pack(&sizes, 1), vec![10]);
        // 10 x (4 MiB + 10 kB) over 4 slots: about 10 MiB per group, three files each.
        assert_eq!(pack(&sizes, 4), vec![3, 3, 3, 1]);
        assert_eq!(pack(&sizes, 0), vec![10]);
        assert_eq!(pack(&[], 4), Vec::<usize>::new());
    }

    #[test]
    fn large_files_are_capped_at_128_mib_and_never_split() {
        // 10 x 50 MiB on 2 slots: 270 MiB per slot, capped at 128 MiB: two files per group.
        assert_eq!(max_split_bytes(&[50 * MIB; 10], 2), MAX_PARTITION_BYTES);
        assert_eq!(pack(&[50 * MIB; 10], 2), vec![2; 5]);
        // A file larger than the cap is a group of its own.
        assert_eq!(pack(&[MIB, 300 * MIB, MIB], 1), vec![1, 1, 1]);
    }

    #[test]
    fn labels_name_count_size_and_first_file() {
        let f = |path: &str, size| PartitionFile {
            seq: 0,
            path: path.into(),
            size,
            modification_time_ms: 0,
        };
        assert_eq!(
            label(&[f("s3://b/x.json", 12 * MIB), f("s3://b/y.json", 419_431)]),
            "2 files, 12.4 MiB (first: s3://b/x.json)"
        );
        assert_eq!(
            label(&[f("/d/a.json", 512)]),
            "1 file, 512 B (first: /d/a.json)"
        );
    }
}
