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
use crate::java_settings::{self, Role};
use crate::offsets::{self, PartitionOffsets};
use crate::options as o;
pub use crate::subscription::Subscription;

/// Every option of the Kafka source.
pub fn source_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection::connection_option_specs();
    specs.extend(o::source_options());
    specs
}

/// Every option of the Kafka sink.
pub fn sink_option_specs() -> Vec<OptionSpec> {
    let mut specs = connection::connection_option_specs();
    specs.extend(o::sink_options());
    specs
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
    /// maxPartitions: the most consumers reading at once (real-time readers, range-read
    /// consumers).
    pub max_partitions: Option<usize>,
    /// maxRecordsPerPartition.
    pub max_records_per_partition: Option<u64>,
    /// groupIdPrefix: the prefix of the consumer group offsets are published to.
    pub group_id_prefix: String,
    /// `kafka.group.id`: the consumer group, when given instead of a prefix.
    pub group_id: Option<String>,
    /// commitOffsetsToGroup: publish each committed batch's end offsets to the group.
    pub commit_offsets_to_group: bool,
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
    /// fetchOffset.timeoutMs (or the Java client's `kafka.default.api.timeout.ms`).
    pub request_timeout: Duration,
    /// The Java client's `kafka.max.poll.records`: the most records in one batch the source
    /// hands on (default: 16384 in a range read, 4096 in real-time mode).
    pub max_poll_records: Option<usize>,
}

impl SourceConfig {
    /// Parses validated source options (no I/O, no secret resolved). Options that would be
    /// ignored, or that contradict each other, are refused naming both.
    pub fn parse(p: &ParsedOptions) -> Result<SourceConfig> {
        let mut connection = ConnectionSettings::parse(p)?;
        let java = java_settings::apply(&mut connection.pass_through, Role::Source)?;
        let java_value = |name: &str| {
            java.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        connection.check_pass_through()?;
        refuse_ignored_source_options(p)?;
        let subscription = parse_subscription(p)?;
        let starting = if let Some(ts) = o::STARTING_TIMESTAMP.get(p)? {
            Position::Timestamp(ts)
        } else if let Some(text) = o::STARTING_OFFSETS_BY_TIMESTAMP.text(p)? {
            Position::Timestamps(offsets::parse_partition_values(
                &text,
                o::STARTING_OFFSETS_BY_TIMESTAMP.name,
                0,
            )?)
        } else {
            parse_position(&o::STARTING_OFFSETS.get(p)?, o::STARTING_OFFSETS.name, true)?
        };
        if let (Subscription::Assign(a), Position::Offsets(offsets)) = (&subscription, &starting) {
            check_covers(a, offsets, o::STARTING_OFFSETS.name)?;
        }
        let ending = if let Some(ts) = o::ENDING_TIMESTAMP.get(p)? {
            Some(Position::Timestamp(ts))
        } else if let Some(text) = o::ENDING_OFFSETS_BY_TIMESTAMP.text(p)? {
            Some(Position::Timestamps(offsets::parse_partition_values(
                &text,
                o::ENDING_OFFSETS_BY_TIMESTAMP.name,
                0,
            )?))
        } else {
            match o::ENDING_OFFSETS.get(p)? {
                Some(text) => Some(parse_position(&text, o::ENDING_OFFSETS.name, false)?),
                None => None,
            }
        };
        let ms = |v: i64| Duration::from_millis(v.max(0) as u64);
        let count = |v: Option<i64>| v.map(|v| v as u64);
        let group_id = java_value("group.id");
        let max_poll_records = match java_value("max.poll.records") {
            None => None,
            Some(v) => Some(positive(
                &v,
                "kafka.max.poll.records",
                "a number of records",
            )?),
        };
        let mut request_timeout = ms(o::FETCH_OFFSET_TIMEOUT_MS.get(p)?);
        if let Some(v) = java_value("default.api.timeout.ms") {
            if p.is_set(o::FETCH_OFFSET_TIMEOUT_MS.name) {
                return Err(tributary_sdk::options::conflicting(
                    "kafka.default.api.timeout.ms",
                    o::FETCH_OFFSET_TIMEOUT_MS.name,
                    "is the Java client's name of the request timeout 'fetchOffset.timeoutMs' sets, and both are given",
                ));
            }
            request_timeout = Duration::from_millis(positive(
                &v,
                "kafka.default.api.timeout.ms",
                "a timeout in milliseconds",
            )? as u64);
        }
        let commit_offsets_to_group = o::COMMIT_OFFSETS_TO_GROUP.get(p)?;
        if group_id.is_some() && !commit_offsets_to_group {
            return Err(tributary_sdk::options::conflicting(
                "kafka.group.id",
                o::COMMIT_OFFSETS_TO_GROUP.name,
                "is ignored when 'commitOffsetsToGroup' is false (the source reads with assign and \
                 never joins the group; nothing is written to it)",
            ));
        }
        let min_partitions = count(o::MIN_PARTITIONS.get(p)?);
        let max_partitions = o::MAX_PARTITIONS.get(p)?.map(|v| v as usize);
        if let (Some(min), Some(max)) = (min_partitions, max_partitions) {
            if min > max as u64 {
                return Err(tributary_sdk::options::conflicting(
                    o::MIN_PARTITIONS.name,
                    o::MAX_PARTITIONS.name,
                    &format!("asks for at least {min} parallel reads, and 'maxPartitions' allows at most {max}"),
                ));
            }
        }
        Ok(SourceConfig {
            connection,
            subscription,
            starting,
            timestamp_strategy_latest: o::STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.get(p)?
                == "latest",
            ending,
            fail_on_data_loss: o::FAIL_ON_DATA_LOSS.get(p)?,
            max_offsets_per_trigger: count(o::MAX_OFFSETS_PER_TRIGGER.get(p)?),
            min_offsets_per_trigger: count(o::MIN_OFFSETS_PER_TRIGGER.get(p)?),
            max_trigger_delay: o::MAX_TRIGGER_DELAY.get(p)?,
            min_partitions,
            max_partitions,
            max_records_per_partition: count(o::MAX_RECORDS_PER_PARTITION.get(p)?),
            group_id_prefix: o::GROUP_ID_PREFIX.get(p)?,
            group_id,
            commit_offsets_to_group,
            include_headers: o::INCLUDE_HEADERS.get(p)?,
            bytes_estimate_window: o::BYTES_ESTIMATE_WINDOW_LENGTH.get(p)?,
            poll_timeout: ms(o::POLL_TIMEOUT_MS.get(p)?),
            request_attempts: o::FETCH_OFFSET_NUM_RETRIES.get(p)? as u32,
            request_retry_interval: ms(o::FETCH_OFFSET_RETRY_INTERVAL_MS.get(p)?),
            request_timeout,
            max_poll_records,
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

/// A positive integer setting read by the connector (a Java client setting).
fn positive(value: &str, option: &str, what: &str) -> Result<usize> {
    match value.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::new(
            ErrorCode::InvalidOption,
            format!("invalid value '{value}' for option '{option}': expected {what} above 0"),
        )
        .with_context("option", option)),
    }
}

/// Source options that another option makes meaningless and no declaration can say (the
/// declared conflicts are checked by validation).
fn refuse_ignored_source_options(p: &ParsedOptions) -> Result<()> {
    p.refuse_ignored(
        o::FETCH_OFFSET_RETRY_INTERVAL_MS.name,
        o::FETCH_OFFSET_NUM_RETRIES.get(p)? > 1,
        o::FETCH_OFFSET_NUM_RETRIES.name,
        "is only used when 'fetchOffset.numRetries' allows more than one attempt",
    )
}

fn parse_subscription(p: &ParsedOptions) -> Result<Subscription> {
    let given: Vec<&str> = [o::SUBSCRIBE.name, o::SUBSCRIBE_PATTERN.name, o::ASSIGN.name]
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
            let text = o::SUBSCRIBE.get(p)?.unwrap_or_default();
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
            let text = o::SUBSCRIBE_PATTERN.get(p)?.unwrap_or_default();
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
        _ => {
            offsets::parse_assign(&o::ASSIGN.text(p)?.unwrap_or_default()).map(Subscription::Assign)
        }
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
    /// includeHeaders: `Some(true)` the input must have a headers column, `Some(false)` it
    /// must not, `None` headers are written when the column is there (Spark's behaviour).
    pub include_headers: Option<bool>,
}

impl SinkConfig {
    /// Parses validated sink options (no I/O, no secret resolved).
    pub fn parse(p: &ParsedOptions) -> Result<SinkConfig> {
        let mut connection = ConnectionSettings::parse(p)?;
        java_settings::apply(&mut connection.pass_through, Role::Sink)?;
        connection.check_pass_through()?;
        Ok(SinkConfig {
            connection,
            topic: o::TOPIC.get(p)?.filter(|t| !t.trim().is_empty()),
            flush_timeout: Duration::from_millis(o::FLUSH_TIMEOUT_MS.get(p)? as u64),
            include_headers: o::SINK_INCLUDE_HEADERS.get(p)?,
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
    fn declarations_are_consistent() {
        tributary_sdk::options::decl::check_specs(&source_option_specs()).unwrap();
        tributary_sdk::options::decl::check_specs(&sink_option_specs()).unwrap();
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
    fn group_id_prefix_defaults_to_sparks_and_the_group_is_stable() {
        let c = parse(&opts(&[("subscribe", "a,b")])).unwrap();
        assert_eq!(c.group_id_prefix, "spark-kafka-source");
        let ctx = tributary_sdk::ConnectorContext::default();
        let group = |o: &Options| {
            crate::KafkaSource::new(o, &ctx)
                .unwrap()
                .group_id()
                .to_string()
        };
        let g = group(&opts(&[("subscribe", "a,b")]));
        assert!(g.starts_with("spark-kafka-source-"), "{g}");
        // The same subscription (in any order) is the same group across restarts.
        assert_eq!(g, group(&opts(&[("subscribe", "b,a")])));
        assert_ne!(g, group(&opts(&[("subscribe", "a")])));
        let g = group(&opts(&[("subscribe", "a"), ("groupIdPrefix", "team-x")]));
        assert!(g.starts_with("team-x-"), "{g}");
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
            &[("commitOffsetsToGroup", "false"), ("groupIdPrefix", "p")],
            "groupIdPrefix",
            "commitOffsetsToGroup",
        );
        refused(
            &[("commitOffsetsToGroup", "false"), ("kafka.group.id", "g")],
            "kafka.group.id",
            "commitOffsetsToGroup",
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
            &[("commitOffsetsToGroup", "false")][..],
            &[("commitOffsetsToGroup", "true"), ("groupIdPrefix", "p")][..],
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
            assert_eq!(
                c.commit_offsets_to_group,
                ok != [("commitOffsetsToGroup", "false")]
            );
        }
    }
}
