//! The Kinesis connector's options, each declared once: name, type, default, allowed values,
//! documentation, sensitivity and the options it conflicts with. [`crate::config`] reads the
//! typed values from these declarations.

use tributary_sdk::options::decl::{
    self, Defaulted, Dur, Flag, Int, OneOf, OptionDecl, Size, Text,
};
use tributary_sdk::options::Conflict;
use tributary_sdk::OptionSpec;

/// The default `consumerNamePrefix` (Databricks uses `databricks_`).
pub const DEFAULT_CONSUMER_NAME_PREFIX: &str = "tributary_";

/// region.
pub const REGION: OptionDecl<Text> = decl::text(
    "region",
    "AWS region of the streams (default: the AWS chain's region, else us-east-1).",
);
/// endpoint.
pub const ENDPOINT: OptionDecl<Text> = decl::text("endpoint", "Custom Kinesis endpoint URL (a VPC endpoint, a local test server); default: the region's endpoint.");
// The access key id is an identifier (AWS prints it in CloudTrail), not a secret; it may still
// be a secret reference and is never printed by this crate. Declared `.sensitive()` once the
// SDK's `is_sensitive_key` masks "accesskey" in undeclared option maps as well.
/// awsAccessKey.
pub const AWS_ACCESS_KEY: OptionDecl<Text> = decl::text(
    "awsAccessKey",
    "Static AWS access key id, as text or a {{secrets/scope/key}} reference (with awsSecretKey).",
);
/// awsSecretKey.
pub const AWS_SECRET_KEY: OptionDecl<Text> = decl::text(
    "awsSecretKey",
    "Static AWS secret access key, as a {{secrets/scope/key}} reference (with awsAccessKey).",
)
.sensitive();
/// roleArn.
pub const ROLE_ARN: OptionDecl<Text> = decl::text(
    "roleArn",
    "IAM role to assume with STS before calling Kinesis.",
);
const ONLY_WITH_ROLE: &[Conflict] = &[Conflict::requires(
    "roleArn",
    "is only used when 'roleArn' is set",
)];
/// roleExternalId.
pub const ROLE_EXTERNAL_ID: OptionDecl<Text> = decl::text(
    "roleExternalId",
    "External id passed when assuming roleArn.",
)
.conflicts(ONLY_WITH_ROLE);
/// roleSessionName.
pub const ROLE_SESSION_NAME: OptionDecl<Text> = decl::text(
    "roleSessionName",
    "Session name used when assuming roleArn (default: tributary-kinesis).",
)
.conflicts(ONLY_WITH_ROLE);
/// stsEndpoint.
pub const STS_ENDPOINT: OptionDecl<Text> = decl::text(
    "stsEndpoint",
    "STS endpoint URL that roleArn is assumed through (a VPC or regional STS endpoint); default: the AWS SDK's STS endpoint for the region.",
)
.conflicts(ONLY_WITH_ROLE);
/// serviceCredential.
pub const SERVICE_CREDENTIAL: OptionDecl<Text> = decl::text("serviceCredential", "Name of a shared-config credential profile (~/.aws/config, ~/.aws/credentials) to take credentials from.");
/// tls.truststore.location.
pub const TRUSTSTORE_LOCATION: OptionDecl<Text> = decl::text("tls.truststore.location", "PEM file with the CA certificates that verify the endpoint (default: the system roots). TLS verification is always on.");

/// The connection options shared by the source, the sink and the consumer manager.
pub fn connection_option_specs() -> Vec<OptionSpec> {
    decl::specs(&[
        &REGION,
        &ENDPOINT,
        &AWS_ACCESS_KEY,
        &AWS_SECRET_KEY,
        &ROLE_ARN,
        &ROLE_EXTERNAL_ID,
        &ROLE_SESSION_NAME,
        &STS_ENDPOINT,
        &SERVICE_CREDENTIAL,
        &TRUSTSTORE_LOCATION,
    ])
}

/// streamName (source).
pub const STREAM_NAME: OptionDecl<Text> = decl::text(
    "streamName",
    "Comma-separated names of the streams to read (or streamARN).",
);
/// streamARN (source).
pub const STREAM_ARN: OptionDecl<Text> = decl::text(
    "streamARN",
    "Comma-separated ARNs of the streams to read (or streamName).",
);
/// initialPosition.
pub const INITIAL_POSITION: OptionDecl<Text, Defaulted> = decl::text("initialPosition", r#"Where a new query starts: trim_horizon (or earliest), latest, or at_timestamp as JSON {"at_timestamp": "06/25/2020 10:23:45 PDT", "format": "MM/dd/yyyy HH:mm:ss ZZZ"}. Ignored on restart: the checkpoint wins."#).default("latest");
/// failOnDataLoss.
pub const FAIL_ON_DATA_LOSS: OptionDecl<Flag, Defaulted> = decl::flag("failOnDataLoss", "Fail when data may have been lost (trimmed shards, recreated or removed streams); false logs, counts and continues from the earliest available record.").default(true);
/// consumerMode.
pub const CONSUMER_MODE: OptionDecl<OneOf, Defaulted> = decl::one_of(
    "consumerMode",
    &["polling", "efo"],
    "polling (GetRecords) or efo (enhanced fan-out, SubscribeToShard over HTTP/2).",
)
.default("polling");
/// maxFetchDuration.
pub const MAX_FETCH_DURATION: OptionDecl<Dur, Defaulted> = decl::duration(
    "maxFetchDuration",
    "Longest one batch spends fetching from the shards before it is cut.",
)
.default("10s");
/// minFetchPeriod.
pub const MIN_FETCH_PERIOD: OptionDecl<Dur, Defaulted> = decl::duration(
    "minFetchPeriod",
    "Shortest wait between two GetRecords calls on one shard (Kinesis allows 5 per second).",
)
.default("400ms");
/// maxRecordsPerFetch.
pub const MAX_RECORDS_PER_FETCH: OptionDecl<Int, Defaulted> = decl::int(
    "maxRecordsPerFetch",
    1,
    10_000,
    "Most records one GetRecords call returns.",
)
.default(10_000);
/// shardsPerTask.
pub const SHARDS_PER_TASK: OptionDecl<Int, Defaulted> = decl::int(
    "shardsPerTask",
    1,
    10_000,
    "Shards one task reads, every shard in parallel (Databricks prefetches a task's shards in parallel): under the distributed engine a Kinesis range is planned as ceil(shards / shardsPerTask) input partitions (a resharded family is never split); the embedded engine reads every shard of a batch in parallel.",
)
.default(5);
/// maxFetchRate.
pub const MAX_FETCH_RATE: OptionDecl<Text, Defaulted> = decl::text("maxFetchRate", "Most MB (MiB) per second fetched from one shard with GetRecords, a decimal number above 0 (Kinesis serves 2 per shard, shared by its polling readers): after a page of N bytes the next call on that shard waits N / maxFetchRate. Polling reads, and the replays of logged ranges under efo.").default("1.0");
/// shardFetchInterval.
pub const SHARD_FETCH_INTERVAL: OptionDecl<Dur, Defaulted> = decl::duration(
    "shardFetchInterval",
    "How often the shard list (resharding) and the stream's identity are polled while planning (ListShards, DescribeStreamSummary).",
)
.default("1s");
/// coalesceThresholdBlockSize.
pub const COALESCE_THRESHOLD_BLOCK_SIZE: OptionDecl<Size, Defaulted> = decl::bytes("coalesceThresholdBlockSize", "When the planned batch's record blocks (one per shard, cut at 16k records / 4 MiB) average fewer bytes than this, they are coalesced into Arrow batches of about coalesceBinSize across shards; 0 turns coalescing off. Replays of logged ranges keep their bounded parts.").default("10000000");
/// coalesceBinSize.
pub const COALESCE_BIN_SIZE: OptionDecl<Size, Defaulted> = decl::bytes(
    "coalesceBinSize",
    "The approximate size in bytes (data + partition keys) of an Arrow batch after coalescing.",
)
.default("128000000");
/// fetchBufferSize.
pub const FETCH_BUFFER_SIZE: OptionDecl<Size, Defaulted> = decl::bytes("fetchBufferSize", "Most record bytes (data + partition key) the polling source holds: records fetched ahead in the background for every shard plus the planned batch until it is read; exceeded by at most one GetRecords page per shard. Also ends a planned batch, and bounds what a replay of logged ranges (or an input partition) reads ahead for its later shards while it yields the earlier ones.").default("256mb");
const ONLY_EFO: Conflict = Conflict::only_when(
    "consumerMode",
    &["efo"],
    "is only used when 'consumerMode' is efo",
);
/// consumerName.
pub const CONSUMER_NAME: OptionDecl<Text> = decl::text("consumerName", "EFO consumer name (letters, digits, _ . -; 1-128 characters). Default: consumerNamePrefix + the pipeline id.").conflicts(&[ONLY_EFO]);
/// consumerNamePrefix.
pub const CONSUMER_NAME_PREFIX: OptionDecl<Text, Defaulted> = decl::text("consumerNamePrefix", "Prefix of the generated EFO consumer name; consumers with this prefix that no running pipeline owns are reported as leaked.")
    .default(DEFAULT_CONSUMER_NAME_PREFIX)
    .conflicts(&[
        ONLY_EFO,
        Conflict::excludes("consumerName", "cannot be combined with 'consumerName' (the name is given whole)"),
    ]);
/// registeredConsumerId.
pub const REGISTERED_CONSUMER_ID: OptionDecl<Text> = decl::text("registeredConsumerId", "EFO consumer registered outside the query, used instead of registering one: a consumer name or ARN, or a comma-separated list with one per stream in the order of streamName / streamARN. The query never registers, re-registers nor deregisters it.")
    .conflicts(&[
        ONLY_EFO,
        Conflict::excludes("consumerName", "cannot be combined with 'consumerName' (the consumer is the registered one)"),
        Conflict::excludes("consumerNamePrefix", "cannot be combined with 'consumerNamePrefix' (no consumer is named or registered by the query)"),
    ]);
/// registeredConsumerIdType.
pub const REGISTERED_CONSUMER_ID_TYPE: OptionDecl<OneOf> = decl::one_of(
    "registeredConsumerIdType",
    &["name", "ARN"],
    "What registeredConsumerId holds: consumer names or consumer ARNs (default: ARN when the ids start with arn:, else name).",
)
.conflicts(&[Conflict::requires(
    "registeredConsumerId",
    "is only used with 'registeredConsumerId'",
)]);
/// requireConsumerDeregistration.
pub const REQUIRE_CONSUMER_DEREGISTRATION: OptionDecl<Flag, Defaulted> = decl::flag(
    "requireConsumerDeregistration",
    "Deregister the EFO consumer when the query stops cleanly.",
)
.default(false)
.conflicts(&[ONLY_EFO]);

/// The source's own options (after the connection options).
pub fn source_options() -> Vec<OptionSpec> {
    decl::specs(&[
        &STREAM_NAME,
        &STREAM_ARN,
        &INITIAL_POSITION,
        &FAIL_ON_DATA_LOSS,
        &CONSUMER_MODE,
        &MAX_FETCH_DURATION,
        &MIN_FETCH_PERIOD,
        &MAX_RECORDS_PER_FETCH,
        &SHARDS_PER_TASK,
        &FETCH_BUFFER_SIZE,
        &MAX_FETCH_RATE,
        &SHARD_FETCH_INTERVAL,
        &COALESCE_THRESHOLD_BLOCK_SIZE,
        &COALESCE_BIN_SIZE,
        &CONSUMER_NAME,
        &CONSUMER_NAME_PREFIX,
        &REGISTERED_CONSUMER_ID,
        &REGISTERED_CONSUMER_ID_TYPE,
        &REQUIRE_CONSUMER_DEREGISTRATION,
    ])
}

/// streamName (sink).
pub const SINK_STREAM_NAME: OptionDecl<Text, Defaulted> =
    decl::text("streamName", "Stream to write to (or streamARN).").default("");
/// streamARN (sink).
pub const SINK_STREAM_ARN: OptionDecl<Text> = decl::text(
    "streamARN",
    "ARN of the stream to write to (or streamName).",
);
/// partitionKey.
pub const PARTITION_KEY: OptionDecl<Text> = decl::text(
    "partitionKey",
    "Partition key of every record (instead of partitionKeyColumn).",
);
/// partitionKeyColumn.
pub const PARTITION_KEY_COLUMN: OptionDecl<Text, Defaulted> = decl::text(
    "partitionKeyColumn",
    "Column holding each record's partition key.",
)
.default("partitionKey")
.conflicts(&[Conflict::excludes(
    "partitionKey",
    "cannot be combined with 'partitionKey'",
)]);
/// dataColumn.
pub const DATA_COLUMN: OptionDecl<Text, Defaulted> = decl::text(
    "dataColumn",
    "Column holding each record's data (binary or utf8).",
)
.default("data");
/// maxRetries.
pub const MAX_RETRIES: OptionDecl<Int, Defaulted> = decl::int(
    "maxRetries",
    0,
    100,
    "Attempts for the failed entries of a PutRecords call, with exponential backoff.",
)
.default(10);

/// The sink's own options (after the connection options).
pub fn sink_options() -> Vec<OptionSpec> {
    decl::specs(&[
        &SINK_STREAM_NAME,
        &SINK_STREAM_ARN,
        &PARTITION_KEY,
        &PARTITION_KEY_COLUMN,
        &DATA_COLUMN,
        &MAX_RETRIES,
    ])
}
