//! The consumer manager: list, describe, register (waiting until ACTIVE), deregister (waiting
//! until gone) the enhanced fan-out consumers of a stream, and the leak report.
//!
//! **Ownership.** Kinesis keeps no owner for a consumer, so ownership is defined by name: a
//! consumer is *owned* by a pipeline when its name is `consumerNamePrefix` + that pipeline's id
//! (its checkpoint id, else its name — exactly how the source names the consumer it registers).
//! [`orphaned`] lists the consumers whose name starts with the prefix and is not
//! `prefix + id` for any id in the owner set passed in. At source start the owner set is the
//! starting pipeline itself, so the warning lists every other consumer under the prefix (the
//! leak report); `tributary kinesis consumers list --orphaned --owner ID ...` passes the ids of
//! the pipelines that are running. A consumer named explicitly (`consumerName`) with another
//! prefix is never reported.

use std::time::{Duration, Instant};

use aws_sdk_kinesis::types::ConsumerStatus;
use aws_sdk_kinesis::Client;
use serde::Serialize;
use tributary_sdk::{Error, ErrorCode, Result, SecretStore};

use crate::config::{validate_consumer_name, ConnectionSettings, StreamKeying};
use crate::error::{ApiError, ApiFailure};
use crate::planner::{self, StreamRef};

/// How long register/deregister wait for the consumer to become ACTIVE / disappear.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);
const FIRST_POLL: Duration = Duration::from_millis(50);

/// One enhanced fan-out consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerInfo {
    /// The consumer name.
    pub name: String,
    /// The consumer ARN (what SubscribeToShard takes).
    pub arn: String,
    /// CREATING, ACTIVE or DELETING.
    pub status: String,
    /// Registration time (Unix ms): with the ARN, what tells one registration from the next.
    pub created_ms: i64,
}

impl ConsumerInfo {
    /// True when the consumer can subscribe.
    pub fn is_active(&self) -> bool {
        self.status == ConsumerStatus::Active.as_str()
    }
}

/// A stream given as a name or an ARN (`arn:` prefix) on a command line.
pub fn stream_ref(stream: &str) -> StreamRef {
    let keying = if stream.starts_with("arn:") {
        StreamKeying::Arns
    } else {
        StreamKeying::Names
    };
    StreamRef {
        keying,
        id: stream.to_string(),
    }
}

fn api(e: ApiError, what: &str, stream: &str) -> Error {
    e.into_error(what, stream, true)
}

/// The stream's ARN (consumers are registered on ARNs).
pub async fn stream_arn(client: &Client, stream: &StreamRef) -> Result<String> {
    if stream.keying == StreamKeying::Arns {
        return Ok(stream.id.clone());
    }
    planner::describe_stream(client, stream)
        .await?
        .map(|i| i.arn)
        .ok_or_else(|| {
            Error::new(
                ErrorCode::SourceRead,
                format!("Kinesis stream '{}' does not exist", stream.id),
            )
            .with_context("stream", stream.id.as_str())
        })
}

/// Every consumer of the stream.
pub async fn list(client: &Client, stream_arn: &str) -> Result<Vec<ConsumerInfo>> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut req = client.list_stream_consumers().stream_arn(stream_arn);
        if let Some(t) = &token {
            req = req.next_token(t);
        }
        let page = req
            .send()
            .await
            .map_err(|e| api(ApiError::from_sdk(e), "ListStreamConsumers", stream_arn))?;
        for c in page.consumers() {
            out.push(ConsumerInfo {
                name: c.consumer_name().to_string(),
                arn: c.consumer_arn().to_string(),
                status: c.consumer_status().as_str().to_string(),
                created_ms: c
                    .consumer_creation_timestamp()
                    .to_millis()
                    .unwrap_or_default(),
            });
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The consumer named `name`, `None` when it does not exist.
pub async fn describe(
    client: &Client,
    stream_arn: &str,
    name: &str,
) -> Result<Option<ConsumerInfo>> {
    match client
        .describe_stream_consumer()
        .stream_arn(stream_arn)
        .consumer_name(name)
        .send()
        .await
    {
        Ok(out) => Ok(out.consumer_description().map(|c| ConsumerInfo {
            name: c.consumer_name().to_string(),
            arn: c.consumer_arn().to_string(),
            status: c.consumer_status().as_str().to_string(),
            created_ms: c
                .consumer_creation_timestamp()
                .to_millis()
                .unwrap_or_default(),
        })),
        Err(e) => {
            let e = ApiError::from_sdk(e);
            if e.failure == ApiFailure::NotFound {
                Ok(None)
            } else {
                Err(api(e, "DescribeStreamConsumer", stream_arn).with_context("consumer", name))
            }
        }
    }
}

/// The consumer with this ARN and the ARN of its stream, `None` when it does not exist.
pub async fn describe_arn(
    client: &Client,
    consumer_arn: &str,
) -> Result<Option<(ConsumerInfo, String)>> {
    match client
        .describe_stream_consumer()
        .consumer_arn(consumer_arn)
        .send()
        .await
    {
        Ok(out) => Ok(out.consumer_description().map(|c| {
            (
                ConsumerInfo {
                    name: c.consumer_name().to_string(),
                    arn: c.consumer_arn().to_string(),
                    status: c.consumer_status().as_str().to_string(),
                    created_ms: c
                        .consumer_creation_timestamp()
                        .to_millis()
                        .unwrap_or_default(),
                },
                c.stream_arn().to_string(),
            )
        })),
        Err(e) => {
            let e = ApiError::from_sdk(e);
            if e.failure == ApiFailure::NotFound {
                Ok(None)
            } else {
                Err(api(e, "DescribeStreamConsumer", consumer_arn)
                    .with_context("consumer", consumer_arn))
            }
        }
    }
}

/// The consumer `registeredConsumerId` names on the stream (by name or ARN), waited for while
/// it is being created (at most `wait`); never registered here. Missing, being deleted, or an
/// ARN of another stream is an error naming the option.
pub async fn lookup_registered(
    client: &Client,
    stream_arn: &str,
    id_type: crate::registered::ConsumerIdType,
    id: &str,
    wait: Duration,
) -> Result<ConsumerInfo> {
    use crate::registered::ConsumerIdType;
    let deadline = Instant::now() + wait;
    let refused_as = |code: ErrorCode, why: String| {
        Error::new(
            code,
            format!("the EFO consumer '{id}' given in 'registeredConsumerId' {why}"),
        )
        .with_context("option", "registeredConsumerId")
        .with_context("consumer", id)
        .with_context("stream", stream_arn)
    };
    let refused = |why: String| refused_as(ErrorCode::SourceRead, why);
    loop {
        let found = match id_type {
            ConsumerIdType::Name => describe(client, stream_arn, id).await?,
            ConsumerIdType::Arn => match describe_arn(client, id).await? {
                Some((c, of)) if of == stream_arn => Some(c),
                Some((_, of)) => {
                    return Err(refused(format!(
                        "belongs to stream '{of}', not to '{stream_arn}'"
                    )))
                }
                None => None,
            },
        };
        match found {
            Some(c) if c.is_active() => return Ok(c),
            Some(c) if c.status == ConsumerStatus::Creating.as_str() => {}
            Some(c) => {
                return Err(refused(format!(
                    "is {} on stream '{stream_arn}'; a registered consumer is used as it is, never registered again by the query",
                    c.status
                )))
            }
            None => {
                return Err(refused(format!(
                    "is not registered on stream '{stream_arn}': register it first (`tributary kinesis consumers register`), or leave 'registeredConsumerId' unset and the query registers its own"
                )))
            }
        }
        if Instant::now() >= deadline {
            return Err(refused_as(
                ErrorCode::Timeout,
                format!("is not ACTIVE after {wait:?}"),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What [`register`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The consumer, ACTIVE.
    pub consumer: ConsumerInfo,
    /// False when a consumer of that name existed and was reused.
    pub created: bool,
}

/// Registers `name` on the stream, or reuses the consumer of that name, and waits until it is
/// ACTIVE (at most `wait`). A consumer being deleted is waited out and registered again.
pub async fn register(
    client: &Client,
    stream_arn: &str,
    name: &str,
    wait: Duration,
) -> Result<Registered> {
    validate_consumer_name("consumerName", name)?;
    let deadline = Instant::now() + wait;
    let mut created = false;
    // A new consumer is often ACTIVE within a second: poll fast first, then every POLL.
    let mut pause = FIRST_POLL;
    loop {
        match describe(client, stream_arn, name).await? {
            Some(c) if c.is_active() => {
                return Ok(Registered {
                    consumer: c,
                    created,
                })
            }
            Some(c)
                if c.status == ConsumerStatus::Deleting.as_str()
                    || c.status == ConsumerStatus::Creating.as_str() => {}
            Some(c) => {
                return Err(Error::new(
                    ErrorCode::SourceRead,
                    format!(
                        "EFO consumer '{name}' has the unexpected status {}",
                        c.status
                    ),
                )
                .with_context("consumer", name))
            }
            None => {
                match client
                    .register_stream_consumer()
                    .stream_arn(stream_arn)
                    .consumer_name(name)
                    .send()
                    .await
                {
                    Ok(_) => {
                        created = true;
                        tracing::info!(
                            consumer = name,
                            stream = stream_arn,
                            "registered the EFO consumer"
                        );
                    }
                    Err(e) => {
                        let e = ApiError::from_sdk(e);
                        // InUse: registered by someone else meanwhile, or the old one still deleting.
                        if e.failure != ApiFailure::InUse {
                            return Err(api(e, "RegisterStreamConsumer", stream_arn)
                                .with_context("consumer", name));
                        }
                    }
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                ErrorCode::Timeout,
                format!(
                    "EFO consumer '{name}' of stream '{stream_arn}' is not ACTIVE after {wait:?}"
                ),
            )
            .with_context("consumer", name));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(POLL);
    }
}

/// Deregisters `name` and waits until it is gone (at most `wait`). Returns false when there
/// was no such consumer.
pub async fn deregister(
    client: &Client,
    stream_arn: &str,
    name: &str,
    wait: Duration,
) -> Result<bool> {
    let deadline = Instant::now() + wait;
    let mut existed = false;
    loop {
        match describe(client, stream_arn, name).await? {
            None => return Ok(existed),
            Some(c) => {
                existed = true;
                if c.status != ConsumerStatus::Deleting.as_str() {
                    let r = client
                        .deregister_stream_consumer()
                        .stream_arn(stream_arn)
                        .consumer_name(name)
                        .send()
                        .await;
                    match r {
                        Ok(_) => tracing::info!(
                            consumer = name,
                            stream = stream_arn,
                            "deregistered the EFO consumer"
                        ),
                        Err(e) => {
                            let e = ApiError::from_sdk(e);
                            if !matches!(e.failure, ApiFailure::NotFound | ApiFailure::InUse) {
                                return Err(api(e, "DeregisterStreamConsumer", stream_arn)
                                    .with_context("consumer", name));
                            }
                        }
                    }
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                ErrorCode::Timeout,
                format!("EFO consumer '{name}' of stream '{stream_arn}' is still registered after {wait:?}"),
            )
            .with_context("consumer", name));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The consumer name a pipeline owns under `prefix`: `prefix` + its id, with characters Kinesis
/// refuses replaced by `_`, cut to 128 characters.
pub fn owned_name(prefix: &str, pipeline_id: &str) -> String {
    let id: String = pipeline_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut name = format!("{prefix}{id}");
    name.truncate(128);
    name
}

/// Consumers named with `prefix` that no pipeline in `owners` (pipeline ids) owns.
pub fn orphaned_of(
    consumers: &[ConsumerInfo],
    prefix: &str,
    owners: &[String],
) -> Vec<ConsumerInfo> {
    let owned: Vec<String> = owners.iter().map(|o| owned_name(prefix, o)).collect();
    consumers
        .iter()
        .filter(|c| c.name.starts_with(prefix) && !owned.contains(&c.name))
        .cloned()
        .collect()
}

/// [`orphaned_of`] over the stream's current consumers.
pub async fn orphaned(
    client: &Client,
    stream_arn: &str,
    prefix: &str,
    owners: &[String],
) -> Result<Vec<ConsumerInfo>> {
    Ok(orphaned_of(
        &list(client, stream_arn).await?,
        prefix,
        owners,
    ))
}

/// `tributary kinesis consumers ...`: what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumersCommand {
    /// `list --stream S [--orphaned --prefix P --owner ID...]`.
    List {
        /// Only consumers named with this prefix that none of `owners` owns (the leak report).
        orphaned: Option<(String, Vec<String>)>,
    },
    /// `register --stream S --name N`: register or reuse, wait until ACTIVE.
    Register {
        /// The consumer name.
        name: String,
    },
    /// `deregister --stream S --name N`: deregister, wait until gone.
    Deregister {
        /// The consumer name.
        name: String,
    },
}

/// Runs a consumers command on `stream` (a name, or an ARN starting with `arn:`) with the
/// connection options of the source; returns the consumers to print (for `deregister`, the
/// one removed, if it existed).
pub async fn consumers_command(
    settings: &ConnectionSettings,
    secrets: &dyn SecretStore,
    stream: &str,
    command: ConsumersCommand,
) -> Result<Vec<ConsumerInfo>> {
    let client = crate::client::build_client(settings, secrets).await?;
    let arn = stream_arn(&client, &stream_ref(stream)).await?;
    match command {
        ConsumersCommand::List { orphaned: None } => list(&client, &arn).await,
        ConsumersCommand::List {
            orphaned: Some((prefix, owners)),
        } => orphaned(&client, &arn, &prefix, &owners).await,
        ConsumersCommand::Register { name } => Ok(vec![
            register(&client, &arn, &name, DEFAULT_WAIT).await?.consumer,
        ]),
        ConsumersCommand::Deregister { name } => {
            let before = describe(&client, &arn, &name).await?;
            deregister(&client, &arn, &name, DEFAULT_WAIT).await?;
            Ok(before.into_iter().collect())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn c(name: &str) -> ConsumerInfo {
        ConsumerInfo {
            name: name.into(),
            arn: format!("arn:{name}"),
            status: "ACTIVE".into(),
            created_ms: 1,
        }
    }

    #[test]
    fn orphaned_means_prefixed_and_not_prefix_plus_a_running_id() {
        let all = [
            c("tributary_a"),
            c("tributary_b"),
            c("other_c"),
            c("tributary_pipe_1"),
        ];
        let names = |v: Vec<ConsumerInfo>| v.into_iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(
            names(orphaned_of(&all, "tributary_", &["a".into()])),
            ["tributary_b", "tributary_pipe_1"]
        );
        // A pipeline name with a space owns the sanitised name.
        assert_eq!(
            names(orphaned_of(
                &all,
                "tributary_",
                &["a".into(), "b".into(), "pipe 1".into()]
            )),
            Vec::<String>::new()
        );
        assert_eq!(owned_name("p_", &"x".repeat(200)).len(), 128);
    }

    #[test]
    fn command_line_streams_are_names_or_arns() {
        assert_eq!(stream_ref("events").keying, StreamKeying::Names);
        assert_eq!(
            stream_ref("arn:aws:kinesis:us-east-1:1:stream/events").keying,
            StreamKeying::Arns
        );
    }
}
