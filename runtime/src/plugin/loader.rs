//! Loading plugin libraries: the version handshake, then the manifest, then the factories.
//!
//! Order of checks, each refused with a message naming the file:
//! 0. before the library is mapped, the file itself (`precheck.rs`): its size, that it is a
//!    complete shared object of this host's format and architecture (a truncated file would
//!    kill the process with SIGBUS once mapped), and that it exports the entry symbol;
//! 1. the file loads as a shared library for this host (a library for another target fails here);
//! 2. it exports [`ENTRY_SYMBOL`] (a library that exports another generation of the entry symbol
//!    is named as such);
//! 3. the manifest's first field, the ABI version, equals [`ABI_VERSION`] — checked before any
//!    other field is read or any other call is made;
//! 4. the manifest's target equals the host's, and its contents parse;
//! 5. the optional streaming extension ([`STREAMING_SYMBOL`]): a table of
//!    [`STREAMING_VERSION`] lets the plugin's connectors run in real-time mode; no table, or a
//!    table of another version, keeps them micro-batch only (real-time pipelines are refused at
//!    `check` with that reason) — the plugin itself still loads;
//! 6. the optional functions extension (`FUNCTIONS_SYMBOL`): its scalar functions' signatures
//!    are read once; no table, or one of another version, loads the plugin without functions
//!    (`plugins inspect` says why), a malformed signature refuses the plugin.
//!
//! Loaded libraries are never unloaded: record batches a plugin produced point into its memory
//! and carry its release callbacks, so unloading could free code that live data still needs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use libloading::Library;
use tributary_sdk::plugin::abi::{
    EntryFn, FfiStreamingTable, ABI_VERSION, ENTRY_SYMBOL, ENTRY_SYMBOL_PREFIX, STREAMING_SYMBOL,
    STREAMING_VERSION,
};
use tributary_sdk::plugin::export::target;
use tributary_sdk::{ConnectorKind, Error, ErrorCode, Result, SinkFactory, SourceFactory};

use crate::plugin::call::{ManifestRef, PluginShared, StreamingRef};
use crate::plugin::foreign_function::{functions_table, read_functions, ForeignFunction};
use crate::plugin::foreign_sink::ForeignSinkFactory;
use crate::plugin::foreign_source::ForeignSourceFactory;
use crate::plugin::manifest::{bad, PluginManifest};
use crate::registry::Registry;

/// Libraries pinned for the life of the process (see the module docs).
static PINNED: Mutex<Vec<Arc<Library>>> = Mutex::new(Vec::new());

/// A plugin library that passed the handshake.
#[derive(Clone)]
pub struct LoadedPlugin {
    shared: Arc<PluginShared>,
    raw: ManifestRef,
    manifest: PluginManifest,
    functions: Vec<Arc<ForeignFunction>>,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("manifest", &self.manifest)
            .finish()
    }
}

impl LoadedPlugin {
    /// What the plugin declared.
    pub fn manifest(&self) -> &PluginManifest {
        &self.manifest
    }

    /// The library file.
    pub fn path(&self) -> &Path {
        &self.shared.file
    }

    /// Its sources, as ordinary factories.
    pub fn source_factories(&self) -> Vec<Arc<dyn SourceFactory>> {
        self.manifest
            .connectors_of(ConnectorKind::Source)
            .map(|c| {
                Arc::new(ForeignSourceFactory {
                    plugin: self.shared.clone(),
                    manifest: self.raw,
                    name: c.name.clone(),
                    options: c.options.clone(),
                }) as Arc<dyn SourceFactory>
            })
            .collect()
    }

    /// Its sinks, as ordinary factories.
    pub fn sink_factories(&self) -> Vec<Arc<dyn SinkFactory>> {
        self.manifest
            .connectors_of(ConnectorKind::Sink)
            .map(|c| {
                Arc::new(ForeignSinkFactory {
                    plugin: self.shared.clone(),
                    manifest: self.raw,
                    name: c.name.clone(),
                    options: c.options.clone(),
                }) as Arc<dyn SinkFactory>
            })
            .collect()
    }

    /// Its SQL functions (the functions extension), as ordinary scalar functions.
    pub fn functions(&self) -> Vec<Arc<dyn tributary_sdk::ScalarFunction>> {
        self.functions
            .iter()
            .map(|f| f.clone() as Arc<dyn tributary_sdk::ScalarFunction>)
            .collect()
    }

    /// Adds every connector of the plugin to a registry. A connector whose name the registry
    /// already has (a built-in connector, or one of a plugin registered before) is refused with
    /// both names, and nothing of this plugin is registered: a plugin never replaces a connector
    /// that pipelines already mean by that name.
    pub fn register_into(&self, registry: &mut Registry) -> Result<()> {
        for c in &self.manifest.connectors {
            let taken = match c.kind {
                ConnectorKind::Source => registry.has_source(&c.name),
                ConnectorKind::Sink => registry.has_sink(&c.name),
            };
            if taken {
                let kind = match c.kind {
                    ConnectorKind::Source => "source",
                    ConnectorKind::Sink => "sink",
                };
                return Err(bad(
                    self.path(),
                    &format!(
                        "plugin '{}' declares a {kind} named '{}', and '{}' is already a {kind} \
                         of this host (built in, or from another plugin): a plugin cannot replace \
                         it; rename the plugin's connector",
                        self.manifest.name, c.name, c.name
                    ),
                )
                .with_context("connector", &c.name));
            }
        }
        for f in &self.functions {
            if registry
                .function(tributary_sdk::ScalarFunction::name(f.as_ref()))
                .is_some()
            {
                let name = tributary_sdk::ScalarFunction::name(f.as_ref());
                return Err(bad(
                    self.path(),
                    &format!(
                        "plugin '{}' declares a function named '{name}', and '{name}' is already a function of this host (registered by the embedding program, or from another plugin): a plugin cannot replace it; rename the plugin's function",
                        self.manifest.name
                    ),
                )
                .with_context("function", name));
            }
        }
        for f in self.source_factories() {
            registry.add_source(f);
        }
        for f in self.sink_factories() {
            registry.add_sink(f);
        }
        for f in self.functions() {
            registry.add_function(f);
        }
        Ok(())
    }
}

/// Loads one plugin library and checks it (see the module docs for the order of checks).
pub fn load(path: &Path) -> Result<LoadedPlugin> {
    let file = path.to_path_buf();
    if !path.is_file() {
        return Err(bad(path, "no such file").with_context("path", path.display()));
    }
    crate::plugin::precheck::check_library(path)?;
    // SAFETY: loading a library runs its initialisers; plugins are trusted code the user chose
    // to load (by putting them on the plugin path).
    let library = unsafe { Library::new(path) }.map_err(|e| {
        bad(
            path,
            &format!(
                "it cannot be loaded as a shared library for this host ({}): {e}",
                target()
            ),
        )
    })?;
    let entry: EntryFn = {
        // SAFETY: the symbol's type is fixed by the ABI contract.
        let symbol = unsafe { library.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) };
        match symbol {
            Ok(s) => *s,
            Err(_) => return Err(missing_entry(path, &library)),
        }
    };
    // SAFETY: the entry symbol has the contract's signature; it catches its own panics.
    let manifest = unsafe { entry() };
    if manifest.is_null() {
        return Err(bad(
            path,
            "its entry symbol returned no manifest (the plugin failed to describe itself; see its \
             output on stderr)",
        ));
    }
    // SAFETY: every ABI generation keeps `abi_version: u32` as the manifest's first field, so this
    // read is valid whatever version the plugin was built for. Nothing else is read before the check.
    let abi_version = unsafe { std::ptr::read(manifest as *const u32) };
    if abi_version != ABI_VERSION {
        return Err(bad(
            path,
            &format!(
                "it was built for plugin ABI version {abi_version}, this host supports ABI version \
                 {ABI_VERSION}; rebuild it against tributary-sdk {}",
                tributary_sdk::SDK_VERSION
            ),
        )
        .with_context("expected", ABI_VERSION)
        .with_context("actual", abi_version));
    }
    // SAFETY: versions match, so the layout is ours; the manifest is static in the library.
    let info = unsafe { PluginManifest::read(file.clone(), &*manifest) }?;
    let host = target();
    if info.target != host {
        return Err(bad(
            path,
            &format!(
                "it was built for target {}, this host is {host}",
                info.target
            ),
        ));
    }
    let streaming = streaming_table(&library);
    if let Err(why) = &streaming {
        tracing::debug!(plugin = %info.name, "plugin is micro-batch only: {why}");
    }
    let table = functions_table(&library);
    let library = Arc::new(library);
    let mut info = info;
    let functions = match table {
        Ok(t) => read_functions(&info.name, t, &library)
            .map_err(|e| e.prefixed(path.display().to_string()))?,
        Err(why) => {
            info.functions_note = Some(why);
            Vec::new()
        }
    };
    info.functions = functions
        .iter()
        .map(|f| crate::plugin::foreign_function::FunctionInfo::of(f.as_ref()))
        .collect();
    PINNED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(library.clone());
    tracing::info!(plugin = %info.name, version = %info.version, file = %path.display(), "plugin loaded");
    Ok(LoadedPlugin {
        shared: Arc::new(PluginShared {
            name: info.name.clone(),
            file,
            _library: library,
            streaming,
        }),
        raw: ManifestRef(manifest),
        manifest: info,
        functions,
    })
}

/// The plugin's streaming extension, or why it has none (step 5 of the module docs).
fn streaming_table(library: &Library) -> std::result::Result<StreamingRef, String> {
    extension_table::<FfiStreamingTable>(
        library,
        STREAMING_SYMBOL,
        STREAMING_VERSION,
        "streaming",
        || {
            format!(
                "was built without the streaming extension (it does not export \
                 {STREAMING_SYMBOL}); rebuild it against tributary-sdk {} to run it in \
                 real-time mode",
                tributary_sdk::SDK_VERSION
            )
        },
        "returned no streaming table from its streaming extension",
    )
    .map(StreamingRef)
}

/// An optional extension's static table (steps 5 and 6 of the module docs): `symbol` looked
/// up and called, the table's first field (its version) checked against `version`. `Err` says
/// why the plugin has none: `missing()` when it lacks the symbol, `null` when the symbol
/// returned no table.
pub(crate) fn extension_table<T>(
    library: &Library,
    symbol: &str,
    version: u32,
    name: &str,
    missing: impl FnOnce() -> String,
    null: &str,
) -> std::result::Result<*const T, String> {
    // SAFETY: the symbol's type is fixed by the extension's contract.
    let entry =
        match unsafe { library.get::<unsafe extern "C" fn() -> *const T>(symbol.as_bytes()) } {
            Ok(s) => *s,
            Err(_) => return Err(missing()),
        };
    // SAFETY: the symbol has the extension's signature and only returns a static pointer.
    let table = unsafe { entry() };
    if table.is_null() {
        return Err(null.to_string());
    }
    // SAFETY: every version of an extension's table keeps `version: u32` as its first field.
    let found = unsafe { std::ptr::read(table as *const u32) };
    if found != version {
        return Err(format!(
            "has a {name} extension of version {found}, this host supports version \
             {version}; rebuild it against tributary-sdk {}",
            tributary_sdk::SDK_VERSION
        ));
    }
    Ok(table)
}

fn missing_entry(path: &Path, library: &Library) -> Error {
    let other = (0..=32u32).filter(|v| *v != 1).find(|v| {
        let name = format!("{ENTRY_SYMBOL_PREFIX}{v}");
        // SAFETY: only the symbol's presence is checked; it is never called.
        unsafe { library.get::<*const u8>(name.as_bytes()) }.is_ok()
    });
    match other {
        Some(v) => bad(
            path,
            &format!(
                "it exports {ENTRY_SYMBOL_PREFIX}{v} (a plugin for a different host generation), \
                 this host (plugin ABI version {ABI_VERSION}) needs {ENTRY_SYMBOL}"
            ),
        ),
        None => bad(
            path,
            &format!(
                "it does not export the symbol {ENTRY_SYMBOL}: it is not a Tributary plugin (plugins \
                 call tributary_sdk::export_plugin!; this host supports plugin ABI version {ABI_VERSION})"
            ),
        ),
    }
}

/// The environment variable listing plugin directories (`:`-separated, `;` on Windows).
pub const PLUGIN_PATH_ENV: &str = "TRIBUTARY_PLUGIN_PATH";

/// The directories in `TRIBUTARY_PLUGIN_PATH`.
pub fn plugin_path_from_env() -> Vec<PathBuf> {
    std::env::var_os(PLUGIN_PATH_ENV)
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// A pipeline's `plugin_path` followed by `TRIBUTARY_PLUGIN_PATH`, without duplicates.
pub fn search_path(pipeline_plugin_path: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in pipeline_plugin_path
        .iter()
        .cloned()
        .chain(plugin_path_from_env())
    {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Shared libraries directly inside the given directories (or the files themselves), sorted.
pub fn candidates(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let ext = std::env::consts::DLL_EXTENSION;
    let mut out = Vec::new();
    for dir in paths {
        if dir.is_file() {
            out.push(dir.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| {
            Error::new(
                ErrorCode::Plugin,
                format!("plugin directory {} cannot be read", dir.display()),
            )
            .with_context("path", dir.display())
            .with_cause(e)
        })?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
            .collect();
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// Loads every plugin found in `paths`, each result kept (for listings that show broken plugins).
pub fn scan(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Result<LoadedPlugin>)>> {
    Ok(candidates(paths)?
        .into_iter()
        .map(|p| {
            let r = load(&p);
            (p, r)
        })
        .collect())
}

/// Loads every plugin found in `paths`. Any plugin that fails the checks, or two plugins offering
/// a connector of the same kind and name, fail the whole discovery with the reason.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<LoadedPlugin>> {
    let mut loaded: Vec<LoadedPlugin> = Vec::new();
    for (_, r) in scan(paths)? {
        let plugin = r?;
        for c in &plugin.manifest.connectors {
            if let Some(other) = loaded.iter().find(|p| {
                p.manifest
                    .connectors
                    .iter()
                    .any(|o| o.kind == c.kind && o.name.eq_ignore_ascii_case(&c.name))
            }) {
                return Err(Error::new(
                    ErrorCode::Plugin,
                    format!(
                        "connector '{}' is offered by two plugins: {} and {}",
                        c.name,
                        other.path().display(),
                        plugin.path().display()
                    ),
                )
                .with_context("connector", &c.name));
            }
        }
        loaded.push(plugin);
    }
    Ok(loaded)
}
