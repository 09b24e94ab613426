//! Named streams: a feature-store style entity `catalog.schema.stream` = a source (the topics
//! or streams of a connector that can back a stream) + a connection + key/payload schemas + an
//! ingestion (Delta) table, with an optional one-time backfill. The host names no connector:
//! what a stream needs from its source connector comes from the connector's
//! [`tributary_sdk::StreamBinding`].
//!
//! - [`catalog`]: the embedded catalog (get / list / delete, the warehouse of tables,
//!   the pipelines' checkpoints); `create.rs`: `Catalog::create`, the spec checked against the
//!   registry and the pipeline it compiles to before it is stored.
//! - [`spec`]: the stream spec file and its validation; [`name`]: three-part names;
//!   [`binding`]: the spec bound to its connector's stream binding.
//! - [`pipeline`]: a stream's ingestion pipeline as an ordinary pipeline spec;
//!   [`ingest`]: the stage that shapes records into the ingestion table's columns.
//! - [`runner`]: `streams run` (one stream, or all in one process, one task each);
//!   [`serve`]: `streams serve`, which keeps every stream of a catalog running (starts new
//!   ones, restarts failed ones with back-off, stops deleted ones).
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
pub mod binding;
pub mod catalog;
pub mod cli;
mod create;
pub mod ingest;
pub mod name;
pub mod pipeline;
pub mod runner;
pub mod serve;
pub mod spec;
pub mod view;

use crate::registry::Registry;

/// The built-in registry plus what streams need: the `stream_ingestion` stage (knowing the
/// stream bindings of the registry's sources) and, in a build with the `delta` feature, the
/// `delta` sink when the registry lacks it.
pub fn stream_registry() -> Registry {
    let mut r = Registry::builtin();
    #[cfg(feature = "delta")]
    if r.sink(pipeline::SINK).is_err() {
        r.add_sink(Arc::new(tributary_sinks::DeltaSinkFactory));
    }
    let stage = ingest::IngestionStageFactory::new(&r);
    r.add_stage(Arc::new(stage));
    r
}
