//! The Java Kafka client settings Spark jobs carry (`kafka.max.poll.records`,
//! `kafka.fetch.max.wait.ms`, `kafka.linger.ms`, ...): one table saying, for the source and for
//! the sink, what each does here.
//!
//! librdkafka, the client underneath, knows many Java names as they are (`fetch.min.bytes`,
//! `linger.ms`, `acks`), some under another name (`fetch.max.wait.ms` is `fetch.wait.max.ms`),
//! some with other units (`buffer.memory` in bytes is `queue.buffering.max.kbytes` in KiB), and
//! some not at all. Each entry of [`JAVA_SETTINGS`] is one of:
//!
//! - [`Effect::Librdkafka`]: passed to librdkafka under its librdkafka name, the value
//!   translated where the units or spellings differ;
//! - [`Effect::Connector`]: read by the connector itself (`max.poll.records` bounds the batches
//!   the source hands on, `group.id` names the group committed offsets are published to);
//! - [`Effect::Refused`]: refused with the reason — Spark refuses some itself
//!   (`auto.offset.reset`, `enable.auto.commit`, `key.deserializer`, ...), others would be
//!   ignored here (a producer setting on the source, `max.poll.interval.ms` on a source that
//!   never joins a group). A setting is never accepted and then ignored.
//!
//! [`apply`] rewrites a parsed connection's `kafka.*` pass-through for one role;
//! [`markdown`] renders the table published as `docs/kafka-java-settings.md`.
//! `kafka.*` names that are not in the table go to librdkafka as they are (librdkafka refuses
//! the ones it does not know).

use tributary_sdk::{Error, ErrorCode, Result, SecretRef};

/// Which client a setting is given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The source (librdkafka consumers).
    Source,
    /// The sink (a librdkafka producer).
    Sink,
}

/// How a value is translated on its way to librdkafka.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Translate {
    /// As given.
    Same,
    /// Java's `-1` (the operating system's default) is librdkafka's `0`.
    MinusOneIsZero,
    /// Bytes (Java) to KiB (librdkafka), rounded up.
    BytesToKib,
    /// `use_all_dns_ips` and `resolve_canonical_bootstrap_servers_only` as they are; Java's
    /// removed `default` is refused.
    DnsLookup,
}

/// What a Java setting does in one role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Passed to librdkafka as `property`.
    Librdkafka {
        /// The librdkafka property.
        property: &'static str,
        /// How the value is translated.
        translate: Translate,
    },
    /// Read by the connector itself.
    Connector {
        /// What it does.
        meaning: &'static str,
    },
    /// Refused.
    Refused {
        /// Why (and what to use instead).
        reason: &'static str,
    },
}

/// One Java client setting.
#[derive(Debug, Clone, Copy)]
pub struct JavaSetting {
    /// The Java name (without Spark's `kafka.` prefix).
    pub name: &'static str,
    /// What it does on the source.
    pub source: Effect,
    /// What it does on the sink.
    pub sink: Effect,
    /// A value a Java job would give (used in the documentation's tests).
    pub example: &'static str,
    /// Where librdkafka's default differs from the Java client's (empty: it does not, or the
    /// setting is not passed on).
    pub note: &'static str,
}

impl JavaSetting {
    /// The effect in a role.
    pub fn effect(&self, role: Role) -> Effect {
        match role {
            Role::Source => self.source,
            Role::Sink => self.sink,
        }
    }
}

const fn same(property: &'static str) -> Effect {
    Effect::Librdkafka {
        property,
        translate: Translate::Same,
    }
}

const fn refused(reason: &'static str) -> Effect {
    Effect::Refused { reason }
}

const PRODUCER_ONLY: Effect = refused("it is a producer setting and the source does not produce");
const CONSUMER_ONLY: Effect = refused("it is a consumer setting and the sink does not consume");
const NO_GROUP: &str = "the source never joins a consumer group: it assigns partitions and seeks to the checkpoint's offsets (as Spark's executors do), so librdkafka would ignore it";

/// The Java client settings this connector knows, in documentation order.
pub const JAVA_SETTINGS: &[JavaSetting] = &[
    // Consumer settings.
    JavaSetting {
        name: "max.poll.records",
        source: Effect::Connector {
            meaning: "the most records in one Arrow batch the source hands on (a part of a micro-batch range read, a chunk in real-time mode); default 16384 (micro-batch) and 4096 (real-time)",
        },
        sink: CONSUMER_ONLY,
        example: "500",
        note: "",
    },
    JavaSetting {
        name: "max.poll.interval.ms",
        source: refused(NO_GROUP),
        sink: CONSUMER_ONLY,
        example: "300000",
        note: "",
    },
    JavaSetting {
        name: "fetch.min.bytes",
        source: same("fetch.min.bytes"),
        sink: CONSUMER_ONLY,
        example: "1",
        note: "",
    },
    JavaSetting {
        name: "fetch.max.bytes",
        source: same("fetch.max.bytes"),
        sink: CONSUMER_ONLY,
        example: "52428800",
        note: "",
    },
    JavaSetting {
        name: "fetch.max.wait.ms",
        source: same("fetch.wait.max.ms"),
        sink: CONSUMER_ONLY,
        example: "500",
        note: "",
    },
    JavaSetting {
        name: "max.partition.fetch.bytes",
        source: same("max.partition.fetch.bytes"),
        sink: CONSUMER_ONLY,
        example: "1048576",
        note: "",
    },
    JavaSetting {
        name: "isolation.level",
        source: same("isolation.level"),
        sink: CONSUMER_ONLY,
        example: "read_committed",
        note: "librdkafka's default is read_committed; the Java client's (and so Spark's) is read_uncommitted",
    },
    JavaSetting {
        name: "check.crcs",
        source: same("check.crcs"),
        sink: CONSUMER_ONLY,
        example: "true",
        note: "",
    },
    JavaSetting {
        name: "default.api.timeout.ms",
        source: Effect::Connector {
            meaning: "the timeout of one metadata or offset request, as fetchOffset.timeoutMs (giving both is a conflict)",
        },
        sink: CONSUMER_ONLY,
        example: "60000",
        note: "",
    },
    JavaSetting {
        name: "group.id",
        source: Effect::Connector {
            meaning: "the consumer group the end offsets of committed batches are published to, instead of <groupIdPrefix>-<pipeline>-<hash> (needs commitOffsetsToGroup=true)",
        },
        sink: CONSUMER_ONLY,
        example: "my-query",
        note: "",
    },
    JavaSetting {
        name: "partition.assignment.strategy",
        source: refused(NO_GROUP),
        sink: CONSUMER_ONLY,
        example: "org.apache.kafka.clients.consumer.RangeAssignor",
        note: "",
    },
    JavaSetting {
        name: "auto.offset.reset",
        source: refused("Spark refuses it too: set the source option 'startingOffsets' to 'earliest' or 'latest'; the source decides which offsets are read (startingOffsets applies to a new query only, a restart resumes from the checkpoint)"),
        sink: CONSUMER_ONLY,
        example: "earliest",
        note: "",
    },
    JavaSetting {
        name: "enable.auto.commit",
        source: refused("Spark refuses it too: the checkpoint decides what was read; the end offsets of committed batches are published to the consumer group by commitOffsetsToGroup"),
        sink: CONSUMER_ONLY,
        example: "false",
        note: "",
    },
    JavaSetting {
        name: "key.deserializer",
        source: refused("Spark refuses it too: keys are raw bytes (the binary 'key' column); decode them in the pipeline (a key schema or [transform] SQL)"),
        sink: CONSUMER_ONLY,
        example: "org.apache.kafka.common.serialization.StringDeserializer",
        note: "",
    },
    JavaSetting {
        name: "value.deserializer",
        source: refused("Spark refuses it too: values are raw bytes (the binary 'value' column); decode them in the pipeline (a schema or [transform] SQL)"),
        sink: CONSUMER_ONLY,
        example: "org.apache.kafka.common.serialization.StringDeserializer",
        note: "",
    },
    // librdkafka-only names of what the source manages (not Java settings, but refused alike).
    JavaSetting {
        name: "enable.auto.offset.store",
        source: refused("the source's checkpoint records what was read"),
        sink: CONSUMER_ONLY,
        example: "false",
        note: "",
    },
    JavaSetting {
        name: "enable.partition.eof",
        source: refused("the source detects the end of a range itself"),
        sink: CONSUMER_ONLY,
        example: "true",
        note: "",
    },
    // Producer settings.
    JavaSetting {
        name: "linger.ms",
        source: PRODUCER_ONLY,
        sink: same("linger.ms"),
        example: "5",
        note: "librdkafka's default is 5 ms; the Java client's was 0 ms before Kafka 4.0 (5 ms since)",
    },
    JavaSetting {
        name: "batch.size",
        source: PRODUCER_ONLY,
        sink: same("batch.size"),
        example: "16384",
        note: "librdkafka's default is 1000000 bytes; the Java client's 16384",
    },
    JavaSetting {
        name: "acks",
        source: PRODUCER_ONLY,
        sink: same("acks"),
        example: "all",
        note: "",
    },
    JavaSetting {
        name: "compression.type",
        source: PRODUCER_ONLY,
        sink: same("compression.type"),
        example: "lz4",
        note: "",
    },
    JavaSetting {
        name: "max.request.size",
        source: PRODUCER_ONLY,
        sink: same("message.max.bytes"),
        example: "1048576",
        note: "librdkafka's message.max.bytes default is 1000000 bytes; the Java client's max.request.size 1048576",
    },
    JavaSetting {
        name: "delivery.timeout.ms",
        source: PRODUCER_ONLY,
        sink: same("delivery.timeout.ms"),
        example: "120000",
        note: "",
    },
    JavaSetting {
        name: "buffer.memory",
        source: PRODUCER_ONLY,
        sink: Effect::Librdkafka {
            property: "queue.buffering.max.kbytes",
            translate: Translate::BytesToKib,
        },
        example: "33554432",
        note: "librdkafka's default is 1 GiB; the Java client's 32 MiB",
    },
    JavaSetting {
        name: "retries",
        source: PRODUCER_ONLY,
        sink: same("retries"),
        example: "2147483647",
        note: "",
    },
    JavaSetting {
        name: "max.in.flight.requests.per.connection",
        source: PRODUCER_ONLY,
        sink: same("max.in.flight.requests.per.connection"),
        example: "5",
        note: "",
    },
    JavaSetting {
        name: "enable.idempotence",
        source: PRODUCER_ONLY,
        sink: same("enable.idempotence"),
        example: "true",
        note: "",
    },
    JavaSetting {
        name: "max.block.ms",
        source: PRODUCER_ONLY,
        sink: refused("sending never blocks here: with the producer's queue full the sink waits for the oldest deliveries, and a batch is bounded by the sink option 'flushTimeoutMs'"),
        example: "60000",
        note: "",
    },
    JavaSetting {
        name: "transactional.id",
        source: PRODUCER_ONLY,
        sink: refused("the sink does not use Kafka transactions: it is at-least-once (a replayed batch is written again)"),
        example: "my-writer",
        note: "",
    },
    JavaSetting {
        name: "partitioner.class",
        source: PRODUCER_ONLY,
        sink: refused("it names a Java class; set librdkafka's 'kafka.partitioner' instead (murmur2_random places keys as Java's default partitioner does), or give a 'partition' column"),
        example: "org.apache.kafka.clients.producer.RoundRobinPartitioner",
        note: "",
    },
    JavaSetting {
        name: "key.serializer",
        source: PRODUCER_ONLY,
        sink: refused("Spark refuses it too: keys are written as the bytes of the 'key' column (binary or string)"),
        example: "org.apache.kafka.common.serialization.StringSerializer",
        note: "",
    },
    JavaSetting {
        name: "value.serializer",
        source: PRODUCER_ONLY,
        sink: refused("Spark refuses it too: values are written as the bytes of the 'value' column (binary or string)"),
        example: "org.apache.kafka.common.serialization.StringSerializer",
        note: "",
    },
    // Settings of both clients.
    JavaSetting {
        name: "request.timeout.ms",
        // librdkafka's request.timeout.ms is the producer's acknowledgement timeout only; its
        // consumer-side timeout of network requests is socket.timeout.ms.
        source: same("socket.timeout.ms"),
        sink: same("request.timeout.ms"),
        example: "30000",
        note: "on the source, librdkafka's default socket.timeout.ms is 60 s; the Java consumer's request.timeout.ms 30 s",
    },
    JavaSetting {
        name: "retry.backoff.ms",
        source: same("retry.backoff.ms"),
        sink: same("retry.backoff.ms"),
        example: "100",
        note: "",
    },
    JavaSetting {
        name: "retry.backoff.max.ms",
        source: same("retry.backoff.max.ms"),
        sink: same("retry.backoff.max.ms"),
        example: "1000",
        note: "",
    },
    JavaSetting {
        name: "reconnect.backoff.ms",
        source: same("reconnect.backoff.ms"),
        sink: same("reconnect.backoff.ms"),
        example: "50",
        note: "",
    },
    JavaSetting {
        name: "reconnect.backoff.max.ms",
        source: same("reconnect.backoff.max.ms"),
        sink: same("reconnect.backoff.max.ms"),
        example: "1000",
        note: "",
    },
    JavaSetting {
        name: "receive.buffer.bytes",
        source: Effect::Librdkafka {
            property: "socket.receive.buffer.bytes",
            translate: Translate::MinusOneIsZero,
        },
        sink: Effect::Librdkafka {
            property: "socket.receive.buffer.bytes",
            translate: Translate::MinusOneIsZero,
        },
        example: "-1",
        note: "",
    },
    JavaSetting {
        name: "send.buffer.bytes",
        source: Effect::Librdkafka {
            property: "socket.send.buffer.bytes",
            translate: Translate::MinusOneIsZero,
        },
        sink: Effect::Librdkafka {
            property: "socket.send.buffer.bytes",
            translate: Translate::MinusOneIsZero,
        },
        example: "131072",
        note: "",
    },
    JavaSetting {
        name: "client.dns.lookup",
        source: Effect::Librdkafka {
            property: "client.dns.lookup",
            translate: Translate::DnsLookup,
        },
        sink: Effect::Librdkafka {
            property: "client.dns.lookup",
            translate: Translate::DnsLookup,
        },
        example: "use_all_dns_ips",
        note: "the same default, use_all_dns_ips",
    },
    JavaSetting {
        name: "client.id",
        source: same("client.id"),
        sink: same("client.id"),
        example: "my-app",
        note: "",
    },
    JavaSetting {
        name: "metadata.max.age.ms",
        source: same("metadata.max.age.ms"),
        sink: same("metadata.max.age.ms"),
        example: "300000",
        note: "",
    },
    JavaSetting {
        name: "connections.max.idle.ms",
        source: same("connections.max.idle.ms"),
        sink: same("connections.max.idle.ms"),
        example: "540000",
        note: "",
    },
    JavaSetting {
        name: "socket.connection.setup.timeout.ms",
        source: same("socket.connection.setup.timeout.ms"),
        sink: same("socket.connection.setup.timeout.ms"),
        example: "10000",
        note: "",
    },
    JavaSetting {
        name: "interceptor.classes",
        source: refused("Spark refuses it too: interceptors are Java classes that may change records; transform records in the pipeline instead"),
        sink: refused("interceptors are Java classes that may change records; transform records in the pipeline instead"),
        example: "com.example.Interceptor",
        note: "",
    },
    JavaSetting {
        name: "metric.reporters",
        source: refused("it names Java classes; the source's metrics are in the progress events and the runtime's metrics endpoint"),
        sink: refused("it names Java classes; the sink's metrics are in the progress events and the runtime's metrics endpoint"),
        example: "com.example.Reporter",
        note: "",
    },
];

/// The entry of a Java name (case-insensitive).
pub fn lookup(name: &str) -> Option<&'static JavaSetting> {
    JAVA_SETTINGS
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Source => "source",
        Role::Sink => "sink",
    }
}

fn invalid(option: &str, value: &str, expected: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!("invalid value '{value}' for option '{option}': expected {expected}"),
    )
    .with_context("option", option)
}

/// Translates one value (secret references pass as they are: they are resolved later, and a
/// reference has no units to translate).
pub fn translate(option: &str, translate: Translate, value: &str) -> Result<String> {
    if SecretRef::parse(value).is_some() {
        return Ok(value.to_string());
    }
    let v = value.trim();
    match translate {
        Translate::Same => Ok(value.to_string()),
        Translate::MinusOneIsZero => match v.parse::<i64>() {
            Ok(-1) => Ok("0".to_string()),
            Ok(n) if n >= 0 => Ok(n.to_string()),
            _ => Err(invalid(
                option,
                value,
                "a size in bytes, or -1 for the operating system's default",
            )),
        },
        Translate::BytesToKib => match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n.div_ceil(1024).to_string()),
            _ => Err(invalid(option, value, "a positive size in bytes")),
        },
        Translate::DnsLookup => match v.to_ascii_lowercase().as_str() {
            l @ ("use_all_dns_ips" | "resolve_canonical_bootstrap_servers_only") => Ok(l.to_string()),
            "default" => Err(Error::new(
                ErrorCode::InvalidOption,
                format!("value 'default' of option '{option}' was removed in Kafka 3.0 and librdkafka has no equivalent (use only the first address of a host name); use 'use_all_dns_ips' (the default)"),
            )
            .with_context("option", option)),
            _ => Err(invalid(
                option,
                value,
                "one of use_all_dns_ips, resolve_canonical_bootstrap_servers_only",
            )),
        },
    }
}

/// The settings of the table the connector reads itself, taken out of the pass-through:
/// (Java name, value).
pub type ConnectorSettings = Vec<(&'static str, String)>;

/// Rewrites `kafka.*` pass-through properties (prefix removed) for a role: mapped Java names get
/// their librdkafka name and value, connector settings are taken out and returned, refused ones
/// fail naming the option and why. A mapped name given beside its librdkafka spelling is a
/// conflict.
pub fn apply(pass_through: &mut Vec<(String, String)>, role: Role) -> Result<ConnectorSettings> {
    let mut out = Vec::with_capacity(pass_through.len());
    let mut connector = Vec::new();
    for (k, v) in pass_through.drain(..) {
        let Some(setting) = lookup(&k) else {
            out.push((k, v));
            continue;
        };
        let option = format!("kafka.{k}");
        match setting.effect(role) {
            Effect::Librdkafka {
                property,
                translate: t,
            } => out.push((property.to_string(), translate(&option, t, &v)?)),
            Effect::Connector { .. } => connector.push((setting.name, v)),
            Effect::Refused { reason } => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "option '{option}' is not supported by the Kafka {}: {reason}",
                        role_name(role)
                    ),
                )
                .with_context("option", option)
                .with_context("connector", "kafka"))
            }
        }
    }
    // Two names of one librdkafka property (`kafka.fetch.max.wait.ms` and
    // `kafka.fetch.wait.max.ms`): the first would silently lose.
    for (i, (k, _)) in out.iter().enumerate() {
        if let Some((other, _)) = out[..i].iter().find(|(o, _)| o.eq_ignore_ascii_case(k)) {
            let java = JAVA_SETTINGS
                .iter()
                .find(|s| {
                    matches!(s.effect(role), Effect::Librdkafka { property, .. } if property.eq_ignore_ascii_case(k))
                        && !s.name.eq_ignore_ascii_case(k)
                })
                .map_or(k.as_str(), |s| s.name);
            return Err(tributary_sdk::options::conflicting(
                &format!("kafka.{java}"),
                &format!("kafka.{other}"),
                &format!("is the Java name of librdkafka's '{k}', and both are given"),
            ));
        }
    }
    *pass_through = out;
    Ok(connector)
}

fn describe(effect: Effect) -> String {
    match effect {
        Effect::Librdkafka {
            property,
            translate,
        } => {
            let how = match translate {
                Translate::Same => String::new(),
                Translate::MinusOneIsZero => " (-1, the system default, becomes 0)".to_string(),
                Translate::BytesToKib => " (bytes become KiB, rounded up)".to_string(),
                Translate::DnsLookup => {
                    " (use_all_dns_ips, resolve_canonical_bootstrap_servers_only; the removed `default` is refused)"
                        .to_string()
                }
            };
            format!("librdkafka `{property}`{how}")
        }
        Effect::Connector { meaning } => format!("the connector: {meaning}"),
        Effect::Refused { reason } => format!("**refused**: {reason}"),
    }
}

/// The table as markdown (the text of `docs/kafka-java-settings.md`).
pub fn markdown() -> String {
    let mut s = String::new();
    s.push_str("# Java Kafka client settings in Tributary\n\n");
    s.push_str("<!-- Generated from connectors/kafka/src/java_settings/mod.rs (tributary_kafka::java_settings::markdown); a test checks that this file is up to date. -->\n\n");
    s.push_str("Spark jobs give the Java Kafka client settings as `kafka.<name>` options. Tributary's Kafka\n");
    s.push_str("source and sink run on librdkafka; this is what each Java setting does here. `kafka.*` names\n");
    s.push_str("that are not listed go to librdkafka as they are, and librdkafka refuses the ones it does not know.\n");
    s.push_str("A setting is never accepted and then ignored: where it would have no effect it is refused, with the reason.\n\n");
    s.push_str("| Java setting (`kafka.` + name) | on the source | on the sink | defaults |\n");
    s.push_str("|---|---|---|---|\n");
    for e in JAVA_SETTINGS {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            e.name,
            describe(e.source),
            describe(e.sink),
            e.note
        ));
    }
    s
}

#[cfg(test)]
mod tests;
