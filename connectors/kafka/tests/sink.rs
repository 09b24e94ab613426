//! The Kafka sink against a real broker: a round trip through the source.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, ListBuilder, StringBuilder, StructBuilder};
use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Fields, Schema};
use common::*;
use tributary_kafka::KafkaSink;
use tributary_sdk::{ConnectorContext, Delivery, ErrorCode, Options, ReadLimit, Sink, Source};

/// Headers of one row: `None` for a null list.
type RowHeaders<'a> = Option<Vec<(&'a str, Option<&'a str>)>>;

fn headers(rows: &[RowHeaders<'_>]) -> ArrayRef {
    let fields = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Binary, true),
    ]);
    let mut b = ListBuilder::new(StructBuilder::new(
        fields.clone(),
        vec![
            Box::new(StringBuilder::new()),
            Box::new(BinaryBuilder::new()),
        ],
    ))
    .with_field(Arc::new(Field::new(
        "item",
        DataType::Struct(fields),
        false,
    )));
    for r in rows {
        match r {
            Some(hs) => {
                for (k, v) in hs {
                    let sb = b.values();
                    sb.field_builder::<StringBuilder>(0)
                        .unwrap()
                        .append_value(k);
                    sb.field_builder::<BinaryBuilder>(1)
                        .unwrap()
                        .append_option(v.map(str::as_bytes));
                    sb.append(true);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}

fn sink(b: &str, extra: &[(&str, &str)]) -> KafkaSink {
    let mut o: Options = extra.iter().copied().collect();
    o.set("kafka.bootstrap.servers", b);
    KafkaSink::new(&o, &ConnectorContext::default()).unwrap()
}

#[tokio::test]
async fn rows_round_trip_through_the_source() {
    let Some(b) = env("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let topic = unique("sink");
    create_topic(&cfg, &topic, 2, &[]).await;
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Utf8, true),
        Field::new("partition", DataType::Int32, true),
        Field::new(
            "headers",
            tributary_kafka::schema::kafka_headers_type(),
            true,
        ),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![Some("k1"), None, Some("k3")])),
            Arc::new(StringArray::from(vec![Some("v1"), Some("v2"), None])),
            Arc::new(Int32Array::from(vec![Some(1), Some(0), Some(1)])),
            headers(&[
                Some(vec![("h", Some("x")), ("n", None)]),
                None,
                Some(vec![]),
            ]),
        ],
    )
    .unwrap();
    let mut s = sink(&b, &[("topic", &topic)]);
    assert_eq!(s.delivery(), Delivery::AtLeastOnce);
    s.open(schema).await.unwrap();
    s.write(0, &[batch]).await.unwrap();
    s.stop().await.unwrap();

    let mut src = source(&opts(
        &b,
        &[
            ("subscribe", &topic),
            ("startingOffsets", "earliest"),
            ("includeHeaders", "true"),
        ],
    ));
    let start = src.initial_offset().await.unwrap();
    let (_, rows) = batch_of(&mut src, &start).await;
    assert_eq!(rows.len(), 3);
    let p1: Vec<&Row> = rows.iter().filter(|r| r.partition == 1).collect();
    assert_eq!(p1.len(), 2);
    assert_eq!(
        (p1[0].key.as_deref(), p1[0].value.as_deref()),
        (Some("k1"), Some("v1"))
    );
    assert_eq!(
        p1[0].headers,
        Some(vec![("h".into(), Some("x".into())), ("n".into(), None)])
    );
    assert_eq!(
        (p1[1].key.as_deref(), p1[1].value.as_deref()),
        (Some("k3"), None)
    );
    let p0: Vec<&Row> = rows.iter().filter(|r| r.partition == 0).collect();
    assert_eq!(
        (
            p0[0].key.as_deref(),
            p0[0].value.as_deref(),
            p0[0].headers.clone()
        ),
        (None, Some("v2"), None)
    );
}

async fn batch_of(
    src: &mut tributary_kafka::KafkaSource,
    start: &tributary_sdk::Offset,
) -> (tributary_sdk::Offset, Vec<Row>) {
    batch(src, start, &ReadLimit::All).await
}

#[tokio::test]
async fn topic_column_routes_rows_and_a_row_without_topic_is_named() {
    let Some(b) = env("TRIBUTARY_KAFKA_BOOTSTRAP") else {
        return;
    };
    let cfg = client_config(&b, &[]);
    let (t1, t2) = (unique("route-a"), unique("route-b"));
    create_topic(&cfg, &t1, 1, &[]).await;
    create_topic(&cfg, &t2, 1, &[]).await;
    let schema = Arc::new(Schema::new(vec![
        Field::new("topic", DataType::Utf8, true),
        Field::new("value", DataType::Binary, true),
    ]));
    let good = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![
                t1.as_str(),
                t2.as_str(),
                t2.as_str(),
            ])),
            Arc::new(arrow_array::BinaryArray::from(vec![&b"a"[..], b"b", b"c"])),
        ],
    )
    .unwrap();
    // Idempotence can be turned off by name.
    let mut s = sink(&b, &[("kafka.enable.idempotence", "false")]);
    s.open(schema.clone()).await.unwrap();
    s.write(1, &[good]).await.unwrap();
    let pattern = format!("{t1}|{t2}");
    let mut src = source(&opts(
        &b,
        &[
            ("subscribePattern", &pattern),
            ("startingOffsets", "earliest"),
        ],
    ));
    let start = src.initial_offset().await.unwrap();
    let (_, rows) = batch_of(&mut src, &start).await;
    assert_eq!(rows.iter().filter(|r| r.topic == t1).count(), 1);
    assert_eq!(rows.iter().filter(|r| r.topic == t2).count(), 2);

    let bad = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![Some(t1.as_str()), None])),
            Arc::new(arrow_array::BinaryArray::from(vec![&b"x"[..], b"y"])),
        ],
    )
    .unwrap();
    let err = s.write(2, &[bad]).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::SinkWrite);
    assert_eq!(err.context_value("row"), Some("1"));
    assert_eq!(err.context_value("batch"), Some("2"));

    // A delivery failure (a partition that does not exist) fails the whole batch.
    let pschema = Arc::new(Schema::new(vec![
        Field::new("value", DataType::Utf8, true),
        Field::new("partition", DataType::Int32, true),
    ]));
    let to_missing = RecordBatch::try_new(
        pschema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["ok", "lost"])),
            Arc::new(Int32Array::from(vec![0, 99])),
        ],
    )
    .unwrap();
    let mut s = sink(&b, &[("topic", &t1), ("kafka.message.timeout.ms", "5000")]);
    s.open(pschema).await.unwrap();
    let err = s.write(3, &[to_missing]).await.unwrap_err();
    assert!(
        matches!(err.code(), ErrorCode::SinkWrite | ErrorCode::Timeout),
        "{err}"
    );
    assert_eq!(err.context_value("row"), Some("1"), "{err}");

    // Without a topic option and without a topic column the sink refuses to open.
    let no_topic = Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Binary,
        true,
    )]));
    let mut s = sink(&b, &[]);
    let err = s.open(no_topic).await.unwrap_err();
    assert_eq!(err.context_value("option"), Some("topic"));
}
