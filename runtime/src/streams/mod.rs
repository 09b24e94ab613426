//! Named streams: a feature-store style entity `catalog.schema.stream` = a source (Kafka topics
//! or Kinesis streams) + a connection + key/payload schemas + an ingestion (Delta) table, with
//! an optional one-time backfill.
//!
//! - [`catalog`]: the embedded catalog (create / get / list / delete, the warehouse of tables,
//!   the pipelines' checkpoints).
//! - [`spec`]: the stream spec file and its validation; [`name`]: three-part names.
//! - [`pipeline`]: a stream's ingestion pipeline as an ordinary pipeline spec;
//!   [`ingest`]: the stage that shapes records into the ingestion table's columns.
//! - [`runner`]: `streams run` (one stream, or all in one process, one task each).
//! - [`backfill`]: the backfill state machine and its overlap rule; the MERGE itself needs the
//!   `delta` feature.
//! - [`cli`]: the `tributary streams` subcommands.
//!
//! ```no_run
//! use tributary_runtime::streams::{catalog::{Catalog, ListRequest}, spec::StreamSpec};
//! # fn demo() -> tributary_sdk::Result<()> {
//! let catalog = Catalog::open("/tmp/tributary-catalog")?;
//! let entry = catalog.create(StreamSpec::load("orders.toml".as_ref())?)?;
//! println!("created {} ({})", entry.name, entry.id);
//! for s in catalog.list(&ListRequest { catalog: Some("main".into()), ..Default::default() })? {
//!     println!("{}", s.name);
//! }
//! let plan = catalog.delete("main.sales.orders", false)?; // says what it would delete
//! # Ok(()) }
//! ```

use std::sync::Arc;

pub mod backfill;
#[cfg(feature = "delta")]
pub mod backfill_merge;
pub mod catalog;
pub mod cli;
pub mod ingest;
pub mod name;
pub mod pipeline;
pub mod runner;
pub mod spec;
pub mod view;

use crate::registry::Registry;

/// The built-in registry plus what streams need: the `stream_ingestion` stage and, in a build
/// with the `delta` feature, the `delta` sink when the registry lacks it.
pub fn stream_registry() -> Registry {
    let mut r = Registry::builtin();
    r.add_stage(Arc::new(ingest::IngestionStageFactory));
    #[cfg(feature = "delta")]
    if r.sink(pipeline::SINK).is_err() {
        r.add_sink(Arc::new(tributary_sinks::DeltaSinkFactory));
    }
    r
}
