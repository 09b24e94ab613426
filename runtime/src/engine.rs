//! The micro-batch engine: plan, log, read, write, commit — with replay after a crash.
//!
//! For each batch `n`:
//!
//! 1. `end = source.latest_offset(start, limit)`; `end == start` means no new data.
//! 2. `offsets/<n> = {start, end}` is written atomically (the write-ahead log).
//! 3. `source.read(start, end)`, then every sink writes batch `n` (idempotently keyed by `n`).
//! 4. `commits/<n>` is written, then `source.commit(end)`.
//!
//! On restart, an `offsets/<n>` without `commits/<n>` is replayed first with exactly the logged
//! range. With deterministic sources and [`Delivery::ExactlyOnce`] sinks every row lands once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use tributary_sdk::decode::{schema_provider, DecodeConfig, StreamDecoder};
use tributary_sdk::{
    ConnectorContext, Delivery, Error, ErrorCode, Offset, OptionSpec, ReadLimit, Result,
    SecretStore, Sink, Source,
};

use crate::checkpoint::{Checkpoint, Recovery};
use crate::pipeline::PipelineSpec;
use crate::progress::{Durations, ProgressEvent, ProgressListener, SinkProgress, SourceProgress};
use crate::registry::Registry;
use crate::trigger::Trigger;

/// A cloneable flag that asks a running pipeline to stop after the current batch.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<(AtomicBool, tokio::sync::Notify)>);

impl Shutdown {
    /// Asks the pipeline to stop.
    pub fn trigger(&self) {
        self.0 .0.store(true, Ordering::SeqCst);
        self.0 .1.notify_waiters();
    }

    /// True once stop was asked.
    pub fn is_triggered(&self) -> bool {
        self.0 .0.load(Ordering::SeqCst)
    }

    async fn sleep(&self, d: Duration) {
        if d.is_zero() || self.is_triggered() {
            return;
        }
        let notified = self.0 .1.notified();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = notified => {}
        }
    }
}

/// What a finished run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Batches run (replays included).
    pub batches: u64,
    /// Rows read.
    pub rows: u64,
    /// Id of the last committed batch.
    pub last_batch_id: Option<u64>,
}

/// A built pipeline: a source, its sinks, a checkpoint and listeners.
pub struct Pipeline {
    name: String,
    trigger: Trigger,
    checkpoint: Checkpoint,
    checkpoint_id: String,
    source_name: String,
    source: Box<dyn Source>,
    sinks: Vec<(String, Box<dyn Sink>)>,
    listeners: Vec<Box<dyn ProgressListener>>,
    shutdown: Shutdown,
    idle_poll: Duration,
    decode: Option<Decode>,
}

/// The decode step: its configuration, and the decoder once the schemas are resolved at start.
#[derive(Debug)]
struct Decode {
    config: DecodeConfig,
    stream: String,
    decoder: Option<StreamDecoder>,
}

/// The stream name schemas are resolved for (the topic of TopicNameStrategy subjects): the
/// subscribed topic, the Kinesis stream name, or the pipeline name. A decode section whose
/// subject is named after the topic needs a stream of exactly one topic: one decoded column
/// has one schema, so several topics (or a pattern) are refused rather than decoded with the
/// first topic's schema.
fn stream_name(spec: &PipelineSpec, subject_per_topic: Option<&'static str>) -> Result<String> {
    let o = &spec.source_options;
    let mut topics: Vec<String> = Vec::new();
    if let Some(v) = o.get("subscribe").or_else(|| o.get("streamName")) {
        topics.extend(
            v.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string),
        );
    } else if let Some(v) = o.get("assign") {
        if let Ok(serde_json::Value::Object(m)) = serde_json::from_str(v) {
            topics.extend(m.keys().cloned());
        }
    }
    let Some(option) = subject_per_topic else {
        return Ok(topics
            .into_iter()
            .next()
            .unwrap_or_else(|| spec.name.clone()));
    };
    let reads = if let Some(p) = o.get("subscribePattern") {
        format!("topics matching subscribePattern '{p}'")
    } else if topics.len() == 1 {
        return Ok(topics.remove(0));
    } else if topics.is_empty() {
        "no named topic".to_string()
    } else {
        format!("{} topics ({})", topics.len(), topics.join(", "))
    };
    Err(Error::new(
        ErrorCode::ConflictingOptions,
        format!(
            "option 'source.decode.{option}' names the registry subject after the topic, but this \
             source reads {reads}; a decoded column has one schema: give subject=<name> in the \
             locator, or run one pipeline per topic"
        ),
    )
    .with_context("option", option))
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("name", &self.name)
            .field("trigger", &self.trigger)
            .field("source", &self.source)
            .field("sinks", &self.sinks)
            .finish()
    }
}

/// Checks a pipeline without any I/O: connectors exist, their options are valid.
pub fn validate(spec: &PipelineSpec, registry: &Registry) -> Result<()> {
    registry
        .source(&spec.source)?
        .validate(&spec.source_options)?;
    for (name, options) in &spec.sinks {
        registry.sink(name)?.validate(options)?;
    }
    if let Some(decode) = &spec.decode_options {
        OptionSpec::validate_all(
            &tributary_sdk::decode::decode_options(),
            decode,
            "source.decode",
        )?;
        // A subject named after the topic needs a one-topic source: refused here too, so that
        // `check` and `run` agree (the locators parse without resolving the registry secret).
        for option in ["payload_schema_locator", "key_schema_locator"] {
            if let Some(text) = decode.get(option) {
                let locator = tributary_sdk::decode::SchemaLocator::parse(text, option)?;
                if locator.subject_per_topic() {
                    stream_name(spec, Some(option))?;
                }
            }
        }
    }
    Ok(())
}

impl Pipeline {
    /// Builds the connectors of a pipeline and binds its checkpoint.
    pub fn build(
        spec: &PipelineSpec,
        registry: &Registry,
        secrets: Arc<dyn SecretStore>,
    ) -> Result<Pipeline> {
        validate(spec, registry)?;
        let decode = match &spec.decode_options {
            None => None,
            Some(options) => {
                let config = DecodeConfig::from_options(options, secrets.as_ref())?;
                Some(Decode {
                    stream: stream_name(spec, config.subject_per_topic_option())?,
                    config,
                    decoder: None,
                })
            }
        };
        let checkpoint = Checkpoint::open(&spec.checkpoint)?;
        let source_ctx = ConnectorContext {
            state_dir: Some(checkpoint.source_state_dir()),
            secrets: secrets.clone(),
            pipeline: spec.name.clone(),
        };
        let source = registry
            .source(&spec.source)?
            .create(&spec.source_options, &source_ctx)?;
        let meta = checkpoint.bind(&source.identity())?;
        let sink_ctx = ConnectorContext {
            state_dir: None,
            secrets: secrets.clone(),
            pipeline: spec.name.clone(),
        };
        let mut sinks = Vec::new();
        for (name, options) in &spec.sinks {
            sinks.push((
                name.clone(),
                registry.sink(name)?.create(options, &sink_ctx)?,
            ));
        }
        Ok(Pipeline {
            name: spec.name.clone(),
            trigger: spec.trigger,
            checkpoint,
            checkpoint_id: meta.id,
            source_name: spec.source.clone(),
            source,
            sinks,
            listeners: Vec::new(),
            shutdown: Shutdown::default(),
            idle_poll: Duration::from_millis(500),
            decode,
        })
    }

    /// Adds a progress listener.
    pub fn add_listener(&mut self, l: Box<dyn ProgressListener>) {
        self.listeners.push(l);
    }

    /// A handle that stops the pipeline after the current batch.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// The end-to-end guarantee: exactly-once only when every sink is idempotent.
    pub fn delivery(&self) -> Delivery {
        if self
            .sinks
            .iter()
            .all(|(_, s)| s.delivery() == Delivery::ExactlyOnce)
        {
            Delivery::ExactlyOnce
        } else {
            Delivery::AtLeastOnce
        }
    }

    /// Runs until the trigger says stop (bounded triggers) or a shutdown is asked.
    pub async fn run(&mut self) -> Result<RunSummary> {
        let result = self.run_inner().await;
        let stop_source = self.source.stop().await;
        let mut stop_sinks = Ok(());
        for (_, s) in &mut self.sinks {
            if let Err(e) = s.stop().await {
                stop_sinks = Err(e);
            }
        }
        for l in &mut self.listeners {
            l.on_terminated(result.as_ref().err());
        }
        let summary = result?;
        stop_source?;
        stop_sinks?;
        Ok(summary)
    }

    /// Resolves the schemas (once per run: a restart picks up a newer registry version) and
    /// returns the schema the sinks receive.
    async fn prepare_decoder(&mut self) -> Result<arrow::datatypes::SchemaRef> {
        let schema = self.source.schema();
        let Some(decode) = &mut self.decode else {
            return Ok(schema);
        };
        let payload = ["value", "data"]
            .into_iter()
            .find(|c| schema.index_of(c).is_ok())
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidPipeline,
                    format!(
                        "[source.decode] needs a binary 'value' or 'data' column, but source '{}' has none",
                        self.source_name
                    ),
                )
            })?;
        let provider = schema_provider(&decode.config)?;
        let schemas = provider.resolve(&decode.stream).await?;
        let decoder = StreamDecoder::new(&schemas, decode.config.mode, payload)?;
        let out = decoder.output_schema(&schema);
        decode.decoder = Some(decoder);
        Ok(out)
    }

    async fn run_inner(&mut self) -> Result<RunSummary> {
        let schema = self.prepare_decoder().await?;
        for (_, s) in &mut self.sinks {
            s.open(schema.clone()).await?;
        }
        let mut summary = RunSummary::default();
        let mut last_end = Instant::now();
        let (mut batch_id, mut start) = match self.checkpoint.recovery()? {
            Recovery::Fresh => (0, self.source.initial_offset().await?),
            Recovery::Continue { last } => {
                self.source.commit(&last.end).await?;
                summary.last_batch_id = Some(last.batch_id);
                (last.batch_id + 1, last.end)
            }
            Recovery::Replay { entry } => {
                tracing::info!(batch = entry.batch_id, "replaying uncommitted batch");
                let rows = self
                    .execute(
                        entry.batch_id,
                        &entry.start,
                        &entry.end,
                        Durations::default(),
                        true,
                        &mut last_end,
                    )
                    .await?;
                summary.batches += 1;
                summary.rows += rows;
                summary.last_batch_id = Some(entry.batch_id);
                if self.trigger == Trigger::Once {
                    return Ok(summary);
                }
                (entry.batch_id + 1, entry.end)
            }
        };
        let limit = match self.trigger {
            Trigger::Once => ReadLimit::All,
            _ => self.source.default_read_limit(),
        };
        if self.trigger.is_bounded() {
            self.source.prepare_available_now().await?;
        }
        loop {
            if self.shutdown.is_triggered() {
                return Ok(summary);
            }
            let t0 = Instant::now();
            let end = self.source.latest_offset(&start, &limit).await?;
            let latest_ms = t0.elapsed().as_millis() as u64;
            if end == start {
                if self.trigger.is_bounded() {
                    return Ok(summary);
                }
                let wait = match self.trigger {
                    Trigger::ProcessingTime(i) if !i.is_zero() => i,
                    _ => self.idle_poll,
                };
                self.shutdown.sleep(wait).await;
                continue;
            }
            let durations = Durations {
                latest_offset: latest_ms,
                ..Durations::default()
            };
            let rows = self
                .execute(batch_id, &start, &end, durations, false, &mut last_end)
                .await?;
            summary.batches += 1;
            summary.rows += rows;
            summary.last_batch_id = Some(batch_id);
            batch_id += 1;
            start = end;
            match self.trigger {
                Trigger::Once => return Ok(summary),
                Trigger::ProcessingTime(interval) => {
                    self.shutdown
                        .sleep(interval.saturating_sub(t0.elapsed()))
                        .await
                }
                Trigger::AvailableNow => {}
            }
        }
    }

    /// Source metrics plus the decoder's malformed-record counters.
    fn metrics(&self) -> tributary_sdk::SourceMetrics {
        let mut m = self.source.metrics();
        if let Some(d) = self.decode.as_ref().and_then(|d| d.decoder.as_ref()) {
            m.extend(d.metrics());
        }
        m
    }

    /// Runs one batch: log its range (unless replaying), read, write, commit, report.
    async fn execute(
        &mut self,
        batch_id: u64,
        start: &Offset,
        end: &Offset,
        mut durations: Durations,
        replayed: bool,
        last_end: &mut Instant,
    ) -> Result<u64> {
        let t_batch = Instant::now();
        let t = Instant::now();
        if !replayed {
            self.checkpoint.write_offsets(batch_id, start, end)?;
        }
        let mut wal_ms = t.elapsed().as_millis() as u64;

        let t = Instant::now();
        let mut batches: Vec<RecordBatch> = self.source.read(start, end).await?;
        if let Some(decoder) = self.decode.as_mut().and_then(|d| d.decoder.as_mut()) {
            batches = batches
                .iter()
                .map(|b| decoder.decode(b))
                .collect::<Result<_>>()?;
        }
        durations.get_batch = t.elapsed().as_millis() as u64;
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();

        let t = Instant::now();
        let mut sink_progress = Vec::new();
        for (name, sink) in &mut self.sinks {
            sink.write(batch_id, &batches).await?;
            sink_progress.push(SinkProgress {
                description: name.clone(),
                num_output_rows: rows,
            });
        }
        durations.add_batch = t.elapsed().as_millis() as u64;

        let t = Instant::now();
        self.checkpoint.write_commit(batch_id, rows)?;
        wal_ms += t.elapsed().as_millis() as u64;
        self.source.commit(end).await?;
        durations.wal_commit = wal_ms;
        durations.trigger_execution =
            t_batch.elapsed().as_millis() as u64 + durations.latest_offset;

        let since_last = last_end.elapsed().as_secs_f64();
        *last_end = Instant::now();
        let exec_s = (durations.trigger_execution as f64 / 1000.0).max(1e-3);
        let event = ProgressEvent {
            id: self.checkpoint_id.clone(),
            name: self.name.clone(),
            batch_id,
            replayed,
            timestamp: rfc3339_now(),
            num_input_rows: rows,
            input_rows_per_second: rows as f64 / since_last.max(1e-3),
            processed_rows_per_second: rows as f64 / exec_s,
            duration_ms: durations,
            sources: vec![SourceProgress {
                description: format!("{} {}", self.source_name, self.source.identity().target),
                start_offset: start.clone(),
                end_offset: end.clone(),
                num_input_rows: rows,
                metrics: self.metrics(),
            }],
            sinks: sink_progress,
        };
        for l in &mut self.listeners {
            l.on_progress(&event);
        }
        Ok(rows)
    }
}

fn rfc3339_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tributary_sdk::EnvSecretStore;

    fn spec(source_options: &str, locator: &str) -> (PipelineSpec, DecodeConfig) {
        let text = format!(
            "checkpoint = \"/tmp/ck\"\n[source]\nconnector = \"kafka\"\noptions = {{ {source_options} }}\n\
             decode = {{ schema_registry_url = \"http://localhost:1\", payload_schema_locator = \"{locator}\" }}\n\
             [[sink]]\nconnector = \"console\"\n"
        );
        let spec = PipelineSpec::parse(&text, "p.toml").unwrap();
        let config =
            DecodeConfig::from_options(spec.decode_options.as_ref().unwrap(), &EnvSecretStore)
                .unwrap();
        (spec, config)
    }

    #[test]
    fn topic_named_subjects_need_exactly_one_topic() {
        let topic_name = "strategy=TopicNameStrategy,format=AVRO";
        let (s, c) = spec("subscribe = \"orders\"", topic_name);
        assert_eq!(
            stream_name(&s, c.subject_per_topic_option()).unwrap(),
            "orders"
        );
        let (s, c) = spec("assign = '{\"orders\":[0,1]}'", topic_name);
        assert_eq!(
            stream_name(&s, c.subject_per_topic_option()).unwrap(),
            "orders"
        );

        let (s, c) = spec("subscribe = \"orders, refunds\"", topic_name);
        let e = stream_name(&s, c.subject_per_topic_option()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert!(
            e.message().contains("payload_schema_locator")
                && e.message().contains("2 topics (orders, refunds)")
                && e.message().contains("subject=<name>"),
            "{}",
            e.message()
        );
        let (s, c) = spec(
            "subscribePattern = \"orders-.*\"",
            "strategy=TopicRecordNameStrategy,record=x.Order,format=AVRO",
        );
        let e = stream_name(&s, c.subject_per_topic_option()).unwrap_err();
        assert!(
            e.message().contains("subscribePattern 'orders-.*'"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn check_refuses_what_run_refuses() {
        let registry = crate::registry::Registry::builtin();
        let bootstrap = "\"kafka.bootstrap.servers\" = \"127.0.0.1:1\", ";
        let (s, _) = spec(
            &format!("{bootstrap}subscribe = \"a, b\""),
            "strategy=TopicNameStrategy,format=AVRO",
        );
        let e = validate(&s, &registry).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert_eq!(e.context_value("option"), Some("payload_schema_locator"));
        let (s, _) = spec(
            &format!("{bootstrap}subscribe = \"a\""),
            "strategy=TopicNameStrategy,format=AVRO",
        );
        validate(&s, &registry).unwrap();
    }

    #[test]
    fn a_fixed_subject_reads_any_number_of_topics() {
        let (s, c) = spec(
            "subscribe = \"orders, refunds\"",
            "subject=orders-value,format=AVRO",
        );
        assert_eq!(
            stream_name(&s, c.subject_per_topic_option()).unwrap(),
            "orders"
        );
        let (s, c) = spec(
            "subscribePattern = \"o.*\"",
            "strategy=RecordNameStrategy,record=x.Order,format=AVRO",
        );
        assert_eq!(
            stream_name(&s, c.subject_per_topic_option()).unwrap(),
            s.name
        );
    }
}
