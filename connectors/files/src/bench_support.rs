//! Internals the measurement programs in `benches/` call (feature `bench`, hidden from the
//! docs, not a stable API): the streaming decoder, the whole-file decode and the source's file
//! fetch, so `format_rss` and `format_throughput` measure the same code the source runs.

use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;
use tributary_sdk::Result;

pub use crate::format::{
    decode, decoder, DecodeContext, FileDecoder, FileInfo, Format, BATCH_SIZE,
};

/// The bytes of `location` as the source streams them (its own local reads); `None` when the
/// file does not exist.
pub async fn fetch_stream(
    store: &Arc<dyn ObjectStore>,
    location: &ObjectPath,
    path: &str,
) -> Result<Option<BoxStream<'static, Result<Bytes>>>> {
    Ok(crate::fetch::open(store, location, path)
        .await?
        .map(|body| body.into_stream()))
}
