//! The Delta sink (with its part writer and its staged write of distributed batches) and the
//! backfill MERGE, read back by an independent reader (Python `deltalake`; skipped with a note
//! when `scripts/services/registry-python.sh` has not run), and table maintenance (read back with
//! deltalake's own DataFusion reader).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod maintenance;
mod merge;
mod parts;
mod reader;
#[cfg(feature = "delta-s3")]
mod s3;
mod sink;
mod stager;
