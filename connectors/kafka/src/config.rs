//! Source and sink options: declared once, validated without I/O, parsed into typed configs.
//!
//! Option names follow Spark Structured Streaming's Kafka source (`subscribe`,
//! `subscribePattern`, `assign`, `startingOffsets`, `endingOffsets`, `failOnDataLoss`,
//! `maxOffsetsPerTrigger`, `minPartitions`, `groupIdPrefix`, `includeHeaders`, `kafka.*`).
//! The connection (bootstrap servers and authentication) is a separate
//! [`ConnectionProfile`](crate::ConnectionProfile) shared by sources and sinks; these are the
//! per-stream options.

use std::collections::BTreeMap;
use std::time::Duration;

use regex::Regex;
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, ReadLimit, Result};

use crate::connection::{self, ConnectionSettings};
use crate::offsets::{self, PartitionOffsets};

/// Options librdkafka would accept but the source manages itself (as Spark refuses them).
const MANAGED_CONSUMER_OPTIONS: &[(&str, &str)] = &[
    ("auto.offset.reset", "startingOffsets"),
    ("enable.auto.commit", "the source's checkpoint"),
    ("enable.auto.offset.store", "the source's checkpoint"),
    ("enable.partition.eof", "the source itself"),
];

/// Every option of the Kafka source.
pub fn source_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection::connection_option_specs();
    specs.extend([
        OptionSpec::string("subscribe", "Comma-separated list of topics to read."),
        OptionSpec::string(
            "subscribePattern",
            "Regular expression (full match) of topics to read; topics created later are picked up.",
        ),
        OptionSpec::json("assign", r#"Fixed partitions to read, as JSON: {"topicA":[0,1],"topicB":[2]}."#),
        OptionSpec::string(
            "startingOffsets",
            r#"Where a new query starts: earliest, latest, or JSON {"topic":{"0":23,"1":-2}} (-2 earliest, -1 latest). Ignored on restart: the checkpoint wins."#,
        )
        .default_value("latest"),
        OptionSpec::int("startingTimestamp", 0, i64::MAX, "Start every partition at the first record with a timestamp (ms) at or after this one. Takes precedence over startingOffsets.")
        ,
        OptionSpec::json("startingOffsetsByTimestamp", r#"Per-partition start timestamps (ms): {"topic":{"0":1700000000000}}. Takes precedence over startingOffsets."#),
        OptionSpec::one_of(
            "startingOffsetsByTimestampStrategy",
            &["error", "latest"],
            "When no record is at or after the starting timestamp: fail (error) or start at the latest offset.",
        )
        .default_value("error"),
        OptionSpec::string("endingOffsets", r#"Where a batch (once/availableNow) run stops: latest or JSON {"topic":{"0":50,"1":-1}}."#),
        OptionSpec::int("endingTimestamp", 0, i64::MAX, "Stop every partition before the first record at or after this timestamp (ms)."),
        OptionSpec::json("endingOffsetsByTimestamp", "Per-partition end timestamps (ms), JSON like startingOffsetsByTimestamp."),
        OptionSpec::bool("failOnDataLoss", "Fail the query when data may have been lost (deleted partitions, aged-out offsets); false warns, counts and continues from the earliest available offset.").default_value(true),
        OptionSpec::int("maxOffsetsPerTrigger", 1, i64::MAX, "Most offsets one batch reads, split across partitions in proportion to their lag."),
        OptionSpec::int("minOffsetsPerTrigger", 1, i64::MAX, "Fewest new offsets a batch waits for, unless maxTriggerDelay passed."),
        OptionSpec::duration("maxTriggerDelay", "Longest a batch waits for minOffsetsPerTrigger (only with minOffsetsPerTrigger).").default_value("15m"),
        OptionSpec::int("minPartitions", 1, i64::MAX, "Split the offset ranges of one batch into at least this many parallel reads."),
        OptionSpec::int("maxRecordsPerPartition", 1, i64::MAX, "Split any offset range larger than this into parallel reads."),
        OptionSpec::string("groupIdPrefix", "Prefix of the consumer group used to publish progress (offsets are only committed for monitoring).").default_value("tributary-kafka-source"),
        OptionSpec::bool("includeHeaders", "Add the headers column (list<struct<key, value>>).").default_value(false),
        OptionSpec::duration("bytesEstimateWindowLength", "Window over which the average record size for estimatedTotalBytesBehindLatest is measured.").default_value("300s"),
        OptionSpec::int("kafkaConsumer.pollTimeoutMs", 1, i64::MAX, "Longest a read waits without any progress on a planned offset range before failing.").default_value(120_000),
        OptionSpec::int("fetchOffset.numRetries", 1, 1000, "Attempts for metadata and offset requests before failing.").default_value(3),
        OptionSpec::int("fetchOffset.retryIntervalMs", 0, i64::MAX, "Wait between attempts of metadata and offset requests.").default_value(1000),
        OptionSpec::int("fetchOffset.timeoutMs", 1, i64::MAX, "Timeout of one metadata or offset request (the bound on how long unreachable brokers take to report).").default_value(10_000),
    ]);
    specs
}

/// Every option of the Kafka sink.
pub fn sink_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection::connection_option_specs();
    specs.extend([
        OptionSpec::string(
            "topic",
            "Topic to write every row to; overrides a topic column.",
        ),
        OptionSpec::int(
            "flushTimeoutMs",
            1,
            i64::MAX,
            "Longest one batch may wait for its deliveries.",
        )
        .default_value(300_000),
    ]);
    specs
}

/// What the source reads.
#[derive(Debug, Clone)]
pub enum Subscription {
    /// Fixed topic names.
    Topics(Vec<String>),
    /// Every topic whose whole name matches.
    Pattern(Regex),
    /// Fixed partitions.
    Assign(BTreeMap<String, Vec<i32>>),
}

impl Subscription {
    /// The canonical description stored in the checkpoint identity.
    pub fn describe(&self) -> String {
        match self {
            Subscription::Topics(t) => {
                let mut t = t.clone();
                t.sort();
                format!("subscribe={}", t.join(","))
            }
            Subscription::Pattern(r) => format!("subscribePattern={}", r.as_str()),
            Subscription::Assign(a) => format!(
                "assign={}",
                serde_json::to_string(a).unwrap_or_else(|_| format!("{a:?}"))
            ),
        }
    }

    /// True when the topic belongs to this subscription.
    pub fn matches_topic(&self, topic: &str) -> bool {
        match self {
            Subscription::Topics(t) => t.iter().any(|x| x == topic),
            Subscription::Pattern(r) => !topic.starts_with("__") && full_match(r, topic),
            Subscription::Assign(a) => a.contains_key(topic),
        }
    }
}

fn full_match(r: &Regex, s: &str) -> bool {
    r.find(s)
        .is_some_and(|m| m.start() == 0 && m.end() == s.len())
}

/// A starting or ending position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// The earliest available offset.
    Earliest,
    /// The latest offset.
    Latest,
    /// Per-partition offsets (-2 earliest, -1 latest).
    Offsets(PartitionOffsets),
    /// The same timestamp (ms) for every partition.
    Timestamp(i64),
    /// Per-partition timestamps (ms).
    Timestamps(PartitionOffsets),
}

/// The Kafka source's typed options, parsed once ([`SourceConfig::parse`]).
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// The connection (bootstrap servers, authentication), secrets not yet resolved.
    pub connection: ConnectionSettings,
    /// What to read.
    pub subscription: Subscription,
    /// Where a new query starts.
    pub starting: Position,
    /// True: no record at/after a starting timestamp is an error; false: start at latest.
    pub timestamp_strategy_latest: bool,
    /// Where batch runs stop.
    pub ending: Option<Position>,
    /// failOnDataLoss.
    pub fail_on_data_loss: bool,
    /// maxOffsetsPerTrigger.
    pub max_offsets_per_trigger: Option<u64>,
    /// minOffsetsPerTrigger.
    pub min_offsets_per_trigger: Option<u64>,
    /// maxTriggerDelay.
    pub max_trigger_delay: Duration,
    /// minPartitions.
    pub min_partitions: Option<u64>,
    /// maxRecordsPerPartition.
    pub max_records_per_partition: Option<u64>,
    /// groupIdPrefix: the prefix of the consumer group offsets are published to.
    pub group_id_prefix: String,
    /// `kafka.group.id`: the consumer group, when given instead of a prefix.
    pub group_id: Option<String>,
    /// includeHeaders.
    pub include_headers: bool,
    /// bytesEstimateWindowLength.
    pub bytes_estimate_window: Duration,
    /// kafkaConsumer.pollTimeoutMs.
    pub poll_timeout: Duration,
    /// fetchOffset.numRetries.
    pub request_attempts: u32,
    /// fetchOffset.retryIntervalMs.
    pub request_retry_interval: Duration,
    /// fetchOffset.timeoutMs.
    pub request_timeout: Duration,
}

impl SourceConfig {
    /// Parses validated source options (no I/O, no secret resolved). Options that would be
    /// ignored, or that contradict each other, are refused naming both.
    pub fn parse(p: &ParsedOptions) -> Result<SourceConfig> {
        let connection = ConnectionSettings::parse(p)?;
        for (key, _) in p.prefixed("kafka.") {
            if let Some((_, instead)) = MANAGED_CONSUMER_OPTIONS
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(&key))
            {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "Kafka option 'kafka.{key}' is not supported by the source: it is managed by {instead}"
                    ),
                )
                .with_context("option", format!("kafka.{key}")));
            }
        }
        connection.check_pass_through()?;
        refuse_ignored_source_options(p)?;
        let subscription = parse_subscription(p)?;
        let starting = if let Some(ts) = p.i64("startingTimestamp")? {
            Position::Timestamp(ts)
        } else if let Some(text) = p.string("startingOffsetsByTimestamp")? {
            Position::Timestamps(offsets::parse_partition_values(
                &text,
                "startingOffsetsByTimestamp",
                0,
            )?)
        } else {
            parse_position(
                &p.required_string("startingOffsets")?,
                "startingOffsets",
                true,
            )?
        };
        if let (Subscription::Assign(a), Position::Offsets(o)) = (&subscription, &starting) {
            check_covers(a, o, "startingOffsets")?;
        }
        let ending = if let Some(ts) = p.i64("endingTimestamp")? {
            Some(Position::Timestamp(ts))
        } else if let Some(text) = p.string("endingOffsetsByTimestamp")? {
            Some(Position::Timestamps(offsets::parse_partition_values(
                &text,
                "endingOffsetsByTimestamp",
                0,
            )?))
        } else {
            match p.string("endingOffsets")? {
                Some(text) => Some(parse_position(&text, "endingOffsets", false)?),
                None => None,
            }
        };
        let ms = |name: &str| -> Result<Duration> {
            Ok(Duration::from_millis(
                p.i64(name)?.unwrap_or_default().max(0) as u64,
            ))
        };
        let group_id = connection
            .pass_through
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("group.id"))
            .map(|(_, v)| v.clone());
        Ok(SourceConfig {
            connection,
            subscription,
            starting,
            timestamp_strategy_latest: p.word("startingOffsetsByTimestampStrategy")?.as_deref()
                == Some("latest"),
            ending,
            fail_on_data_loss: p.bool("failOnDataLoss")?.unwrap_or(true),
            max_offsets_per_trigger: p.i64("maxOffsetsPerTrigger")?.map(|v| v as u64),
            min_offsets_per_trigger: p.i64("minOffsetsPerTrigger")?.map(|v| v as u64),
            max_trigger_delay: p
                .duration("maxTriggerDelay")?
                .unwrap_or(Duration::from_secs(900)),
            min_partitions: p.i64("minPartitions")?.map(|v| v as u64),
            max_records_per_partition: p.i64("maxRecordsPerPartition")?.map(|v| v as u64),
            group_id_prefix: p.required_string("groupIdPrefix")?,
            group_id,
            include_headers: p.bool("includeHeaders")?.unwrap_or(false),
            bytes_estimate_window: p
                .duration("bytesEstimateWindowLength")?
                .unwrap_or(Duration::from_secs(300)),
            poll_timeout: ms("kafkaConsumer.pollTimeoutMs")?,
            request_attempts: p.i64("fetchOffset.numRetries")?.unwrap_or(3).max(1) as u32,
            request_retry_interval: ms("fetchOffset.retryIntervalMs")?,
            request_timeout: ms("fetchOffset.timeoutMs")?,
        })
    }

    /// The read limit the options ask for (`maxOffsetsPerTrigger`, `minOffsetsPerTrigger`).
    pub fn read_limit(&self) -> ReadLimit {
        let mut limits = Vec::new();
        if let Some(min) = self.min_offsets_per_trigger {
            limits.push(ReadLimit::MinRows {
                rows: min,
                max_delay_ms: self.max_trigger_delay.as_millis() as u64,
            });
        }
        if let Some(max) = self.max_offsets_per_trigger {
            limits.push(ReadLimit::MaxRows(max));
        }
        match limits.len() {
            0 => ReadLimit::All,
            1 => limits.remove(0),
            _ => ReadLimit::Composite(limits),
        }
    }
}

/// Source options that another option makes meaningless.
fn refuse_ignored_source_options(p: &ParsedOptions) -> Result<()> {
    p.refuse_ignored(
        "maxTriggerDelay",
        p.is_set("minOffsetsPerTrigger"),
        "minOffsetsPerTrigger",
        "is only used with 'minOffsetsPerTrigger' (how long a batch waits for that many offsets)",
    )?;
    // A start (or end) given several ways: the timestamp wins, as in Spark, so the rest would
    // be ignored.
    for (winner, losers) in [
        (
            "startingTimestamp",
            &["startingOffsetsByTimestamp", "startingOffsets"][..],
        ),
        ("startingOffsetsByTimestamp", &["startingOffsets"][..]),
        (
            "endingTimestamp",
            &["endingOffsetsByTimestamp", "endingOffsets"][..],
        ),
        ("endingOffsetsByTimestamp", &["endingOffsets"][..]),
    ] {
        for loser in losers {
            p.refuse_ignored(
                loser,
                !p.is_set(winner),
                winner,
                &format!("is ignored when '{winner}' is given (it takes precedence)"),
            )?;
        }
    }
    p.refuse_ignored(
        "startingOffsetsByTimestampStrategy",
        p.is_set("startingTimestamp") || p.is_set("startingOffsetsByTimestamp"),
        "startingTimestamp",
        "is only used with 'startingTimestamp' or 'startingOffsetsByTimestamp'",
    )?;
    let group_id = p
        .prefixed("kafka.")
        .into_iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("group.id"));
    p.refuse_ignored(
        "groupIdPrefix",
        !group_id,
        "kafka.group.id",
        "is ignored when 'kafka.group.id' names the consumer group",
    )?;
    let retries = p.i64("fetchOffset.numRetries")?.unwrap_or(3);
    p.refuse_ignored(
        "fetchOffset.retryIntervalMs",
        retries > 1,
        "fetchOffset.numRetries",
        "is only used when 'fetchOffset.numRetries' allows more than one attempt",
    )?;
    Ok(())
}

fn parse_subscription(p: &ParsedOptions) -> Result<Subscription> {
    let given: Vec<&str> = ["subscribe", "subscribePattern", "assign"]
        .into_iter()
        .filter(|n| p.is_set(n))
        .collect();
    if given.len() != 1 {
        return Err(Error::new(
            ErrorCode::ConflictingOptions,
            format!(
                "exactly one of 'subscribe', 'subscribePattern' or 'assign' must be given for the Kafka source; got {}",
                if given.is_empty() { "none".to_string() } else { given.join(", ") }
            ),
        )
        .with_context("option", "subscribe, subscribePattern, assign"));
    }
    match given[0] {
        "subscribe" => {
            let text = p.required_string("subscribe")?;
            let topics: Vec<String> = text
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            if topics.is_empty() {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!("option 'subscribe' names no topic: '{text}'"),
                )
                .with_context("option", "subscribe"));
            }
            Ok(Subscription::Topics(topics))
        }
        "subscribePattern" => {
            let text = p.required_string("subscribePattern")?;
            Regex::new(&text).map(Subscription::Pattern).map_err(|e| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "option 'subscribePattern' is not a valid regular expression: '{text}'"
                    ),
                )
                .with_context("option", "subscribePattern")
                .with_context("value", &text)
                .with_cause(e)
            })
        }
        _ => offsets::parse_assign(&p.required_string("assign")?).map(Subscription::Assign),
    }
}

fn parse_position(text: &str, option: &str, starting: bool) -> Result<Position> {
    match text.trim().to_ascii_lowercase().as_str() {
        "earliest" if starting => Ok(Position::Earliest),
        "latest" => Ok(Position::Latest),
        t if t.starts_with('{') => Ok(Position::Offsets(offsets::parse_partition_values(
            text,
            option,
            if starting { -2 } else { -1 },
        )?)),
        _ => Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "invalid value '{text}' for option '{option}': expected {}",
                if starting {
                    r#"earliest, latest or JSON like {"topic":{"0":23,"1":-2}}"#
                } else {
                    r#"latest or JSON like {"topic":{"0":50,"1":-1}}"#
                }
            ),
        )
        .with_context("option", option)),
    }
}

fn check_covers(
    assign: &BTreeMap<String, Vec<i32>>,
    o: &PartitionOffsets,
    option: &str,
) -> Result<()> {
    let mut missing = Vec::new();
    for (t, parts) in assign {
        for p in parts {
            if o.get(t, *p).is_none() {
                missing.push(format!("{t}-{p}"));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{option}' must give an offset for every assigned partition; missing {}",
                missing.join(", ")
            ),
        )
        .with_context("option", option))
    }
}

/// The Kafka sink's typed options, parsed once ([`SinkConfig::parse`]).
#[derive(Debug, Clone)]
pub struct SinkConfig {
    /// The connection, secrets not yet resolved.
    pub connection: ConnectionSettings,
    /// Topic for every row (overrides a topic column).
    pub topic: Option<String>,
    /// Longest a batch waits for deliveries.
    pub flush_timeout: Duration,
}

impl SinkConfig {
    /// Parses validated sink options (no I/O, no secret resolved).
    pub fn parse(p: &ParsedOptions) -> Result<SinkConfig> {
        let connection = ConnectionSettings::parse(p)?;
        connection.check_pass_through()?;
        Ok(SinkConfig {
            connection,
            topic: p.string("topic")?.filter(|t| !t.trim().is_empty()),
            flush_timeout: Duration::from_millis(
                p.i64("flushTimeoutMs")?.unwrap_or(300_000).max(1) as u64,
            ),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    use tributary_sdk::Options;

    fn opts(pairs: &[(&str, &str)]) -> Options {
        let mut o: Options = pairs.iter().copied().collect();
        o.set("kafka.bootstrap.servers", "127.0.0.1:1");
        o
    }

    fn parse(o: &Options) -> Result<SourceConfig> {
        SourceConfig::parse(&OptionSpec::validate_all(
            &source_option_specs(),
            o,
            "kafka",
        )?)
    }

    #[test]
    fn exactly_one_subscription_mode_names_all_three() {
        for o in [
            opts(&[]),
            opts(&[("subscribe", "a"), ("assign", r#"{"a":[0]}"#)]),
        ] {
            let e = parse(&o).unwrap_err();
            assert_eq!(e.code(), ErrorCode::ConflictingOptions);
            for name in ["'subscribe'", "'subscribePattern'", "'assign'"] {
                assert!(e.message().contains(name), "{}", e.message());
            }
        }
    }

    #[test]
    fn bad_regex_and_bad_assign_are_invalid_options() {
        let e = parse(&opts(&[("subscribePattern", "topic-(")])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert_eq!(e.context_value("option"), Some("subscribePattern"));
        let e = parse(&opts(&[("assign", r#"{"t":[0,"x"]}"#)])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert_eq!(e.context_value("option"), Some("assign"));
        let e = parse(&opts(&[("assign", "[1,2]")])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
    }

    #[test]
    fn pattern_is_a_full_match_and_skips_internal_topics() {
        let c = parse(&opts(&[("subscribePattern", "events-.*")])).unwrap();
        assert!(c.subscription.matches_topic("events-1"));
        assert!(!c.subscription.matches_topic("old-events-1"));
        let c = parse(&opts(&[("subscribePattern", ".*")])).unwrap();
        assert!(!c.subscription.matches_topic("__consumer_offsets"));
    }

    #[test]
    fn positions_parse_with_precedence_for_timestamps() {
        let c = parse(&opts(&[("subscribe", "a"), ("startingTimestamp", "1000")])).unwrap();
        assert_eq!(c.starting, Position::Timestamp(1000));
        let c = parse(&opts(&[
            ("subscribe", "a"),
            ("startingOffsets", r#"{"a":{"0":5,"1":-2}}"#),
        ]))
        .unwrap();
        match c.starting {
            Position::Offsets(o) => {
                assert_eq!(o.get("a", 0), Some(5));
                assert_eq!(o.get("a", 1), Some(-2));
            }
            other => panic!("{other:?}"),
        }
        let e = parse(&opts(&[("subscribe", "a"), ("startingOffsets", "oldest")])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        let e = parse(&opts(&[("subscribe", "a"), ("endingOffsets", "earliest")])).unwrap_err();
        assert_eq!(e.context_value("option"), Some("endingOffsets"));
    }

    #[test]
    fn assign_needs_offsets_for_every_partition() {
        let e = parse(&opts(&[
            ("assign", r#"{"a":[0,1]}"#),
            ("startingOffsets", r#"{"a":{"0":1}}"#),
        ]))
        .unwrap_err();
        assert!(e.message().contains("a-1"), "{}", e.message());
    }

    #[test]
    fn managed_consumer_options_are_refused() {
        let e = parse(&opts(&[
            ("subscribe", "a"),
            ("kafka.auto.offset.reset", "latest"),
        ]))
        .unwrap_err();
        assert_eq!(e.context_value("option"), Some("kafka.auto.offset.reset"));
        assert!(e.message().contains("startingOffsets"));
    }

    #[test]
    fn read_limit_combines_min_and_max() {
        let c = parse(&opts(&[
            ("subscribe", "a"),
            ("maxOffsetsPerTrigger", "10"),
            ("minOffsetsPerTrigger", "5"),
            ("maxTriggerDelay", "2s"),
        ]))
        .unwrap();
        assert_eq!(
            c.read_limit(),
            ReadLimit::Composite(vec![
                ReadLimit::MinRows {
                    rows: 5,
                    max_delay_ms: 2000
                },
                ReadLimit::MaxRows(10)
            ])
        );
    }

    #[test]
    fn missing_bootstrap_is_named() {
        let o: Options = [("subscribe", "a")].into_iter().collect();
        let e = parse(&o).unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
        assert_eq!(e.context_value("option"), Some("kafka.bootstrap.servers"));
    }

    fn refused(pairs: &[(&str, &str)], option: &str, other: &str) {
        let mut all = vec![("subscribe", "a")];
        all.extend_from_slice(pairs);
        let e = parse(&opts(&all)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{pairs:?}: {e}");
        assert_eq!(e.context_value("option"), Some(option), "{e}");
        assert_eq!(e.context_value("conflicts_with"), Some(other), "{e}");
        assert!(
            e.message().contains(option) && e.message().contains(other),
            "{e}"
        );
    }

    #[test]
    fn ignored_source_options_are_refused_naming_both() {
        refused(
            &[("maxTriggerDelay", "5s")],
            "maxTriggerDelay",
            "minOffsetsPerTrigger",
        );
        refused(
            &[("startingTimestamp", "1"), ("startingOffsets", "earliest")],
            "startingOffsets",
            "startingTimestamp",
        );
        refused(
            &[
                ("startingTimestamp", "1"),
                ("startingOffsetsByTimestamp", r#"{"a":{"0":1}}"#),
            ],
            "startingOffsetsByTimestamp",
            "startingTimestamp",
        );
        refused(
            &[
                ("startingOffsetsByTimestamp", r#"{"a":{"0":1}}"#),
                ("startingOffsets", "latest"),
            ],
            "startingOffsets",
            "startingOffsetsByTimestamp",
        );
        refused(
            &[("endingTimestamp", "1"), ("endingOffsets", "latest")],
            "endingOffsets",
            "endingTimestamp",
        );
        refused(
            &[
                ("endingOffsetsByTimestamp", r#"{"a":{"0":1}}"#),
                ("endingOffsets", "latest"),
            ],
            "endingOffsets",
            "endingOffsetsByTimestamp",
        );
        refused(
            &[("startingOffsetsByTimestampStrategy", "latest")],
            "startingOffsetsByTimestampStrategy",
            "startingTimestamp",
        );
        refused(
            &[("kafka.group.id", "g"), ("groupIdPrefix", "p")],
            "groupIdPrefix",
            "kafka.group.id",
        );
        refused(
            &[
                ("fetchOffset.numRetries", "1"),
                ("fetchOffset.retryIntervalMs", "10"),
            ],
            "fetchOffset.retryIntervalMs",
            "fetchOffset.numRetries",
        );
        // The same options where they apply are accepted.
        for ok in [
            &[("minOffsetsPerTrigger", "5"), ("maxTriggerDelay", "5s")][..],
            &[
                ("startingTimestamp", "1"),
                ("startingOffsetsByTimestampStrategy", "latest"),
            ][..],
            &[("kafka.group.id", "g")][..],
            &[
                ("fetchOffset.numRetries", "2"),
                ("fetchOffset.retryIntervalMs", "10"),
            ][..],
        ] {
            let mut all = vec![("subscribe", "a")];
            all.extend_from_slice(ok);
            let c = parse(&opts(&all)).unwrap();
            if ok[0].0 == "kafka.group.id" {
                assert_eq!(c.group_id.as_deref(), Some("g"));
            }
        }
    }
}
