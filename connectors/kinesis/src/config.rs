//! Source and sink options with the names of the Databricks Kinesis connector, declared once and
//! parsed into typed configs without I/O.
//!
//! The connection (region, endpoint, credentials, trust store) is [`ConnectionSettings`], shared
//! by the source, the sink and the consumer manager; the per-stream options are in
//! [`SourceConfig`] / [`SinkConfig`]. Options that contradict each other or would be ignored are
//! refused with `CONFLICTING_OPTIONS` naming both.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use tributary_sdk::options::{conflicting, invalid_value as invalid};
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result, Secret};

use crate::options as o;
use crate::position::{parse_initial_position, InitialPosition};
use crate::registered;
pub use crate::registered::{ConsumerIdType, RegisteredConsumers};

pub use crate::options::{connection_option_specs, DEFAULT_CONSUMER_NAME_PREFIX};

/// Every option of the Kinesis source.
pub fn source_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection_option_specs();
    specs.extend(o::source_options());
    specs
}

/// Every option of the Kinesis sink.
pub fn sink_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection_option_specs();
    specs.extend(o::sink_options());
    specs
}

/// Credentials before secrets are resolved.
#[derive(Clone, PartialEq, Eq)]
pub enum BaseCredentials {
    /// awsAccessKey / awsSecretKey (each text or a secret reference, unresolved).
    Static {
        /// The access key id (or its reference).
        access_key: Secret,
        /// The secret key (or its reference).
        secret_key: Secret,
    },
    /// serviceCredential: a shared-config profile name.
    Profile(String),
    /// The default AWS provider chain (environment, shared profile, web identity, IMDS).
    DefaultChain,
}

impl fmt::Debug for BaseCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BaseCredentials::Static { .. } => f.write_str("Static(***)"),
            BaseCredentials::Profile(p) => write!(f, "Profile({p})"),
            BaseCredentials::DefaultChain => f.write_str("DefaultChain"),
        }
    }
}

/// roleArn / roleExternalId / roleSessionName.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssumeRole {
    /// The role to assume.
    pub role_arn: String,
    /// The external id, if any.
    pub external_id: Option<String>,
    /// The session name.
    pub session_name: String,
    /// stsEndpoint: the STS endpoint the role is assumed through (default: the SDK's).
    pub sts_endpoint: Option<String>,
}

/// Region, endpoint, credentials and trust store, secrets unresolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// region.
    pub region: Option<String>,
    /// endpoint.
    pub endpoint: Option<String>,
    /// Where the base credentials come from.
    pub credentials: BaseCredentials,
    /// STS assume-role on top of the base credentials.
    pub assume_role: Option<AssumeRole>,
    /// tls.truststore.location.
    pub ca_file: Option<PathBuf>,
}

impl ConnectionSettings {
    /// Parses the connection options (no I/O, no secret resolved).
    pub fn parse(p: &ParsedOptions) -> Result<Self> {
        let access = o::AWS_ACCESS_KEY.get(p)?;
        let secret = o::AWS_SECRET_KEY.get(p)?;
        let profile = o::SERVICE_CREDENTIAL
            .get(p)?
            .filter(|s| !s.trim().is_empty());
        let credentials = match (access, secret) {
            (Some(a), Some(s)) => {
                if profile.is_some() {
                    return Err(conflicting(
                        "serviceCredential",
                        "awsAccessKey",
                        "cannot be combined with static keys (awsAccessKey / awsSecretKey)",
                    ));
                }
                BaseCredentials::Static {
                    access_key: Secret::new(a),
                    secret_key: Secret::new(s),
                }
            }
            (Some(_), None) => return Err(missing_pair("awsSecretKey", "awsAccessKey")),
            (None, Some(_)) => return Err(missing_pair("awsAccessKey", "awsSecretKey")),
            (None, None) => match profile {
                Some(p) => BaseCredentials::Profile(p),
                None => BaseCredentials::DefaultChain,
            },
        };
        let role_arn = o::ROLE_ARN.get(p)?.filter(|s| !s.trim().is_empty());
        let assume_role = match role_arn {
            Some(arn) => {
                if !arn.starts_with("arn:") {
                    return Err(invalid(
                        "roleArn",
                        &arn,
                        "an IAM role ARN (arn:aws:iam::123456789012:role/name)",
                    ));
                }
                let sts_endpoint = o::STS_ENDPOINT.get(p)?.filter(|s| !s.trim().is_empty());
                if let Some(e) = &sts_endpoint {
                    check_endpoint_url("stsEndpoint", e)?;
                }
                Some(AssumeRole {
                    role_arn: arn,
                    external_id: o::ROLE_EXTERNAL_ID.get(p)?,
                    session_name: o::ROLE_SESSION_NAME
                        .get(p)?
                        .unwrap_or_else(|| "tributary-kinesis".to_string()),
                    sts_endpoint,
                })
            }
            None => None,
        };
        let endpoint = o::ENDPOINT.get(p)?.filter(|s| !s.trim().is_empty());
        if let Some(e) = &endpoint {
            check_endpoint_url("endpoint", e)?;
        }
        let ca_file = o::TRUSTSTORE_LOCATION.get(p)?.map(PathBuf::from);
        if ca_file.is_some()
            && endpoint
                .as_deref()
                .is_some_and(|e| e.starts_with("http://"))
        {
            return Err(conflicting(
                "tls.truststore.location",
                "endpoint",
                "is only used with an https:// endpoint",
            ));
        }
        Ok(ConnectionSettings {
            region: o::REGION.get(p)?.filter(|s| !s.trim().is_empty()),
            endpoint,
            credentials,
            assume_role,
            ca_file,
        })
    }
}

/// Checks an endpoint URL option: http(s), no user information.
fn check_endpoint_url(option: &str, e: &str) -> Result<()> {
    if !(e.starts_with("https://") || e.starts_with("http://")) {
        return Err(invalid(
            option,
            e,
            "a URL starting with https:// or http://",
        ));
    }
    if tributary_sdk::redact::mask_url_userinfo(e) != e {
        // The message shows the URL masked (Error masks user information).
        return Err(invalid(
            option,
            e,
            "a URL without user information (give credentials with awsAccessKey / awsSecretKey, a profile or roleArn)",
        ));
    }
    Ok(())
}

/// How streams are named: the two forms cannot be mixed across restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamKeying {
    /// streamName.
    Names,
    /// streamARN.
    Arns,
}

impl StreamKeying {
    /// The option that selects this keying.
    pub fn option(&self) -> &'static str {
        match self {
            StreamKeying::Names => "streamName",
            StreamKeying::Arns => "streamARN",
        }
    }
}

/// The streams a source reads: names or ARNs, in the order given, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Streams {
    /// Names or ARNs.
    pub keying: StreamKeying,
    /// The names or ARNs.
    pub ids: Vec<String>,
}

/// How the source fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerMode {
    /// GetRecords.
    Polling,
    /// Enhanced fan-out.
    Efo(EfoSettings),
}

/// Where the EFO consumer name comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerNaming {
    /// consumerName.
    Explicit(String),
    /// consumerNamePrefix + the pipeline id.
    Prefix(String),
    /// registeredConsumerId: consumers registered outside the query, one per stream.
    Registered(RegisteredConsumers),
}

/// EFO options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EfoSettings {
    /// The consumer name or how to make it.
    pub naming: ConsumerNaming,
    /// requireConsumerDeregistration.
    pub require_deregistration: bool,
    /// consumerNamePrefix (also the leak report's filter).
    pub prefix: String,
}

/// The Kinesis source's typed options.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceConfig {
    /// The connection.
    pub connection: ConnectionSettings,
    /// streamName / streamARN.
    pub streams: Streams,
    /// initialPosition.
    pub initial_position: InitialPosition,
    /// failOnDataLoss.
    pub fail_on_data_loss: bool,
    /// consumerMode and the EFO options.
    pub consumer_mode: ConsumerMode,
    /// maxFetchDuration.
    pub max_fetch_duration: Duration,
    /// minFetchPeriod.
    pub min_fetch_period: Duration,
    /// maxRecordsPerFetch.
    pub max_records_per_fetch: i32,
    /// shardsPerTask.
    pub shards_per_task: usize,
    /// fetchBufferSize in bytes.
    pub fetch_buffer_size: u64,
    /// maxFetchRate, in bytes per second per shard.
    pub max_fetch_rate: f64,
    /// shardFetchInterval.
    pub shard_fetch_interval: Duration,
    /// coalesceThresholdBlockSize and coalesceBinSize, in bytes.
    pub coalesce: Coalesce,
}

/// When the blocks of a planned batch are coalesced, and into what size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coalesce {
    /// coalesceThresholdBlockSize: coalesce when the average block is smaller (0: never).
    pub threshold: u64,
    /// coalesceBinSize: the size a coalesced batch grows to.
    pub bin: u64,
}

impl SourceConfig {
    /// Parses validated source options (no I/O, no secret resolved).
    pub fn parse(p: &ParsedOptions) -> Result<Self> {
        let connection = ConnectionSettings::parse(p)?;
        let streams = parse_streams(p)?;
        let initial_position = parse_initial_position(&o::INITIAL_POSITION.get(p)?)?;
        let efo = o::CONSUMER_MODE.get(p)? == "efo";
        let prefix = o::CONSUMER_NAME_PREFIX.get(p)?;
        if !prefix.is_empty() {
            check_consumer_name_chars("consumerNamePrefix", &prefix, 127)?;
        }
        let consumer_mode = if efo {
            let require_deregistration = o::REQUIRE_CONSUMER_DEREGISTRATION.get(p)?;
            let naming = match (registered::parse(p, &streams)?, o::CONSUMER_NAME.get(p)?) {
                (Some(r), _) => {
                    if require_deregistration {
                        return Err(conflicting(
                            "requireConsumerDeregistration",
                            "registeredConsumerId",
                            "cannot be true with 'registeredConsumerId': a consumer registered outside the query is never deregistered by it",
                        ));
                    }
                    ConsumerNaming::Registered(r)
                }
                (None, Some(name)) => {
                    validate_consumer_name("consumerName", &name)?;
                    ConsumerNaming::Explicit(name)
                }
                (None, None) => ConsumerNaming::Prefix(prefix.clone()),
            };
            ConsumerMode::Efo(EfoSettings {
                naming,
                require_deregistration,
                prefix,
            })
        } else {
            ConsumerMode::Polling
        };
        let max_fetch_duration = o::MAX_FETCH_DURATION.get(p)?;
        if max_fetch_duration.is_zero() {
            return Err(invalid(
                "maxFetchDuration",
                "0",
                "a duration above zero such as 10s",
            ));
        }
        let fetch_buffer_size = o::FETCH_BUFFER_SIZE.get(p)?;
        if fetch_buffer_size < 1 << 20 {
            return Err(invalid(
                "fetchBufferSize",
                &fetch_buffer_size.to_string(),
                "at least 1mb (one Kinesis record can be 1 MiB)",
            ));
        }
        let max_fetch_rate = parse_rate(&o::MAX_FETCH_RATE.get(p)?)?;
        let coalesce = Coalesce {
            threshold: o::COALESCE_THRESHOLD_BLOCK_SIZE.get(p)?,
            bin: o::COALESCE_BIN_SIZE.get(p)?,
        };
        if coalesce.bin == 0 {
            return Err(invalid(
                "coalesceBinSize",
                "0",
                "a size above zero such as 128000000 (turn coalescing off with coalesceThresholdBlockSize = 0)",
            ));
        }
        Ok(SourceConfig {
            connection,
            streams,
            initial_position,
            fail_on_data_loss: o::FAIL_ON_DATA_LOSS.get(p)?,
            consumer_mode,
            max_fetch_duration,
            min_fetch_period: o::MIN_FETCH_PERIOD.get(p)?,
            max_records_per_fetch: o::MAX_RECORDS_PER_FETCH.get(p)? as i32,
            shards_per_task: o::SHARDS_PER_TASK.get(p)? as usize,
            fetch_buffer_size,
            max_fetch_rate,
            shard_fetch_interval: o::SHARD_FETCH_INTERVAL.get(p)?,
            coalesce,
        })
    }
}

/// Bytes per MB of `maxFetchRate` (Kinesis' own limits count MiB).
pub const FETCH_RATE_UNIT: f64 = 1_048_576.0;

/// `maxFetchRate` (MB per second, decimal) in bytes per second.
fn parse_rate(text: &str) -> Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r * FETCH_RATE_UNIT),
        _ => Err(invalid(
            "maxFetchRate",
            text,
            "a decimal number of MB per second above 0, such as 1.0 (Kinesis serves 2 per shard)",
        )),
    }
}

/// Where the sink's partition keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionKeySource {
    /// partitionKey: the same key for every record.
    Fixed(String),
    /// partitionKeyColumn.
    Column(String),
}

/// The Kinesis sink's typed options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkConfig {
    /// The connection.
    pub connection: ConnectionSettings,
    /// The stream (name or ARN).
    pub stream: String,
    /// Names or ARNs.
    pub keying: StreamKeying,
    /// The partition key.
    pub partition_key: PartitionKeySource,
    /// dataColumn.
    pub data_column: String,
    /// maxRetries.
    pub max_retries: u32,
}

impl SinkConfig {
    /// Parses validated sink options.
    pub fn parse(p: &ParsedOptions) -> Result<Self> {
        let connection = ConnectionSettings::parse(p)?;
        let name = o::SINK_STREAM_NAME.get(p)?;
        let arn = o::SINK_STREAM_ARN.get(p)?.unwrap_or_default();
        let (stream, keying) = match (name.trim().is_empty(), arn.trim().is_empty()) {
            (false, false) => {
                return Err(conflicting(
                    "streamARN",
                    "streamName",
                    "cannot be combined with 'streamName'",
                ))
            }
            (false, true) => (name.trim().to_string(), StreamKeying::Names),
            (true, false) => (arn.trim().to_string(), StreamKeying::Arns),
            (true, true) => {
                return Err(Error::new(
                    ErrorCode::MissingOption,
                    "the Kinesis sink needs 'streamName' or 'streamARN'",
                )
                .with_context("option", "streamName"))
            }
        };
        if stream.contains(',') {
            return Err(invalid(
                keying.option(),
                &stream,
                "exactly one stream (the sink writes to one)",
            ));
        }
        if keying == StreamKeying::Arns {
            check_arn(&stream)?;
        }
        let partition_key = match o::PARTITION_KEY.get(p)? {
            Some(k) => {
                if k.is_empty() || k.chars().count() > 256 {
                    return Err(invalid("partitionKey", &k, "1 to 256 characters"));
                }
                PartitionKeySource::Fixed(k)
            }
            None => PartitionKeySource::Column(o::PARTITION_KEY_COLUMN.get(p)?),
        };
        Ok(SinkConfig {
            connection,
            stream,
            keying,
            partition_key,
            data_column: o::DATA_COLUMN.get(p)?,
            max_retries: o::MAX_RETRIES.get(p)? as u32,
        })
    }
}

fn parse_streams(p: &ParsedOptions) -> Result<Streams> {
    let split = |v: Option<String>| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in v
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        }
        out
    };
    let names = split(o::STREAM_NAME.get(p)?);
    let arns = split(o::STREAM_ARN.get(p)?);
    match (names.is_empty(), arns.is_empty()) {
        (false, false) => Err(conflicting(
            "streamARN",
            "streamName",
            "cannot be combined with 'streamName': name the streams one way",
        )),
        (true, true) => Err(Error::new(
            ErrorCode::MissingOption,
            "the Kinesis source needs 'streamName' or 'streamARN' (comma-separated for several streams)",
        )
        .with_context("option", "streamName")),
        (false, true) => {
            for n in &names {
                if n.len() > 128
                    || !n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
                {
                    return Err(invalid(
                        "streamName",
                        n,
                        "stream names of 1-128 letters, digits, '_', '.' or '-' (use streamARN for ARNs)",
                    ));
                }
            }
            Ok(Streams { keying: StreamKeying::Names, ids: names })
        }
        (true, false) => {
            for a in &arns {
                check_arn(a)?;
            }
            Ok(Streams { keying: StreamKeying::Arns, ids: arns })
        }
    }
}

fn check_arn(arn: &str) -> Result<()> {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let ok = parts.len() == 6
        && parts[0] == "arn"
        && parts[2] == "kinesis"
        && parts[5]
            .strip_prefix("stream/")
            .is_some_and(|n| !n.is_empty());
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "streamARN",
            arn,
            "stream ARNs like arn:aws:kinesis:us-east-1:123456789012:stream/name",
        ))
    }
}

/// Checks an EFO consumer name against Kinesis' rules: `[a-zA-Z0-9_.-]`, 1-128 characters.
pub fn validate_consumer_name(option: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(invalid(
            option,
            name,
            "1 to 128 characters of letters, digits, '_', '.' or '-'",
        ));
    }
    check_consumer_name_chars(option, name, 128)
}

fn check_consumer_name_chars(option: &str, name: &str, max: usize) -> Result<()> {
    if name.len() > max
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(invalid(
            option,
            name,
            &format!("1 to {max} characters of letters, digits, '_', '.' or '-' (Kinesis consumer name rules)"),
        ));
    }
    Ok(())
}

fn missing_pair(missing: &str, given: &str) -> Error {
    Error::new(
        ErrorCode::MissingOption,
        format!("option '{missing}' is required when '{given}' is given (static AWS keys come in pairs)"),
    )
    .with_context("option", missing)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "config_databricks_tests.rs"]
mod databricks_tests;
