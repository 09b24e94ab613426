//! Discovery at scale, each side by side with the plain library underneath in the same run:
//!
//! 1. **Second available-now run over N tracked local files** (default 1,000,000;
//!    `TRIBUTARY_BENCH_FILES`): a source reopened on a checkpoint whose file state already holds
//!    every file lists the tree and finds nothing new, against a plain recursive `std::fs` walk
//!    reading each file's metadata (what any listing needs: size and modification time).
//! 2. **S3 listing of K keys** (default 100,000; `TRIBUTARY_BENCH_KEYS`) on moto's server
//!    (`scripts/services/objectstore.sh`): the source's discovery (listing, filters and queuing
//!    into an in-memory file state) against object_store's raw `list` of the same prefix.
//!
//! Outputs are checked outside the timing (files found, nothing queued twice). Prints the ratios.
//! Run: `cargo bench -p tributary-files --bench discovery_scale`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ConnectorContext, Options, Source, SourceFactoryExt};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn source(path: &str, state: Option<&Path>, extra: &[(&str, &str)]) -> Box<dyn Source> {
    let mut options: Options = [
        ("path", path),
        ("cloudFiles.format", "json"),
        ("schema", "id BIGINT"),
    ]
    .into_iter()
    .collect();
    for (k, v) in extra {
        options.set(*k, *v);
    }
    let context = ConnectorContext {
        state_dir: state.map(Path::to_path_buf),
        ..Default::default()
    };
    FilesSourceFactory.create(&options, &context).unwrap()
}

fn walk(dir: &Path, out: &mut u64) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let meta = e.metadata().unwrap();
        if meta.is_dir() {
            walk(&e.path(), out);
        } else {
            std::hint::black_box((meta.len(), meta.modified().unwrap()));
            *out += 1;
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn local(n: usize) {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    let state = root.path().join("state");
    let t = Instant::now();
    let per_dir = 1000;
    for d in 0..n.div_ceil(per_dir) {
        let dir = input.join(format!("d{d:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..per_dir.min(n - d * per_dir) {
            std::fs::write(dir.join(format!("f{f:04}.json")), b"{}\n").unwrap();
        }
    }
    eprintln!("local: wrote {n} files in {:?}", t.elapsed());
    let path = input.display().to_string();
    // First run: every file queued into the checkpoint's file state.
    let t = Instant::now();
    let mut s = source(&path, Some(&state), &[]);
    s.prepare_available_now().await.unwrap();
    let first = s.metrics()["numFilesTracked"].as_u64().unwrap();
    assert_eq!(first, n as u64);
    drop(s);
    eprintln!(
        "local: first run tracked {first} files in {:?}",
        t.elapsed()
    );

    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let t = Instant::now();
        let mut s = source(&path, Some(&state), &[]);
        s.prepare_available_now().await.unwrap();
        let start = tributary_sdk::Offset::from_json(serde_json::json!({"seq": n}));
        let end = s
            .latest_offset(&start, &s.default_read_limit())
            .await
            .unwrap();
        ours.push(t.elapsed());
        assert_eq!(end, start, "nothing new on the second run");
        assert_eq!(s.metrics()["numFilesTracked"].as_u64(), Some(n as u64));
        drop(s);

        let t = Instant::now();
        let mut count = 0;
        walk(&input, &mut count);
        plain.push(t.elapsed());
        assert_eq!(count, n as u64);
    }
    let (ours, plain) = (median(ours), median(plain));
    println!(
        "second available-now run over {n} tracked local files: {ours:?}; plain std::fs walk with metadata: {plain:?}; ratio {:.2}x the walk",
        ours.as_secs_f64() / plain.as_secs_f64()
    );
}

async fn s3(k: usize) {
    let Ok(endpoint) = std::env::var("TRIBUTARY_S3_ENDPOINT") else {
        println!("S3 listing: skipped (start scripts/services/objectstore.sh and source target/services/objectstore.env)");
        return;
    };
    let bucket = format!("bench-{k}");
    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(&endpoint)
            .with_allow_http(true)
            .with_bucket_name(&bucket)
            .with_region("us-east-1")
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .build()
            .unwrap(),
    );
    let prefix = ObjectPath::from("in");
    // The bucket is kept between runs (moto in memory): upload only what is missing.
    let have = match store.list(Some(&prefix)).try_collect::<Vec<_>>().await {
        Ok(v) => v.len(),
        Err(_) => {
            let host = endpoint.trim_start_matches("http://");
            let mut s = std::net::TcpStream::connect(host).unwrap();
            use std::io::{Read, Write};
            write!(s, "PUT /{bucket} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
            let mut r = String::new();
            s.read_to_string(&mut r).unwrap();
            0
        }
    };
    if have < k {
        let t = Instant::now();
        futures::stream::iter(have..k)
            .map(|i| {
                let store = store.clone();
                async move {
                    store
                        .put(
                            &ObjectPath::from(format!("in/d{:03}/f{i:07}.json", i % 100)),
                            PutPayload::from_static(b"{}\n"),
                        )
                        .await
                        .unwrap();
                }
            })
            .buffer_unordered(32)
            .collect::<Vec<_>>()
            .await;
        eprintln!("S3: uploaded {} keys in {:?}", k - have, t.elapsed());
    }
    let path = format!("s3://{bucket}/in");
    let opts = [
        ("cloudFiles.endpoint", endpoint.as_str()),
        ("cloudFiles.awsAccessKey", "testing"),
        ("cloudFiles.awsSecretKey", "testing"),
    ];
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..env_usize("TRIBUTARY_BENCH_S3_ROUNDS", 2) {
        let mut s = source(&path, None, &opts);
        let t = Instant::now();
        s.prepare_available_now().await.unwrap();
        ours.push(t.elapsed());
        assert_eq!(s.metrics()["numFilesTracked"].as_u64(), Some(k as u64));

        let t = Instant::now();
        let n = store
            .list(Some(&prefix))
            .try_fold(0usize, |n, _| async move { Ok(n + 1) })
            .await
            .unwrap();
        raw.push(t.elapsed());
        assert_eq!(n, k);
    }
    let (ours, raw) = (median(ours), median(raw));
    println!(
        "S3 listing of {k} keys (moto): source discovery {ours:?} ({:.0} keys/s); raw object_store list {raw:?} ({:.0} keys/s); throughput {:.2}x the raw list",
        k as f64 / ours.as_secs_f64(),
        k as f64 / raw.as_secs_f64(),
        raw.as_secs_f64() / ours.as_secs_f64()
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let which = std::env::var("TRIBUTARY_BENCH").unwrap_or_default();
    if which.is_empty() || which == "local" {
        rt.block_on(local(env_usize("TRIBUTARY_BENCH_FILES", 1_000_000)));
    }
    if which.is_empty() || which == "s3" {
        rt.block_on(s3(env_usize("TRIBUTARY_BENCH_KEYS", 100_000)));
    }
}
