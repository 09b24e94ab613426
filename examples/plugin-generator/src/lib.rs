//! # tributary-plugin-generator
//!
//! A connector written the way a third party would write one: it depends only on
//! `tributary-sdk`, implements the typed traits [`SourceConnector`](tributary_sdk::SourceConnector)
//! and [`SinkConnector`](tributary_sdk::SinkConnector) (the erased factories the host holds come
//! with them), and exports them as a Tributary plugin with [`tributary_sdk::export_plugin!`].
//! `docs/writing-a-connector.md` walks through it. Copy its layout: `config.rs` (options declared
//! once, parsed once), `source.rs`, `sink.rs`, and one file per further concept.
//!
//! - [`GeneratorSourceFactory`] (`generator`): a deterministic source. Row `i` is
//!   `{id: i, value: "row-i", partition: i % partitions}`; offsets are row positions
//!   (`{"rows": N}`), so reading a range twice yields the same rows. Options: `totalRows` or
//!   `controlFile` (a file saying which rows exist, read at every call: rows can be appended,
//!   trimmed — data loss under `failOnDataLoss` — or marked malformed — `mode`),
//!   `rowsPerBatch`, `maxRowsPerTrigger`, `startingOffsets`, `partitions`, `assign`. It also
//!   streams in real-time mode (`stream.rs`): rows reach the sinks as soon as they exist.
//! - [`JsonLinesSinkFactory`] (`jsonlines`): writes each micro-batch to `<path>/batch-<id>.jsonl`
//!   through a temporary file and a rename, so writing a batch id again replaces it (exactly-once
//!   with the runtime's checkpoint). In real-time mode it appends each acknowledged chunk to the
//!   running long batch's file and syncs it at the checkpoint.
//!
//! - [`MaskEmail`] (`mask_email(email)`): a SQL function for `[transform]`, exported with the
//!   functions extension: `alice@example.com` becomes `a***@example.com`.
//!
//! Build the plugin with `cargo build --release` and point the host at the directory holding
//! `libtributary_plugin_generator.so` (`plugin_path` in a pipeline file or
//! `TRIBUTARY_PLUGIN_PATH`). The host runs the conformance suite (`tributary-conformance`)
//! against it like against a built-in connector.
//!
//! ```
//! use tributary_plugin_generator::GeneratorSourceFactory;
//! use tributary_sdk::{ConnectorContext, Options, ReadLimit, SourceFactoryExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> tributary_sdk::Result<()> {
//! let options: Options = [("totalRows", "10"), ("rowsPerBatch", "4")].into_iter().collect();
//! // What the source reads is known before it is built: the host binds its checkpoint to it.
//! let description = GeneratorSourceFactory.describe(&options)?;
//! assert_eq!(description.identity.target, "rows:10");
//! let mut source = GeneratorSourceFactory.create(&options, &ConnectorContext::default())?;
//! let start = source.initial_offset().await?;
//! let end = source.latest_offset(&start, &ReadLimit::All).await?;
//! let batches = source.read(&start, &end).await?;
//! assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), vec![4, 4, 2]);
//! # Ok(()) }
//! ```

mod config;
pub mod control;
mod function;
mod rows;
mod sink;
mod source;
mod stream;

pub use config::{
    generator_options, jsonlines_options, GeneratorConfig, JsonLinesConfig, MalformedMode,
    RowSupply, MAX_PARTITIONS,
};
pub use control::Control;
pub use function::MaskEmail;
pub use rows::{row_schema, RowsOffset};
pub use sink::{JsonLinesSink, JsonLinesSinkFactory};
pub use source::{GeneratorSource, GeneratorSourceFactory};

#[cfg(all(
    not(feature = "no-entry"),
    not(feature = "bad-abi"),
    not(feature = "no-streaming")
))]
tributary_sdk::export_plugin! {
    name: "generator",
    version: env!("CARGO_PKG_VERSION"),
    sources: [GeneratorSourceFactory],
    sinks: [JsonLinesSinkFactory],
    functions: [MaskEmail],
}

// A build without the streaming extension, like a plugin built before it existed: the host
// must keep it micro-batch only and say why when a real-time pipeline asks for it.
#[cfg(all(
    not(feature = "no-entry"),
    not(feature = "bad-abi"),
    feature = "no-streaming"
))]
tributary_sdk::export_plugin! {
    @entry_only tributary_sdk::plugin::ABI_VERSION;
    name: "generator",
    version: env!("CARGO_PKG_VERSION"),
    sources: [GeneratorSourceFactory],
    sinks: [JsonLinesSinkFactory],
}

// A build that claims another ABI version, for the host's refusal test.
#[cfg(all(not(feature = "no-entry"), feature = "bad-abi"))]
tributary_sdk::export_plugin! {
    @abi_version 999;
    name: "generator",
    version: env!("CARGO_PKG_VERSION"),
    sources: [GeneratorSourceFactory],
    sinks: [JsonLinesSinkFactory],
}
