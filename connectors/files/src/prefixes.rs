//! An object store's full listing fanned out across its key prefixes
//! (`cloudFiles.fetchParallelism` above 1): one `list` request stream is one round trip per
//! 1,000 keys, so a bucket of millions of objects lists for minutes unless several prefixes are
//! listed at once.
//!
//! The listing first goes down the prefix while a level holds exactly one sub-prefix and
//! nothing else (`table/` holding only `year=2026/`), at most [`MAX_DESCENT`] levels. The
//! first level with more is paged through with the `/` delimiter: its objects come out as
//! they are, and each of its sub-prefixes is listed in full (the store's ordinary `list`) by a
//! task of its own, at most `parallelism` of them at once, each holding at most [`AHEAD`]
//! chunks of [`CHUNK`] keys for the consumer. The output is in key order, as one `list` gives
//! it: a prefix's keys are given out once every key before them has been, so the memory held
//! is bounded by `parallelism`, not by the size of the listing. Sub-prefixes whose own name is
//! hidden (`_delta_log/`, `.tmp/`: the source skips the files under them) are not listed.
//!
//! Incremental listings (`start_after`) stay one request stream: they list what arrived since
//! the last key, which is short.

use std::sync::Arc;

use futures::future;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::list::{PaginatedListOptions, PaginatedListResult, PaginatedListStore};
use object_store::path::{Path as ObjectPath, DELIMITER};
use object_store::{ListResult, ObjectMeta, ObjectStore};

/// Levels of single sub-prefixes gone down before the fan-out.
pub(crate) const MAX_DESCENT: usize = 4;

/// Chunks a sub-prefix's task lists ahead of the consumer.
pub(crate) const AHEAD: usize = 2;

/// Keys per chunk a sub-prefix's task hands over (one S3 list page).
pub(crate) const CHUNK: usize = 1000;

/// How a listing fans out.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Sub-prefix listings at once.
    parallelism: usize,
    /// Keys per page of the fanned-out level (`None`: the store's own, 1,000 on S3).
    page_keys: Option<usize>,
    /// Keys per chunk of a sub-prefix's listing.
    chunk: usize,
}

/// One entry of the fanned-out level.
#[derive(Debug)]
enum Part {
    Object(ObjectMeta),
    Prefix(ObjectPath),
}

impl Part {
    /// The key the entry sorts by: an object's location, a prefix with its delimiter (every
    /// key under `a/` sorts after `a.json` and before `a0`, as `a/` does).
    fn key(&self) -> String {
        match self {
            Part::Object(m) => m.location.to_string(),
            Part::Prefix(p) => format!("{p}{DELIMITER}"),
        }
    }
}

/// A page's objects and sub-prefixes in key order.
fn parts(page: ListResult) -> Vec<Part> {
    let mut parts: Vec<Part> = page
        .objects
        .into_iter()
        .map(Part::Object)
        .chain(page.common_prefixes.into_iter().map(Part::Prefix))
        .collect();
    parts.sort_by_cached_key(Part::key);
    parts
}

/// The prefix of the paginated API (which, unlike `list`, adds no delimiter).
fn request_prefix(prefix: Option<&ObjectPath>) -> Option<String> {
    prefix
        .filter(|p| !p.as_ref().is_empty())
        .map(|p| format!("{p}{DELIMITER}"))
}

async fn page(
    pages: &dyn PaginatedListStore,
    prefix: Option<&ObjectPath>,
    token: Option<String>,
    max_keys: Option<usize>,
) -> object_store::Result<PaginatedListResult> {
    let options = PaginatedListOptions {
        delimiter: Some(DELIMITER.into()),
        page_token: token,
        max_keys,
        ..Default::default()
    };
    pages
        .list_paginated(request_prefix(prefix).as_deref(), options)
        .await
}

/// Goes down single sub-prefixes: the level to fan out and its first page.
async fn fan_level(
    pages: &dyn PaginatedListStore,
    mut prefix: Option<ObjectPath>,
    hidden: fn(&str) -> bool,
    max_keys: Option<usize>,
) -> object_store::Result<(Option<ObjectPath>, PaginatedListResult)> {
    for _ in 0..MAX_DESCENT {
        let first = page(pages, prefix.as_ref(), None, max_keys).await?;
        let single = first.page_token.is_none()
            && first.result.objects.is_empty()
            && first.result.common_prefixes.len() == 1;
        match first.result.common_prefixes.first() {
            Some(only) if single && !only.filename().is_some_and(hidden) => {
                prefix = Some(only.clone());
            }
            _ => return Ok((prefix, first)),
        }
    }
    let first = page(pages, prefix.as_ref(), None, max_keys).await?;
    Ok((prefix, first))
}

/// The fanned-out level's entries in key order, page by page.
fn level_parts(
    pages: Arc<dyn PaginatedListStore>,
    prefix: Option<ObjectPath>,
    hidden: fn(&str) -> bool,
    max_keys: Option<usize>,
) -> BoxStream<'static, object_store::Result<Part>> {
    let pages_first = Arc::clone(&pages);
    stream::once(async move { fan_level(pages_first.as_ref(), prefix, hidden, max_keys).await })
        .map_ok(move |(level, first)| {
            // Pages after the first, while the store hands out a token.
            let rest = stream::try_unfold(
                (Arc::clone(&pages), level, first.page_token),
                move |(pages, level, token)| async move {
                    let Some(token) = token else {
                        return Ok(None);
                    };
                    let next = page(pages.as_ref(), level.as_ref(), Some(token), max_keys).await?;
                    Ok(Some((next.result, (pages, level, next.page_token))))
                },
            );
            stream::once(future::ready(Ok::<_, object_store::Error>(first.result)))
                .chain(rest)
                .map_ok(|page| stream::iter(parts(page).into_iter().map(Ok)))
                .try_flatten()
        })
        .try_flatten()
        .try_filter(move |part| {
            let listed = match part {
                Part::Prefix(p) => !p.filename().is_some_and(hidden),
                Part::Object(_) => true,
            };
            future::ready(listed)
        })
        .boxed()
}

/// Lists `prefix` in full on a task of its own, [`AHEAD`] chunks ahead of the consumer; the
/// task stops when the stream is dropped.
fn spawn_listing(
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    chunk: usize,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<object_store::Result<Vec<ObjectMeta>>>(AHEAD);
    tokio::spawn(async move {
        let mut listing = store.list(Some(&prefix)).try_chunks(chunk);
        while let Some(chunk) = listing.next().await {
            let chunk = chunk.map_err(|e| e.1);
            let failed = chunk.is_err();
            if tx.send(chunk).await.is_err() || failed {
                return;
            }
        }
    });
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
        .map_ok(|chunk| stream::iter(chunk.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
}

/// Every object under `prefix`, in key order, with up to `parallelism` sub-prefixes listed at
/// once; sub-prefixes named `hidden` are left out. Must be polled on a tokio runtime (the
/// sub-prefix listings are tasks of it).
pub(crate) fn list(
    store: Arc<dyn ObjectStore>,
    pages: Arc<dyn PaginatedListStore>,
    prefix: Option<ObjectPath>,
    parallelism: usize,
    hidden: fn(&str) -> bool,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    let shape = Shape {
        parallelism,
        page_keys: None,
        chunk: CHUNK,
    };
    list_shaped(store, pages, prefix, shape, hidden)
}

fn list_shaped(
    store: Arc<dyn ObjectStore>,
    pages: Arc<dyn PaginatedListStore>,
    prefix: Option<ObjectPath>,
    shape: Shape,
    hidden: fn(&str) -> bool,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    // The stream being drained is one listing; `buffered` starts the next ones.
    let ahead = shape.parallelism.saturating_sub(1).max(1);
    level_parts(pages, prefix, hidden, shape.page_keys)
        .map(move |part| {
            let store = Arc::clone(&store);
            future::ready(match part {
                Ok(Part::Object(meta)) => stream::once(future::ready(Ok(meta))).boxed(),
                Ok(Part::Prefix(p)) => spawn_listing(store, p, shape.chunk),
                Err(e) => stream::once(future::ready(Err(e))).boxed(),
            })
        })
        .buffered(ahead)
        .flatten()
        .boxed()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use object_store::ObjectStoreExt;

    use super::*;

    fn object(key: &str) -> ObjectMeta {
        ObjectMeta {
            location: ObjectPath::from(key),
            last_modified: chrono::DateTime::default(),
            size: 0,
            e_tag: None,
            version: None,
        }
    }

    #[test]
    fn a_page_s_objects_and_prefixes_come_out_in_key_order() {
        let page = ListResult {
            objects: vec![object("t/a.json"), object("t/a0"), object("t/b")],
            common_prefixes: vec![ObjectPath::from("t/a"), ObjectPath::from("t/a-")],
        };
        let keys: Vec<String> = parts(page).iter().map(Part::key).collect();
        // '-' < '.' < '/' < '0': the keys under t/a/ sort between t/a.json and t/a0.
        assert_eq!(keys, ["t/a-/", "t/a.json", "t/a/", "t/a0", "t/b"]);
    }

    #[test]
    fn the_paginated_prefix_carries_its_delimiter() {
        assert_eq!(request_prefix(None), None);
        assert_eq!(request_prefix(Some(&ObjectPath::from(""))), None);
        assert_eq!(
            request_prefix(Some(&ObjectPath::from("a/b"))).as_deref(),
            Some("a/b/")
        );
    }

    /// A bucket on moto (`scripts/services/objectstore.sh`), created with a plain HTTP PUT.
    fn moto_bucket(endpoint: &str, bucket: &str) -> object_store::aws::AmazonS3 {
        use std::io::{Read, Write};
        let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
        let mut s = std::net::TcpStream::connect(host).unwrap();
        write!(
            s,
            "PUT /{bucket} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .build()
            .unwrap()
    }

    /// The fanned-out listing gives exactly the plain listing's keys in its order (hidden
    /// sub-prefixes left out), whatever the page size, chunk size and parallelism: top-level
    /// objects between prefixes (`a-/` < `a.json` < `a/` < `a0.json`), a prefix longer than
    /// several chunks, pages of the fanned-out level ending inside runs of prefixes, and a
    /// chain of single sub-prefixes gone down first.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_moto_the_fanned_listing_is_the_plain_listing_in_key_order() {
        let Some(endpoint) = tributary_skip_log::require_env(
            "TRIBUTARY_S3_ENDPOINT",
            "scripts/services/objectstore.sh",
        ) else {
            return;
        };
        let bucket = format!("fan-{}", std::process::id());
        let s3 = Arc::new(moto_bucket(&endpoint, &bucket));
        let mut keys: Vec<String> = [
            "t/a.json",
            "t/a0.json",
            "t/a-/x.json",
            "t/b.json",
            "t/c/d/e.json",
            "t/c/f.json",
            "t/_hidden/x.json",
            "t/.tmp/y.json",
            "t/d/_delta_log/0.json",
            "one/only/deep/a/1.json",
            "one/only/deep/b/2.json",
            "one/only/deep/c.json",
        ]
        .iter()
        .map(|k| k.to_string())
        .collect();
        keys.extend((0..3).map(|i| format!("t/a/{i}.json")));
        keys.extend((0..23).map(|i| format!("t/big/k{i:03}.json")));
        keys.extend((0..9).map(|i| format!("t/p{i}/x.json")));
        futures::stream::iter(keys.clone())
            .for_each_concurrent(8, |k| {
                let s3 = Arc::clone(&s3);
                async move {
                    s3.put(&ObjectPath::from(k.as_str()), "{}".into())
                        .await
                        .unwrap();
                }
            })
            .await;
        let hidden = |n: &str| n.starts_with('_') || n.starts_with('.');
        for prefix in ["t", "one"] {
            let prefix = ObjectPath::from(prefix);
            let plain: Vec<String> = s3
                .list(Some(&prefix))
                .map_ok(|m| m.location.to_string())
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
                .into_iter()
                // Only the fanned-out level's hidden sub-prefixes are skipped whole (here the
                // first level below `t`); deeper ones, and hidden file names, are the source's
                // filter's to drop.
                .filter(|k| {
                    let rel = &k[prefix.as_ref().len() + 1..];
                    !rel.split_once('/').is_some_and(|(dir, _)| hidden(dir))
                })
                .collect();
            assert!(plain.len() >= 3, "{plain:?}");
            for (parallelism, page_keys, chunk) in
                [(4, Some(2), 5), (2, Some(1), 1), (8, None, 1000)]
            {
                let shape = Shape {
                    parallelism,
                    page_keys,
                    chunk,
                };
                let store: Arc<dyn ObjectStore> = Arc::clone(&s3) as Arc<dyn ObjectStore>;
                let pages: Arc<dyn PaginatedListStore> = Arc::clone(&s3) as _;
                let fanned: Vec<String> =
                    list_shaped(store, pages, Some(prefix.clone()), shape, hidden)
                        .map_ok(|m| m.location.to_string())
                        .try_collect()
                        .await
                        .unwrap();
                assert_eq!(fanned, plain, "{prefix} with {shape:?}");
            }
        }
    }
}
