//! Fetching a queued file's bytes from its store: the whole file, a range, or a stream of
//! chunks as the store delivers them (local reads in chunks, HTTP body frames from S3 and
//! Azure), so a decoder can bound its memory by the batch size rather than the file size.
//!
//! The decoders (`crate::format`) consume what this returns; the contract between the two is
//! written down in the team's `files-interface.md`. Errors name the file
//! (`SOURCE_READ_FAILED`); a file that vanished is `None`, for the caller's data-loss handling.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{GetResult, ObjectStore, ObjectStoreExt};
use tributary_sdk::Result;

use crate::error::unreadable;

/// An opened file: the store's answer to `get`.
#[derive(Debug)]
pub(crate) struct FileBody {
    path: String,
    result: GetResult,
}

#[allow(dead_code)] // `into_stream`/`size`/`path`: for the streaming decoders.
impl FileBody {
    /// The file's path (as in the file state).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The file's size now.
    pub fn size(&self) -> u64 {
        self.result.meta.size
    }

    /// The whole file.
    pub async fn bytes(self) -> Result<Bytes> {
        let path = self.path;
        self.result.bytes().await.map_err(|e| unreadable(&path, e))
    }

    /// The file as a stream of chunks.
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes>> {
        let path = self.path;
        self.result
            .into_stream()
            .map_err(move |e| unreadable(&path, e))
            .boxed()
    }
}

/// Opens `location` (the file `path` of the file state); `None` when it does not exist.
pub(crate) async fn open(
    store: &Arc<dyn ObjectStore>,
    location: &ObjectPath,
    path: &str,
) -> Result<Option<FileBody>> {
    match store.get(location).await {
        Ok(result) => Ok(Some(FileBody {
            path: path.to_string(),
            result,
        })),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(unreadable(path, e)),
    }
}

/// Bytes `range` of `location` (random access, e.g. a Parquet footer).
#[allow(dead_code)] // for the formats that read footers first
pub(crate) async fn range(
    store: &Arc<dyn ObjectStore>,
    location: &ObjectPath,
    path: &str,
    range: Range<u64>,
) -> Result<Bytes> {
    store
        .get_range(location, range)
        .await
        .map_err(|e| unreadable(path, e))
}
