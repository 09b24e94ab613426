//! Exactly-once from S3 under SIGKILL: the `tributary` binary (built by
//! `cargo build -p tributary-runtime`) ingests files from moto's S3 into Parquet with
//! `cloudFiles.cleanSource = MOVE`, is killed with SIGKILL twenty times at random points while
//! more files land, and finishes with one last run. The output is read back with the `parquet`
//! crate directly (not through the sink or the source) and every id must be there exactly once;
//! every input object must have moved to the archive prefix.
//!
//! And S3 unreachable for 30 s mid-run (a stalling TCP proxy in front of moto, then every held
//! connection reset): the run waits and finishes, or fails with one clear error; a re-run then
//! finishes, every id exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::Int64Array;
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

/// The `tributary` binary: `TRIBUTARY_BIN`, else the workspace's `target/debug/tributary`.
fn binary() -> Option<PathBuf> {
    let path = std::env::var_os("TRIBUTARY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
            target.join("debug/tributary")
        });
    if path.is_file() {
        return Some(path);
    }
    tributary_skip_log::skip(&format!(
        "the tributary binary is not built at {} (cargo build -p tributary-runtime)",
        path.display()
    ));
    assert!(
        !tributary_skip_log::in_ci(),
        "tributary binary missing under CI"
    );
    None
}

fn http_put(endpoint: &str, path: &str) {
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(
        s,
        "PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

/// Uploads `files` objects of `rows` JSON rows each; returns the next id.
async fn upload(
    store: &Arc<dyn ObjectStore>,
    prefix: &str,
    files: usize,
    rows: u64,
    mut id: u64,
) -> u64 {
    for f in 0..files {
        let mut text = String::new();
        for _ in 0..rows {
            text.push_str(&format!("{{\"id\":{id},\"name\":\"row-{id}\"}}\n"));
            id += 1;
        }
        store
            .put(
                &ObjectPath::from(format!("landing/{prefix}-{f:04}.json")),
                PutPayload::from(text),
            )
            .await
            .unwrap();
    }
    id
}

/// Every id in the visible Parquet files under `dir`, read with the parquet crate.
fn parquet_ids(dir: &Path) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".parquet") {
                let file = std::fs::File::open(&p).unwrap();
                let reader =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                        .unwrap()
                        .build()
                        .unwrap();
                for b in reader {
                    let b = b.unwrap();
                    let col = b.column_by_name("id").unwrap();
                    let a = col.as_any().downcast_ref::<Int64Array>().unwrap();
                    ids.extend(a.iter().flatten());
                }
            }
        }
    }
    ids.sort_unstable();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_twenty_times_reading_s3_with_clean_source_move_is_exactly_once() {
    let Some(endpoint) =
        tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", "scripts/services/objectstore.sh")
    else {
        return;
    };
    let Some(bin) = binary() else { return };
    let bucket = format!(
        "crash-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            % 100_000
    );
    http_put(&endpoint, &format!("/{bucket}"));
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
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let pipeline = root.path().join("pipeline.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
name = "s3-crash"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "s3://{bucket}/landing", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING", "cloudFiles.maxFilesPerTrigger" = 2, "cloudFiles.endpoint" = "{endpoint}", "cloudFiles.awsAccessKey" = "testing", "cloudFiles.awsSecretKey" = "{{{{secrets/env/TRIBUTARY_S3_SECRET_KEY}}}}", "cloudFiles.cleanSource" = "MOVE", "cloudFiles.cleanSource.moveDestination" = "s3://{bucket}/archive", "cloudFiles.cleanSource.retentionDuration" = "0s" }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
            ck = root.path().join("ck").display(),
            out = out.display(),
        ),
    )
    .unwrap();
    let run = || {
        let mut c = std::process::Command::new(&bin);
        c.args(["run", "-q"])
            .arg(&pipeline)
            .env("TRIBUTARY_S3_SECRET_KEY", "testing");
        c
    };

    let seed: u64 = std::env::var("TRIBUTARY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("s3 crash test seed {seed} (TRIBUTARY_CRASH_SEED repeats it)");
    let mut state = seed | 1;
    // The kill point is uniform over the time a whole run takes on this machine (learned from
    // the runs that completed), so the kills land mid-run however fast or slow the machine is.
    let mut next_delay = move |whole_run_ms: u64| {
        // xorshift: enough randomness for kill points, no extra dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        Duration::from_millis(5 + state % whole_run_ms.max(10))
    };
    let mut whole_run_ms = 500u64;

    let mut next_id = upload(&store, "f000", 10, 20, 0).await;
    let (mut kills, mut runs) = (0, 0);
    while kills < 20 {
        runs += 1;
        assert!(
            runs <= 100,
            "only {kills} of {runs} runs were killed mid-way"
        );
        next_id = upload(&store, &format!("f{runs:03}"), 3, 20, next_id).await;
        let mut child = run().spawn().unwrap();
        let delay = next_delay(whole_run_ms);
        let t0 = Instant::now();
        let mut exited = None;
        while t0.elapsed() < delay {
            if let Some(status) = child.try_wait().unwrap() {
                exited = Some(status);
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        match exited {
            Some(status) => {
                assert!(status.success(), "run {runs} failed");
                // The run finished before its kill point: aim the next kills earlier.
                whole_run_ms = (t0.elapsed().as_millis() as u64 * 9 / 10).max(10);
            }
            None => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                kills += 1;
            }
        }
    }
    let o = run().output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let ids = parquet_ids(&out);
    let expected: Vec<i64> = (0..next_id as i64).collect();
    if ids != expected {
        let mut distinct = ids.clone();
        distinct.dedup();
        panic!(
            "seed {seed}: {} rows, {} distinct, {} expected",
            ids.len(),
            distinct.len(),
            expected.len()
        );
    }
    let keys: Vec<String> = store
        .list(None)
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    let landing = keys.iter().filter(|k| k.starts_with("landing/")).count();
    let archived = keys.iter().filter(|k| k.starts_with("archive/")).count();
    assert_eq!(landing, 0, "files left in landing/: {keys:?}");
    assert_eq!(archived as u64, next_id / 20, "every file archived once");
    eprintln!(
        "{kills} kills in {runs} runs; {} rows exactly once; {archived} files moved",
        ids.len()
    );
}

fn bucket_named(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            % 1_000_000
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_unreachable_for_30_seconds_mid_run_loses_and_duplicates_nothing() {
    let Some(endpoint) =
        tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", "scripts/services/objectstore.sh")
    else {
        return;
    };
    let Some(bin) = binary() else { return };
    let bucket = bucket_named("stall");
    http_put(&endpoint, &format!("/{bucket}"));
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
    let rows = upload(&store, "f", 40, 25, 0).await;
    let target: std::net::SocketAddr = endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let proxy = tributary_stall_proxy::StallProxy::start(target).unwrap();
    let root = tempfile::tempdir().unwrap();
    let (out, ck) = (root.path().join("out"), root.path().join("ck"));
    let pipeline = root.path().join("pipeline.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
name = "s3-stall"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "s3://{bucket}/landing", "cloudFiles.format" = "json", schema = "id BIGINT, name STRING", "cloudFiles.maxFilesPerTrigger" = 1, "cloudFiles.endpoint" = "{proxied}", "cloudFiles.awsAccessKey" = "testing", "cloudFiles.awsSecretKey" = "testing" }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
            ck = ck.display(),
            out = out.display(),
            proxied = proxy.http_endpoint(),
        ),
    )
    .unwrap();

    let mut child = std::process::Command::new(&bin)
        .args(["run", "-q"])
        .arg(&pipeline)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stall once the run is in its batch loop (a batch committed), for 30 s.
    let commits = ck.join("commits");
    let t0 = Instant::now();
    while std::fs::read_dir(&commits).map(|d| d.count()).unwrap_or(0) < 2 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no batch committed");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the stall"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    proxy.stall();
    let stalled_at = Instant::now();
    std::thread::sleep(Duration::from_secs(30));
    let ended_during_stall = child.try_wait().unwrap();
    proxy.reset();
    proxy.resume();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            stalled_at.elapsed() < Duration::from_secs(30 + 180),
            "the run neither finished nor failed within 180 s of S3's return"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    if status.success() {
        eprintln!("the run waited out the 30 s stall and finished");
    } else {
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "one clear error: {err}");
        assert!(
            !lines[0].contains("DispatchFailure") && !lines[0].contains("<?xml"),
            "a one-line error: {}",
            lines[0]
        );
        eprintln!(
            "the run failed {}: {}",
            if ended_during_stall.is_some() {
                "during the stall"
            } else {
                "after it"
            },
            lines[0]
        );
        let o = std::process::Command::new(&bin)
            .args(["run", "-q"])
            .arg(&pipeline)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "re-run: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(proxy.connections() > 1);
    let ids = parquet_ids(&out);
    assert_eq!(
        ids,
        (0..rows as i64).collect::<Vec<_>>(),
        "every id exactly once"
    );
}
