//! Delta tables on S3 (feature `delta-s3`) against moto's server (`scripts/services/objectstore.sh`):
//! create, append through `write` and through the part writer, a replay skipped, two writers
//! committing concurrently with S3 conditional put (moto honours `If-None-Match: *`), partitions
//! staged by two executors and committed once, read back by Python `deltalake`; and the unsafe
//! commit configurations refused.

use std::process::Command;
use std::sync::Arc;

use serde_json::Value;
use tributary_sdk::{ConnectorContext, ErrorCode, Options, Sink, SinkFactoryExt};
use tributary_sinks::delta::{DeltaConfig, DeltaSink};
use tributary_sinks::DeltaSinkFactory;

use crate::reader::python;
use crate::sink::{batch, schema};

const READ_S3_TABLE: &str = r#"
import json, os, sys
from deltalake import DeltaTable
opts = json.loads(sys.argv[2])
dt = DeltaTable(sys.argv[1], storage_options=opts)
ids = sorted(dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist())
print(json.dumps({"version": dt.version(), "ids": ids,
                  "txn": {a: dt.transaction_version(a) for a in sys.argv[3:]}}))
# deltalake's S3 client threads can abort the interpreter's shutdown ("terminate called without
# an active exception") after the answer is printed: leave without finalising.
sys.stdout.flush()
os._exit(0)
"#;

const CREATE_BUCKET: &str = r#"
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="tributary", aws_secret_access_key="tributary")
s3.create_bucket(Bucket=sys.argv[2])
"#;

struct S3 {
    endpoint: String,
    bucket: String,
}

impl S3 {
    fn start() -> Option<S3> {
        let endpoint = tributary_skip_log::require_env(
            "TRIBUTARY_S3_ENDPOINT",
            "scripts/services/objectstore.sh",
        )?;
        let moto_python = tributary_skip_log::require_env(
            "TRIBUTARY_MOTO_PYTHON",
            "scripts/services/objectstore.sh",
        )?;
        let bucket = format!("delta-{}-{}", std::process::id(), rand_suffix());
        let out = Command::new(moto_python)
            .args(["-c", CREATE_BUCKET, &endpoint, &bucket])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "create bucket: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(S3 { endpoint, bucket })
    }

    fn url(&self, table: &str) -> String {
        format!("s3://{}/{table}", self.bucket)
    }

    fn storage(&self) -> Vec<(&'static str, String)> {
        vec![
            ("aws_endpoint", self.endpoint.clone()),
            ("aws_region", "us-east-1".into()),
            ("aws_access_key_id", "tributary".into()),
            ("aws_secret_access_key", "tributary".into()),
            ("aws_allow_http", "true".into()),
        ]
    }

    fn sink(&self, table: &str, app: &str) -> DeltaSink {
        DeltaSink::new(
            DeltaConfig::new(self.url(table)),
            self.storage()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            Some(app.to_string()),
        )
    }

    fn read(&self, python: &str, table: &str, apps: &[&str]) -> Value {
        let opts: serde_json::Map<String, Value> = self
            .storage()
            .into_iter()
            .map(|(k, v)| {
                let key = match k {
                    "aws_endpoint" => "AWS_ENDPOINT_URL".to_string(),
                    other => other.to_ascii_uppercase(),
                };
                (key, Value::String(v))
            })
            .collect();
        let out = Command::new(python)
            .args(["-c", READ_S3_TABLE, &self.url(table)])
            .arg(Value::Object(opts).to_string())
            .args(apps)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "python deltalake on S3: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_table_create_append_replay_and_concurrent_writers() {
    let Some(s3) = S3::start() else { return };
    let Some(py) = python() else { return };

    let mut s = s3.sink("t", "ckpt-s3");
    s.open(schema(false)).await.unwrap();
    s.write(0, &[batch(0, 5, false)]).await.unwrap();
    let w = s.as_part_writer().unwrap();
    w.begin_batch(1, schema(false)).await.unwrap();
    w.write_part(&batch(5, 3, false)).await.unwrap();
    w.write_part(&batch(8, 2, false)).await.unwrap();
    w.commit_batch().await.unwrap();
    drop(s);
    // Restarted: batch 1 replayed is skipped.
    let mut s = s3.sink("t", "ckpt-s3");
    s.open(schema(false)).await.unwrap();
    s.write(1, &[batch(5, 5, false)]).await.unwrap();
    assert_eq!(s.stats().skipped_replays, 1);
    let table = s3.read(&py, "t", &["ckpt-s3"]);
    assert_eq!(
        table["ids"],
        serde_json::json!((0..10).collect::<Vec<i64>>())
    );
    assert_eq!(table["version"], 1);
    assert_eq!(table["txn"]["ckpt-s3"], 1);

    // Two writers racing on one S3 table: every commit lands once (conditional put).
    let s3 = Arc::new(s3);
    let run = |app: &'static str, offset: i64| {
        let s3 = s3.clone();
        async move {
            let mut s = s3.sink("race", app);
            s.open(schema(false)).await.unwrap();
            for b in 0..6u64 {
                let first = offset + i64::try_from(b).unwrap() * 10;
                s.write(b, &[batch(first, 10, false)]).await.unwrap();
            }
            s.stats()
        }
    };
    let (a, b) = tokio::join!(
        tokio::spawn(run("writer-a", 0)),
        tokio::spawn(run("writer-b", 1000))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let table = s3.read(&py, "race", &["writer-a", "writer-b"]);
    let mut expected: Vec<i64> = (0..60).chain(1000..1060).collect();
    expected.sort();
    assert_eq!(table["ids"], serde_json::json!(expected));
    assert_eq!(table["version"], 11, "{table}");
    println!(
        "S3 conflict retries: a={} b={}",
        a.conflict_retries, b.conflict_retries
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_partitions_staged_by_two_executors_are_one_commit() {
    let Some(s3) = S3::start() else { return };
    let Some(py) = python() else { return };
    let mut outputs = Vec::new();
    for (partition, first) in [(0usize, 0i64), (1, 100)] {
        // Each executor has its own sink object; data files go straight to the bucket.
        let mut executor = s3.sink("staged", "ckpt-s3-staged");
        let st = executor.as_stager().unwrap();
        st.begin_partition(0, partition, schema(false))
            .await
            .unwrap();
        st.stage_part(&batch(first, 60, false)).await.unwrap();
        st.stage_part(&batch(first + 60, 40, false)).await.unwrap();
        outputs.push(st.finish_partition().await.unwrap());
    }
    let mut driver = s3.sink("staged", "ckpt-s3-staged");
    for _ in 0..2 {
        driver
            .as_stager()
            .unwrap()
            .commit_staged(0, outputs.clone())
            .await
            .unwrap();
    }
    assert_eq!(
        (driver.stats().commits, driver.stats().skipped_replays),
        (1, 1)
    );
    let table = s3.read(&py, "staged", &["ckpt-s3-staged"]);
    assert_eq!(
        table["ids"],
        serde_json::json!((0..200).collect::<Vec<i64>>())
    );
    assert_eq!(table["version"], 0);
    assert_eq!(table["txn"]["ckpt-s3-staged"], 0);
}

#[test]
fn unsafe_s3_commit_configurations_are_refused() {
    let create = |pairs: &[(&str, &str)]| {
        let mut o = Options::new().with("path", "s3://bucket/t");
        for (k, v) in pairs {
            o.set(*k, *v);
        }
        DeltaSinkFactory.create(&o, &ConnectorContext::default())
    };
    let e = create(&[("storage.aws_s3_allow_unsafe_rename", "true")]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    assert!(e.to_string().contains("allowUnsafeRename"), "{e}");
    let e = create(&[("storage.aws_s3_locking_provider", "dynamodb")]).unwrap_err();
    assert!(e.to_string().contains("DynamoDB"), "{e}");
    // The explicit opt-in for a single writer.
    create(&[("allowUnsafeRename", "true")]).unwrap();
    let e = DeltaSinkFactory
        .create(
            &Options::new()
                .with("path", "/tmp/t")
                .with("allowUnsafeRename", "true"),
            &ConnectorContext::default(),
        )
        .unwrap_err();
    assert_eq!(e.context_value("option"), Some("allowUnsafeRename"));
}
