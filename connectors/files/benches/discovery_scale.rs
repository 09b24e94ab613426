//! Discovery at scale, each side by side with the plain tools underneath in the same run:
//!
//! 1. **Second available-now run over N tracked local files** (default 1,000,000;
//!    `TRIBUTARY_BENCH_FILES`; empty files, so 10 M fit on a small disk): a source reopened on
//!    a checkpoint whose file state already holds every file lists the tree and finds nothing
//!    new, against `find -printf '%s %T@'` of the same tree and a plain recursive `std::fs`
//!    walk reading each file's metadata (what any listing needs: size and modification time).
//!    The second run also runs alone in a child process, which reports its peak RSS
//!    (`VmHWM`): the goal is the same RSS at 1 M and 10 M.
//! 2. **First run: time to the first committed batch** (1,000 files, Auto Loader's default
//!    `maxFilesPerTrigger`), with discovery overlapping the reading, against the time the
//!    whole listing took (when, without overlap, the first batch could start).
//! 3. **S3 listing of K keys** (default 100,000; `TRIBUTARY_BENCH_KEYS`) on moto's server
//!    (`scripts/services/objectstore.sh`): the source's discovery (listing, filters and queuing
//!    into an in-memory file state), with one request stream and fanned out across the 100
//!    prefixes (`cloudFiles.fetchParallelism`, default 8; `TRIBUTARY_BENCH_FETCH`), against
//!    object_store's raw `list` of the same prefix.
//!
//! Outputs are checked outside the timing (files found, nothing queued twice). Prints the ratios.
//! Run: `cargo bench -p tributary-files --bench discovery_scale`
//! (`TRIBUTARY_BENCH=local` or `s3` for one part; `TRIBUTARY_BENCH_DIR` to keep the tree and
//! state between runs).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ConnectorContext, Offset, Options, ReadLimit, Source, SourceFactoryExt};

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

/// `find -printf` of the tree: the lines it printed.
fn find(dir: &Path) -> u64 {
    let out = std::process::Command::new("find")
        .arg(dir)
        .args(["-type", "f", "-printf", "%s %T@\n"])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout.iter().filter(|b| **b == b'\n').count() as u64
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Drives an available-now run's discovery to its end without reading: the offsets it hands
/// out until it has nothing more.
async fn drain(s: &mut Box<dyn Source>, from: u64) -> u64 {
    let mut start = Offset::from_json(serde_json::json!({ "seq": from }));
    loop {
        let end = s.latest_offset(&start, &ReadLimit::All).await.unwrap();
        if end == start {
            return end.as_json()["seq"].as_u64().unwrap();
        }
        start = end;
    }
}

/// The second run: reopen, list, find nothing new. Returns its time.
async fn second_run(path: &str, state: &Path, n: usize) -> Duration {
    let t = Instant::now();
    let mut s = source(path, Some(state), &[]);
    s.prepare_available_now().await.unwrap();
    let end = drain(&mut s, n as u64).await;
    let took = t.elapsed();
    assert_eq!(end, n as u64, "nothing new on the second run");
    assert_eq!(s.metrics()["numFilesTracked"].as_u64(), Some(n as u64));
    took
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

async fn local(n: usize) {
    let kept = std::env::var("TRIBUTARY_BENCH_DIR").ok();
    let temp = tempfile::tempdir().unwrap();
    let root = kept
        .as_deref()
        .map(|d| Path::new(d).join(format!("files-{n}")))
        .unwrap_or_else(|| temp.path().to_path_buf());
    let input = root.join("in");
    let state = root.join("state");
    let per_dir = 1000;
    let path = input.display().to_string();
    if !state.join("files.db").is_file() {
        let _ = std::fs::remove_dir_all(&state);
        let t = Instant::now();
        // A kept tree is reused (it takes minutes to write 10 M files).
        let last = input.join(format!("d{:05}", n.div_ceil(per_dir) - 1));
        for d in 0..n.div_ceil(per_dir) {
            if last.is_dir() {
                break;
            }
            let dir = input.join(format!("d{d:05}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..per_dir.min(n - d * per_dir) {
                std::fs::File::create(dir.join(format!("f{f:04}.json"))).unwrap();
            }
        }
        eprintln!("local: wrote {n} files in {:?}", t.elapsed());
        // First run: every file queued into the checkpoint's file state; the first batch
        // (1,000 files) read and committed while the listing goes on.
        let t = Instant::now();
        let mut s = source(&path, Some(&state), &[]);
        s.prepare_available_now().await.unwrap();
        let start = s.initial_offset().await.unwrap();
        let first_end = s
            .latest_offset(&start, &s.default_read_limit())
            .await
            .unwrap();
        let rows: usize = s
            .read(&start, &first_end)
            .await
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        s.commit(&first_end).await.unwrap();
        let first_batch = t.elapsed();
        assert_eq!(rows, 0, "empty files");
        assert_eq!(first_end.as_json()["seq"].as_u64(), Some(1000));
        let end = drain(&mut s, 1000).await;
        let listed = t.elapsed();
        assert_eq!(end, n as u64);
        assert_eq!(s.metrics()["numFilesTracked"].as_u64(), Some(n as u64));
        drop(s);
        println!(
            "first run over {n} local files: first batch committed after {first_batch:?} (discovery overlapping); whole listing queued after {listed:?} (the earliest a first batch could start without overlap): {:.1}x sooner",
            listed.as_secs_f64() / first_batch.as_secs_f64()
        );
    }

    let (mut ours, mut plain, mut finds) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        ours.push(second_run(&path, &state, n).await);

        let t = Instant::now();
        let mut count = 0;
        walk(&input, &mut count);
        plain.push(t.elapsed());
        assert_eq!(count, n as u64);

        let t = Instant::now();
        assert_eq!(find(&input), n as u64);
        finds.push(t.elapsed());
    }
    let (ours, plain, finds) = (median(ours), median(plain), median(finds));
    println!(
        "second available-now run over {n} tracked local files: {ours:?}; find -printf: {finds:?} ({:.2}x find); plain std::fs walk with metadata: {plain:?} ({:.2}x the walk)",
        ours.as_secs_f64() / finds.as_secs_f64(),
        ours.as_secs_f64() / plain.as_secs_f64()
    );
    // The second run alone in a fresh process: its peak RSS.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("TRIBUTARY_BENCH_CHILD", format!("{n}"))
        .env("TRIBUTARY_BENCH_CHILD_PATH", &path)
        .env("TRIBUTARY_BENCH_CHILD_STATE", &state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    print!("{}", String::from_utf8_lossy(&out.stdout));
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
    let fetch = env_usize("TRIBUTARY_BENCH_FETCH", 8).to_string();
    let mut fanned_opts = opts.to_vec();
    fanned_opts.push(("cloudFiles.fetchParallelism", fetch.as_str()));
    let (mut ours, mut fanned, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..env_usize("TRIBUTARY_BENCH_S3_ROUNDS", 2) {
        for (opts, times) in [(&opts[..], &mut ours), (&fanned_opts[..], &mut fanned)] {
            let mut s = source(&path, None, opts);
            let t = Instant::now();
            s.prepare_available_now().await.unwrap();
            assert_eq!(drain(&mut s, 0).await, k as u64);
            times.push(t.elapsed());
            assert_eq!(s.metrics()["numFilesTracked"].as_u64(), Some(k as u64));
        }

        let t = Instant::now();
        let n = store
            .list(Some(&prefix))
            .try_fold(0usize, |n, _| async move { Ok(n + 1) })
            .await
            .unwrap();
        raw.push(t.elapsed());
        assert_eq!(n, k);
    }
    let (ours, fanned, raw) = (median(ours), median(fanned), median(raw));
    println!(
        "S3 listing of {k} keys in 100 prefixes (moto): source discovery {ours:?} ({:.0} keys/s), \
         with cloudFiles.fetchParallelism={fetch} {fanned:?} ({:.0} keys/s); raw object_store \
         list {raw:?} ({:.0} keys/s); throughput {:.2}x and {:.2}x the raw list",
        k as f64 / ours.as_secs_f64(),
        k as f64 / fanned.as_secs_f64(),
        k as f64 / raw.as_secs_f64(),
        raw.as_secs_f64() / ours.as_secs_f64(),
        raw.as_secs_f64() / fanned.as_secs_f64()
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Ok(n) = std::env::var("TRIBUTARY_BENCH_CHILD") {
        let n: usize = n.parse().unwrap();
        let path = std::env::var("TRIBUTARY_BENCH_CHILD_PATH").unwrap();
        let state = std::env::var("TRIBUTARY_BENCH_CHILD_STATE").unwrap();
        let took = rt.block_on(second_run(&path, Path::new(&state), n));
        println!(
            "second run over {n} tracked files alone in a process: {took:?}, peak RSS {} MiB",
            peak_rss_kib() / 1024
        );
        return;
    }
    let which = std::env::var("TRIBUTARY_BENCH").unwrap_or_default();
    if which.is_empty() || which == "local" {
        rt.block_on(local(env_usize("TRIBUTARY_BENCH_FILES", 1_000_000)));
    }
    if which.is_empty() || which == "s3" {
        rt.block_on(s3(env_usize("TRIBUTARY_BENCH_KEYS", 100_000)));
    }
}
