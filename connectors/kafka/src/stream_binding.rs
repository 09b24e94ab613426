//! How the Kafka source backs a named stream (`tributary streams`): the stream spec lists its
//! `topics` (Spark's `subscribe`), or gives a `subscribe_pattern` (Spark's `subscribePattern`,
//! a Java regular expression over topic names) or an `assign` table (`{ orders = [0, 1] }`,
//! Spark's `assign`); the stream reads them from its creation time on (`startingTimestamp` with
//! `startingOffsetsByTimestampStrategy=latest`, so a partition without a newer record starts at
//! its end); its ingestion table carries `kafka_topic`, `kafka_partition` and `kafka_offset`, and
//! the record `timestamp` as `stream_record_timestamp`.

use arrow_schema::DataType;
use tributary_sdk::{
    IngestionColumn, Options, Result, StreamBinding, Subscription, SubscriptionKind,
};

/// The spec field listing the topics.
const NAMES_FIELD: &str = "topics";
const BY_NAMES: &str = "source.topics";
/// The spec field holding a topic pattern.
const PATTERN_FIELD: &str = "subscribe_pattern";
/// The spec field holding topic partitions.
const ASSIGN_FIELD: &str = "assign";
const BY_PATTERN: &str = "source.subscribe_pattern";
const BY_ASSIGN: &str = "source.assign";
const BY_CREATION: &str = "the stream's creation time";
const BY_AVAILABLE_NOW: &str = "streams run --available-now";

/// The Kafka source's [`StreamBinding`].
#[derive(Debug, Clone, Copy, Default)]
pub struct KafkaStreamBinding;

impl StreamBinding for KafkaStreamBinding {
    fn names_field(&self) -> &'static str {
        NAMES_FIELD
    }

    fn owned_options(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("subscribe", BY_NAMES),
            ("subscribePattern", BY_PATTERN),
            ("assign", BY_ASSIGN),
            ("startingOffsets", BY_CREATION),
            ("startingTimestamp", BY_CREATION),
            ("startingOffsetsByTimestamp", BY_CREATION),
            ("startingOffsetsByTimestampStrategy", BY_CREATION),
            ("endingOffsets", BY_AVAILABLE_NOW),
            ("endingTimestamp", BY_AVAILABLE_NOW),
            ("endingOffsetsByTimestamp", BY_AVAILABLE_NOW),
        ]
    }

    fn bind(&self, names: &[String], start_ms: i64) -> Options {
        Options::new()
            .with("subscribe", names.join(","))
            .with("startingTimestamp", start_ms.to_string())
            .with("startingOffsetsByTimestampStrategy", "latest")
    }

    fn subscription_fields(&self) -> Vec<(&'static str, SubscriptionKind)> {
        vec![
            (PATTERN_FIELD, SubscriptionKind::Pattern),
            (ASSIGN_FIELD, SubscriptionKind::Assign),
        ]
    }

    fn bind_subscription(&self, subscription: &Subscription, start_ms: i64) -> Result<Options> {
        let from_creation = |o: Options| {
            o.with("startingTimestamp", start_ms.to_string())
                .with("startingOffsetsByTimestampStrategy", "latest")
        };
        Ok(match subscription {
            Subscription::Names(names) => self.bind(names, start_ms),
            Subscription::Pattern(p) => from_creation(Options::new().with("subscribePattern", p)),
            Subscription::Assign(topics) => {
                let json = serde_json::to_string(topics).map_err(|e| {
                    tributary_sdk::Error::new(
                        tributary_sdk::ErrorCode::InvalidOption,
                        format!("option '{BY_ASSIGN}' cannot be written as JSON: {e}"),
                    )
                })?;
                from_creation(Options::new().with("assign", json))
            }
        })
    }

    fn time_column(&self) -> &'static str {
        "timestamp"
    }

    fn metadata_columns(&self) -> Vec<IngestionColumn> {
        vec![
            IngestionColumn::new("topic", "kafka_topic", DataType::Utf8),
            IngestionColumn::new("partition", "kafka_partition", DataType::Int32),
            IngestionColumn::new("offset", "kafka_offset", DataType::Int64),
        ]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tributary_sdk::typed::SourceConnector;
    use tributary_sdk::SourceFactoryExt;

    use super::*;
    use crate::connector::KafkaSourceFactory;
    use crate::schema::kafka_schema;

    #[test]
    fn bound_options_subscribe_from_the_start_time_and_validate() {
        let b = KafkaStreamBinding;
        let names = vec!["orders".to_string(), "refunds".to_string()];
        let o = b.bind(&names, 1_700_000_000_123);
        assert_eq!(o.get("subscribe"), Some("orders,refunds"));
        assert_eq!(o.get("startingTimestamp"), Some("1700000000123"));
        assert_eq!(o.get("startingOffsetsByTimestampStrategy"), Some("latest"));
        let mut all = o.clone();
        all.set("kafka.bootstrap.servers", "127.0.0.1:9");
        let d = SourceFactoryExt::describe(&KafkaSourceFactory, &all).unwrap();
        assert_eq!(d.streams, names);
    }

    #[test]
    fn every_bound_option_is_owned_and_declared() {
        let b = KafkaStreamBinding;
        let owned: Vec<&str> = b.owned_options().iter().map(|(o, _)| *o).collect();
        for (k, _) in b.bind(&["t".to_string()], 0).iter() {
            assert!(owned.contains(&k), "{k} is set by bind but not owned");
        }
        let declared = SourceConnector::options(&KafkaSourceFactory);
        for o in owned {
            assert!(
                declared.iter().any(|s| s.name == o),
                "{o} is not a kafka option"
            );
        }
        assert_eq!(b.names_field(), "topics");
        assert!(b
            .owned_options()
            .iter()
            .all(|(o, by)| o != &"subscribe" || *by == "source.topics"));
        assert_eq!(b.key_schema_refused(), None);
    }

    #[test]
    fn patterns_and_assignments_bind_to_spark_options_that_validate() {
        let b = KafkaStreamBinding;
        let fields: Vec<&str> = b.subscription_fields().iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, ["subscribe_pattern", "assign"]);
        let p = b
            .bind_subscription(&Subscription::Pattern("orders-.*".into()), 42)
            .unwrap();
        assert_eq!(p.get("subscribePattern"), Some("orders-.*"));
        assert_eq!(p.get("startingTimestamp"), Some("42"));
        let mut topics = std::collections::BTreeMap::new();
        topics.insert("orders".to_string(), vec![0u32, 2]);
        let a = b
            .bind_subscription(&Subscription::Assign(topics), 42)
            .unwrap();
        assert_eq!(a.get("assign"), Some(r#"{"orders":[0,2]}"#));
        assert_eq!(a.get("startingOffsetsByTimestampStrategy"), Some("latest"));
        let owned: Vec<&str> = b.owned_options().iter().map(|(o, _)| *o).collect();
        for mut o in [p, a] {
            for (k, _) in o.iter() {
                assert!(owned.contains(&k), "{k} is set by bind but not owned");
            }
            o.set("kafka.bootstrap.servers", "127.0.0.1:9");
            SourceFactoryExt::describe(&KafkaSourceFactory, &o).unwrap();
        }
    }

    #[test]
    fn ingestion_columns_exist_in_the_record_schema() {
        let b = KafkaStreamBinding;
        let schema = kafka_schema(false);
        assert!(schema.field_with_name(b.time_column()).is_ok());
        let columns = b.metadata_columns();
        assert_eq!(
            columns
                .iter()
                .map(|c| c.column.as_str())
                .collect::<Vec<_>>(),
            ["kafka_topic", "kafka_partition", "kafka_offset"]
        );
        for c in columns {
            let f = schema.field_with_name(&c.source).unwrap();
            assert_eq!(f.data_type(), &c.data_type, "{}", c.source);
        }
    }
}
