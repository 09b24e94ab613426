//! The files source on object stores, against real emulators started by
//! `scripts/services/objectstore.sh`: moto's server mode for S3 and Azurite for Azure Blob.
//! Discovery (one request stream, and fanned out across prefixes), reads with `_metadata`, exactly-once restarts, cleanSource MOVE/DELETE, and the
//! errors for a missing bucket, a missing prefix and missing or rejected credentials.
//! Objects are written and checked with object_store's own clients (not the source).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray, StructArray};
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ConnectorContext, ErrorCode, Options, Source, SourceFactoryExt};

const SERVICE: &str = "scripts/services/objectstore.sh";

fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            % 1_000_000,
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// An S3 bucket on moto, created with a plain HTTP PUT (moto needs no signature for it).
struct S3 {
    endpoint: String,
    bucket: String,
    store: Arc<dyn ObjectStore>,
}

impl S3 {
    fn new() -> Option<S3> {
        let endpoint = tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", SERVICE)?;
        let bucket = unique("tf");
        http_put(&endpoint, &format!("/{bucket}"));
        let store = AmazonS3Builder::new()
            .with_endpoint(&endpoint)
            .with_allow_http(true)
            .with_bucket_name(&bucket)
            .with_region("us-east-1")
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .build()
            .unwrap();
        Some(S3 {
            endpoint,
            bucket,
            store: Arc::new(store),
        })
    }

    fn options(&self, key: &str) -> Vec<(String, String)> {
        vec![
            ("path".into(), format!("s3://{}/{key}", self.bucket)),
            ("cloudFiles.format".into(), "json".into()),
            ("cloudFiles.endpoint".into(), self.endpoint.clone()),
            ("cloudFiles.region".into(), "us-east-1".into()),
            ("cloudFiles.awsAccessKey".into(), "testing".into()),
            (
                "cloudFiles.awsSecretKey".into(),
                "{{secrets/env/TRIBUTARY_S3_SECRET_KEY}}".into(),
            ),
        ]
    }
}

/// `PUT path` with an empty body on `endpoint` (http://host:port), expecting 200.
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

fn json_rows(base: i64, rows: i64) -> String {
    (base..base + rows)
        .map(|i| format!("{{\"id\": {i}, \"name\": \"n{i}\"}}\n"))
        .collect()
}

async fn put(store: &Arc<dyn ObjectStore>, key: &str, text: String) {
    store
        .put(&ObjectPath::from(key), PutPayload::from(text))
        .await
        .unwrap();
}

async fn keys(store: &Arc<dyn ObjectStore>) -> Vec<String> {
    let mut k: Vec<String> = store
        .list(None)
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    k.sort();
    k
}

fn create(
    options: &[(String, String)],
    state: Option<&Path>,
) -> tributary_sdk::Result<Box<dyn Source>> {
    let options: Options = options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let context = ConnectorContext {
        state_dir: state.map(Path::to_path_buf),
        ..Default::default()
    };
    FilesSourceFactory.create(&options, &context)
}

/// (id, file_path) of every row.
fn rows(batches: &[RecordBatch]) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for b in batches {
        let ids = arrow_cast::cast(
            b.column_by_name("id").unwrap(),
            &arrow_schema::DataType::Int64,
        )
        .unwrap();
        let ids = ids.as_any().downcast_ref::<Int64Array>().unwrap();
        let meta = b
            .column_by_name("_metadata")
            .unwrap()
            .as_any()
            .downcast_ref::<StructArray>()
            .unwrap();
        let paths = meta
            .column_by_name("file_path")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        for i in 0..b.num_rows() {
            out.push((ids.value(i), paths.value(i).to_string()));
        }
    }
    out
}

async fn run_once(
    source: &mut Box<dyn Source>,
    start: &tributary_sdk::Offset,
) -> (tributary_sdk::Offset, Vec<(i64, String)>) {
    let end = source
        .latest_offset(start, &source.default_read_limit())
        .await
        .unwrap();
    let batches = source.read(start, &end).await.unwrap();
    (end, rows(&batches))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_files_are_read_once_across_restarts_with_metadata() {
    let Some(s3) = S3::new() else { return };
    let state = tempfile::tempdir().unwrap();
    put(&s3.store, "in/a.json", json_rows(0, 3)).await;
    put(&s3.store, "in/sub/b.json", json_rows(3, 2)).await;
    put(&s3.store, "in/_tmp/skip.json", json_rows(100, 1)).await;
    put(&s3.store, "other/c.json", json_rows(200, 1)).await;
    let mut options = s3.options("in");
    options.push(("cloudFiles.inferColumnTypes".into(), "true".into()));

    let mut source = create(&options, Some(state.path())).unwrap();
    let start = source.initial_offset().await.unwrap();
    let (end, got) = run_once(&mut source, &start).await;
    let mut ids: Vec<i64> = got.iter().map(|r| r.0).collect();
    ids.sort();
    assert_eq!(ids, vec![0, 1, 2, 3, 4]);
    let a = format!("s3://{}/in/a.json", s3.bucket);
    assert!(got.iter().any(|(id, p)| *id == 0 && *p == a), "{got:?}");
    // Replaying the same range reads the same rows.
    let again = rows(&source.read(&start, &end).await.unwrap());
    assert_eq!(again, got);
    source.commit(&end).await.unwrap();
    drop(source);

    // A restart: only the new file.
    put(&s3.store, "in/c.json", json_rows(5, 2)).await;
    let mut source = create(&options, Some(state.path())).unwrap();
    let (end2, got) = run_once(&mut source, &end).await;
    assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), vec![5, 6]);
    source.commit(&end2).await.unwrap();
    let (end3, got) = run_once(&mut source, &end2).await;
    assert!(got.is_empty());
    assert_eq!(end3, end2);
}

/// `cloudFiles.fetchParallelism=4`: the listing fans out across the prefix's sub-prefixes
/// (going down `in/` and its single `year=2026/` first) and finds what one request stream
/// finds, each file once, the hidden `_tmp/` not listed; a restart with the option reads only
/// the new file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_listing_across_prefixes_finds_each_file_once() {
    let Some(s3) = S3::new() else { return };
    let mut id = 0;
    for key in [
        "in/year=2026/a.json",
        "in/year=2026/month=01/b.json",
        "in/year=2026/month=01/c.json",
        "in/year=2026/month=02/d.json",
        "in/year=2026/month=03/day=01/e.json",
        "in/year=2026/month=030/f.json",
        "in/year=2026/_tmp/skip.json",
    ] {
        let rows = if key.contains("_tmp") { 1 } else { 2 };
        put(
            &s3.store,
            key,
            json_rows(if rows == 1 { 100 } else { id }, rows),
        )
        .await;
        if rows == 2 {
            id += 2;
        }
    }
    let mut found = Vec::new();
    for parallelism in ["1", "4"] {
        let state = tempfile::tempdir().unwrap();
        let mut options = s3.options("in");
        options.push(("schema".into(), "id BIGINT, name STRING".into()));
        options.push(("cloudFiles.fetchParallelism".into(), parallelism.into()));
        let mut source = create(&options, Some(state.path())).unwrap();
        let start = source.initial_offset().await.unwrap();
        let (end, mut got) = run_once(&mut source, &start).await;
        got.sort();
        let ids: Vec<i64> = got.iter().map(|r| r.0).collect();
        assert_eq!(
            ids,
            (0..id).collect::<Vec<_>>(),
            "fetchParallelism={parallelism}"
        );
        found.push(got);
        if parallelism == "4" {
            source.commit(&end).await.unwrap();
            drop(source);
            put(&s3.store, "in/year=2026/month=04/g.json", json_rows(id, 1)).await;
            let mut source = create(&options, Some(state.path())).unwrap();
            let (_, got) = run_once(&mut source, &end).await;
            assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), vec![id]);
        }
    }
    assert_eq!(found[0], found[1]);
}

/// Input partitions (scale-out): the driver's groups of S3 files, read by a source built from
/// the same options with no state directory, are the driver's rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_input_partitions_read_the_same_files() {
    let Some(s3) = S3::new() else { return };
    let state = tempfile::tempdir().unwrap();
    let mut base = 0;
    for (i, n) in [3, 40, 1, 9000, 12, 5].into_iter().enumerate() {
        put(&s3.store, &format!("in/p{i}.json"), json_rows(base, n)).await;
        base += n;
    }
    let mut options = s3.options("in");
    options.push(("cloudFiles.inferColumnTypes".into(), "true".into()));
    let mut driver = create(&options, Some(state.path())).unwrap();
    let start = driver.initial_offset().await.unwrap();
    let (end, read) = run_once(&mut driver, &start).await;
    assert_eq!(read.len() as i64, base);
    let partitions = driver
        .plan_partitions(&start, &end, 3)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(partitions.len(), 3, "{partitions:?}");
    let first = format!("(first: s3://{}/in/p0.json)", s3.bucket);
    assert!(
        partitions[0].label.ends_with(&first),
        "{}",
        partitions[0].label
    );

    let mut executor = create(&options, None).unwrap();
    let mut got = Vec::new();
    for p in &partitions {
        let batches: Vec<RecordBatch> = executor
            .read_partition(p)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert!(batches.iter().all(|b| b.schema() == driver.schema()));
        got.extend(rows(&batches));
    }
    assert_eq!(got, read);
    let mut ids: Vec<i64> = got.iter().map(|r| r.0).collect();
    ids.sort();
    assert_eq!(ids, (0..base).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_clean_source_moves_within_the_bucket_and_deletes() {
    let Some(s3) = S3::new() else { return };
    put(&s3.store, "landing/x/a.json", json_rows(0, 2)).await;
    put(&s3.store, "landing/b.json", json_rows(2, 2)).await;
    let mut options = s3.options("landing");
    options.push(("cloudFiles.cleanSource".into(), "MOVE".into()));
    options.push((
        "cloudFiles.cleanSource.moveDestination".into(),
        format!("s3://{}/archive", s3.bucket),
    ));
    options.push((
        "cloudFiles.cleanSource.retentionDuration".into(),
        "0s".into(),
    ));
    let mut source = create(&options, None).unwrap();
    let start = source.initial_offset().await.unwrap();
    let (end, got) = run_once(&mut source, &start).await;
    assert_eq!(got.len(), 4);
    source.commit(&end).await.unwrap();
    assert_eq!(
        keys(&s3.store).await,
        vec!["archive/b.json".to_string(), "archive/x/a.json".to_string()]
    );
    assert_eq!(source.metrics()["numFilesCleaned"], 2);

    // DELETE.
    put(&s3.store, "del/a.json", json_rows(0, 1)).await;
    let mut options = s3.options("del");
    options.push(("cloudFiles.cleanSource".into(), "DELETE".into()));
    options.push((
        "cloudFiles.cleanSource.retentionDuration".into(),
        "0s".into(),
    ));
    let mut source = create(&options, None).unwrap();
    let start = source.initial_offset().await.unwrap();
    let (end, _) = run_once(&mut source, &start).await;
    source.commit(&end).await.unwrap();
    assert!(!keys(&s3.store).await.iter().any(|k| k.starts_with("del/")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_missing_bucket_prefix_or_credentials_are_clear_errors() {
    let Some(s3) = S3::new() else { return };
    put(&s3.store, "in/a.json", json_rows(0, 1)).await;
    let schema = ("schema".to_string(), "id BIGINT".to_string());

    let mut options = s3.options("in");
    options[0].1 = "s3://no-such-bucket-tributary/in".into();
    options.push(schema.clone());
    let e = create(&options, None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    assert!(
        e.message().contains("no-such-bucket-tributary") && e.message().contains("does not exist"),
        "{e}"
    );

    let mut options = s3.options("nothing/here");
    options.push(schema.clone());
    let e = create(&options, None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    assert!(e.message().contains("does not exist"), "{e}");

    // A single object named by its key is read as a one-file path.
    let mut options = s3.options("in/a.json");
    options.push(schema.clone());
    let mut source = create(&options, None).unwrap();
    let start = source.initial_offset().await.unwrap();
    assert_eq!(run_once(&mut source, &start).await.1.len(), 1);

    // No credentials anywhere: the AWS chain finds none (instance metadata disabled).
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials");
    std::env::set_var("AWS_CONFIG_FILE", "/nonexistent/config");
    let mut options: Vec<_> = s3
        .options("in")
        .into_iter()
        .filter(|(k, _)| !k.starts_with("cloudFiles.aws"))
        .collect();
    options.push(schema.clone());
    let e = create(&options, None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authentication, "{e}");
    assert!(
        e.message().contains(&s3.bucket) && e.message().contains("default credential chain"),
        "{e}"
    );

    // A secret reference that does not resolve names the reference, never a value.
    let mut options = s3.options("in");
    options[5].1 = "{{secrets/env/TRIBUTARY_NO_SUCH_VARIABLE}}".into();
    options.push(schema);
    let e = create(&options, None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::SecretNotFound, "{e}");
}

/// An Azurite container, created with the storage REST API signed with the development key
/// (a few lines of Python: no Azure SDK is installed here).
struct Azure {
    connection_string: String,
    container: String,
    store: Arc<dyn ObjectStore>,
}

impl Azure {
    fn new() -> Option<Azure> {
        let endpoint = tributary_skip_log::require_env("TRIBUTARY_AZURITE_BLOB_ENDPOINT", SERVICE)?;
        let account = std::env::var("TRIBUTARY_AZURITE_ACCOUNT").unwrap();
        let key = std::env::var("TRIBUTARY_AZURITE_KEY").unwrap();
        let connection_string = std::env::var("TRIBUTARY_AZURITE_CONNECTION_STRING").unwrap();
        let container = unique("tf");
        create_container(&endpoint, &account, &key, &container);
        let store = MicrosoftAzureBuilder::new()
            .with_account(&account)
            .with_access_key(&key)
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_container_name(&container)
            .build()
            .unwrap();
        Some(Azure {
            connection_string,
            container,
            store: Arc::new(store),
        })
    }

    fn options(&self, key: &str) -> Vec<(String, String)> {
        vec![
            ("path".into(), format!("az://{}/{key}", self.container)),
            ("cloudFiles.format".into(), "json".into()),
            (
                "cloudFiles.connectionString".into(),
                self.connection_string.clone(),
            ),
        ]
    }
}

fn create_container(endpoint: &str, account: &str, key: &str, container: &str) {
    let script = r#"
import base64, hashlib, hmac, sys, urllib.request, email.utils
endpoint, account, key, container = sys.argv[1:5]
date = email.utils.formatdate(usegmt=True)
version = "2021-08-06"
path = "/" + endpoint.split("/", 3)[3] + "/" + container
sts = "PUT\n\n\n\n\napplication/octet-stream\n\n\n\n\n\n\n" + f"x-ms-date:{date}\nx-ms-version:{version}\n" + f"/{account}{path}\nrestype:container"
sig = base64.b64encode(hmac.new(base64.b64decode(key), sts.encode(), hashlib.sha256).digest()).decode()
req = urllib.request.Request(f"{endpoint}/{container}?restype=container", method="PUT", data=b"",
    headers={"x-ms-date": date, "x-ms-version": version, "Authorization": f"SharedKey {account}:{sig}", "Content-Type": "application/octet-stream"})
assert urllib.request.urlopen(req).status == 201
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", script, endpoint, account, key, container])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_blob_reads_once_and_moves_within_the_container() {
    let Some(az) = Azure::new() else { return };
    let state = tempfile::tempdir().unwrap();
    put(&az.store, "in/a.json", json_rows(0, 2)).await;
    let mut options = az.options("in");
    options.push(("schema".into(), "id BIGINT, name STRING".into()));
    options.push(("cloudFiles.cleanSource".into(), "MOVE".into()));
    options.push((
        "cloudFiles.cleanSource.moveDestination".into(),
        format!("az://{}/done", az.container),
    ));
    options.push((
        "cloudFiles.cleanSource.retentionDuration".into(),
        "0s".into(),
    ));
    let mut source = create(&options, Some(state.path())).unwrap();
    let start = source.initial_offset().await.unwrap();
    let (end, got) = run_once(&mut source, &start).await;
    assert_eq!(
        got,
        vec![
            (0, format!("az://{}/in/a.json", az.container)),
            (1, format!("az://{}/in/a.json", az.container))
        ]
    );
    source.commit(&end).await.unwrap();
    assert_eq!(keys(&az.store).await, vec!["done/a.json".to_string()]);
    drop(source);
    put(&az.store, "in/b.json", json_rows(2, 1)).await;
    let mut source = create(&options, Some(state.path())).unwrap();
    let (_, got) = run_once(&mut source, &end).await;
    assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), vec![2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_rejected_key_is_an_authentication_error_naming_the_container() {
    let Some(az) = Azure::new() else { return };
    put(&az.store, "in/a.json", json_rows(0, 1)).await;
    let mut options = az.options("in");
    let wrong = az.connection_string.replace(
        "AccountKey=",
        "AccountKey=d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ==;Unused=",
    );
    options[2].1 = wrong;
    options.push(("schema".into(), "id BIGINT".into()));
    let e = create(&options, None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authentication, "{e}");
    assert!(
        e.message().contains(&az.container) && e.message().contains("connectionString"),
        "{e}"
    );
    assert!(!e.message().contains("d3Jvbmc"), "{e}");
}

/// All ids read from `start` to the latest offset now (one trigger), committed.
async fn trigger(
    source: &mut Box<dyn Source>,
    start: &tributary_sdk::Offset,
) -> (tributary_sdk::Offset, Vec<i64>) {
    let (end, got) = run_once(source, start).await;
    source.commit(&end).await.unwrap();
    (end, got.into_iter().map(|r| r.0).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_incremental_listing_finds_late_out_of_order_files_at_the_next_full_listing() {
    let Some(s3) = S3::new() else { return };
    put(&s3.store, "in/f-001.json", json_rows(1, 1)).await;
    put(&s3.store, "in/f-002.json", json_rows(2, 1)).await;
    let mut options = s3.options("in");
    options.push(("schema".into(), "id BIGINT".into()));
    options.push(("cloudFiles.useIncrementalListing".into(), "true".into()));
    let mut source = create(&options, None).unwrap();
    let start = source.initial_offset().await.unwrap();
    let (mut at, mut ids) = trigger(&mut source, &start).await; // full
    put(&s3.store, "in/f-003.json", json_rows(3, 1)).await;
    put(&s3.store, "in/a-000.json", json_rows(0, 1)).await; // sorts before: missed incrementally
    let (next, got) = trigger(&mut source, &at).await;
    assert_eq!(got, vec![3]);
    at = next;
    ids.extend(got);
    for _ in 1..7 {
        let (next, got) = trigger(&mut source, &at).await;
        assert!(got.is_empty(), "incremental listings start after f-003");
        at = next;
    }
    let m = source.metrics();
    assert_eq!(
        (
            m["numFullListings"].as_u64(),
            m["numIncrementalListings"].as_u64()
        ),
        (Some(1), Some(7))
    );
    let (_, got) = trigger(&mut source, &at).await; // the 8th: full
    assert_eq!(got, vec![0]);
    ids.extend(got);
    ids.sort();
    assert_eq!(ids, vec![0, 1, 2, 3]);

    // auto: on while new names sort after the known ones.
    let mut options = s3.options("in");
    options.push(("schema".into(), "id BIGINT".into()));
    let mut source = create(&options, None).unwrap();
    let start = source.initial_offset().await.unwrap();
    let (at, _) = trigger(&mut source, &start).await;
    put(&s3.store, "in/f-004.json", json_rows(4, 1)).await;
    let (_, got) = trigger(&mut source, &at).await;
    assert_eq!(got, vec![4]);
    assert_eq!(source.metrics()["numIncrementalListings"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_backfill_listing_finds_a_missed_file_without_duplicates() {
    let Some(s3) = S3::new() else { return };
    put(&s3.store, "in/f-001.json", json_rows(1, 1)).await;
    let mut options = s3.options("in");
    options.push(("schema".into(), "id BIGINT".into()));
    options.push(("cloudFiles.useIncrementalListing".into(), "true".into()));
    options.push(("cloudFiles.backfillInterval".into(), "1s".into()));
    let mut source = create(&options, None).unwrap();
    let start = source.initial_offset().await.unwrap();
    let (mut at, mut ids) = trigger(&mut source, &start).await;
    put(&s3.store, "in/a-000.json", json_rows(0, 1)).await; // missed by incremental listing
    put(&s3.store, "in/f-002.json", json_rows(2, 1)).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // This trigger lists incrementally and starts the backfill listing in the background.
    let (next, got) = trigger(&mut source, &at).await;
    assert_eq!(got, vec![2]);
    at = next;
    ids.extend(got);
    let t0 = std::time::Instant::now();
    while source.metrics()["numBackfillListings"] == 0 {
        assert!(
            t0.elapsed().as_secs() < 20,
            "the backfill listing never finished"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let (next, got) = trigger(&mut source, &at).await;
        at = next;
        ids.extend(got);
    }
    ids.sort();
    assert_eq!(ids, vec![0, 1, 2], "found once, nothing twice");
}
