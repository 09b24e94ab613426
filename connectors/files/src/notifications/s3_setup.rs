//! Automatic S3 notification setup, as Auto Loader does when `cloudFiles.useNotifications=true`
//! and no `cloudFiles.queueUrl` is given: an SQS queue named from the checkpoint's id
//! (`tributary-<checkpointId>`), a queue policy that lets the bucket send to it, and a queue
//! configuration in the bucket's event notifications (`s3:ObjectCreated:*` under the path's
//! prefix, id = the queue's name).
//!
//! Every step is idempotent, so a restart reuses what the first start made: `CreateQueue` of an
//! existing name returns its URL, and the bucket configuration is left alone when it already
//! sends to the queue. The bucket's other notification configurations are kept as they are.
//! [`Setup::teardown`] undoes both (the `notifications teardown` command, `crate::commands`),
//! deleting the queue even when the bucket's configuration cannot be read. A set-up that fails
//! after creating its queue deletes that queue again (a queue that existed before is kept).
//!
//! With `cloudFiles.endpoint` the same endpoint serves SQS too (moto, LocalStack); without it
//! the AWS endpoints of `cloudFiles.region` are used. Credentials are those of the bucket.

use aws_sdk_s3::types::{
    Event, FilterRule, FilterRuleName, NotificationConfiguration, NotificationConfigurationFilter,
    QueueConfiguration, S3KeyFilter,
};
use aws_sdk_sqs::types::QueueAttributeName;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::config::names;
use crate::discovery::Discovery;
use crate::error::error_text;
use crate::store::{CloudSpec, StoreSpec};

/// Prefix of every queue and bucket configuration id this source creates.
pub(crate) const NAME_PREFIX: &str = "tributary-";

/// The queue name (and bucket configuration id) for a checkpoint: `tributary-` and the id,
/// characters SQS does not allow replaced by `-`, at most 80 characters.
pub(crate) fn resource_name(checkpoint_id: &str) -> String {
    let id: String = checkpoint_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut name = format!("{NAME_PREFIX}{id}");
    name.truncate(80);
    name
}

/// The key prefix the bucket's events are filtered on: the literal part of the path's key
/// (before any glob), as a directory.
pub(crate) fn event_prefix(key: &str) -> String {
    let (dir, _) = crate::config::location::split_key_glob(key);
    if dir.is_empty() {
        dir
    } else {
        format!("{dir}/")
    }
}

/// Sets up (or reuses) the queue of the source reading `d` with the checkpoint `checkpoint_id`;
/// returns its URL.
pub(crate) async fn auto(
    d: &Discovery,
    checkpoint_id: Option<&str>,
    tags: &[(String, String)],
) -> Result<String> {
    let StoreSpec::Cloud(spec) = d.spec() else {
        return Err(Error::new(
            ErrorCode::Internal,
            "SQS notifications on a local path",
        ));
    };
    let Some(id) = checkpoint_id else {
        return Err(Error::new(
            ErrorCode::MissingOption,
            format!(
                "option '{}': {}=true on an s3:// path without it sets up an SQS queue named \
                 from the checkpoint's id, and this run has no checkpoint; run with a \
                 checkpoint or give the queue's URL",
                names::QUEUE_URL,
                names::USE_NOTIFICATIONS
            ),
        )
        .with_context("option", names::QUEUE_URL));
    };
    Setup::new(spec)
        .await
        .ensure(&resource_name(id), &event_prefix(&spec.path.key), tags)
        .await
}

/// One queue configuration of the bucket that this source made.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Entry {
    /// The configuration's id (= the queue's name).
    pub id: String,
    /// The queue's ARN.
    pub queue_arn: String,
    /// The queue's URL, when the queue exists.
    pub queue_url: Option<String>,
    /// The key prefix the events are filtered on.
    pub prefix: String,
}

/// Clients for the bucket's notification configuration and for SQS.
#[derive(Debug)]
pub(crate) struct Setup {
    s3: aws_sdk_s3::Client,
    sqs: aws_sdk_sqs::Client,
    bucket: String,
}

impl Setup {
    /// Clients with the bucket's region, endpoint and credentials.
    pub async fn new(spec: &CloudSpec) -> Setup {
        let o = &spec.options;
        let region = crate::store::aws::region(o);
        let credentials = crate::store::aws::credentials_provider(o, &region).await;
        let mut s3 = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new(region.clone()))
            .credentials_provider(credentials.clone());
        let mut sqs = aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .region(aws_sdk_sqs::config::Region::new(region))
            .credentials_provider(credentials);
        if let Some(endpoint) = &o.endpoint {
            s3 = s3.endpoint_url(endpoint).force_path_style(true);
            sqs = sqs.endpoint_url(endpoint);
        }
        Setup {
            s3: aws_sdk_s3::Client::from_conf(s3.build()),
            sqs: aws_sdk_sqs::Client::from_conf(sqs.build()),
            bucket: spec.path.bucket.clone(),
        }
    }

    fn error(&self, what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::new(
            ErrorCode::SourceRead,
            format!(
                "automatic notification setup ({}=true without {}) on bucket '{}': cannot \
                 {what}: {}",
                names::USE_NOTIFICATIONS,
                names::QUEUE_URL,
                self.bucket,
                error_text(&e)
            ),
        )
        .with_context("bucket", &self.bucket)
        .with_context("option", names::USE_NOTIFICATIONS)
    }

    /// Creates (or finds) the queue `name`, lets the bucket send to it, and adds the bucket's
    /// `s3:ObjectCreated:*` notification for `prefix` unless one to that queue exists. Returns
    /// the queue's URL. `tags` (`cloudFiles.resourceTag.*`) are put on the queue, also when
    /// it existed.
    pub async fn ensure(
        &self,
        name: &str,
        prefix: &str,
        tags: &[(String, String)],
    ) -> Result<String> {
        let existed = self.queue_url(name).await?.is_some();
        let url = self
            .sqs
            .create_queue()
            .queue_name(name)
            .send()
            .await
            .map_err(|e| self.error(&format!("create the SQS queue '{name}'"), e))?
            .queue_url
            .ok_or_else(|| self.missing("CreateQueue", "QueueUrl"))?;
        match self.configure(name, &url, prefix, tags).await {
            Ok(()) => Ok(url),
            // A queue this call created is deleted again, so a failed set-up leaves nothing
            // behind; a queue that existed (a restart's) stays for `notifications teardown`.
            Err(e) if !existed => match self.sqs.delete_queue().queue_url(&url).send().await {
                Ok(_) => Err(e
                    .prefixed(format!(
                        "deleted the new queue '{name}' after the set-up failed"
                    ))
                    .with_context("rolled_back", "yes")),
                Err(undo) => Err(e
                    .prefixed(format!(
                        "the new queue '{name}' could not be deleted ({}); remove it with \
                         `notifications teardown`",
                        error_text(&undo)
                    ))
                    .with_context("rolled_back", "no")),
            },
            Err(e) => Err(e),
        }
    }

    /// The steps after the queue exists: tags, the queue policy, the bucket's notification.
    async fn configure(
        &self,
        name: &str,
        url: &str,
        prefix: &str,
        tags: &[(String, String)],
    ) -> Result<()> {
        if !tags.is_empty() {
            self.sqs
                .tag_queue()
                .queue_url(url)
                .set_tags(Some(tags.iter().cloned().collect()))
                .send()
                .await
                .map_err(|e| self.error(&format!("tag the SQS queue '{name}'"), e))?;
        }
        let arn = self.queue_arn(url).await?;
        self.sqs
            .set_queue_attributes()
            .queue_url(url)
            .attributes(QueueAttributeName::Policy, self.policy(&arn))
            .send()
            .await
            .map_err(|e| self.error(&format!("set the policy of the queue '{name}'"), e))?;
        let current = self.configuration().await?;
        if current
            .queue_configurations()
            .iter()
            .any(|q| q.queue_arn() == arn)
        {
            tracing::debug!(queue = %url, bucket = %self.bucket, "bucket notification reused");
            return Ok(());
        }
        let mut queues = current.queue_configurations().to_vec();
        queues.push(
            QueueConfiguration::builder()
                .id(name)
                .queue_arn(&arn)
                .events(Event::from("s3:ObjectCreated:*"))
                .set_filter((!prefix.is_empty()).then(|| prefix_filter(prefix)))
                .build()
                .map_err(|e| self.error("build the queue configuration", e))?,
        );
        self.put(current, queues).await?;
        tracing::info!(queue = %url, bucket = %self.bucket, prefix, "bucket notification to SQS set up");
        Ok(())
    }

    /// The bucket's queue configurations whose id starts with `tributary-`.
    pub async fn list(&self) -> Result<Vec<Entry>> {
        let current = self.configuration().await?;
        let mut out = Vec::new();
        for q in current.queue_configurations() {
            let Some(id) = q.id().filter(|id| id.starts_with(NAME_PREFIX)) else {
                continue;
            };
            let prefix = q
                .filter()
                .and_then(|f| f.key())
                .map(|k| k.filter_rules())
                .unwrap_or_default()
                .iter()
                .find(|r| r.name() == Some(&FilterRuleName::Prefix))
                .and_then(|r| r.value())
                .unwrap_or_default()
                .to_string();
            out.push(Entry {
                id: id.to_string(),
                queue_arn: q.queue_arn().to_string(),
                queue_url: self.queue_url(id).await?,
                prefix,
            });
        }
        Ok(out)
    }

    /// Removes the bucket's configurations to the queue `name` and deletes the queue. Returns
    /// what was removed: (bucket configurations, queue deleted).
    pub async fn teardown(&self, name: &str) -> Result<(usize, bool)> {
        let url = self.queue_url(name).await?;
        let arn = match &url {
            Some(url) => Some(self.queue_arn(url).await?),
            None => None,
        };
        let current = match self.configuration().await {
            Ok(c) => c,
            // The bucket's configuration cannot be read (the very step a set-up may have
            // failed on): the queue is still deleted, then the error is reported.
            Err(e) => {
                if let Some(url) = &url {
                    self.delete_queue(name, url).await?;
                }
                return Err(e.with_context(
                    "queue_deleted",
                    if url.is_some() {
                        "yes"
                    } else {
                        "no such queue"
                    },
                ));
            }
        };
        let (gone, kept): (Vec<_>, Vec<_>) = current
            .queue_configurations()
            .iter()
            .cloned()
            .partition(|q| {
                q.id() == Some(name) || arn.as_deref().is_some_and(|a| q.queue_arn() == a)
            });
        if !gone.is_empty() {
            self.put(current, kept).await?;
        }
        if let Some(url) = &url {
            self.delete_queue(name, url).await?;
        }
        Ok((gone.len(), url.is_some()))
    }

    async fn delete_queue(&self, name: &str, url: &str) -> Result<()> {
        self.sqs
            .delete_queue()
            .queue_url(url)
            .send()
            .await
            .map_err(|e| self.error(&format!("delete the SQS queue '{name}'"), e))?;
        Ok(())
    }

    async fn configuration(
        &self,
    ) -> Result<aws_sdk_s3::operation::get_bucket_notification_configuration::GetBucketNotificationConfigurationOutput>
    {
        self.s3
            .get_bucket_notification_configuration()
            .bucket(&self.bucket)
            .send()
            .await
            .map_err(|e| self.error("read the bucket's notification configuration", e))
    }

    /// Writes the bucket's configuration with `queues`, everything else as it was.
    async fn put(
        &self,
        current: aws_sdk_s3::operation::get_bucket_notification_configuration::GetBucketNotificationConfigurationOutput,
        queues: Vec<QueueConfiguration>,
    ) -> Result<()> {
        let config = NotificationConfiguration::builder()
            .set_queue_configurations(Some(queues))
            .set_topic_configurations(current.topic_configurations)
            .set_lambda_function_configurations(current.lambda_function_configurations)
            .set_event_bridge_configuration(current.event_bridge_configuration)
            .build();
        self.s3
            .put_bucket_notification_configuration()
            .bucket(&self.bucket)
            .notification_configuration(config)
            .send()
            .await
            .map_err(|e| self.error("write the bucket's notification configuration", e))?;
        Ok(())
    }

    async fn queue_arn(&self, url: &str) -> Result<String> {
        self.sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .map_err(|e| self.error(&format!("read the attributes of the queue {url}"), e))?
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::QueueArn))
            .cloned()
            .ok_or_else(|| self.missing("GetQueueAttributes", "QueueArn"))
    }

    /// The URL of the queue `name`; `None` when it does not exist.
    async fn queue_url(&self, name: &str) -> Result<Option<String>> {
        match self.sqs.get_queue_url().queue_name(name).send().await {
            Ok(r) => Ok(r.queue_url),
            Err(e) => {
                use aws_sdk_sqs::error::ProvideErrorMetadata;
                // The JSON protocol's QueueDoesNotExist; servers speaking the query protocol's
                // codes say AWS.SimpleQueueService.NonExistentQueue.
                let missing = e
                    .as_service_error()
                    .is_some_and(|s| s.is_queue_does_not_exist())
                    || e.code().is_some_and(|c| {
                        c.contains("NonExistentQueue") || c.contains("QueueDoesNotExist")
                    });
                if missing {
                    Ok(None)
                } else {
                    Err(self.error(&format!("look up the SQS queue '{name}'"), e))
                }
            }
        }
    }

    /// The queue policy: the bucket may send messages to the queue.
    fn policy(&self, queue_arn: &str) -> String {
        serde_json::json!({
            "Version": "2012-10-17",
            "Statement": [{
                "Sid": "tributary-s3-events",
                "Effect": "Allow",
                "Principal": {"Service": "s3.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnLike": {"aws:SourceArn": format!("arn:aws:s3:*:*:{}", self.bucket)}}
            }]
        })
        .to_string()
    }

    fn missing(&self, call: &str, field: &str) -> Error {
        Error::new(
            ErrorCode::SourceRead,
            format!(
                "SQS {call} for bucket '{}' returned no {field}",
                self.bucket
            ),
        )
    }
}

fn prefix_filter(prefix: &str) -> NotificationConfigurationFilter {
    NotificationConfigurationFilter::builder()
        .key(
            S3KeyFilter::builder()
                .filter_rules(
                    FilterRule::builder()
                        .name(FilterRuleName::Prefix)
                        .value(prefix)
                        .build(),
                )
                .build(),
        )
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_prefixes() {
        assert_eq!(
            resource_name("0b7c1e9a-2f3d-4c5b-9a8e-1f2e3d4c5b6a"),
            "tributary-0b7c1e9a-2f3d-4c5b-9a8e-1f2e3d4c5b6a"
        );
        assert_eq!(resource_name("a/b c"), "tributary-a-b-c");
        assert_eq!(resource_name(&"x".repeat(200)).len(), 80);
        assert_eq!(event_prefix(""), "");
        assert_eq!(event_prefix("landing/in"), "landing/in/");
        assert_eq!(event_prefix("landing/*/x*.json"), "landing/");
    }
}
