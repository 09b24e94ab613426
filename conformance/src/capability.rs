//! Capabilities: what a fixture (and the connector behind it) can do.
//!
//! Every case declares the capabilities it needs; the runner skips a case whose capabilities the
//! fixture does not declare and reports the missing one as the reason. A connector never fails a
//! case for a feature it does not claim, and never passes one silently either.

use std::fmt;

use tributary_sdk::DataLossKind;

/// One thing a fixture and its connector can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Capability {
    /// Read a list of named targets (Kafka `subscribe`).
    SubscribeList,
    /// Read every target matching a pattern, including targets created later (`subscribePattern`).
    SubscribePattern,
    /// Read explicit partitions (`assign`) of a multi-partition target
    /// ([`crate::Fixture::create_partitioned_target`], [`crate::Fixture::produce_partitioned`]).
    Assign,
    /// Start a new query at the end of the data (`startingOffsets=latest`).
    StartingLatest,
    /// Records produced while a source runs become visible to it (and an `availableNow` run
    /// can be shown to stop at what existed when it was prepared).
    AppendWhileRunning,
    /// A per-trigger rate-limit option ([`crate::Fixture::rate_limit`]).
    RateLimit,
    /// The fixture can cause this kind of data loss ([`crate::Fixture::cause_data_loss`]).
    DataLoss(DataLossKind),
    /// The fixture can age out records while no source runs, as retention does
    /// ([`crate::Fixture::age_out`]), and the connector reports a committed position the system
    /// no longer holds as this kind (Kafka below the earliest offset, Kinesis older than the
    /// trim horizon).
    ResumeDataLoss(DataLossKind),
    /// Malformed records decode to null and are counted; `FAILFAST` stops.
    PermissiveDecoding,
    /// Enhanced fan-out consumers that the fixture can list.
    EfoConsumers,
    /// A real-time read ([`tributary_sdk::Source::as_streaming`]): chunks with positions that
    /// [`tributary_sdk::StreamingSource::end_offset`] turns into a replayable range.
    RealTime,
    /// Records carry metadata besides the payload (Kafka headers with `includeHeaders`, a file's
    /// `_metadata`, a Kinesis partition key) that the fixture can write and read back
    /// ([`crate::Fixture::produce_with_metadata`], [`crate::Fixture::metadata`]).
    Metadata,
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::DataLoss(k) => write!(f, "DataLoss({})", k.code()),
            Capability::ResumeDataLoss(k) => write!(f, "ResumeDataLoss({})", k.code()),
            other => write!(f, "{other:?}"),
        }
    }
}

/// The unit a rate-limit option counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitUnit {
    /// Records (`maxOffsetsPerTrigger`, `maxRowsPerTrigger`).
    Rows,
    /// Files (`cloudFiles.maxFilesPerTrigger`).
    Files,
}

/// A connector's rate-limit option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// The option name.
    pub option: String,
    /// What it counts.
    pub unit: LimitUnit,
}
