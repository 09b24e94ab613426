//! The Kafka source's and sink's own options, each declared once: name, type, default,
//! allowed values, documentation and the options it conflicts with. [`crate::config`] reads
//! the typed values from these declarations; the connection options are in
//! [`crate::connection`].

use tributary_sdk::options::decl::{
    self, Defaulted, Dur, Flag, Int, Json, OneOf, OptionDecl, Text,
};
use tributary_sdk::options::Conflict;

/// subscribe.
pub const SUBSCRIBE: OptionDecl<Text> =
    decl::text("subscribe", "Comma-separated list of topics to read.");
/// subscribePattern.
pub const SUBSCRIBE_PATTERN: OptionDecl<Text> = decl::text(
    "subscribePattern",
    "Regular expression (full match) of topics to read; topics created later are picked up.",
);
/// assign.
pub const ASSIGN: OptionDecl<Json> = decl::json(
    "assign",
    r#"Fixed partitions to read, as JSON: {"topicA":[0,1],"topicB":[2]}."#,
);
const TAKES_PRECEDENCE: &str = "is ignored when 'startingTimestamp' is given (it takes precedence)";
/// startingOffsets.
pub const STARTING_OFFSETS: OptionDecl<Text, Defaulted> = decl::text(
    "startingOffsets",
    r#"Where a new query starts: earliest, latest, or JSON {"topic":{"0":23,"1":-2}} (-2 earliest, -1 latest). Ignored on restart: the checkpoint wins."#,
)
.default("latest")
.conflicts(&[
    Conflict::excludes("startingTimestamp", TAKES_PRECEDENCE),
    Conflict::excludes(
        "startingOffsetsByTimestamp",
        "is ignored when 'startingOffsetsByTimestamp' is given (it takes precedence)",
    ),
]);
/// startingTimestamp.
pub const STARTING_TIMESTAMP: OptionDecl<Int> = decl::int(
    "startingTimestamp",
    0,
    i64::MAX,
    "Start every partition at the first record with a timestamp (ms) at or after this one. Takes precedence over startingOffsets.",
);
/// startingOffsetsByTimestamp.
pub const STARTING_OFFSETS_BY_TIMESTAMP: OptionDecl<Json> = decl::json(
    "startingOffsetsByTimestamp",
    r#"Per-partition start timestamps (ms): {"topic":{"0":1700000000000}}. Takes precedence over startingOffsets."#,
)
.conflicts(&[Conflict::excludes("startingTimestamp", TAKES_PRECEDENCE)]);
/// startingOffsetsByTimestampStrategy.
pub const STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY: OptionDecl<OneOf, Defaulted> = decl::one_of(
    "startingOffsetsByTimestampStrategy",
    &["error", "latest"],
    "When no record is at or after the starting timestamp: fail (error) or start at the latest offset.",
)
.default("error")
.conflicts(&[Conflict::requires_any(
    "startingTimestamp",
    &["startingOffsetsByTimestamp"],
    "is only used with 'startingTimestamp' or 'startingOffsetsByTimestamp'",
)]);
/// endingOffsets.
pub const ENDING_OFFSETS: OptionDecl<Text> = decl::text(
    "endingOffsets",
    r#"Where a batch (once/availableNow) run stops: latest or JSON {"topic":{"0":50,"1":-1}}."#,
)
.conflicts(&[
    Conflict::excludes(
        "endingTimestamp",
        "is ignored when 'endingTimestamp' is given (it takes precedence)",
    ),
    Conflict::excludes(
        "endingOffsetsByTimestamp",
        "is ignored when 'endingOffsetsByTimestamp' is given (it takes precedence)",
    ),
]);
/// endingTimestamp.
pub const ENDING_TIMESTAMP: OptionDecl<Int> = decl::int(
    "endingTimestamp",
    0,
    i64::MAX,
    "Stop every partition before the first record at or after this timestamp (ms).",
);
/// endingOffsetsByTimestamp.
pub const ENDING_OFFSETS_BY_TIMESTAMP: OptionDecl<Json> = decl::json(
    "endingOffsetsByTimestamp",
    "Per-partition end timestamps (ms), JSON like startingOffsetsByTimestamp.",
)
.conflicts(&[Conflict::excludes(
    "endingTimestamp",
    "is ignored when 'endingTimestamp' is given (it takes precedence)",
)]);
/// failOnDataLoss.
pub const FAIL_ON_DATA_LOSS: OptionDecl<Flag, Defaulted> = decl::flag(
    "failOnDataLoss",
    "Fail the query when data may have been lost (deleted partitions, aged-out offsets); false warns, counts and continues from the earliest available offset.",
)
.default(true);
/// maxOffsetsPerTrigger.
pub const MAX_OFFSETS_PER_TRIGGER: OptionDecl<Int> = decl::int(
    "maxOffsetsPerTrigger",
    1,
    i64::MAX,
    "Most offsets one batch reads, split across partitions in proportion to their lag.",
);
/// minOffsetsPerTrigger.
pub const MIN_OFFSETS_PER_TRIGGER: OptionDecl<Int> = decl::int(
    "minOffsetsPerTrigger",
    1,
    i64::MAX,
    "Fewest new offsets a batch waits for, unless maxTriggerDelay passed.",
);
/// maxTriggerDelay.
pub const MAX_TRIGGER_DELAY: OptionDecl<Dur, Defaulted> = decl::duration(
    "maxTriggerDelay",
    "Longest a batch waits for minOffsetsPerTrigger (only with minOffsetsPerTrigger).",
)
.default("15m")
.conflicts(&[Conflict::requires(
    "minOffsetsPerTrigger",
    "is only used with 'minOffsetsPerTrigger' (how long a batch waits for that many offsets)",
)]);
/// minPartitions.
pub const MIN_PARTITIONS: OptionDecl<Int> = decl::int(
    "minPartitions",
    1,
    i64::MAX,
    "Split the offset ranges of one batch into at least this many parallel reads.",
);
/// maxPartitions.
pub const MAX_PARTITIONS: OptionDecl<Int> = decl::int(
    "maxPartitions",
    1,
    i64::MAX,
    "The most consumers (Spark tasks) reading the source at once. Real-time mode (Databricks' option): the partitions are spread over this many readers (at most one per partition), each one consumer polling several partitions on a thread of its own. Default: one reader for every partition, as librdkafka fetches all of a consumer's partitions in one request per broker (Spark's default of a task per partition multiplies the broker's work by the partition count); raise it when one thread cannot decode the records fast enough. Micro-batch: a read uses at most this many consumers (never more than 8, the default).",
);
/// maxRecordsPerPartition.
pub const MAX_RECORDS_PER_PARTITION: OptionDecl<Int> = decl::int(
    "maxRecordsPerPartition",
    1,
    i64::MAX,
    "Split any offset range larger than this into parallel reads.",
);
/// commitOffsetsToGroup.
pub const COMMIT_OFFSETS_TO_GROUP: OptionDecl<Flag, Defaulted> = decl::flag(
    "commitOffsetsToGroup",
    "After each batch's commits/N, commit its end offsets to the consumer group (<groupIdPrefix>-<pipeline>-<hash of the subscription>, or kafka.group.id), so that lag tools see the query's progress; never ahead of the checkpoint, for monitoring only (the checkpoint is the truth). false: the group is never written to.",
)
.default(true);
/// groupIdPrefix.
pub const GROUP_ID_PREFIX: OptionDecl<Text, Defaulted> = decl::text(
    "groupIdPrefix",
    "Prefix of the consumer group the committed offsets are published to: <groupIdPrefix>-<pipeline>-<16 hex digits hashing the subscription>. Spark's default prefix, so Kafka ACLs granted on the prefix spark-kafka-source cover it; the rest stays the same across restarts (Spark's random UUID would not).",
)
.default("spark-kafka-source")
.conflicts(&[
    Conflict::excludes(
        "kafka.group.id",
        "is ignored when 'kafka.group.id' names the consumer group",
    ),
    Conflict::only_when(
        "commitOffsetsToGroup",
        &["true"],
        "is ignored when 'commitOffsetsToGroup' is false (no consumer group is written to)",
    ),
]);
/// includeHeaders.
pub const INCLUDE_HEADERS: OptionDecl<Flag, Defaulted> = decl::flag(
    "includeHeaders",
    "Add the headers column (list<struct<key, value>>).",
)
.default(false);
/// bytesEstimateWindowLength.
pub const BYTES_ESTIMATE_WINDOW_LENGTH: OptionDecl<Dur, Defaulted> = decl::duration(
    "bytesEstimateWindowLength",
    "Window over which the average record size for estimatedTotalBytesBehindLatest is measured.",
)
.default("300s");
/// kafkaConsumer.pollTimeoutMs.
pub const POLL_TIMEOUT_MS: OptionDecl<Int, Defaulted> = decl::int(
    "kafkaConsumer.pollTimeoutMs",
    1,
    i64::MAX,
    "Longest a read waits without any progress on a planned offset range before failing.",
)
.default(120_000);
/// fetchOffset.numRetries.
pub const FETCH_OFFSET_NUM_RETRIES: OptionDecl<Int, Defaulted> = decl::int(
    "fetchOffset.numRetries",
    1,
    1000,
    "Attempts for metadata and offset requests before failing.",
)
.default(3);
/// fetchOffset.retryIntervalMs.
pub const FETCH_OFFSET_RETRY_INTERVAL_MS: OptionDecl<Int, Defaulted> = decl::int(
    "fetchOffset.retryIntervalMs",
    0,
    i64::MAX,
    "Wait between attempts of metadata and offset requests.",
)
.default(1000);
/// fetchOffset.timeoutMs.
pub const FETCH_OFFSET_TIMEOUT_MS: OptionDecl<Int, Defaulted> = decl::int(
    "fetchOffset.timeoutMs",
    1,
    i64::MAX,
    "Timeout of one metadata or offset request (the bound on how long unreachable brokers take to report).",
)
.default(10_000);

/// The source's own options, in documentation order.
pub fn source_options() -> Vec<tributary_sdk::OptionSpec> {
    decl::specs(&[
        &SUBSCRIBE,
        &SUBSCRIBE_PATTERN,
        &ASSIGN,
        &STARTING_OFFSETS,
        &STARTING_TIMESTAMP,
        &STARTING_OFFSETS_BY_TIMESTAMP,
        &STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY,
        &ENDING_OFFSETS,
        &ENDING_TIMESTAMP,
        &ENDING_OFFSETS_BY_TIMESTAMP,
        &FAIL_ON_DATA_LOSS,
        &MAX_OFFSETS_PER_TRIGGER,
        &MIN_OFFSETS_PER_TRIGGER,
        &MAX_TRIGGER_DELAY,
        &MIN_PARTITIONS,
        &MAX_PARTITIONS,
        &MAX_RECORDS_PER_PARTITION,
        &COMMIT_OFFSETS_TO_GROUP,
        &GROUP_ID_PREFIX,
        &INCLUDE_HEADERS,
        &BYTES_ESTIMATE_WINDOW_LENGTH,
        &POLL_TIMEOUT_MS,
        &FETCH_OFFSET_NUM_RETRIES,
        &FETCH_OFFSET_RETRY_INTERVAL_MS,
        &FETCH_OFFSET_TIMEOUT_MS,
    ])
}

/// topic (sink).
pub const TOPIC: OptionDecl<Text> = decl::text(
    "topic",
    "Topic to write every row to; overrides a topic column.",
);
/// flushTimeoutMs (sink).
pub const FLUSH_TIMEOUT_MS: OptionDecl<Int, Defaulted> = decl::int(
    "flushTimeoutMs",
    1,
    i64::MAX,
    "Longest one batch may wait for its deliveries.",
)
.default(300_000);

/// includeHeaders (sink).
pub const SINK_INCLUDE_HEADERS: OptionDecl<Flag> = decl::flag(
    "includeHeaders",
    "Spark's sink writes a 'headers' column (list<struct<key utf8, value binary>>) whenever the input has one, and so does this sink. true: the input must have it (a missing column is an error when the sink opens); false: the input must not (Spark would write it anyway). Not set: headers are written when the column is there.",
);

/// The sink's own options.
pub fn sink_options() -> Vec<tributary_sdk::OptionSpec> {
    decl::specs(&[&TOPIC, &FLUSH_TIMEOUT_MS, &SINK_INCLUDE_HEADERS])
}
