//! Unit tests of option parsing: every refusal names the option and the allowed values.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tributary_sdk::{ErrorCode, OptionSpec, Options, Result};

use super::*;

fn parse(pairs: &[(&str, &str)]) -> Result<SourceConfig> {
    let options: Options = pairs.iter().copied().collect();
    let parsed = OptionSpec::validate_all(&source_option_specs(), &options, "kinesis")?;
    SourceConfig::parse(&parsed)
}

fn sink(pairs: &[(&str, &str)]) -> Result<SinkConfig> {
    let options: Options = pairs.iter().copied().collect();
    let parsed = OptionSpec::validate_all(&sink_option_specs(), &options, "kinesis")?;
    SinkConfig::parse(&parsed)
}

fn refused(pairs: &[(&str, &str)], code: ErrorCode, option: &str) -> String {
    let e = parse(pairs).expect_err("must be refused");
    assert_eq!(e.code(), code, "{e}");
    assert_eq!(e.context_value("option"), Some(option), "{e}");
    e.to_string()
}

#[test]
fn defaults_follow_databricks() {
    let c = parse(&[("streamName", "a, b,a")]).unwrap();
    assert_eq!(c.streams.ids, vec!["a", "b"]);
    assert_eq!(c.streams.keying, StreamKeying::Names);
    assert_eq!(c.initial_position, InitialPosition::Latest);
    assert!(c.fail_on_data_loss);
    assert_eq!(c.consumer_mode, ConsumerMode::Polling);
    assert_eq!(c.max_records_per_fetch, 10_000);
    assert_eq!(c.min_fetch_period, Duration::from_millis(400));
    assert_eq!(c.max_fetch_duration, Duration::from_secs(10));
    assert_eq!(c.shards_per_task, 5);
    assert_eq!(c.connection.credentials, BaseCredentials::DefaultChain);
}

#[test]
fn streams_names_xor_arns() {
    let msg = refused(
        &[
            ("streamName", "a"),
            ("streamARN", "arn:aws:kinesis:us-east-1:1:stream/a"),
        ],
        ErrorCode::ConflictingOptions,
        "streamARN",
    );
    assert!(msg.contains("streamName"), "{msg}");
    let e = parse(&[]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::MissingOption);
    assert!(e.to_string().contains("streamARN"));
    refused(
        &[("streamARN", "not-an-arn")],
        ErrorCode::InvalidOption,
        "streamARN",
    );
    refused(
        &[("streamName", "arn:aws:kinesis:x")],
        ErrorCode::InvalidOption,
        "streamName",
    );
    let c = parse(&[(
        "streamARN",
        "arn:aws:kinesis:us-east-1:1:stream/a,arn:aws:kinesis:us-east-1:1:stream/b",
    )])
    .unwrap();
    assert_eq!(c.streams.keying, StreamKeying::Arns);
    assert_eq!(c.streams.ids.len(), 2);
}

#[test]
fn credentials_options() {
    let c = parse(&[
        ("streamName", "a"),
        ("awsAccessKey", "AK"),
        ("awsSecretKey", "{{secrets/aws/sk}}"),
    ])
    .unwrap();
    assert!(matches!(
        c.connection.credentials,
        BaseCredentials::Static { .. }
    ));
    let debug = format!("{c:?}");
    assert!(
        !debug.contains("AK") && !debug.contains("secrets/aws/sk"),
        "{debug}"
    );
    let e = parse(&[("streamName", "a"), ("awsAccessKey", "AK")]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::MissingOption);
    assert_eq!(e.context_value("option"), Some("awsSecretKey"));
    let e = parse(&[("streamName", "a"), ("awsSecretKey", "x")]).unwrap_err();
    assert_eq!(e.context_value("option"), Some("awsAccessKey"));
    refused(
        &[
            ("streamName", "a"),
            ("awsAccessKey", "A"),
            ("awsSecretKey", "S"),
            ("serviceCredential", "p"),
        ],
        ErrorCode::ConflictingOptions,
        "serviceCredential",
    );
    let c = parse(&[("streamName", "a"), ("serviceCredential", "analytics")]).unwrap();
    assert_eq!(
        c.connection.credentials,
        BaseCredentials::Profile("analytics".into())
    );
    refused(
        &[("streamName", "a"), ("roleExternalId", "x")],
        ErrorCode::ConflictingOptions,
        "roleExternalId",
    );
    refused(
        &[("streamName", "a"), ("roleSessionName", "x")],
        ErrorCode::ConflictingOptions,
        "roleSessionName",
    );
    refused(
        &[("streamName", "a"), ("roleArn", "role")],
        ErrorCode::InvalidOption,
        "roleArn",
    );
    let c = parse(&[
        ("streamName", "a"),
        ("roleArn", "arn:aws:iam::1:role/r"),
        ("roleExternalId", "e"),
    ])
    .unwrap();
    let r = c.connection.assume_role.unwrap();
    assert_eq!(r.external_id.as_deref(), Some("e"));
    assert_eq!(r.session_name, "tributary-kinesis");
}

#[test]
fn endpoint_and_trust_store() {
    refused(
        &[("streamName", "a"), ("endpoint", "localhost:4567")],
        ErrorCode::InvalidOption,
        "endpoint",
    );
    refused(
        &[
            ("streamName", "a"),
            ("endpoint", "http://127.0.0.1:1"),
            ("tls.truststore.location", "/ca.pem"),
        ],
        ErrorCode::ConflictingOptions,
        "tls.truststore.location",
    );
    let c = parse(&[
        ("streamName", "a"),
        ("endpoint", "https://localhost:1"),
        ("tls.truststore.location", "/ca.pem"),
    ])
    .unwrap();
    assert_eq!(
        c.connection.ca_file.as_deref(),
        Some(std::path::Path::new("/ca.pem"))
    );
}

#[test]
fn initial_position_and_fetch_limits() {
    let msg = refused(
        &[("streamName", "a"), ("initialPosition", "oldest")],
        ErrorCode::InvalidOption,
        "initialPosition",
    );
    assert!(
        msg.contains("trim_horizon") && msg.contains("at_timestamp"),
        "{msg}"
    );
    let c = parse(&[("streamName", "a"), ("initialPosition", "trim_horizon")]).unwrap();
    assert_eq!(c.initial_position, InitialPosition::TrimHorizon);
    refused(
        &[("streamName", "a"), ("maxRecordsPerFetch", "0")],
        ErrorCode::InvalidOption,
        "maxRecordsPerFetch",
    );
    refused(
        &[("streamName", "a"), ("maxRecordsPerFetch", "10001")],
        ErrorCode::InvalidOption,
        "maxRecordsPerFetch",
    );
    refused(
        &[("streamName", "a"), ("shardsPerTask", "0")],
        ErrorCode::InvalidOption,
        "shardsPerTask",
    );
    refused(
        &[("streamName", "a"), ("minFetchPeriod", "soon")],
        ErrorCode::InvalidOption,
        "minFetchPeriod",
    );
    refused(
        &[("streamName", "a"), ("maxFetchDuration", "0")],
        ErrorCode::InvalidOption,
        "maxFetchDuration",
    );
    refused(
        &[("streamName", "a"), ("fetchBufferSize", "1k")],
        ErrorCode::InvalidOption,
        "fetchBufferSize",
    );
    refused(
        &[("streamName", "a"), ("fetchBufferSize", "lots")],
        ErrorCode::InvalidOption,
        "fetchBufferSize",
    );
    refused(
        &[("streamName", "a"), ("failOnDataLoss", "maybe")],
        ErrorCode::InvalidOption,
        "failOnDataLoss",
    );
    let msg = refused(
        &[("streamName", "a"), ("consumerMode", "push")],
        ErrorCode::InvalidOption,
        "consumerMode",
    );
    assert!(msg.contains("polling") && msg.contains("efo"), "{msg}");
}

#[test]
fn efo_options() {
    for option in [
        "consumerName",
        "consumerNamePrefix",
        "requireConsumerDeregistration",
    ] {
        let value = if option == "requireConsumerDeregistration" {
            "true"
        } else {
            "c"
        };
        refused(
            &[("streamName", "a"), (option, value)],
            ErrorCode::ConflictingOptions,
            option,
        );
    }
    refused(
        &[
            ("streamName", "a"),
            ("consumerMode", "efo"),
            ("consumerName", "a"),
            ("consumerNamePrefix", "p"),
        ],
        ErrorCode::ConflictingOptions,
        "consumerNamePrefix",
    );
    for bad in ["has space", "slash/no", &"x".repeat(129)] {
        let msg = refused(
            &[
                ("streamName", "a"),
                ("consumerMode", "efo"),
                ("consumerName", bad),
            ],
            ErrorCode::InvalidOption,
            "consumerName",
        );
        assert!(msg.contains("1 to 128"), "{msg}");
    }
    refused(
        &[
            ("streamName", "a"),
            ("consumerMode", "efo"),
            ("consumerName", ""),
        ],
        ErrorCode::InvalidOption,
        "consumerName",
    );
    refused(
        &[
            ("streamName", "a"),
            ("consumerMode", "efo"),
            ("consumerNamePrefix", "a b"),
        ],
        ErrorCode::InvalidOption,
        "consumerNamePrefix",
    );
    let c = parse(&[
        ("streamName", "a"),
        ("consumerMode", "EFO"),
        ("consumerName", "app.v1-x_y"),
        ("requireConsumerDeregistration", "true"),
    ])
    .unwrap();
    let ConsumerMode::Efo(e) = c.consumer_mode else {
        panic!("efo")
    };
    assert_eq!(e.naming, ConsumerNaming::Explicit("app.v1-x_y".into()));
    assert!(e.require_deregistration);
    let c = parse(&[("streamName", "a"), ("consumerMode", "efo")]).unwrap();
    let ConsumerMode::Efo(e) = c.consumer_mode else {
        panic!("efo")
    };
    assert_eq!(
        e.naming,
        ConsumerNaming::Prefix(DEFAULT_CONSUMER_NAME_PREFIX.into())
    );
}

#[test]
fn sink_options() {
    let c = sink(&[("streamName", "out")]).unwrap();
    assert_eq!(
        c.partition_key,
        PartitionKeySource::Column("partitionKey".into())
    );
    let c = sink(&[("streamName", "out"), ("partitionKey", "k")]).unwrap();
    assert_eq!(c.partition_key, PartitionKeySource::Fixed("k".into()));
    let e = sink(&[
        ("streamName", "out"),
        ("partitionKey", "k"),
        ("partitionKeyColumn", "c"),
    ])
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert_eq!(sink(&[]).unwrap_err().code(), ErrorCode::MissingOption);
    assert_eq!(
        sink(&[("streamName", "a,b")]).unwrap_err().code(),
        ErrorCode::InvalidOption
    );
    assert_eq!(
        sink(&[
            ("streamName", "a"),
            ("streamARN", "arn:aws:kinesis:us-east-1:1:stream/a")
        ])
        .unwrap_err()
        .code(),
        ErrorCode::ConflictingOptions
    );
}

#[test]
fn declarations_are_consistent() {
    tributary_sdk::options::decl::check_specs(&source_option_specs()).unwrap();
    tributary_sdk::options::decl::check_specs(&sink_option_specs()).unwrap();
}
