//! The table against the code: the published file is the rendered table, every mapped setting
//! reaches the librdkafka configuration of a built client with its translated value, every
//! connector setting changes the typed config, and every refused one fails naming the option
//! and the reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tributary_sdk::{EnvSecretStore, ErrorCode, OptionSpec, Options};

use super::*;
use crate::config::{sink_option_specs, source_option_specs, SinkConfig, SourceConfig};
use crate::connection::ConnectionProfile;

const DOC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/kafka-java-settings.md"
);

fn source(pairs: &[(&str, &str)]) -> Result<SourceConfig> {
    let mut o: Options = pairs.iter().copied().collect();
    o.set("kafka.bootstrap.servers", "127.0.0.1:1");
    o.set("subscribe", "t");
    SourceConfig::parse(&OptionSpec::validate_all(
        &source_option_specs(),
        &o,
        "kafka",
    )?)
}

fn sink(pairs: &[(&str, &str)]) -> Result<SinkConfig> {
    let mut o: Options = pairs.iter().copied().collect();
    o.set("kafka.bootstrap.servers", "127.0.0.1:1");
    o.set("topic", "t");
    SinkConfig::parse(&OptionSpec::validate_all(
        &sink_option_specs(),
        &o,
        "kafka",
    )?)
}

fn connection(role: Role, pairs: &[(&str, &str)]) -> Result<ConnectionProfile> {
    let settings = match role {
        Role::Source => source(pairs)?.connection,
        Role::Sink => sink(pairs)?.connection,
    };
    ConnectionProfile::resolve(&settings, &EnvSecretStore)
}

#[test]
fn the_published_table_is_the_rendered_table() {
    let rendered = markdown();
    if std::env::var_os("TRIBUTARY_UPDATE_DOCS").is_some() {
        std::fs::write(DOC, &rendered).unwrap();
    }
    let published = std::fs::read_to_string(DOC).unwrap_or_default();
    assert!(
        published == rendered,
        "docs/kafka-java-settings.md is out of date: run `TRIBUTARY_UPDATE_DOCS=1 cargo test -p tributary-kafka java_settings`"
    );
    // Every entry is a row, with both roles described.
    for e in JAVA_SETTINGS {
        assert!(
            rendered.contains(&format!("| `{}` |", e.name)),
            "{}",
            e.name
        );
    }
}

#[test]
fn names_are_unique_and_mapped_names_are_librdkafka_properties() {
    for (i, e) in JAVA_SETTINGS.iter().enumerate() {
        assert!(
            JAVA_SETTINGS[..i]
                .iter()
                .all(|o| !o.name.eq_ignore_ascii_case(e.name)),
            "{} twice",
            e.name
        );
    }
    // The sink reads no setting itself (SinkConfig::parse drops the list).
    assert!(JAVA_SETTINGS
        .iter()
        .all(|e| !matches!(e.sink, Effect::Connector { .. })));
}

#[test]
fn every_mapped_setting_reaches_the_built_client_config() {
    let mut checked = 0;
    for e in JAVA_SETTINGS {
        for role in [Role::Source, Role::Sink] {
            let Effect::Librdkafka {
                property,
                translate: t,
            } = e.effect(role)
            else {
                continue;
            };
            let option = format!("kafka.{}", e.name);
            let profile = connection(role, &[(&option, e.example)])
                .unwrap_or_else(|err| panic!("{option} ({role:?}): {err}"));
            let config = profile.client_config();
            let expected = translate(&option, t, e.example).unwrap();
            assert_eq!(
                config.get(property),
                Some(expected.as_str()),
                "{option} ({role:?}) must set librdkafka's {property}"
            );
            if property != e.name {
                assert_eq!(
                    config.get(e.name),
                    None,
                    "{option}: the Java name is not passed on"
                );
            }
            // librdkafka takes the whole configuration (the producer's for the sink).
            let mut native = config.clone();
            if role == Role::Sink {
                native.set("enable.idempotence", "true");
            }
            native
                .create_native_config()
                .unwrap_or_else(|err| panic!("{option} ({role:?}): {err}"));
            checked += 1;
        }
    }
    assert!(checked >= 35, "{checked}");
}

#[test]
fn values_are_translated_where_the_units_differ() {
    let t = |tr, v| translate("kafka.x", tr, v);
    assert_eq!(t(Translate::BytesToKib, "33554432").unwrap(), "32768");
    assert_eq!(t(Translate::BytesToKib, "1000").unwrap(), "1");
    assert_eq!(t(Translate::MinusOneIsZero, "-1").unwrap(), "0");
    assert_eq!(t(Translate::MinusOneIsZero, "65536").unwrap(), "65536");
    assert_eq!(
        t(
            Translate::DnsLookup,
            "RESOLVE_CANONICAL_BOOTSTRAP_SERVERS_ONLY"
        )
        .unwrap(),
        "resolve_canonical_bootstrap_servers_only"
    );
    for (tr, bad) in [
        (Translate::BytesToKib, "0"),
        (Translate::BytesToKib, "lots"),
        (Translate::MinusOneIsZero, "-2"),
        (Translate::DnsLookup, "sometimes"),
    ] {
        let e = t(tr, bad).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(
            e.message().contains(bad) && e.message().contains("kafka.x"),
            "{e}"
        );
    }
    let e = source(&[("kafka.client.dns.lookup", "default")]).unwrap_err();
    assert_eq!(e.context_value("option"), Some("kafka.client.dns.lookup"));
    assert!(e.message().contains("removed in Kafka 3.0"), "{e}");
    // A secret reference passes untranslated (it is resolved later).
    assert_eq!(
        t(Translate::BytesToKib, "{{secrets/k/v}}").unwrap(),
        "{{secrets/k/v}}"
    );
}

#[test]
fn every_refused_setting_names_the_option_and_the_reason() {
    let mut checked = 0;
    for e in JAVA_SETTINGS {
        for role in [Role::Source, Role::Sink] {
            let Effect::Refused { reason } = e.effect(role) else {
                continue;
            };
            let option = format!("kafka.{}", e.name);
            let pairs = [(option.as_str(), e.example)];
            let err = match role {
                Role::Source => source(&pairs).map(|_| ()),
                Role::Sink => sink(&pairs).map(|_| ()),
            }
            .expect_err(&option);
            assert_eq!(err.code(), ErrorCode::InvalidOption, "{option}: {err}");
            assert_eq!(err.context_value("option"), Some(option.as_str()), "{err}");
            assert!(
                err.message().contains(&option) && err.message().contains(reason),
                "{option} ({role:?}): {err}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
}

#[test]
fn connector_settings_change_the_source_config() {
    let c = source(&[("kafka.max.poll.records", "3")]).unwrap();
    assert_eq!(c.max_poll_records, Some(3));
    assert!(c
        .connection
        .pass_through
        .iter()
        .all(|(k, _)| k != "max.poll.records"));
    let e = source(&[("kafka.max.poll.records", "0")]).unwrap_err();
    assert_eq!(e.context_value("option"), Some("kafka.max.poll.records"));

    let c = source(&[("kafka.default.api.timeout.ms", "2500")]).unwrap();
    assert_eq!(c.request_timeout, std::time::Duration::from_millis(2500));
    let e = source(&[
        ("kafka.default.api.timeout.ms", "2500"),
        ("fetchOffset.timeoutMs", "100"),
    ])
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert_eq!(
        e.context_value("conflicts_with"),
        Some("fetchOffset.timeoutMs")
    );

    let c = source(&[("kafka.group.id", "g")]).unwrap();
    assert_eq!(c.group_id.as_deref(), Some("g"));
}

#[test]
fn a_java_name_beside_its_librdkafka_name_is_a_conflict() {
    let e = source(&[
        ("kafka.fetch.max.wait.ms", "100"),
        ("kafka.fetch.wait.max.ms", "200"),
    ])
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{e}");
    let msg = e.message();
    assert!(
        msg.contains("kafka.fetch.max.wait.ms") && msg.contains("kafka.fetch.wait.max.ms"),
        "{e}"
    );
    // librdkafka names the table does not list still pass through.
    let c = source(&[("kafka.fetch.wait.max.ms", "200")]).unwrap();
    assert!(c
        .connection
        .pass_through
        .contains(&("fetch.wait.max.ms".to_string(), "200".to_string())));
}

#[test]
fn a_name_librdkafka_does_not_know_points_to_the_table() {
    let e = source(&[("kafka.max.poll.recordz", "5")]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownOption);
    assert!(e.message().contains("docs/kafka-java-settings.md"), "{e}");
}
