//! S3 notification mode: the bucket's event notifications read from an SQS queue
//! (`cloudFiles.queueUrl`) with the AWS SDK, credentials as for the bucket.
//!
//! A message holds S3 event records (`{"Records": [{"eventName": "ObjectCreated:Put",
//! "eventTime": .., "s3": {"bucket": {"name": ..}, "object": {"key": .., "size": ..}}}]}`,
//! possibly inside an SNS envelope's `Message`), keys URL-encoded. `s3:TestEvent` messages,
//! other buckets and other event kinds are acknowledged and skipped.

use aws_sdk_sqs::Client;
use object_store::path::Path as ObjectPath;
use object_store::ObjectMeta;
use serde_json::Value;
use tributary_sdk::{Error, ErrorCode, Result};

use super::Polled;
use crate::config::names;
use crate::discovery::{now_ms, Discovery};
use crate::store::StoreSpec;

/// Messages taken per poll at most (ten per request).
const MAX_PER_POLL: usize = 1000;

/// A queue of S3 event notifications.
#[derive(Debug)]
pub(crate) struct SqsNotifier {
    client: Client,
    url: String,
    bucket: String,
    approximate: u64,
    /// Receive requests sent at once (`cloudFiles.fetchParallelism`).
    parallelism: usize,
}

impl SqsNotifier {
    /// A client for the queue at `url` (its host is the SQS endpoint).
    pub async fn open(url: &str, d: &Discovery, parallelism: usize) -> Result<SqsNotifier> {
        let StoreSpec::Cloud(spec) = d.spec() else {
            return Err(Error::new(
                ErrorCode::Internal,
                "SQS notifications on a local path",
            ));
        };
        let parsed = url::Url::parse(url).map_err(|e| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("option '{}' is not a URL: {e}", names::QUEUE_URL),
            )
            .with_context("option", names::QUEUE_URL)
        })?;
        let endpoint = format!(
            "{}://{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or_default()
        ) + &parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
        let region = crate::store::aws::region(&spec.options);
        let credentials = crate::store::aws::credentials_provider(&spec.options, &region).await;
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .region(aws_sdk_sqs::config::Region::new(region))
            .credentials_provider(credentials)
            .endpoint_url(endpoint)
            .build();
        Ok(SqsNotifier {
            client: Client::from_conf(config),
            url: url.to_string(),
            bucket: spec.path.bucket.clone(),
            approximate: 0,
            parallelism: parallelism.max(1),
        })
    }

    /// The queue's approximate number of messages at the last poll.
    pub fn approximate_size(&self) -> u64 {
        self.approximate
    }

    fn error(&self, what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        Error::new(
            ErrorCode::SourceRead,
            format!(
                "SQS queue {} ({}): cannot {what}: {text}",
                self.url,
                names::QUEUE_URL
            ),
        )
        .with_context("option", names::QUEUE_URL)
    }

    /// Receives what is in the queue now (no long polling: the trigger decides the cadence).
    pub async fn poll(&mut self, d: &Discovery) -> Result<Polled> {
        let mut out = Polled::default();
        let oldest = d.max_file_age_ms().map(|age| now_ms() - age);
        while out.receipts.len() < MAX_PER_POLL {
            // `cloudFiles.fetchParallelism` requests at once; the round ends the poll when
            // none of them got a message.
            let requests = (0..self.parallelism).map(|_| {
                self.client
                    .receive_message()
                    .queue_url(&self.url)
                    .max_number_of_messages(10)
                    .wait_time_seconds(0)
                    .send()
            });
            let answers = futures::future::join_all(requests).await;
            let mut got = 0;
            for r in answers {
                let r = r.map_err(|e| self.error("receive messages", e))?;
                let messages = r.messages.unwrap_or_default();
                got += messages.len();
                for m in messages {
                    if let Some(body) = m.body() {
                        for object in objects(body, &self.bucket) {
                            if let Some(file) = d.eligible(&object, oldest)? {
                                out.files.push(file);
                            }
                        }
                    }
                    if let Some(receipt) = m.receipt_handle {
                        out.receipts.push(receipt);
                    }
                }
            }
            if got == 0 {
                break;
            }
        }
        let attrs = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .map_err(|e| self.error("read the queue's attributes", e))?;
        self.approximate = attrs
            .attributes()
            .and_then(|a| {
                a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(out)
    }

    /// Deletes handled messages (ten per request).
    pub async fn ack(&mut self, receipts: Vec<String>) -> Result<()> {
        for chunk in receipts.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(r)
                        .build()
                        .map_err(|e| self.error("delete messages", e))
                })
                .collect::<Result<Vec<_>>>()?;
            self.client
                .delete_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| self.error("delete messages", e))?;
        }
        Ok(())
    }
}

/// The created objects of `bucket` a message names.
fn objects(body: &str, bucket: &str) -> Vec<ObjectMeta> {
    let Ok(mut v) = serde_json::from_str::<Value>(body) else {
        return Vec::new();
    };
    // An SNS envelope carries the S3 event as a string.
    if let Some(inner) = v.get("Message").and_then(Value::as_str) {
        match serde_json::from_str::<Value>(inner) {
            Ok(inner) => v = inner,
            Err(_) => return Vec::new(),
        }
    }
    let Some(records) = v.get("Records").and_then(Value::as_array) else {
        return Vec::new(); // s3:TestEvent and others
    };
    records
        .iter()
        .filter_map(|r| {
            let name = r.get("eventName")?.as_str()?;
            if !name.starts_with("ObjectCreated") {
                return None;
            }
            let s3 = r.get("s3")?;
            if s3.pointer("/bucket/name")?.as_str()? != bucket {
                return None;
            }
            let raw_key = s3.pointer("/object/key")?.as_str()?;
            // Keys are form-encoded ('+' for a space).
            let key: String = url::form_urlencoded::parse(format!("k={raw_key}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())?;
            let size = s3
                .pointer("/object/size")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let time = chrono::DateTime::parse_from_rfc3339(r.get("eventTime")?.as_str()?)
                .ok()?
                .with_timezone(&chrono::Utc);
            Some(ObjectMeta {
                location: ObjectPath::parse(key).ok()?,
                last_modified: time,
                size,
                e_tag: None,
                version: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_event_records_become_objects() {
        let body = r#"{"Records":[{"eventName":"ObjectCreated:Put","eventTime":"2026-11-30T07:00:00.123Z",
            "s3":{"bucket":{"name":"landing-bucket"},"object":{"key":"in/a+b%2Bc.json","size":12}}},
            {"eventName":"ObjectRemoved:Delete","eventTime":"2026-11-30T07:00:00Z","s3":{"bucket":{"name":"landing-bucket"},"object":{"key":"in/x.json"}}},
            {"eventName":"ObjectCreated:Put","eventTime":"2026-11-30T07:00:00Z","s3":{"bucket":{"name":"other"},"object":{"key":"in/y.json","size":1}}}]}"#;
        let o = objects(body, "landing-bucket");
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].location.as_ref(), "in/a b+c.json");
        assert_eq!(
            (o[0].size, o[0].last_modified.timestamp_millis() % 1000),
            (12, 123)
        );
        assert!(objects(
            r#"{"Service":"Amazon S3","Event":"s3:TestEvent"}"#,
            "landing-bucket"
        )
        .is_empty());
        let sns = serde_json::json!({"Type": "Notification", "Message": body}).to_string();
        assert_eq!(objects(&sns, "landing-bucket").len(), 1);
    }
}
