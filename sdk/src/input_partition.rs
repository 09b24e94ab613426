//! Input partitions: one planned range split into pieces that other processes read.
//!
//! A pipeline whose batches outgrow one machine runs the heavy part of each batch on a
//! distributed engine (`[engine] kind = "ballista"`). The driver still plans every batch
//! ([`crate::Source::latest_offset`]) and writes it to the offset log; then, as Spark's driver
//! hands offset ranges to executors, it asks the source to split the range:
//!
//! 1. [`crate::Source::plan_partitions`] (driver) splits `[start, end)` into
//!    [`InputPartition`]s: Kafka per topic-partition offset range (split further by
//!    `minPartitions`), files per group of files, Kinesis per shard range. The split is
//!    deterministic: the same range planned again (a replay) gives the same partitions.
//! 2. [`crate::Source::read_partition`] (executor) reads one partition. The executor builds the
//!    source itself from the connector's name and the pipeline's options, so secrets never
//!    travel inside a plan: an option holding `{{secrets/scope/key}}` is resolved by the
//!    executor's own secret store.
//!
//! The records of all partitions of a range are exactly the records [`crate::Source::read_stream`]
//! yields for it (the conformance suite checks this). A source that does not opt in returns
//! `None` from `plan_partitions`, and its batches are read on the driver as before.

/// One serialisable piece of a planned range.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InputPartition {
    /// Position in the batch's plan, from 0.
    pub index: usize,
    /// What it reads, for progress events and errors (`orders-3 [100, 200)`, `4 files`).
    pub label: String,
    /// The connector's own description of the piece (never a secret); only the connector that
    /// planned it reads it.
    pub spec: serde_json::Value,
    /// Records the partition holds when the source knows it in advance (Kafka offsets).
    pub expected_records: Option<u64>,
}

impl InputPartition {
    /// A partition with no record count known in advance.
    pub fn new(index: usize, label: impl Into<String>, spec: serde_json::Value) -> Self {
        InputPartition {
            index,
            label: label.into(),
            spec,
            expected_records: None,
        }
    }

    /// Decodes the connector's spec, naming the partition when it does not parse.
    pub fn decode_spec<T: serde::de::DeserializeOwned>(
        &self,
        connector: &str,
    ) -> crate::error::Result<T> {
        serde_json::from_value(self.spec.clone()).map_err(|e| {
            crate::error::Error::new(
                crate::error::ErrorCode::Internal,
                format!(
                    "input partition {} ({}) is not a {connector} partition: {e}",
                    self.index, self.label
                ),
            )
        })
    }
}
