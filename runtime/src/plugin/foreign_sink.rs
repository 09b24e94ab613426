//! A plugin's sink seen from the host: an ordinary `SinkFactory` and `Box<dyn Sink>`.
//!
//! Batches are exported through the Arrow C Data Interface without copying; the plugin moves
//! them out of the array the host lends for the call. When the plugin exports the streaming
//! extension and the built sink acknowledges records as they come, it is also a
//! `StreamingSink` (see [`crate::plugin::foreign_streaming`]).

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_sdk::plugin::abi::{FfiBatch, FfiBytes, FfiSink, KIND_SINK};
use tributary_sdk::plugin::batches::{export_batch, export_schema};
use tributary_sdk::{
    ConnectorContext, Delivery, OptionSpec, Options, PreparedSink, Result, Sink, SinkFactory,
    StreamingSink,
};

use crate::plugin::call::{blocking, ManifestRef, PluginShared, StreamingRef};

/// Builds sinks of one plugin connector.
pub struct ForeignSinkFactory {
    pub(crate) plugin: Arc<PluginShared>,
    pub(crate) manifest: ManifestRef,
    pub(crate) name: String,
    pub(crate) options: Vec<OptionSpec>,
}

impl fmt::Debug for ForeignSinkFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForeignSinkFactory")
            .field("name", &self.name)
            .field("plugin", &self.plugin.name)
            .field("file", &self.plugin.file)
            .finish()
    }
}

impl SinkFactory for ForeignSinkFactory {
    fn name(&self) -> &str {
        &self.name
    }

    fn options(&self) -> Vec<OptionSpec> {
        self.options.clone()
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSink>> {
        self.plugin
            .validate(&self.manifest, KIND_SINK, &self.name, options)?;
        Ok(Box::new(PreparedForeignSink {
            plugin: self.plugin.clone(),
            manifest: self.manifest,
            name: self.name.clone(),
            options: options.clone(),
        }))
    }
}

/// A plugin sink whose options the plugin checked.
struct PreparedForeignSink {
    plugin: Arc<PluginShared>,
    manifest: ManifestRef,
    name: String,
    options: Options,
}

impl fmt::Debug for PreparedForeignSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedForeignSink")
            .field("name", &self.name)
            .field("plugin", &self.plugin.name)
            .field("options", &self.options)
            .finish()
    }
}

impl PreparedSink for PreparedForeignSink {
    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        let handle = self.plugin.create_table(
            self.manifest.get().create_sink,
            "sink",
            &self.name,
            &self.options,
            context,
            |table| SinkHandle { table },
            |h| h.table.version,
        )?;
        let mut out = FfiBytes::empty();
        // SAFETY: a live table.
        let status = unsafe { (handle.table.delivery)(&handle.table, &mut out) };
        let bytes = unsafe { self.plugin.finish(status, &mut out) }?;
        let delivery: Delivery = self.plugin.json("delivery", &bytes)?;
        let mut handle = handle;
        let streaming = match self.plugin.streaming {
            // SAFETY: a live table of the plugin whose extension this is.
            Ok(table) if unsafe { (table.get().sink_streams)(&mut handle.table) } == 1 => {
                Some(table)
            }
            _ => None,
        };
        Ok(Box::new(ForeignSink {
            plugin: self.plugin.clone(),
            connector: self.name.clone(),
            handle: Arc::new(Mutex::new(handle)),
            delivery,
            streaming,
        }))
    }
}

pub(crate) struct SinkHandle {
    pub(crate) table: FfiSink,
}

impl Drop for SinkHandle {
    fn drop(&mut self) {
        // SAFETY: the table came from the plugin's create_sink and is released once.
        unsafe { (self.table.release)(&mut self.table) };
    }
}

/// A sink living in a plugin, used like any other `Sink`.
pub struct ForeignSink {
    pub(crate) plugin: Arc<PluginShared>,
    connector: String,
    pub(crate) handle: Arc<Mutex<SinkHandle>>,
    delivery: Delivery,
    /// The streaming extension, when the plugin has one and this sink acknowledges records.
    pub(crate) streaming: Option<StreamingRef>,
}

#[async_trait]
impl Sink for ForeignSink {
    fn delivery(&self) -> Delivery {
        self.delivery
    }

    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        let plugin = self.plugin.clone();
        blocking(&self.handle, "open", move |h| {
            let mut ffi = export_schema(&schema)?;
            let mut err = FfiBytes::empty();
            // SAFETY: a live table; the schema stays owned by us for the call.
            let status = unsafe { (h.table.open)(&mut h.table, &mut ffi, &mut err) };
            // SAFETY: `err` was filled by the plugin.
            unsafe { plugin.finish(status, &mut err) }.map(|_| ())
        })
        .await
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        let mut exported: Vec<FfiBatch> =
            batches.iter().map(export_batch).collect::<Result<_>>()?;
        let plugin = self.plugin.clone();
        blocking(&self.handle, "write", move |h| {
            let mut err = FfiBytes::empty();
            // SAFETY: a live table; the plugin moves every batch out of `exported` and leaves
            // released (empty) batches behind, which drop as no-ops.
            let status = unsafe {
                (h.table.write)(
                    &mut h.table,
                    batch_id,
                    exported.as_mut_ptr(),
                    exported.len(),
                    &mut err,
                )
            };
            drop(exported);
            // SAFETY: `err` was filled by the plugin.
            unsafe { plugin.finish(status, &mut err) }.map(|_| ())
        })
        .await
    }

    async fn stop(&mut self) -> Result<()> {
        let plugin = self.plugin.clone();
        blocking(&self.handle, "stop", move |h| {
            let mut err = FfiBytes::empty();
            // SAFETY: a live table.
            let status = unsafe { (h.table.stop)(&mut h.table, &mut err) };
            // SAFETY: `err` was filled by the plugin.
            unsafe { plugin.finish(status, &mut err) }.map(|_| ())
        })
        .await
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSink> {
        if self.streaming.is_some() {
            Some(self)
        } else {
            None
        }
    }
}

impl fmt::Debug for ForeignSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = match self.handle.try_lock() {
            Ok(guard) => {
                let mut out = FfiBytes::empty();
                // SAFETY: a live table.
                let status = unsafe { (guard.table.debug)(&guard.table, &mut out) };
                match unsafe { self.plugin.finish(status, &mut out) } {
                    Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                    Err(e) => format!("<{}>", e.code()),
                }
            }
            Err(_) => "<busy>".to_string(),
        };
        f.debug_struct("ForeignSink")
            .field("plugin", &self.plugin.name)
            .field("connector", &self.connector)
            .field("inner", &format_args!("{inner}"))
            .finish()
    }
}
