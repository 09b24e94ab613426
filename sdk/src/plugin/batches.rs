//! Record batches across the boundary through the Arrow C Data Interface.
//!
//! A batch travels as a struct array ([`FFI_ArrowArray`]) plus its type ([`FFI_ArrowSchema`]).
//! The buffers are not copied: the receiver's arrays point into the producer's memory and call
//! the producer's release callback when they are dropped. This is why a host never unloads a
//! plugin library while batches from it may be alive.

use std::sync::Arc;

use arrow_array::ffi::{from_ffi, to_ffi};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::{Schema, SchemaRef};

use crate::error::{Error, ErrorCode, Result};
use crate::plugin::abi::{FFI_ArrowSchema, FfiBatch, FfiBatches};

/// Exports one batch.
pub fn export_batch(batch: &RecordBatch) -> Result<FfiBatch> {
    let array = StructArray::from(batch.clone());
    let (array, schema) = to_ffi(&array.to_data())?;
    Ok(FfiBatch { array, schema })
}

/// Exports batches into an owned list that the receiver releases.
pub fn export_batches(batches: &[RecordBatch]) -> Result<FfiBatches> {
    let list = batches
        .iter()
        .map(export_batch)
        .collect::<Result<Vec<_>>>()?;
    let mut list = std::mem::ManuallyDrop::new(list);
    Ok(FfiBatches {
        ptr: list.as_mut_ptr(),
        len: list.len(),
        cap: list.capacity(),
        release: Some(release_batches),
    })
}

unsafe extern "C" fn release_batches(list: *mut FfiBatches) {
    if list.is_null() {
        return;
    }
    // SAFETY: the list was built by `export_batches` in this library from a `Vec<FfiBatch>`;
    // dropping the vector releases any batch the receiver did not move out.
    unsafe {
        let l = &mut *list;
        if !l.ptr.is_null() {
            drop(Vec::from_raw_parts(l.ptr, l.len, l.cap));
        }
        l.ptr = std::ptr::null_mut();
        l.len = 0;
        l.cap = 0;
        l.release = None;
    }
}

/// An empty list that needs no release (the initial value of an out-parameter).
pub fn empty_batches() -> FfiBatches {
    FfiBatches {
        ptr: std::ptr::null_mut(),
        len: 0,
        cap: 0,
        release: None,
    }
}

/// Imports one batch, taking ownership of its C structures. When `schema` is given and the
/// imported columns fit it, the batch carries exactly that schema (metadata included).
///
/// # Safety
/// `batch` must hold valid Arrow C Data Interface structures.
pub unsafe fn import_batch(batch: FfiBatch, schema: Option<&SchemaRef>) -> Result<RecordBatch> {
    let FfiBatch {
        array,
        schema: ffi_schema,
    } = batch;
    // SAFETY: the caller guarantees the structures follow the C Data Interface.
    let data = unsafe { from_ffi(array, &ffi_schema) }.map_err(|e| {
        Error::new(ErrorCode::Plugin, "plugin returned an invalid Arrow array").with_cause(e)
    })?;
    let imported = RecordBatch::from(StructArray::from(data));
    match schema {
        Some(s) if s.fields() == imported.schema().fields() => {
            Ok(imported.clone().with_schema(s.clone()).unwrap_or(imported))
        }
        _ => Ok(imported),
    }
}

/// Imports every batch of a list and releases the list.
///
/// # Safety
/// `list` must have been produced by [`export_batches`] (on either side of the boundary).
pub unsafe fn import_batches(
    list: &mut FfiBatches,
    schema: Option<&SchemaRef>,
) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::with_capacity(list.len);
    let mut first_err = None;
    for i in 0..list.len {
        // SAFETY: i < len; the element is moved out and replaced by an empty batch, so the
        // producer's release does not free it twice.
        let batch = unsafe { std::ptr::replace(list.ptr.add(i), FfiBatch::empty()) };
        // SAFETY: forwarded from the caller.
        match unsafe { import_batch(batch, schema) } {
            Ok(b) => out.push(b),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(release) = list.release.take() {
        // SAFETY: release belongs to the producer and is called once.
        unsafe { release(list) };
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Exports a schema.
pub fn export_schema(schema: &Schema) -> Result<FFI_ArrowSchema> {
    FFI_ArrowSchema::try_from(schema).map_err(Error::from)
}

/// Imports a schema.
pub fn import_schema(schema: &FFI_ArrowSchema) -> Result<SchemaRef> {
    Schema::try_from(schema).map(Arc::new).map_err(|e| {
        Error::new(ErrorCode::Plugin, "plugin returned an invalid Arrow schema").with_cause(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field};
    use std::collections::HashMap;

    #[test]
    fn batches_round_trip_with_schema_metadata() {
        let schema = Arc::new(Schema::new_with_metadata(
            vec![
                Field::new("id", DataType::Int64, false),
                Field::new("name", DataType::Utf8, true),
            ],
            HashMap::from([("k".to_string(), "v".to_string())]),
        ));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
            ],
        )
        .unwrap();
        let mut list = export_batches(&[b.clone(), b.slice(1, 2)]).unwrap();
        let back = unsafe { import_batches(&mut list, Some(&schema)) }.unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0], b);
        assert_eq!(back[1], b.slice(1, 2));
        assert_eq!(back[0].schema().metadata()["k"], "v");
        assert!(list.release.is_none());
    }

    #[test]
    fn schema_round_trips() {
        let s = Schema::new(vec![Field::new("x", DataType::Binary, true)]);
        let ffi = export_schema(&s).unwrap();
        assert_eq!(*import_schema(&ffi).unwrap(), s);
    }
}
