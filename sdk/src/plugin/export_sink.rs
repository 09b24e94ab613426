//! The plugin side of a sink: a `Box<dyn Sink>` behind an [`FfiSink`] function table.
//!
//! Same discipline as the source side: a lock, a panic guard, the plugin's runtime for async
//! calls, and a poisoned flag after a panic. Batches to write arrive as Arrow C structures owned
//! by the host; the plugin moves them out and imports them without copying.

use std::ffi::c_void;

use crate::error::Result;
use crate::plugin::abi::{
    FFI_ArrowSchema, FfiBatch, FfiBytes, FfiContext, FfiSink, FfiSlice, FfiStatus, ABI_VERSION,
    STATUS_ERROR, STATUS_OK,
};
use crate::plugin::batches::{import_batch, import_schema};
use crate::plugin::guest::{
    block_on, definition, error_bytes, find_sink, guard, parse_context, parse_options, parse_text,
    release_boxed, to_json_bytes, write_out, Guarded,
};
use crate::sink::Sink;

type SinkState = Guarded<dyn Sink>;

/// Runs `f` on the sink behind `this`, guarded against panics and poisoning.
///
/// # Safety
/// `this` must be a live table built by [`create_sink`].
pub(crate) unsafe fn with_sink<T>(
    this: *const FfiSink,
    call: &str,
    f: impl FnOnce(&mut Box<dyn Sink>) -> Result<T>,
) -> Result<T> {
    // SAFETY: private_data was set by `create_sink` and lives until `release`.
    let state = unsafe { &*((*this).private_data as *const SinkState) };
    state.call(call, f)
}

pub(crate) unsafe extern "C" fn create_sink(
    name: FfiSlice,
    options: FfiSlice,
    context: *const FfiContext,
    out: *mut FfiSink,
    err: *mut FfiBytes,
) -> FfiStatus {
    let result = guard("create_sink", || {
        // SAFETY: the arguments are valid for this call.
        let name = unsafe { parse_text("connector name", name) }?;
        let options = unsafe { parse_options(options) }?;
        let context = unsafe { parse_context(context) }?;
        let factory = find_sink(definition()?, &name)?;
        factory.prepare(&options)?.build(&context)
    });
    match result {
        Ok(sink) => {
            let state: Box<SinkState> = Box::new(Guarded::new("sink", sink));
            let table = FfiSink {
                version: ABI_VERSION,
                private_data: Box::into_raw(state) as *mut c_void,
                delivery,
                open,
                write,
                stop,
                debug,
                release,
            };
            // SAFETY: out-parameters provided by the caller.
            unsafe {
                std::ptr::write(out, table);
                std::ptr::write(err, FfiBytes::empty());
            }
            STATUS_OK
        }
        Err(e) => {
            // SAFETY: out-parameter provided by the caller.
            unsafe { std::ptr::write(err, error_bytes(&e)) };
            STATUS_ERROR
        }
    }
}

unsafe extern "C" fn delivery(this: *const FfiSink, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_sink(this, "delivery", |s| to_json_bytes(&s.delivery()));
        write_out(out, r)
    }
}

unsafe extern "C" fn open(
    this: *mut FfiSink,
    schema: *mut FFI_ArrowSchema,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: `this`, `schema` and `err` are valid for the call; the schema stays owned by the host.
    unsafe {
        let r = with_sink(this, "open", |s| {
            let schema = import_schema(&*schema)?;
            block_on(s.open(schema))??;
            Ok(Vec::new())
        });
        write_out(err, r)
    }
}

unsafe extern "C" fn write(
    this: *mut FfiSink,
    batch_id: u64,
    batches: *mut FfiBatch,
    len: usize,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: `batches` points to `len` batches the host lends us to move out.
    unsafe {
        let mut imported = Vec::with_capacity(len);
        let mut import_err = None;
        for i in 0..len {
            let b = std::ptr::replace(batches.add(i), FfiBatch::empty());
            match import_batch(b, None) {
                Ok(b) => imported.push(b),
                Err(e) => {
                    import_err.get_or_insert(e);
                }
            }
        }
        let r = match import_err {
            Some(e) => Err(e),
            None => with_sink(this, "write", |s| {
                block_on(s.write(batch_id, &imported))??;
                Ok(Vec::new())
            }),
        };
        write_out(err, r)
    }
}

unsafe extern "C" fn stop(this: *mut FfiSink, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_sink(this, "stop", |s| {
            block_on(s.stop())??;
            Ok(Vec::new())
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn debug(this: *const FfiSink, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_sink(this, "debug", |s| Ok(format!("{s:?}").into_bytes()));
        write_out(out, r)
    }
}

unsafe extern "C" fn release(this: *mut FfiSink) {
    if this.is_null() {
        return;
    }
    // SAFETY: private_data came from `Box::into_raw` in `create_sink` (a `SinkState`).
    unsafe { release_boxed::<SinkState>(&mut (*this).private_data, "sink") }
}
