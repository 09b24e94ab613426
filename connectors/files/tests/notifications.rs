//! Notification mode (`cloudFiles.useNotifications=true`): a local directory through inotify,
//! and an S3 bucket whose event notifications go to an SQS queue on moto's server (queue and
//! bucket notification set up with boto3 from moto's venv, an independent client). A file is
//! picked up within a second of landing; a file whose event was dropped is found by the backfill
//! listing, once; a restart does not list again.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Array, Int64Array, RecordBatch};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ConnectorContext, Offset, Options, Source, SourceFactoryExt};

const SERVICE: &str = "scripts/services/objectstore.sh";

fn create(options: &[(&str, &str)], state: Option<&Path>) -> Box<dyn Source> {
    let options: Options = options.iter().copied().collect();
    let context = ConnectorContext {
        state_dir: state.map(Path::to_path_buf),
        ..Default::default()
    };
    FilesSourceFactory.create(&options, &context).unwrap()
}

fn ids(batches: &[RecordBatch]) -> Vec<i64> {
    let mut out = Vec::new();
    for b in batches {
        let a = b.column_by_name("id").unwrap();
        let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend(a.iter().flatten());
    }
    out
}

/// Triggers until `want` more rows arrived or `limit` passed; returns the rows, the new offset
/// and how long it took.
async fn wait_rows(
    source: &mut Box<dyn Source>,
    at: &Offset,
    limit: Duration,
) -> (Vec<i64>, Offset, Duration) {
    let t0 = Instant::now();
    loop {
        let end = source
            .latest_offset(at, &source.default_read_limit())
            .await
            .unwrap();
        if end != *at || t0.elapsed() > limit {
            let rows = ids(&source.read(at, &end).await.unwrap());
            source.commit(&end).await.unwrap();
            return (rows, end, t0.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_directory_files_are_picked_up_within_a_second_through_inotify() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("a.json"), "{\"id\": 1}\n").unwrap();
    let path = input.path().display().to_string();
    let options = [
        ("path", path.as_str()),
        ("cloudFiles.format", "json"),
        ("schema", "id BIGINT"),
        ("cloudFiles.useNotifications", "true"),
    ];
    let mut source = create(&options, Some(state.path()));
    let start = source.initial_offset().await.unwrap();
    let (rows, at, _) = wait_rows(&mut source, &start, Duration::from_secs(5)).await;
    assert_eq!(rows, vec![1], "the listing at start");

    std::fs::create_dir(input.path().join("sub")).unwrap();
    let landed = Instant::now();
    std::fs::write(input.path().join("sub/b.json"), "{\"id\": 2}\n").unwrap();
    let (rows, at, _) = wait_rows(&mut source, &at, Duration::from_secs(5)).await;
    let took = landed.elapsed();
    assert_eq!(rows, vec![2]);
    assert!(took < Duration::from_secs(1), "picked up after {took:?}");
    // Written elsewhere, then renamed in.
    let outside = tempfile::tempdir_in(input.path().parent().unwrap()).unwrap();
    std::fs::write(outside.path().join("c.json"), "{\"id\": 3}\n").unwrap();
    std::fs::rename(outside.path().join("c.json"), input.path().join("c.json")).unwrap();
    let (rows, _, _) = wait_rows(&mut source, &at, Duration::from_secs(5)).await;
    assert_eq!(rows, vec![3]);
    let m = source.metrics();
    assert_eq!(m["numFullListings"], 1, "no listing per trigger: {m:?}");
    assert!(m.contains_key("approximateQueueSize"), "{m:?}");
    eprintln!("local notification latency {took:?}");
}

/// Runs a Python snippet with boto3 against moto; returns its stdout.
fn boto3(script: &str, args: &[&str]) -> String {
    let python = std::env::var("TRIBUTARY_MOTO_PYTHON").unwrap();
    let endpoint = std::env::var("TRIBUTARY_S3_ENDPOINT").unwrap();
    let prelude = format!(
        "import boto3, sys\nkw = dict(endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\ns3 = boto3.client('s3', **kw)\nsqs = boto3.client('sqs', **kw)\n"
    );
    let o = std::process::Command::new(python)
        .arg("-c")
        .arg(prelude + script)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

const SETUP: &str = r#"
bucket, queue = sys.argv[1:3]
s3.create_bucket(Bucket=bucket)
url = sqs.create_queue(QueueName=queue)["QueueUrl"]
arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={
    "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]})
print(url)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_events_through_sqs_are_picked_up_within_a_second_and_backfill_finds_dropped_ones() {
    let Some(endpoint) = tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", SERVICE) else {
        return;
    };
    let Some(_) = tributary_skip_log::require_env("TRIBUTARY_MOTO_PYTHON", SERVICE) else {
        return;
    };
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 10_000_000;
    let bucket = format!("notify-{n}");
    let queue_url = boto3(SETUP, &[&bucket, &format!("q-{n}")]);
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
    let put = |key: &str, id: i64| {
        let store = store.clone();
        let key = ObjectPath::from(key);
        async move {
            store
                .put(&key, PutPayload::from(format!("{{\"id\": {id}}}\n")))
                .await
                .unwrap();
        }
    };
    put("in/a.json", 1).await; // before the stream: found by the first run's listing
    let state = tempfile::tempdir().unwrap();
    let path = format!("s3://{bucket}/in");
    let options = [
        ("path", path.as_str()),
        ("cloudFiles.format", "json"),
        ("schema", "id BIGINT"),
        ("cloudFiles.endpoint", endpoint.as_str()),
        ("cloudFiles.awsAccessKey", "testing"),
        ("cloudFiles.awsSecretKey", "testing"),
        ("cloudFiles.useNotifications", "true"),
        ("cloudFiles.queueUrl", queue_url.as_str()),
        ("cloudFiles.backfillInterval", "2s"),
    ];
    let mut source = create(&options, Some(state.path()));
    let start = source.initial_offset().await.unwrap();
    let (mut all, at, _) = wait_rows(&mut source, &start, Duration::from_secs(5)).await;
    assert_eq!(all, vec![1]);

    let landed = Instant::now();
    put("in/b.json", 2).await;
    let (rows, at, _) = wait_rows(&mut source, &at, Duration::from_secs(5)).await;
    let took = landed.elapsed();
    assert_eq!(rows, vec![2]);
    assert!(took < Duration::from_secs(1), "picked up after {took:?}");
    all.extend(rows);

    // An upload whose event is lost (the queue purged before the source sees it).
    put("in/dropped.json", 3).await;
    boto3("sqs.purge_queue(QueueUrl=sys.argv[1])", &[&queue_url]);
    let mut at = at;
    let t0 = Instant::now();
    while !all.contains(&3) {
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "backfill never found the file: {all:?}"
        );
        let (rows, next, _) = wait_rows(&mut source, &at, Duration::from_millis(200)).await;
        all.extend(rows);
        at = next;
    }
    let m = source.metrics();
    assert!(m["numBackfillListings"].as_u64().unwrap() >= 1, "{m:?}");
    assert!(m.contains_key("approximateQueueSize"), "{m:?}");
    drop(source);

    // A restart reads the queue without listing again; nothing is read twice.
    put("in/c.json", 4).await;
    let mut source = create(&options, Some(state.path()));
    let (rows, _, _) = wait_rows(&mut source, &at, Duration::from_secs(5)).await;
    all.extend(rows);
    assert_eq!(source.metrics()["numFullListings"], 0);
    all.sort();
    assert_eq!(all, vec![1, 2, 3, 4], "every file once");
    eprintln!("S3 notification latency {took:?}");
}
