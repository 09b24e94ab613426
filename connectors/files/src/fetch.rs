//! Fetching a queued file's bytes from its store: the whole file, a range, or a stream of
//! chunks (local files in [`LOCAL_CHUNK`] reads, HTTP body frames from S3 and Azure as they
//! arrive), so a decoder can bound its memory by the batch size rather than the file size.
//!
//! Local files: `object_store`'s own stream reads a local file in 8 KiB pieces, one blocking
//! task each (262 144 tasks for 2 GiB), which made reading a local JSON-lines file 2.6 times
//! slower than `arrow-json` over a `BufReader`. The store already opened the file
//! (`GetResultPayload::File`), so the stream here reads that handle in 4 MiB pieces on the
//! blocking pool instead: same bytes, same range, no second open and no path special-casing.
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
use object_store::{GetResult, GetResultPayload, ObjectStore, ObjectStoreExt};
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
        let range = self.result.range.clone();
        match self.result.payload {
            GetResultPayload::File(file, _) => local_chunks(file, path, range),
            GetResultPayload::Stream(stream) => {
                stream.map_err(move |e| unreadable(&path, e)).boxed()
            }
        }
    }
}

/// Bytes per read of a local file.
pub(crate) const LOCAL_CHUNK: u64 = 4 << 20;

/// `range` of an opened local file in [`LOCAL_CHUNK`] pieces, each read on the blocking pool.
/// A file that ends before the range does (it was truncated while read) is an error naming it.
fn local_chunks(
    file: std::fs::File,
    path: String,
    range: Range<u64>,
) -> BoxStream<'static, Result<Bytes>> {
    let state = (Some(file), range.start, range.end);
    futures::stream::try_unfold(state, move |(file, at, end)| {
        let path = path.clone();
        async move {
            let Some(mut file) = file.filter(|_| at < end) else {
                return Ok(None);
            };
            let want = (end - at).min(LOCAL_CHUNK);
            let read = tokio::task::spawn_blocking(move || {
                use std::io::{Read, Seek, SeekFrom};
                file.seek(SeekFrom::Start(at))?;
                // `want` is at most LOCAL_CHUNK: the cast cannot truncate.
                let mut buffer = Vec::with_capacity(want as usize);
                (&mut file).take(want).read_to_end(&mut buffer)?;
                Ok::<_, std::io::Error>((file, buffer))
            })
            .await;
            let (file, buffer) = match read {
                Ok(Ok(read)) => read,
                Ok(Err(e)) => return Err(unreadable(&path, e)),
                Err(e) => return Err(unreadable(&path, e)),
            };
            if buffer.is_empty() {
                let e = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the file ended at byte {at}, before byte {end} it had when opened"),
                );
                return Err(unreadable(&path, e));
            }
            let next = at + buffer.len() as u64;
            Ok(Some((Bytes::from(buffer), (Some(file), next, end))))
        }
    })
    .boxed()
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
