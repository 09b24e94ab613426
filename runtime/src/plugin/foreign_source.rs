//! A plugin's source seen from the host: an ordinary `SourceFactory` and `Box<dyn Source>`.
//!
//! [`ForeignSourceFactory`] builds sources through the plugin's `create_source`; each
//! [`ForeignSource`] forwards every `Source` method through the [`FfiSource`] function table.
//! Offsets, limits, identities and metrics cross as JSON; batches as Arrow C structures.
//! The schema, identity and default read limit are fixed when the source is built. When the
//! plugin exports the streaming extension and the built source streams, it is also a
//! `StreamingSource` (see [`crate::plugin::foreign_streaming`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_sdk::plugin::abi::{FFI_ArrowSchema, FfiBytes, FfiSlice, FfiSource, KIND_SOURCE};
use tributary_sdk::plugin::batches::{empty_batches, import_batches, import_schema};
use tributary_sdk::{
    batch_stream, BatchStream, ConnectorContext, Error, ErrorCode, Offset, OptionSpec, Options,
    PreparedSource, ReadLimit, RealTimeSupport, Result, Source, SourceDescription, SourceFactory,
    SourceIdentity, SourceMetrics, StreamingSource,
};

use crate::plugin::call::{blocking, ManifestRef, PluginShared, StreamingRef};

/// Builds sources of one plugin connector.
pub struct ForeignSourceFactory {
    pub(crate) plugin: Arc<PluginShared>,
    pub(crate) manifest: ManifestRef,
    pub(crate) name: String,
    pub(crate) options: Vec<OptionSpec>,
}

impl fmt::Debug for ForeignSourceFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForeignSourceFactory")
            .field("name", &self.name)
            .field("plugin", &self.plugin.name)
            .field("file", &self.plugin.file)
            .finish()
    }
}

impl SourceFactory for ForeignSourceFactory {
    fn name(&self) -> &str {
        &self.name
    }

    fn options(&self) -> Vec<OptionSpec> {
        self.options.clone()
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSource>> {
        let bytes = self
            .plugin
            .validate(&self.manifest, KIND_SOURCE, &self.name, options)?;
        if bytes.is_empty() {
            return Err(Error::new(
                ErrorCode::Plugin,
                format!(
                    "plugin '{}' ({}) does not describe its source '{}' (it was built with an \
                     older tributary-sdk); rebuild it against tributary-sdk {}",
                    self.plugin.name,
                    self.plugin.file.display(),
                    self.name,
                    tributary_sdk::SDK_VERSION
                ),
            )
            .with_context("plugin", &self.plugin.name));
        }
        let mut description: SourceDescription = self.plugin.json("source description", &bytes)?;
        // The plugin's own answer holds only when its streaming extension was found: without
        // it the host cannot stream the source, and real-time mode is refused at `check` with
        // the reason.
        if let Err(why) = &self.plugin.streaming {
            description.real_time = RealTimeSupport::Unsupported {
                reason: format!(
                    "plugin '{}' ({}) {why}",
                    self.plugin.name,
                    self.plugin.file.display()
                ),
            };
        }
        Ok(Box::new(PreparedForeignSource {
            plugin: self.plugin.clone(),
            manifest: self.manifest,
            name: self.name.clone(),
            options: options.clone(),
            description,
        }))
    }
}

/// A plugin source whose options the plugin checked, with the description it answered.
struct PreparedForeignSource {
    plugin: Arc<PluginShared>,
    manifest: ManifestRef,
    name: String,
    options: Options,
    description: SourceDescription,
}

impl fmt::Debug for PreparedForeignSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedForeignSource")
            .field("name", &self.name)
            .field("plugin", &self.plugin.name)
            .field("options", &self.options)
            .field("description", &self.description)
            .finish()
    }
}

impl PreparedSource for PreparedForeignSource {
    fn description(&self) -> &SourceDescription {
        &self.description
    }

    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        let handle = self.plugin.create_table(
            self.manifest.get().create_source,
            "source",
            &self.name,
            &self.options,
            context,
            |table| SourceHandle { table },
            |h| h.table.version,
        )?;
        ForeignSource::build(self.plugin.clone(), self.name.clone(), handle)
    }
}

/// The plugin's source table; released when the last reference goes.
pub(crate) struct SourceHandle {
    pub(crate) table: FfiSource,
}

impl Drop for SourceHandle {
    fn drop(&mut self) {
        // SAFETY: the table came from the plugin's create_source and is released once.
        unsafe { (self.table.release)(&mut self.table) };
    }
}

/// A source living in a plugin, used like any other `Source`.
pub struct ForeignSource {
    pub(crate) plugin: Arc<PluginShared>,
    connector: String,
    pub(crate) handle: Arc<Mutex<SourceHandle>>,
    pub(crate) schema: SchemaRef,
    identity: SourceIdentity,
    read_limit: ReadLimit,
    /// The streaming extension, when the plugin has one and this source streams.
    pub(crate) streaming: Option<StreamingRef>,
    /// The running streaming read's pump (see [`crate::plugin::foreign_streaming`]).
    pub(crate) pump: Option<Pump>,
}

impl Drop for ForeignSource {
    fn drop(&mut self) {
        if let Some(p) = &self.pump {
            p.stop();
        }
    }
}

impl ForeignSource {
    fn build(
        plugin: Arc<PluginShared>,
        connector: String,
        mut handle: SourceHandle,
    ) -> Result<Box<dyn Source>> {
        let t = &mut handle.table;
        let mut schema = FFI_ArrowSchema::empty();
        let mut out = FfiBytes::empty();
        // SAFETY: a live table; out-parameters are filled by the plugin.
        let status = unsafe { (t.schema)(t, &mut schema, &mut out) };
        unsafe { plugin.finish(status, &mut out) }?;
        let schema = import_schema(&schema)?;
        // SAFETY: as above.
        let status = unsafe { (t.identity)(t, &mut out) };
        let bytes = unsafe { plugin.finish(status, &mut out) }?;
        let identity: SourceIdentity = plugin.json("source identity", &bytes)?;
        // SAFETY: as above.
        let status = unsafe { (t.default_read_limit)(t, &mut out) };
        let bytes = unsafe { plugin.finish(status, &mut out) }?;
        let read_limit: ReadLimit = plugin.json("read limit", &bytes)?;
        let streaming = match plugin.streaming {
            // SAFETY: a live table of the plugin whose extension this is.
            Ok(table) if unsafe { (table.get().source_streams)(t) } == 1 => Some(table),
            _ => None,
        };
        Ok(Box::new(ForeignSource {
            plugin,
            connector,
            handle: Arc::new(Mutex::new(handle)),
            schema,
            identity,
            read_limit,
            streaming,
            pump: None,
        }))
    }

    /// Runs a JSON-returning call of the table on the blocking pool.
    async fn json_call(
        &self,
        call: &'static str,
        f: impl FnOnce(&mut FfiSource, &mut FfiBytes) -> i32 + Send + 'static,
    ) -> Result<Vec<u8>> {
        let plugin = self.plugin.clone();
        blocking(&self.handle, call, move |h| {
            let mut out = FfiBytes::empty();
            let status = f(&mut h.table, &mut out);
            // SAFETY: `out` was filled by the plugin.
            unsafe { plugin.finish(status, &mut out) }
        })
        .await
    }
}

#[async_trait]
impl Source for ForeignSource {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn identity(&self) -> SourceIdentity {
        self.identity.clone()
    }

    fn default_read_limit(&self) -> ReadLimit {
        self.read_limit.clone()
    }

    async fn initial_offset(&mut self) -> Result<Offset> {
        // SAFETY (all calls below): the table is alive while the handle is, and the handle's
        // lock serialises calls; arguments are owned by the closure for the whole call.
        let bytes = self
            .json_call("initial_offset", |t, out| unsafe {
                (t.initial_offset)(t, out)
            })
            .await?;
        self.plugin.json("offset", &bytes)
    }

    async fn prepare_available_now(&mut self) -> Result<()> {
        self.json_call("prepare_available_now", |t, out| unsafe {
            (t.prepare_available_now)(t, out)
        })
        .await
        .map(|_| ())
    }

    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        let start = start.to_json_string();
        let limit = serde_json::to_string(limit)
            .map_err(|e| Error::new(ErrorCode::Internal, "read limit").with_cause(e))?;
        let bytes = self
            .json_call("latest_offset", move |t, out| unsafe {
                (t.latest_offset)(t, FfiSlice::text(&start), FfiSlice::text(&limit), out)
            })
            .await?;
        self.plugin.json("offset", &bytes)
    }

    /// ABI v1 has one read call, which returns the range's batches at once; the host yields
    /// them as a stream (a plugin's range is bounded by what the plugin holds in memory).
    async fn read_stream<'a>(
        &'a mut self,
        start: &Offset,
        end: &Offset,
    ) -> Result<BatchStream<'a>> {
        let start = start.to_json_string();
        let end = end.to_json_string();
        let plugin = self.plugin.clone();
        let schema = self.schema.clone();
        let batches = blocking(&self.handle, "read", move |h| {
            let t = &mut h.table;
            let mut list = empty_batches();
            let mut err = FfiBytes::empty();
            // SAFETY: see above; `list` and `err` are filled by the plugin.
            let status = unsafe {
                (t.read)(
                    t,
                    FfiSlice::text(&start),
                    FfiSlice::text(&end),
                    &mut list,
                    &mut err,
                )
            };
            // SAFETY: `err` was filled by the plugin.
            unsafe { plugin.finish(status, &mut err) }?;
            // SAFETY: on success `list` holds batches exported by the plugin.
            unsafe { import_batches(&mut list, Some(&schema)) }
        })
        .await?;
        Ok(batch_stream(batches))
    }

    async fn commit(&mut self, end: &Offset) -> Result<()> {
        let end = end.to_json_string();
        self.json_call("commit", move |t, out| unsafe {
            (t.commit)(t, FfiSlice::text(&end), out)
        })
        .await
        .map(|_| ())
    }

    fn metrics(&self) -> SourceMetrics {
        let guard = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        let t = &guard.table;
        let mut out = FfiBytes::empty();
        // SAFETY: see above.
        let status = unsafe { (t.metrics)(t, &mut out) };
        let result = unsafe { self.plugin.finish(status, &mut out) }
            .and_then(|b| self.plugin.json::<SourceMetrics>("metrics", &b));
        match result {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(plugin = %self.plugin.name, "plugin metrics unavailable: {e}");
                SourceMetrics::new()
            }
        }
    }

    async fn stop(&mut self) -> Result<()> {
        self.json_call("stop", |t, out| unsafe { (t.stop)(t, out) })
            .await
            .map(|_| ())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSource> {
        if self.streaming.is_some() {
            Some(self)
        } else {
            None
        }
    }
}

impl fmt::Debug for ForeignSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = match self.handle.try_lock() {
            Ok(guard) => {
                let t = &guard.table;
                let mut out = FfiBytes::empty();
                // SAFETY: see above.
                let status = unsafe { (t.debug)(t, &mut out) };
                match unsafe { self.plugin.finish(status, &mut out) } {
                    Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                    Err(e) => format!("<{}>", e.code()),
                }
            }
            Err(_) => "<busy>".to_string(),
        };
        f.debug_struct("ForeignSource")
            .field("plugin", &self.plugin.name)
            .field("connector", &self.connector)
            .field("inner", &format_args!("{inner}"))
            .finish()
    }
}

/// The running pump of a foreign source's streaming read.
pub(crate) struct Pump {
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) task: JoinHandle<()>,
}

impl Pump {
    /// Asks the pump to end after its current call.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
