//! The host's secret store, lent to a plugin as a function table.
//!
//! `{{secrets/scope/key}}` references in a plugin connector's options resolve through the
//! host's [`SecretStore`], so a plugin sees exactly the secrets a built-in connector would.
//! The host side is [`export_secret_store`]; the plugin side is [`ForeignSecretStore`], an
//! ordinary [`SecretStore`]. Secret values cross as bytes and are wrapped in [`Secret`] at once.

use std::ffi::c_void;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::error::{Error, ErrorCode, Result};
use crate::plugin::abi::{
    FfiBytes, FfiSecretStore, FfiSlice, FfiStatus, ABI_VERSION, STATUS_ERROR, STATUS_OK,
};
use crate::plugin::wire_error::error_from_bytes;
use crate::secret::{Secret, SecretRef, SecretStore};

/// Lends a store across the boundary. The table holds a reference until its `release` runs.
pub fn export_secret_store(store: Arc<dyn SecretStore>) -> FfiSecretStore {
    let private: Box<Arc<dyn SecretStore>> = Box::new(store);
    FfiSecretStore {
        version: ABI_VERSION,
        private_data: Box::into_raw(private) as *mut c_void,
        resolve: resolve_secret,
        clone: clone_store,
        release: release_store,
    }
}

unsafe extern "C" fn resolve_secret(
    table: *const FfiSecretStore,
    scope: FfiSlice,
    key: FfiSlice,
    out: *mut FfiBytes,
) -> FfiStatus {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the table was built by `export_secret_store` and is alive for this call;
        // the slices are valid for the call.
        let store = unsafe { &*((*table).private_data as *const Arc<dyn SecretStore>) };
        let scope = String::from_utf8_lossy(unsafe { scope.as_bytes() }).into_owned();
        let key = String::from_utf8_lossy(unsafe { key.as_bytes() }).into_owned();
        store.resolve(&SecretRef::new(scope, key))
    }));
    let (status, bytes) = match result {
        Ok(Ok(secret)) => (STATUS_OK, secret.expose().as_bytes().to_vec()),
        Ok(Err(e)) => (STATUS_ERROR, e.to_json().to_string().into_bytes()),
        Err(_) => (
            STATUS_ERROR,
            Error::new(ErrorCode::Internal, "the host secret store panicked")
                .to_json()
                .to_string()
                .into_bytes(),
        ),
    };
    // SAFETY: `out` is a valid out-parameter provided by the caller.
    unsafe { std::ptr::write(out, FfiBytes::from_vec(bytes)) };
    status
}

unsafe extern "C" fn clone_store(table: *const FfiSecretStore) -> FfiSecretStore {
    // SAFETY: the table was built by `export_secret_store` and is alive.
    let store = unsafe { &*((*table).private_data as *const Arc<dyn SecretStore>) };
    export_secret_store(store.clone())
}

unsafe extern "C" fn release_store(table: *mut FfiSecretStore) {
    if table.is_null() {
        return;
    }
    // SAFETY: private_data came from `Box::into_raw` in `export_secret_store`; it is nulled so a
    // second release does nothing.
    unsafe {
        let t = &mut *table;
        if !t.private_data.is_null() {
            drop(Box::from_raw(t.private_data as *mut Arc<dyn SecretStore>));
            t.private_data = std::ptr::null_mut();
        }
    }
}

/// The plugin-side view of the host's secret store.
pub struct ForeignSecretStore {
    table: FfiSecretStore,
}

impl ForeignSecretStore {
    /// Takes its own handle on a store lent by the host.
    ///
    /// # Safety
    /// `table` must point to a live table built by [`export_secret_store`].
    pub unsafe fn clone_from(table: *const FfiSecretStore) -> Self {
        // SAFETY: forwarded from the caller.
        let table = unsafe { ((*table).clone)(table) };
        ForeignSecretStore { table }
    }
}

impl SecretStore for ForeignSecretStore {
    fn resolve(&self, reference: &SecretRef) -> Result<Secret> {
        let mut out = FfiBytes::empty();
        // SAFETY: the table is alive while `self` is; the slices outlive the call.
        let status = unsafe {
            (self.table.resolve)(
                &self.table,
                FfiSlice::text(&reference.scope),
                FfiSlice::text(&reference.key),
                &mut out,
            )
        };
        // SAFETY: `out` was filled by the host with `FfiBytes::from_vec`.
        let bytes = unsafe { out.take() };
        if status == STATUS_OK {
            String::from_utf8(bytes).map(Secret::new).map_err(|_| {
                Error::new(
                    ErrorCode::SecretNotFound,
                    format!("secret {reference} is not valid UTF-8"),
                )
            })
        } else {
            Err(error_from_bytes(&bytes))
        }
    }
}

impl Drop for ForeignSecretStore {
    fn drop(&mut self) {
        // SAFETY: our own handle, released once.
        unsafe { (self.table.release)(&mut self.table) };
    }
}

impl fmt::Debug for ForeignSecretStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ForeignSecretStore(host)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed;
    impl SecretStore for Fixed {
        fn resolve(&self, r: &SecretRef) -> Result<Secret> {
            if r.key == "pw" {
                Ok(Secret::new(format!("{}-hunter2", r.scope)))
            } else {
                Err(Error::new(
                    ErrorCode::SecretNotFound,
                    format!("no secret {r}"),
                ))
            }
        }
    }

    #[test]
    fn store_resolves_through_the_table_and_keeps_error_codes() {
        let mut table = export_secret_store(Arc::new(Fixed));
        let foreign = unsafe { ForeignSecretStore::clone_from(&table) };
        unsafe { (table.release)(&mut table) };
        let s = foreign.resolve(&SecretRef::new("s", "pw")).unwrap();
        assert_eq!(s.expose(), "s-hunter2");
        let e = foreign.resolve(&SecretRef::new("s", "other")).unwrap_err();
        assert_eq!(e.code(), ErrorCode::SecretNotFound);
        assert!(!format!("{foreign:?}").contains("hunter2"));
    }
}
