//! The plugin side of a source: a `Box<dyn Source>` behind an [`FfiSource`] function table.
//!
//! Each entry point locks the source, runs the call inside the panic guard (async calls through
//! the plugin's own runtime) and writes JSON or Arrow structures into the caller's
//! out-parameters. A source that panicked once is marked poisoned: later calls fail with a clear
//! error instead of touching state a panic may have left half-updated.

use std::ffi::c_void;
use std::sync::Mutex;

use crate::error::Result;
use crate::offset::Offset;
use crate::plugin::abi::{
    FFI_ArrowSchema, FfiBatches, FfiBytes, FfiContext, FfiSlice, FfiSource, FfiStatus, ABI_VERSION,
    STATUS_ERROR, STATUS_OK,
};
use crate::plugin::batches::{export_batches, export_schema};
use crate::plugin::guest::{
    block_on, definition, error_bytes, find_source, guard, parse_context, parse_json,
    parse_options, parse_text, release_boxed, to_json_bytes, write_out, Guarded,
};
use crate::read_limit::ReadLimit;
use crate::source::Source;
use crate::streaming::ChunkReceiver;

/// What a source table's `private_data` points to: the source, and the queue of its running
/// streaming read (apart from the source's lock, so that `next_chunk` can wait on it while other
/// calls run; see [`crate::plugin::export_streaming`]).
pub(crate) struct SourceState {
    pub(crate) source: Guarded<dyn Source>,
    pub(crate) stream: Mutex<Option<ChunkReceiver>>,
}

/// The state behind a table built by [`create_source`].
///
/// # Safety
/// `this` must be a live table built by [`create_source`].
pub(crate) unsafe fn source_state<'a>(this: *const FfiSource) -> &'a SourceState {
    // SAFETY: private_data was set by `create_source` and lives until `release`.
    unsafe { &*((*this).private_data as *const SourceState) }
}

/// Runs `f` on the source behind `this`, guarded against panics and poisoning.
///
/// # Safety
/// `this` must be a live table built by [`create_source`].
pub(crate) unsafe fn with_source<T>(
    this: *const FfiSource,
    call: &str,
    f: impl FnOnce(&mut Box<dyn Source>) -> Result<T>,
) -> Result<T> {
    // SAFETY: forwarded from the caller.
    unsafe { source_state(this) }.source.call(call, f)
}

pub(crate) unsafe extern "C" fn create_source(
    name: FfiSlice,
    options: FfiSlice,
    context: *const FfiContext,
    out: *mut FfiSource,
    err: *mut FfiBytes,
) -> FfiStatus {
    let result = guard("create_source", || {
        // SAFETY: the arguments are valid for this call.
        let name = unsafe { parse_text("connector name", name) }?;
        let options = unsafe { parse_options(options) }?;
        let context = unsafe { parse_context(context) }?;
        let factory = find_source(definition()?, &name)?;
        factory.prepare(&options)?.build(&context)
    });
    match result {
        Ok(source) => {
            let state: Box<SourceState> = Box::new(SourceState {
                source: Guarded::new("source", source),
                stream: Mutex::new(None),
            });
            let table = FfiSource {
                version: ABI_VERSION,
                private_data: Box::into_raw(state) as *mut c_void,
                schema,
                identity,
                default_read_limit,
                initial_offset,
                prepare_available_now,
                latest_offset,
                read,
                commit,
                metrics,
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

unsafe extern "C" fn schema(
    this: *const FfiSource,
    out: *mut FFI_ArrowSchema,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: `this` is live for the call.
    let result = unsafe { with_source(this, "schema", |s| export_schema(&s.schema())) };
    match result {
        Ok(schema) => {
            // SAFETY: out-parameters provided by the caller.
            unsafe {
                std::ptr::write(out, schema);
                std::ptr::write(err, FfiBytes::empty());
            }
            STATUS_OK
        }
        // SAFETY: out-parameter provided by the caller.
        Err(e) => unsafe { write_out(err, Err(e)) },
    }
}

unsafe extern "C" fn identity(this: *const FfiSource, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_source(this, "identity", |s| to_json_bytes(&s.identity()));
        write_out(out, r)
    }
}

unsafe extern "C" fn default_read_limit(this: *const FfiSource, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_source(this, "default_read_limit", |s| {
            to_json_bytes(&s.default_read_limit())
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn initial_offset(this: *mut FfiSource, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_source(this, "initial_offset", |s| {
            let o = block_on(s.initial_offset())??;
            to_json_bytes(&o)
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn prepare_available_now(this: *mut FfiSource, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_source(this, "prepare_available_now", |s| {
            block_on(s.prepare_available_now())??;
            Ok(Vec::new())
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn latest_offset(
    this: *mut FfiSource,
    start: FfiSlice,
    limit: FfiSlice,
    out: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: all arguments are valid for the call.
    unsafe {
        let r = with_source(this, "latest_offset", |s| {
            let start: Offset = parse_json("start offset", start)?;
            let limit: ReadLimit = parse_json("read limit", limit)?;
            let end = block_on(s.latest_offset(&start, &limit))??;
            to_json_bytes(&end)
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn read(
    this: *mut FfiSource,
    start: FfiSlice,
    end: FfiSlice,
    out: *mut FfiBatches,
    err: *mut FfiBytes,
) -> FfiStatus {
    // SAFETY: all arguments are valid for the call.
    let result = unsafe {
        with_source(this, "read", |s| {
            let start: Offset = parse_json("start offset", start)?;
            let end: Offset = parse_json("end offset", end)?;
            let batches = block_on(s.read(&start, &end))??;
            export_batches(&batches)
        })
    };
    match result {
        Ok(list) => {
            // SAFETY: out-parameters provided by the caller.
            unsafe {
                std::ptr::write(out, list);
                std::ptr::write(err, FfiBytes::empty());
            }
            STATUS_OK
        }
        // SAFETY: out-parameter provided by the caller.
        Err(e) => unsafe { write_out(err, Err(e)) },
    }
}

unsafe extern "C" fn commit(this: *mut FfiSource, end: FfiSlice, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: all arguments are valid for the call.
    unsafe {
        let r = with_source(this, "commit", |s| {
            let end: Offset = parse_json("end offset", end)?;
            block_on(s.commit(&end))??;
            Ok(Vec::new())
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn metrics(this: *const FfiSource, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_source(this, "metrics", |s| to_json_bytes(&s.metrics()));
        write_out(out, r)
    }
}

unsafe extern "C" fn stop(this: *mut FfiSource, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_source(this, "stop", |s| {
            block_on(s.stop())??;
            Ok(Vec::new())
        });
        write_out(out, r)
    }
}

unsafe extern "C" fn debug(this: *const FfiSource, out: *mut FfiBytes) -> FfiStatus {
    // SAFETY: `this` and `out` are valid for the call.
    unsafe {
        let r = with_source(this, "debug", |s| Ok(format!("{s:?}").into_bytes()));
        write_out(out, r)
    }
}

unsafe extern "C" fn release(this: *mut FfiSource) {
    if this.is_null() {
        return;
    }
    // SAFETY: private_data came from `Box::into_raw` in `create_source` (a `SourceState`).
    unsafe { release_boxed::<SourceState>(&mut (*this).private_data, "source") }
}
