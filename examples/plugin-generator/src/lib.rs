//! # tributary-plugin-generator
//!
//! A connector written the way a third party would write one: it depends only on
//! `tributary-sdk`, implements [`SourceFactory`](tributary_sdk::SourceFactory) and
//! [`SinkFactory`](tributary_sdk::SinkFactory), and exports them as a Tributary plugin with
//! [`tributary_sdk::export_plugin!`]. `docs/writing-a-connector.md` walks through it.
//!
//! - [`GeneratorSourceFactory`] (`generator`): a deterministic source. Row `i` is
//!   `{id: i, value: "row-i"}`; offsets are row counts (`{"rows": N}`), so reading a range twice
//!   yields the same rows. Options: `totalRows`, `rowsPerBatch`, `maxRowsPerTrigger`,
//!   `startingOffsets`.
//! - [`JsonLinesSinkFactory`] (`jsonlines`): writes each micro-batch to `<path>/batch-<id>.jsonl`
//!   through a temporary file and a rename, so writing a batch id again replaces it (exactly-once
//!   with the runtime's checkpoint).
//!
//! Build the plugin with `cargo build --release` and point the host at the directory holding
//! `libtributary_plugin_generator.so` (`plugin_path` in a pipeline file or
//! `TRIBUTARY_PLUGIN_PATH`).
//!
//! ```
//! use tributary_plugin_generator::GeneratorSourceFactory;
//! use tributary_sdk::{ConnectorContext, Options, ReadLimit, SourceFactory};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> tributary_sdk::Result<()> {
//! let options: Options = [("totalRows", "10"), ("rowsPerBatch", "4")].into_iter().collect();
//! let mut source = GeneratorSourceFactory.create(&options, &ConnectorContext::default())?;
//! let start = source.initial_offset().await?;
//! let end = source.latest_offset(&start, &ReadLimit::All).await?;
//! let batches = source.read(&start, &end).await?;
//! assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), vec![4, 4, 2]);
//! # Ok(()) }
//! ```

mod config;
mod sink;
mod source;

pub use config::{GeneratorConfig, JsonLinesConfig};
pub use sink::{JsonLinesSink, JsonLinesSinkFactory};
pub use source::{GeneratorSource, GeneratorSourceFactory, RowsOffset};

#[cfg(all(not(feature = "no-entry"), not(feature = "bad-abi")))]
tributary_sdk::export_plugin! {
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
