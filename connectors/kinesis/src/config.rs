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

use tributary_sdk::options::conflicting;
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result, Secret};

use crate::position::{parse_initial_position, InitialPosition};

/// The default `consumerNamePrefix` (Databricks uses `databricks_`).
pub const DEFAULT_CONSUMER_NAME_PREFIX: &str = "tributary_";

/// The connection options shared by the source, the sink and the consumer manager.
pub fn connection_option_specs() -> Vec<OptionSpec> {
    vec![
        OptionSpec::string("region", "AWS region of the streams (default: the AWS chain's region, else us-east-1)."),
        OptionSpec::string("endpoint", "Custom Kinesis endpoint URL (a VPC endpoint, a local test server); default: the region's endpoint."),
        // The access key id is an identifier (AWS prints it in CloudTrail), not a secret; it may still
        // be a secret reference and is never printed by this crate. Declared `.sensitive()` once the
        // SDK's `is_sensitive_key` masks "accesskey" in undeclared option maps as well.
        OptionSpec::string("awsAccessKey", "Static AWS access key id, as text or a {{secrets/scope/key}} reference (with awsSecretKey)."),
        OptionSpec::string("awsSecretKey", "Static AWS secret access key, as a {{secrets/scope/key}} reference (with awsAccessKey).").sensitive(),
        OptionSpec::string("roleArn", "IAM role to assume with STS before calling Kinesis."),
        OptionSpec::string("roleExternalId", "External id passed when assuming roleArn."),
        OptionSpec::string("roleSessionName", "Session name used when assuming roleArn (default: tributary-kinesis)."),
        OptionSpec::string("serviceCredential", "Name of a shared-config credential profile (~/.aws/config, ~/.aws/credentials) to take credentials from."),
        OptionSpec::string("tls.truststore.location", "PEM file with the CA certificates that verify the endpoint (default: the system roots). TLS verification is always on."),
    ]
}

/// Every option of the Kinesis source.
pub fn source_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection_option_specs();
    specs.extend([
        OptionSpec::string("streamName", "Comma-separated names of the streams to read (or streamARN)."),
        OptionSpec::string("streamARN", "Comma-separated ARNs of the streams to read (or streamName)."),
        OptionSpec::string("initialPosition", r#"Where a new query starts: trim_horizon (or earliest), latest, or at_timestamp as JSON {"at_timestamp": "06/25/2020 10:23:45 PDT", "format": "MM/dd/yyyy HH:mm:ss ZZZ"}. Ignored on restart: the checkpoint wins."#).default_value("latest"),
        OptionSpec::bool("failOnDataLoss", "Fail when data may have been lost (trimmed shards, recreated or removed streams); false logs, counts and continues from the earliest available record.").default_value(true),
        OptionSpec::one_of("consumerMode", &["polling", "efo"], "polling (GetRecords) or efo (enhanced fan-out, SubscribeToShard over HTTP/2).").default_value("polling"),
        OptionSpec::duration("maxFetchDuration", "Longest one batch spends fetching from the shards before it is cut.").default_value("10s"),
        OptionSpec::duration("minFetchPeriod", "Shortest wait between two GetRecords calls on one shard (Kinesis allows 5 per second).").default_value("400ms"),
        OptionSpec::int("maxRecordsPerFetch", 1, 10_000, "Most records one GetRecords call returns.").default_value(10_000),
        OptionSpec::int("shardsPerTask", 1, 10_000, "Shards one fetch task reads one after the other; the tasks run in parallel.").default_value(5),
        OptionSpec::bytes("fetchBufferSize", "Most record bytes (data + partition key) the polling source holds: records fetched ahead in the background for every shard plus the planned batch until it is read; exceeded by at most one GetRecords page per shard. Also ends a planned batch.").default_value("256mb"),
        OptionSpec::string("consumerName", "EFO consumer name (letters, digits, _ . -; 1-128 characters). Default: consumerNamePrefix + the pipeline id."),
        OptionSpec::string("consumerNamePrefix", "Prefix of the generated EFO consumer name; consumers with this prefix that no running pipeline owns are reported as leaked.").default_value(DEFAULT_CONSUMER_NAME_PREFIX),
        OptionSpec::bool("requireConsumerDeregistration", "Deregister the EFO consumer when the query stops cleanly.").default_value(false),
    ]);
    specs
}

/// Every option of the Kinesis sink.
pub fn sink_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection_option_specs();
    specs.extend([
        OptionSpec::string("streamName", "Stream to write to (or streamARN).").default_value(""),
        OptionSpec::string(
            "streamARN",
            "ARN of the stream to write to (or streamName).",
        ),
        OptionSpec::string(
            "partitionKey",
            "Partition key of every record (instead of partitionKeyColumn).",
        ),
        OptionSpec::string(
            "partitionKeyColumn",
            "Column holding each record's partition key.",
        )
        .default_value("partitionKey"),
        OptionSpec::string(
            "dataColumn",
            "Column holding each record's data (binary or utf8).",
        )
        .default_value("data"),
        OptionSpec::int(
            "maxRetries",
            0,
            100,
            "Attempts for the failed entries of a PutRecords call, with exponential backoff.",
        )
        .default_value(10),
    ]);
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
        let access = p.string("awsAccessKey")?;
        let secret = p.string("awsSecretKey")?;
        let profile = p
            .string("serviceCredential")?
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
        let role_arn = p.string("roleArn")?.filter(|s| !s.trim().is_empty());
        p.refuse_ignored(
            "roleExternalId",
            role_arn.is_some(),
            "roleArn",
            "is only used when 'roleArn' is set",
        )?;
        p.refuse_ignored(
            "roleSessionName",
            role_arn.is_some(),
            "roleArn",
            "is only used when 'roleArn' is set",
        )?;
        let assume_role = match role_arn {
            Some(arn) => {
                if !arn.starts_with("arn:") {
                    return Err(invalid(
                        "roleArn",
                        &arn,
                        "an IAM role ARN (arn:aws:iam::123456789012:role/name)",
                    ));
                }
                Some(AssumeRole {
                    role_arn: arn,
                    external_id: p.string("roleExternalId")?,
                    session_name: p
                        .string("roleSessionName")?
                        .unwrap_or_else(|| "tributary-kinesis".to_string()),
                })
            }
            None => None,
        };
        let endpoint = p.string("endpoint")?.filter(|s| !s.trim().is_empty());
        if let Some(e) = &endpoint {
            if !(e.starts_with("https://") || e.starts_with("http://")) {
                return Err(invalid(
                    "endpoint",
                    e,
                    "a URL starting with https:// or http://",
                ));
            }
        }
        let ca_file = p.string("tls.truststore.location")?.map(PathBuf::from);
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
            region: p.string("region")?.filter(|s| !s.trim().is_empty()),
            endpoint,
            credentials,
            assume_role,
            ca_file,
        })
    }
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
}

impl SourceConfig {
    /// Parses validated source options (no I/O, no secret resolved).
    pub fn parse(p: &ParsedOptions) -> Result<Self> {
        let connection = ConnectionSettings::parse(p)?;
        let streams = parse_streams(p)?;
        let initial_position = parse_initial_position(&p.required_string("initialPosition")?)?;
        let efo = p.word("consumerMode")?.as_deref() == Some("efo");
        for option in [
            "consumerName",
            "consumerNamePrefix",
            "requireConsumerDeregistration",
        ] {
            p.refuse_ignored(
                option,
                efo,
                "consumerMode",
                "is only used when 'consumerMode' is efo",
            )?;
        }
        if p.is_set("consumerName") && p.is_set("consumerNamePrefix") {
            return Err(conflicting(
                "consumerNamePrefix",
                "consumerName",
                "cannot be combined with 'consumerName' (the name is given whole)",
            ));
        }
        let prefix = p.required_string("consumerNamePrefix")?;
        if !prefix.is_empty() {
            check_consumer_name_chars("consumerNamePrefix", &prefix, 127)?;
        }
        let consumer_mode = if efo {
            let naming = match p.string("consumerName")? {
                Some(name) => {
                    validate_consumer_name("consumerName", &name)?;
                    ConsumerNaming::Explicit(name)
                }
                None => ConsumerNaming::Prefix(prefix.clone()),
            };
            ConsumerMode::Efo(EfoSettings {
                naming,
                require_deregistration: p.bool("requireConsumerDeregistration")?.unwrap_or(false),
                prefix,
            })
        } else {
            ConsumerMode::Polling
        };
        let duration = |name: &str| -> Result<Duration> {
            p.duration(name)?.ok_or_else(|| {
                Error::new(
                    ErrorCode::Internal,
                    format!("option '{name}' has no default"),
                )
            })
        };
        let max_fetch_duration = duration("maxFetchDuration")?;
        if max_fetch_duration.is_zero() {
            return Err(invalid(
                "maxFetchDuration",
                "0",
                "a duration above zero such as 10s",
            ));
        }
        let fetch_buffer_size = p.bytes("fetchBufferSize")?.unwrap_or(256 << 20);
        if fetch_buffer_size < 1 << 20 {
            return Err(invalid(
                "fetchBufferSize",
                &fetch_buffer_size.to_string(),
                "at least 1mb (one Kinesis record can be 1 MiB)",
            ));
        }
        Ok(SourceConfig {
            connection,
            streams,
            initial_position,
            fail_on_data_loss: p.bool("failOnDataLoss")?.unwrap_or(true),
            consumer_mode,
            max_fetch_duration,
            min_fetch_period: duration("minFetchPeriod")?,
            max_records_per_fetch: p.i64("maxRecordsPerFetch")?.unwrap_or(10_000) as i32,
            shards_per_task: p.i64("shardsPerTask")?.unwrap_or(5) as usize,
            fetch_buffer_size,
        })
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
        let name = p.string("streamName")?.unwrap_or_default();
        let arn = p.string("streamARN")?.unwrap_or_default();
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
        let partition_key = match p.string("partitionKey")? {
            Some(k) => {
                p.refuse_ignored(
                    "partitionKeyColumn",
                    false,
                    "partitionKey",
                    "cannot be combined with 'partitionKey'",
                )?;
                if k.is_empty() || k.chars().count() > 256 {
                    return Err(invalid("partitionKey", &k, "1 to 256 characters"));
                }
                PartitionKeySource::Fixed(k)
            }
            None => PartitionKeySource::Column(p.required_string("partitionKeyColumn")?),
        };
        Ok(SinkConfig {
            connection,
            stream,
            keying,
            partition_key,
            data_column: p.required_string("dataColumn")?,
            max_retries: p.i64("maxRetries")?.unwrap_or(10) as u32,
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
    let names = split(p.string("streamName")?);
    let arns = split(p.string("streamARN")?);
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

pub(crate) fn invalid(option: &str, value: &str, allowed: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!("invalid value '{value}' for option '{option}': expected {allowed}"),
    )
    .with_context("option", option)
    .with_context("allowed", allowed)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
