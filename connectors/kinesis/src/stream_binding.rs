//! How the Kinesis source backs a named stream (`tributary streams`): the stream spec lists its
//! `streams`; the stream reads them from its creation time on (`initialPosition` at_timestamp);
//! its ingestion table carries `kinesis_stream`, `kinesis_shard_id` and
//! `kinesis_sequence_number`, and `approximateArrivalTimestamp` as `stream_record_timestamp`. A
//! key schema does not apply: a record's key is its partition key, a string.

use arrow_schema::DataType;
use tributary_sdk::{IngestionColumn, Options, StreamBinding};

/// The spec field listing the streams.
const NAMES_FIELD: &str = "streams";
const BY_NAMES: &str = "source.streams";
const BY_CREATION: &str = "the stream's creation time";

/// The Kinesis source's [`StreamBinding`].
#[derive(Debug, Clone, Copy, Default)]
pub struct KinesisStreamBinding;

impl StreamBinding for KinesisStreamBinding {
    fn names_field(&self) -> &'static str {
        NAMES_FIELD
    }

    fn owned_options(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("streamName", BY_NAMES),
            ("streamARN", BY_NAMES),
            ("initialPosition", BY_CREATION),
        ]
    }

    fn bind(&self, names: &[String], start_ms: i64) -> Options {
        Options::new().with("streamName", names.join(",")).with(
            "initialPosition",
            serde_json::json!({ "at_timestamp": start_ms }).to_string(),
        )
    }

    fn time_column(&self) -> &'static str {
        "approximateArrivalTimestamp"
    }

    fn metadata_columns(&self) -> Vec<IngestionColumn> {
        vec![
            IngestionColumn::new("stream", "kinesis_stream", DataType::Utf8),
            IngestionColumn::new("shardId", "kinesis_shard_id", DataType::Utf8),
            IngestionColumn::new("sequenceNumber", "kinesis_sequence_number", DataType::Utf8),
        ]
    }

    fn key_schema_refused(&self) -> Option<&'static str> {
        Some("its key is the record's partition key, a string")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tributary_sdk::typed::SourceConnector;
    use tributary_sdk::SourceFactoryExt;

    use super::*;
    use crate::position::{parse_initial_position, InitialPosition};
    use crate::schema::kinesis_schema;
    use crate::KinesisSourceFactory;

    #[test]
    fn bound_options_read_the_streams_from_the_start_time_and_validate() {
        let b = KinesisStreamBinding;
        let names = vec!["orders".to_string(), "refunds".to_string()];
        let o = b.bind(&names, 1_700_000_000_123);
        assert_eq!(o.get("streamName"), Some("orders,refunds"));
        assert_eq!(
            parse_initial_position(o.get("initialPosition").unwrap()).unwrap(),
            InitialPosition::AtTimestamp(1_700_000_000_123)
        );
        let mut all = o.clone();
        all.set("region", "eu-west-1");
        let d = SourceFactoryExt::describe(&KinesisSourceFactory, &all).unwrap();
        assert_eq!(d.streams, names);
    }

    #[test]
    fn every_bound_option_is_owned_and_declared() {
        let b = KinesisStreamBinding;
        let owned: Vec<&str> = b.owned_options().iter().map(|(o, _)| *o).collect();
        for (k, _) in b.bind(&["s".to_string()], 0).iter() {
            assert!(owned.contains(&k), "{k} is set by bind but not owned");
        }
        let declared = SourceConnector::options(&KinesisSourceFactory);
        for o in owned {
            assert!(
                declared.iter().any(|s| s.name == o),
                "{o} is not a kinesis option"
            );
        }
        assert_eq!(b.names_field(), "streams");
        assert!(b.key_schema_refused().unwrap().contains("partition key"));
    }

    #[test]
    fn ingestion_columns_exist_in_the_record_schema() {
        let b = KinesisStreamBinding;
        let schema = kinesis_schema();
        assert!(schema.field_with_name(b.time_column()).is_ok());
        let columns = b.metadata_columns();
        assert_eq!(
            columns
                .iter()
                .map(|c| c.column.as_str())
                .collect::<Vec<_>>(),
            [
                "kinesis_stream",
                "kinesis_shard_id",
                "kinesis_sequence_number"
            ]
        );
        for c in columns {
            let f = schema.field_with_name(&c.source).unwrap();
            assert_eq!(f.data_type(), &c.data_type, "{}", c.source);
        }
    }
}
