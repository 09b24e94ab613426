//! Async I/O run from synchronous code (a leaf module: discovery and schema inference use it).

use tributary_sdk::{Error, ErrorCode, Result};

/// Runs async I/O from synchronous code (`SourceFactory::create` is synchronous): on a scoped
/// plain thread with its own single-threaded tokio runtime (object-store HTTP clients need
/// one), so this neither needs nor blocks the caller's runtime. Give it a client made for it
/// (`Discovery::fresh`): connections stay with the runtime that opened them.
pub(crate) fn run_io<T: Send>(
    fut: impl std::future::Future<Output = Result<T>> + Send,
) -> Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    Error::new(ErrorCode::Internal, "cannot start an I/O runtime").with_cause(e)
                })?;
            rt.block_on(fut)
        })
        .join()
        .unwrap_or_else(|_| {
            Err(Error::new(
                ErrorCode::Internal,
                "the store I/O thread panicked",
            ))
        })
    })
}
