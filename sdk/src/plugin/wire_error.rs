//! Errors crossing the plugin boundary: an [`Error`] travels as its [`Error::to_json`] bytes
//! (the stable code kept) and is rebuilt on the other side. A leaf: both the plugin side and
//! the host side's secret-store bridge use it.

use crate::error::{Error, ErrorCode};
use crate::plugin::abi::FfiBytes;

/// An error as JSON bytes.
pub(crate) fn error_bytes(e: &Error) -> FfiBytes {
    FfiBytes::from_string(e.to_json().to_string())
}

/// Rebuilds an error that crossed the boundary as [`Error::to_json`] bytes. Bytes that are not
/// such JSON become a `PLUGIN_ERROR` quoting them.
pub fn error_from_bytes(bytes: &[u8]) -> Error {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) if v.get("code").is_some() => Error::from_json(&v),
        _ => Error::new(
            ErrorCode::Plugin,
            format!(
                "plugin returned a malformed error: {}",
                String::from_utf8_lossy(bytes)
            ),
        ),
    }
}
