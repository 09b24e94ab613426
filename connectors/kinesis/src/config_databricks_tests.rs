//! Unit tests of the Databricks options added for copy-paste parity (#24): `stsEndpoint`,
//! `registeredConsumerId` / `registeredConsumerIdType`, `maxFetchRate`, `shardFetchInterval`,
//! `coalesceThresholdBlockSize`, `coalesceBinSize`: their Databricks defaults, and every
//! refusal naming the option and what is allowed. Their effects are tested against the servers
//! (`tests/databricks_options.rs`) and in `crate::coalesce` / `crate::reader`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tributary_sdk::{ErrorCode, OptionSpec, Options, Result};

use super::*;

fn parse(pairs: &[(&str, &str)]) -> Result<SourceConfig> {
    let options: Options = pairs.iter().copied().collect();
    let parsed = OptionSpec::validate_all(&source_option_specs(), &options, "kinesis")?;
    SourceConfig::parse(&parsed)
}

fn refused(pairs: &[(&str, &str)], code: ErrorCode, option: &str) -> String {
    let e = parse(pairs).expect_err("must be refused");
    assert_eq!(e.code(), code, "{e}");
    assert_eq!(e.context_value("option"), Some(option), "{e}");
    e.to_string()
}

fn registered(pairs: &[(&str, &str)]) -> RegisteredConsumers {
    let mut all = vec![("consumerMode", "efo")];
    all.extend_from_slice(pairs);
    match parse(&all).unwrap().consumer_mode {
        ConsumerMode::Efo(EfoSettings {
            naming: ConsumerNaming::Registered(r),
            ..
        }) => r,
        other => panic!("not a registered consumer: {other:?}"),
    }
}

const ARN_A: &str = "arn:aws:kinesis:us-east-1:123456789012:stream/a/consumer/ext:1700000000";
const ARN_B: &str = "arn:aws:kinesis:us-east-1:123456789012:stream/b/consumer/ext:1700000001";

#[test]
fn databricks_defaults() {
    let c = parse(&[("streamName", "a")]).unwrap();
    assert_eq!(c.max_fetch_rate, FETCH_RATE_UNIT, "maxFetchRate 1.0 MB/s");
    assert_eq!(c.shard_fetch_interval, Duration::from_secs(1));
    assert_eq!(
        c.coalesce,
        Coalesce {
            threshold: 10_000_000,
            bin: 128_000_000
        }
    );
    assert_eq!(c.connection.assume_role, None);
}

#[test]
fn sts_endpoint_goes_with_role_arn() {
    let c = parse(&[
        ("streamName", "a"),
        ("roleArn", "arn:aws:iam::123456789012:role/r"),
        ("stsEndpoint", "https://sts.eu-west-1.amazonaws.com/"),
    ])
    .unwrap();
    assert_eq!(
        c.connection.assume_role.unwrap().sts_endpoint.as_deref(),
        Some("https://sts.eu-west-1.amazonaws.com/")
    );
    let msg = refused(
        &[
            ("streamName", "a"),
            ("stsEndpoint", "https://sts.amazonaws.com"),
        ],
        ErrorCode::ConflictingOptions,
        "stsEndpoint",
    );
    assert!(msg.contains("roleArn"), "{msg}");
    let role = ("roleArn", "arn:aws:iam::123456789012:role/r");
    let msg = refused(
        &[
            ("streamName", "a"),
            role,
            ("stsEndpoint", "sts.amazonaws.com"),
        ],
        ErrorCode::InvalidOption,
        "stsEndpoint",
    );
    assert!(msg.contains("https://"), "{msg}");
    let msg = refused(
        &[
            ("streamName", "a"),
            role,
            ("stsEndpoint", "https://user:hunter2@sts.amazonaws.com"),
        ],
        ErrorCode::InvalidOption,
        "stsEndpoint",
    );
    assert!(!msg.contains("hunter2"), "{msg}");
}

#[test]
fn max_fetch_rate_is_a_positive_decimal() {
    let c = parse(&[("streamName", "a"), ("maxFetchRate", "0.5")]).unwrap();
    assert_eq!(c.max_fetch_rate, 0.5 * FETCH_RATE_UNIT);
    for bad in ["0", "-1", "fast", "NaN", "inf"] {
        let msg = refused(
            &[("streamName", "a"), ("maxFetchRate", bad)],
            ErrorCode::InvalidOption,
            "maxFetchRate",
        );
        assert!(msg.contains("above 0"), "{msg}");
    }
}

#[test]
fn shard_fetch_interval_and_coalescing() {
    let c = parse(&[
        ("streamName", "a"),
        ("shardFetchInterval", "2m"),
        ("coalesceThresholdBlockSize", "0"),
        ("coalesceBinSize", "64mb"),
    ])
    .unwrap();
    assert_eq!(c.shard_fetch_interval, Duration::from_secs(120));
    assert_eq!(
        c.coalesce,
        Coalesce {
            threshold: 0,
            bin: 64 << 20
        }
    );
    refused(
        &[("streamName", "a"), ("shardFetchInterval", "often")],
        ErrorCode::InvalidOption,
        "shardFetchInterval",
    );
    let msg = refused(
        &[("streamName", "a"), ("coalesceBinSize", "0")],
        ErrorCode::InvalidOption,
        "coalesceBinSize",
    );
    assert!(msg.contains("coalesceThresholdBlockSize"), "{msg}");
}

#[test]
fn registered_consumers_by_name_or_arn() {
    let r = registered(&[("streamName", "a,b"), ("registeredConsumerId", "ext")]);
    assert_eq!(r.id_type, ConsumerIdType::Name);
    assert_eq!(r.by_stream["a"], "ext");
    assert_eq!(r.by_stream["b"], "ext", "one name serves every stream");
    let r = registered(&[
        ("streamName", "a,b"),
        ("registeredConsumerId", &format!("{ARN_A},{ARN_B}")),
        ("registeredConsumerIdType", "arn"),
    ]);
    assert_eq!(r.id_type, ConsumerIdType::Arn);
    assert_eq!(r.by_stream["b"], ARN_B);
    // The type follows the ids when not given.
    let r = registered(&[("streamName", "a"), ("registeredConsumerId", ARN_A)]);
    assert_eq!(r.id_type, ConsumerIdType::Arn);
    let r = registered(&[
        (
            "streamARN",
            "arn:aws:kinesis:us-east-1:123456789012:stream/a",
        ),
        ("registeredConsumerId", ARN_A),
    ]);
    assert_eq!(r.by_stream.len(), 1);
}

#[test]
fn registered_consumer_refusals_name_the_option() {
    let efo = ("consumerMode", "efo");
    let a = ("streamName", "a");
    let msg = refused(
        &[a, ("registeredConsumerId", "ext")],
        ErrorCode::ConflictingOptions,
        "registeredConsumerId",
    );
    assert!(msg.contains("consumerMode"), "{msg}");
    refused(
        &[
            a,
            efo,
            ("registeredConsumerId", "ext"),
            ("consumerName", "own"),
        ],
        ErrorCode::ConflictingOptions,
        "registeredConsumerId",
    );
    refused(
        &[
            a,
            efo,
            ("registeredConsumerId", "ext"),
            ("consumerNamePrefix", "p_"),
        ],
        ErrorCode::ConflictingOptions,
        "registeredConsumerId",
    );
    let msg = refused(
        &[
            a,
            efo,
            ("registeredConsumerId", "ext"),
            ("requireConsumerDeregistration", "true"),
        ],
        ErrorCode::ConflictingOptions,
        "requireConsumerDeregistration",
    );
    assert!(msg.contains("never deregistered"), "{msg}");
    refused(
        &[a, efo, ("registeredConsumerIdType", "name")],
        ErrorCode::ConflictingOptions,
        "registeredConsumerIdType",
    );
    refused(
        &[
            a,
            efo,
            ("registeredConsumerId", "ext"),
            ("registeredConsumerIdType", "id"),
        ],
        ErrorCode::InvalidOption,
        "registeredConsumerIdType",
    );
    refused(
        &[
            a,
            efo,
            ("registeredConsumerId", ARN_A),
            ("registeredConsumerIdType", "name"),
        ],
        ErrorCode::ConflictingOptions,
        "registeredConsumerIdType",
    );
    refused(
        &[a, efo, ("registeredConsumerId", "bad name")],
        ErrorCode::InvalidOption,
        "registeredConsumerId",
    );
    // An ARN of another stream, a count that does not match, a mix.
    let msg = refused(
        &[a, efo, ("registeredConsumerId", ARN_B)],
        ErrorCode::InvalidOption,
        "registeredConsumerId",
    );
    assert!(msg.contains("stream 'a'"), "{msg}");
    let msg = refused(
        &[("streamName", "a,b"), efo, ("registeredConsumerId", ARN_A)],
        ErrorCode::InvalidOption,
        "registeredConsumerId",
    );
    assert!(msg.contains("one consumer id per stream"), "{msg}");
    refused(
        &[
            ("streamName", "a,b"),
            efo,
            ("registeredConsumerId", &format!("ext,{ARN_B}")),
        ],
        ErrorCode::InvalidOption,
        "registeredConsumerId",
    );
    refused(
        &[
            a,
            efo,
            (
                "registeredConsumerId",
                "arn:aws:kinesis:us-east-1:1:stream/a",
            ),
        ],
        ErrorCode::InvalidOption,
        "registeredConsumerId",
    );
}
