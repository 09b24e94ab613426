//! Plugin loading: connectors from shared libraries, used like built-in ones.
//!
//! A plugin is a `cdylib` built with `tributary_sdk::export_plugin!` (see
//! `docs/writing-a-connector.md`). The host finds libraries in a pipeline's `plugin_path` and in
//! `TRIBUTARY_PLUGIN_PATH` ([`search_path`], [`discover`]), checks the ABI version before any
//! other call ([`load`]), and wraps each connector in an ordinary `SourceFactory` / `SinkFactory`
//! whose sources and sinks are `Box<dyn Source>` / `Box<dyn Sink>` — the engine and the
//! conformance suite cannot tell a plugin from a built-in connector.
//!
//! Calls into a plugin run on tokio's blocking pool (the plugin blocks on its own runtime).
//! A panic inside a plugin comes back as an `INTERNAL_ERROR` naming the plugin and the call;
//! only that pipeline fails and the connector refuses further calls.
//!
//! ```no_run
//! use tributary_runtime::plugin;
//! use tributary_runtime::registry::Registry;
//!
//! # fn main() -> tributary_sdk::Result<()> {
//! let mut registry = Registry::builtin();
//! for p in plugin::discover(&plugin::search_path(&[]))? {
//!     p.register_into(&mut registry)?;
//! }
//! # Ok(()) }
//! ```

mod call;
mod foreign_function;
mod foreign_sink;
mod foreign_source;
mod foreign_streaming;
mod format;
mod loader;
pub(crate) mod manifest;
pub(crate) mod precheck;

pub use foreign_function::{ForeignFunction, FunctionInfo};
pub use foreign_sink::{ForeignSink, ForeignSinkFactory};
pub use foreign_source::{ForeignSource, ForeignSourceFactory};
pub use format::{inspect, inspect_json, plugins_list_table};
pub use loader::{
    candidates, discover, load, plugin_path_from_env, scan, search_path, LoadedPlugin,
    PLUGIN_PATH_ENV,
};
pub use manifest::{ConnectorInfo, PluginManifest};
