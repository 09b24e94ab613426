//! The Kafka sink: rows to records, at-least-once.
//!
//! Columns: `value` (binary or utf8, required), `key` (binary or utf8), `headers`
//! (list<struct<key utf8, value binary>>), `partition` (int32) and `topic` (utf8). The `topic`
//! option overrides the column; a row with neither is an error naming the row. Headers are
//! written when the `headers` column is there, as Spark's sink does; the option
//! `includeHeaders` (which Spark's sink does not read, but jobs copy from the source) is
//! accepted as a check: `true` requires the column, `false` refuses it. The idempotent
//! producer is on unless `kafka.enable.idempotence=false` (no duplicates from the producer's own
//! retries). A batch succeeds only when every record is acknowledged; any delivery failure fails
//! the batch. A replayed batch (after a crash) is written again, so the sink is
//! [`Delivery::AtLeastOnce`]. In real-time mode records are produced as they arrive
//! ([`StreamingSink`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use async_trait::async_trait;
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use tributary_sdk::typed::SinkConnector;
use tributary_sdk::{
    Ack, ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, Options, ParsedOptions, Result,
    Sink, StreamingSink,
};

use crate::client::KafkaContext;
use crate::config::{sink_option_specs, SinkConfig};
use crate::connection::ConnectionProfile;
use crate::error::config_error;
use crate::schema::kafka_headers_type;

/// Builds Kafka sinks (connector name `kafka`).
#[derive(Debug, Default, Clone, Copy)]
pub struct KafkaSinkFactory;

impl SinkConnector for KafkaSinkFactory {
    type Config = SinkConfig;

    fn name(&self) -> &str {
        "kafka"
    }

    /// Every mode, as Spark's Kafka sink: `update` writes one record per changed group
    /// (keyed by the `key` column the query selects), `complete` every group every batch.
    fn output_modes(&self) -> &'static [tributary_sdk::OutputMode] {
        &tributary_sdk::OutputMode::ALL
    }

    fn options(&self) -> Vec<OptionSpec> {
        sink_option_specs()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<SinkConfig> {
        SinkConfig::parse(options)
    }

    fn build(&self, config: SinkConfig, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        Ok(Box::new(KafkaSink::build(config, context)?))
    }
}

/// The Kafka sink.
pub struct KafkaSink {
    config: SinkConfig,
    profile: Arc<ConnectionProfile>,
    producer: Option<FutureProducer<KafkaContext>>,
}

impl std::fmt::Debug for KafkaSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSink")
            .field("topic", &self.config.topic)
            .field("profile", &self.profile)
            .finish()
    }
}

/// A binary or text column read as bytes.
enum Bytes<'a> {
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
}

impl<'a> Bytes<'a> {
    fn of(col: &'a ArrayRef, name: &str) -> Result<Bytes<'a>> {
        Ok(match col.data_type() {
            DataType::Binary => Bytes::Binary(col.as_binary()),
            DataType::LargeBinary => Bytes::LargeBinary(col.as_binary()),
            DataType::Utf8 => Bytes::Utf8(col.as_string()),
            DataType::LargeUtf8 => Bytes::LargeUtf8(col.as_string()),
            other => {
                return Err(Error::new(
                    ErrorCode::Schema,
                    format!(
                    "column '{name}' must be binary or string to be written to Kafka, not {other}"
                ),
                )
                .with_context("field", name))
            }
        })
    }

    fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            Bytes::Binary(a) => a.is_valid(i).then(|| a.value(i)),
            Bytes::LargeBinary(a) => a.is_valid(i).then(|| a.value(i)),
            Bytes::Utf8(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
            Bytes::LargeUtf8(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
        }
    }
}

fn check_schema(
    schema: &SchemaRef,
    topic_option: bool,
    include_headers: Option<bool>,
) -> Result<()> {
    let field = |n: &str| schema.fields().iter().find(|f| f.name() == n);
    match (include_headers, field("headers").is_some()) {
        (Some(true), false) => {
            return Err(Error::new(
                ErrorCode::Schema,
                "the sink option 'includeHeaders' is true but the input has no 'headers' column (list<struct<key utf8, value binary>>); add one or remove the option",
            )
            .with_context("option", "includeHeaders")
            .with_context("field", "headers"))
        }
        (Some(false), true) => {
            return Err(Error::new(
                ErrorCode::Schema,
                "the sink option 'includeHeaders' is false but the input has a 'headers' column, which Spark's Kafka sink writes regardless; drop the column (in [transform]) or remove the option",
            )
            .with_context("option", "includeHeaders")
            .with_context("field", "headers"))
        }
        _ => {}
    }
    if field("value").is_none() {
        return Err(Error::new(
            ErrorCode::Schema,
            "the Kafka sink needs a 'value' column (binary or string)",
        )
        .with_context("field", "value"));
    }
    if !topic_option && field("topic").is_none() {
        return Err(Error::new(
            ErrorCode::MissingOption,
            "the Kafka sink needs the 'topic' option or a 'topic' column",
        )
        .with_context("option", "topic"));
    }
    if let Some(f) = field("partition") {
        if f.data_type() != &DataType::Int32 {
            return Err(Error::new(
                ErrorCode::Schema,
                format!("column 'partition' must be int32, not {}", f.data_type()),
            )
            .with_context("field", "partition"));
        }
    }
    if let Some(f) = field("headers") {
        if f.data_type() != &kafka_headers_type() {
            return Err(Error::new(
                ErrorCode::Schema,
                format!(
                    "column 'headers' must be list<struct<key utf8, value binary>>, not {}",
                    f.data_type()
                ),
            )
            .with_context("field", "headers"));
        }
    }
    Ok(())
}

impl KafkaSink {
    /// Validates and parses the options, then builds the sink (the typed path in one call).
    pub fn new(options: &Options, context: &ConnectorContext) -> Result<KafkaSink> {
        let parsed = OptionSpec::validate_all(&sink_option_specs(), options, "kafka")?;
        KafkaSink::build(SinkConfig::parse(&parsed)?, context)
    }

    /// Resolves secrets, checks key material and builds the sink. Nothing connects yet.
    pub fn build(config: SinkConfig, context: &ConnectorContext) -> Result<KafkaSink> {
        let profile = Arc::new(ConnectionProfile::resolve(
            &config.connection,
            context.secrets.as_ref(),
        )?);
        Ok(KafkaSink {
            config,
            profile,
            producer: None,
        })
    }

    fn producer(&mut self) -> Result<&FutureProducer<KafkaContext>> {
        if self.producer.is_none() {
            let mut cfg = self.profile.client_config();
            if cfg.get("enable.idempotence").is_none() {
                cfg.set("enable.idempotence", "true");
            }
            let p: FutureProducer<KafkaContext> = cfg
                .create_with_context(self.profile.context())
                .map_err(|e| config_error(e, "kafka."))?;
            self.producer = Some(p);
        }
        self.producer
            .as_ref()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "producer missing"))
    }
}

fn delivery_error(batch_id: u64, row: usize, topic: &str, e: &KafkaError) -> Error {
    Error::new(
        ErrorCode::SinkWrite,
        format!("batch {batch_id}: row {row} could not be delivered to topic '{topic}': {e}"),
    )
    .with_context("batch", batch_id)
    .with_context("row", row)
    .with_context("topic", topic)
}

/// Deliveries in flight: the row, its topic and the producer's future.
type InFlight = VecDeque<(usize, String, DeliveryFuture)>;

impl KafkaSink {
    /// Hands every row to the producer (waiting for the oldest acknowledgements only when its
    /// queue is full) and returns the deliveries still in flight.
    async fn produce(
        &mut self,
        batch_id: u64,
        batches: &[RecordBatch],
        deadline: tokio::time::Instant,
    ) -> Result<InFlight> {
        let topic_option = self.config.topic.clone();
        let include_headers = self.config.include_headers;
        let producer = self.producer()?.clone();
        let mut in_flight: InFlight = VecDeque::new();
        let mut row_base = 0usize;
        for batch in batches {
            check_schema(&batch.schema(), topic_option.is_some(), include_headers)?;
            let col = |n: &str| batch.column_by_name(n);
            let values = Bytes::of(
                col("value").ok_or_else(|| Error::new(ErrorCode::Schema, "no value column"))?,
                "value",
            )?;
            let keys = col("key").map(|c| Bytes::of(c, "key")).transpose()?;
            let topics = col("topic")
                .map(|c| match c.data_type() {
                    DataType::Utf8 => Ok(c.as_string::<i32>()),
                    other => Err(Error::new(
                        ErrorCode::Schema,
                        format!("column 'topic' must be utf8, not {other}"),
                    )
                    .with_context("field", "topic")),
                })
                .transpose()?;
            let partitions = col("partition").map(|c| c.as_primitive::<Int32Type>());
            let headers = col("headers").map(|c| c.as_list::<i32>());
            for i in 0..batch.num_rows() {
                let row = row_base + i;
                let topic = match (&topic_option, topics) {
                    (Some(t), _) => t.as_str(),
                    (None, Some(col)) if col.is_valid(i) && !col.value(i).is_empty() => col.value(i),
                    _ => {
                        return Err(Error::new(
                            ErrorCode::SinkWrite,
                            format!("batch {batch_id}: row {row} has no topic: set the 'topic' option or fill the 'topic' column"),
                        )
                        .with_context("batch", batch_id)
                        .with_context("row", row)
                        .with_context("option", "topic"))
                    }
                };
                let mut rec: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic);
                if let Some(v) = values.get(i) {
                    rec = rec.payload(v);
                }
                if let Some(k) = keys.as_ref().and_then(|k| k.get(i)) {
                    rec = rec.key(k);
                }
                if let Some(p) = partitions.filter(|p| p.is_valid(i)) {
                    rec = rec.partition(p.value(i));
                }
                if let Some(h) = headers.filter(|h| h.is_valid(i)) {
                    let entries = h.value(i);
                    let s = entries.as_struct();
                    let hk = s.column(0).as_string::<i32>();
                    let hv = s.column(1).as_binary::<i32>();
                    let mut owned = OwnedHeaders::new_with_capacity(s.len());
                    for j in 0..s.len() {
                        owned = owned.insert(Header {
                            key: hk.value(j),
                            value: hv.is_valid(j).then(|| hv.value(j)),
                        });
                    }
                    rec = rec.headers(owned);
                }
                loop {
                    match producer.send_result(rec) {
                        Ok(fut) => {
                            in_flight.push_back((row, topic.to_string(), fut));
                            break;
                        }
                        Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                            rec = r;
                            match in_flight.pop_front() {
                                Some((row, t, fut)) => {
                                    await_delivery(batch_id, row, &t, fut, deadline).await?
                                }
                                None => tokio::time::sleep(Duration::from_millis(5)).await,
                            }
                        }
                        Err((e, _)) => return Err(delivery_error(batch_id, row, topic, &e)),
                    }
                }
            }
            row_base += batch.num_rows();
        }
        Ok(in_flight)
    }
}

/// Waits for every delivery, the oldest first.
async fn await_all(
    batch_id: u64,
    mut in_flight: InFlight,
    deadline: tokio::time::Instant,
) -> Result<()> {
    while let Some((row, t, fut)) = in_flight.pop_front() {
        await_delivery(batch_id, row, &t, fut, deadline).await?;
    }
    Ok(())
}

#[async_trait]
impl Sink for KafkaSink {
    fn delivery(&self) -> Delivery {
        Delivery::AtLeastOnce
    }

    async fn open(&mut self, schema: SchemaRef) -> Result<()> {
        check_schema(
            &schema,
            self.config.topic.is_some(),
            self.config.include_headers,
        )?;
        self.producer()?;
        Ok(())
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        let deadline = tokio::time::Instant::now() + self.config.flush_timeout;
        let in_flight = self.produce(batch_id, batches, deadline).await?;
        await_all(batch_id, in_flight, deadline).await
    }

    async fn stop(&mut self) -> Result<()> {
        if let Some(p) = self.producer.take() {
            let timeout = self.config.flush_timeout;
            tokio::task::spawn_blocking(move || p.flush(timeout))
                .await
                .map_err(|e| Error::new(ErrorCode::Internal, "flush thread failed").with_cause(e))?
                .map_err(|e| {
                    Error::new(ErrorCode::SinkWrite, "flushing the Kafka producer failed")
                        .with_cause(e)
                })?;
        }
        Ok(())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSink> {
        Some(self)
    }
}

/// Real-time mode: records are produced as they come and acknowledged when the broker has
/// them (the idempotent producer keeps its own retries free of duplicates); a replayed long
/// batch is produced again, so delivery stays at-least-once.
#[async_trait]
impl StreamingSink for KafkaSink {
    async fn write_records(&mut self, batch_id: u64, batch: &RecordBatch) -> Result<Ack> {
        let deadline = tokio::time::Instant::now() + self.config.flush_timeout;
        let in_flight = self
            .produce(batch_id, std::slice::from_ref(batch), deadline)
            .await?;
        Ok(Box::pin(await_all(batch_id, in_flight, deadline)))
    }

    async fn end_batch(&mut self, _batch_id: u64) -> Result<()> {
        // The runtime awaited every acknowledgement before ending the batch.
        Ok(())
    }
}

async fn await_delivery(
    batch_id: u64,
    row: usize,
    topic: &str,
    fut: DeliveryFuture,
    deadline: tokio::time::Instant,
) -> Result<()> {
    match tokio::time::timeout_at(deadline, fut).await {
        Ok(Ok(Ok(_))) => Ok(()),
        Ok(Ok(Err((e, _)))) => Err(delivery_error(batch_id, row, topic, &e)),
        Ok(Err(_)) => Err(Error::new(ErrorCode::SinkWrite, format!("batch {batch_id}: the producer dropped row {row}"))
            .with_context("batch", batch_id)
            .with_context("row", row)),
        Err(_) => Err(Error::new(
            ErrorCode::Timeout,
            format!("batch {batch_id}: row {row} was not acknowledged by topic '{topic}' within flushTimeoutMs"),
        )
        .with_context("batch", batch_id)
        .with_context("row", row)
        .with_context("topic", topic)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Arc;

    use arrow_schema::{Field, Schema};

    use super::*;

    fn sink(pairs: &[(&str, &str)]) -> KafkaSink {
        let mut o: Options = pairs.iter().copied().collect();
        o.set("kafka.bootstrap.servers", "127.0.0.1:1");
        o.set("topic", "t");
        KafkaSink::new(&o, &ConnectorContext::default()).unwrap()
    }

    fn schema(headers: bool) -> SchemaRef {
        let mut fields = vec![Field::new("value", DataType::Binary, true)];
        if headers {
            fields.push(Field::new("headers", kafka_headers_type(), true));
        }
        Arc::new(Schema::new(fields))
    }

    #[tokio::test]
    async fn include_headers_checks_the_headers_column_as_spark_writes_it() {
        // Not set: Spark's behaviour, headers written when the column is there.
        for h in [false, true] {
            sink(&[]).open(schema(h)).await.unwrap();
        }
        sink(&[("includeHeaders", "true")])
            .open(schema(true))
            .await
            .unwrap();
        sink(&[("includeHeaders", "false")])
            .open(schema(false))
            .await
            .unwrap();
        for (value, headers, says) in [
            ("true", false, "has no 'headers' column"),
            ("false", true, "writes regardless"),
        ] {
            let e = sink(&[("includeHeaders", value)])
                .open(schema(headers))
                .await
                .unwrap_err();
            assert_eq!(e.context_value("option"), Some("includeHeaders"), "{e}");
            assert!(e.message().contains(says), "{e}");
        }
    }
}
