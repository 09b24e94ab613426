//! Auto Loader options on S3 (moto, `scripts/services/objectstore.sh`): Hive partition columns
//! from object keys, `cloudFiles.resourceTag.*` on the queue the source creates, and
//! `cloudFiles.fetchParallelism` receiving a queue's events with several requests at once,
//! `cloudFiles.schemaLocation` on S3 shared by two streams.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ConnectorContext, Offset, Options, ReadLimit, Source, SourceFactoryExt};

const SERVICE: &str = "scripts/services/objectstore.sh";

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

fn unique(prefix: &str) -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        % 10_000_000_000;
    format!("{prefix}-{n}")
}

fn store(endpoint: &str, bucket: &str) -> Arc<dyn ObjectStore> {
    Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .build()
            .unwrap(),
    )
}

fn options(bucket: &str, endpoint: &str, extra: &[(&str, &str)]) -> Options {
    let path = format!("s3://{bucket}/in");
    let mut o: Options = [
        ("path", path.as_str()),
        ("cloudFiles.format", "json"),
        ("cloudFiles.endpoint", endpoint),
        ("cloudFiles.awsAccessKey", "testing"),
        ("cloudFiles.awsSecretKey", "testing"),
    ]
    .into_iter()
    .collect();
    for (k, v) in extra {
        o.set(*k, *v);
    }
    o
}

/// Triggers until `want` rows came (or 10 s passed); returns the rows' count.
async fn read_until(src: &mut Box<dyn Source>, want: usize) -> usize {
    let mut at: Offset = src.initial_offset().await.unwrap();
    let mut n = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while n < want && Instant::now() < deadline {
        let end = src.latest_offset(&at, &ReadLimit::All).await.unwrap();
        let b = src.read(&at, &end).await.unwrap();
        src.commit(&end).await.unwrap();
        n += b.iter().map(|b| b.num_rows()).sum::<usize>();
        at = end;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_columns_come_from_object_keys() {
    let Some(endpoint) = tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", SERVICE) else {
        return;
    };
    let Some(_) = tributary_skip_log::require_env("TRIBUTARY_MOTO_PYTHON", SERVICE) else {
        return;
    };
    let bucket = unique("parts");
    boto3("s3.create_bucket(Bucket=sys.argv[1])", &[&bucket]);
    let s = store(&endpoint, &bucket);
    for (key, id) in [
        ("in/year=2026/month=12/a.json", 1),
        ("in/year=2027/month=1/b.json", 2),
    ] {
        s.put(
            &ObjectPath::from(key),
            PutPayload::from(format!("{{\"id\": {id}}}\n")),
        )
        .await
        .unwrap();
    }
    let o = options(
        &bucket,
        &endpoint,
        &[("cloudFiles.inferColumnTypes", "true")],
    );
    let mut src = FilesSourceFactory
        .create(&o, &ConnectorContext::default())
        .unwrap();
    let schema = src.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "_rescued_data", "year", "month", "_metadata"]);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let b = src.read(&start, &end).await.unwrap();
    let years: Vec<i32> = b
        .iter()
        .flat_map(|b| {
            let a = b
                .column_by_name("year")
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::Int32Array>()
                .unwrap()
                .clone();
            a.values().to_vec()
        })
        .collect();
    assert_eq!(years, [2026, 2027]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_tags_are_put_on_the_queue_the_source_creates() {
    let Some(endpoint) = tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", SERVICE) else {
        return;
    };
    let Some(_) = tributary_skip_log::require_env("TRIBUTARY_MOTO_PYTHON", SERVICE) else {
        return;
    };
    let bucket = unique("tags");
    // moto answers GetBucketNotificationConfiguration on a bucket that never had one with a
    // root element the SDK rejects: seed it with an unrelated configuration (TESTING.md).
    boto3(
        r#"
bucket, queue = sys.argv[1:3]
s3.create_bucket(Bucket=bucket)
url = sqs.create_queue(QueueName=queue)["QueueUrl"]
arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={
    "QueueConfigurations": [{"Id": "seed", "QueueArn": arn, "Events": ["s3:ObjectRemoved:*"]}]})
"#,
        &[&bucket, &format!("{bucket}-seed")],
    );
    let s = store(&endpoint, &bucket);
    s.put(
        &ObjectPath::from("in/a.json"),
        PutPayload::from("{\"id\": 1}\n"),
    )
    .await
    .unwrap();
    let o = options(
        &bucket,
        &endpoint,
        &[
            ("schema", "id BIGINT"),
            ("cloudFiles.useNotifications", "true"),
            ("cloudFiles.resourceTag.team", "ingest"),
            ("cloudFiles.resourceTag.costCenter", "42"),
        ],
    );
    let state = tempfile::tempdir().unwrap();
    let id = unique("ckpt");
    let context = ConnectorContext {
        state_dir: Some(state.path().to_path_buf()),
        checkpoint_id: Some(id.clone()),
        ..Default::default()
    };
    let mut src = FilesSourceFactory.create(&o, &context).unwrap();
    assert_eq!(read_until(&mut src, 1).await, 1);
    let tags = boto3(
        r#"
url = sqs.get_queue_url(QueueName=sys.argv[1])["QueueUrl"]
tags = sqs.list_queue_tags(QueueUrl=url).get("Tags", {})
print(sorted(tags.items()))
"#,
        &[&format!("tributary-{id}")],
    );
    assert_eq!(tags, "[('costCenter', '42'), ('team', 'ingest')]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_parallelism_receives_every_event_with_several_requests_at_once() {
    let Some(endpoint) = tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", SERVICE) else {
        return;
    };
    let Some(_) = tributary_skip_log::require_env("TRIBUTARY_MOTO_PYTHON", SERVICE) else {
        return;
    };
    let bucket = unique("fetch");
    let url = boto3(
        r#"
bucket, queue = sys.argv[1:3]
s3.create_bucket(Bucket=bucket)
url = sqs.create_queue(QueueName=queue)["QueueUrl"]
arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={
    "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]})
print(url)
"#,
        &[&bucket, &format!("{bucket}-q")],
    );
    let o = options(
        &bucket,
        &endpoint,
        &[
            ("schema", "id BIGINT"),
            ("cloudFiles.useNotifications", "true"),
            ("cloudFiles.queueUrl", url.as_str()),
            ("cloudFiles.fetchParallelism", "4"),
        ],
    );
    let s = store(&endpoint, &bucket);
    // The prefix must exist: one file for the first run's listing, 59 through events.
    s.put(
        &ObjectPath::from("in/f000.json"),
        PutPayload::from("{\"id\": 0}\n"),
    )
    .await
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let context = ConnectorContext {
        state_dir: Some(state.path().to_path_buf()),
        ..Default::default()
    };
    let mut src = FilesSourceFactory.create(&o, &context).unwrap();
    let first = src.initial_offset().await.unwrap();
    let _ = src.latest_offset(&first, &ReadLimit::All).await.unwrap();
    for i in 1..60 {
        s.put(
            &ObjectPath::from(format!("in/f{i:03}.json")),
            PutPayload::from(format!("{{\"id\": {i}}}\n")),
        )
        .await
        .unwrap();
    }
    let (mut at, mut n) = (first, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while n < 60 && Instant::now() < deadline {
        let end = src.latest_offset(&at, &ReadLimit::All).await.unwrap();
        let b = src.read(&at, &end).await.unwrap();
        src.commit(&end).await.unwrap();
        n += b.iter().map(|b| b.num_rows()).sum::<usize>();
        at = end;
    }
    assert_eq!(
        n, 60,
        "every event of the 60 uploads (4 receive requests per round)"
    );
    assert_eq!(
        src.metrics()["numFullListings"],
        1,
        "only the first run's listing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_location_on_s3_keeps_versions_that_a_second_stream_reuses() {
    let Some(endpoint) = tributary_skip_log::require_env("TRIBUTARY_S3_ENDPOINT", SERVICE) else {
        return;
    };
    let Some(_) = tributary_skip_log::require_env("TRIBUTARY_MOTO_PYTHON", SERVICE) else {
        return;
    };
    let bucket = unique("schemas");
    boto3("s3.create_bucket(Bucket=sys.argv[1])", &[&bucket]);
    let s = store(&endpoint, &bucket);
    s.put(
        &ObjectPath::from("in/a.json"),
        PutPayload::from("{\"id\": 1}\n"),
    )
    .await
    .unwrap();
    let location = format!("s3://{bucket}/meta/orders");
    let o = options(
        &bucket,
        &endpoint,
        &[
            ("cloudFiles.schemaLocation", location.as_str()),
            ("cloudFiles.inferColumnTypes", "true"),
        ],
    );
    let versions = || {
        boto3(
            "r = s3.list_objects_v2(Bucket=sys.argv[1], Prefix='meta/orders/_schemas/')\nprint(sorted(o['Key'].rsplit('/', 1)[1] for o in r.get('Contents', [])))",
            &[&bucket],
        )
    };
    let (sa, sb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ctx = |d: &std::path::Path| ConnectorContext {
        state_dir: Some(d.to_path_buf()),
        ..Default::default()
    };
    let mut a = FilesSourceFactory.create(&o, &ctx(sa.path())).unwrap();
    assert_eq!(versions(), "['0']");
    let start = a.initial_offset().await.unwrap();
    let end = a.latest_offset(&start, &ReadLimit::All).await.unwrap();
    a.read(&start, &end).await.unwrap();
    a.commit(&end).await.unwrap();
    s.put(
        &ObjectPath::from("in/b.json"),
        PutPayload::from("{\"id\": 2, \"vip\": true}\n"),
    )
    .await
    .unwrap();
    let next = a.latest_offset(&end, &ReadLimit::All).await.unwrap();
    let e = a.read(&end, &next).await.unwrap_err();
    assert!(
        e.message().contains("meta/orders/_schemas/1"),
        "{}",
        e.message()
    );
    assert_eq!(versions(), "['0', '1']");
    let b = FilesSourceFactory.create(&o, &ctx(sb.path())).unwrap();
    let names: Vec<String> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", "vip", "_rescued_data", "_metadata"]);
    assert_eq!(versions(), "['0', '1']", "the second stream wrote nothing");
}
