//! The generator source: the typed connector ([`GeneratorSourceFactory`]) and the
//! [`GeneratorSource`] it builds.
//!
//! The connector declares its options once, parses them once into a [`GeneratorConfig`]
//! (refusing conflicting and ignored options), describes what the source reads (the identity the
//! host binds the checkpoint to) and builds the source. The SDK derives the erased
//! `SourceFactory` the host and the plugin boundary hold.
//!
//! The source follows the SDK lifecycle: offsets are row positions ([`RowsOffset`]), so a range
//! always yields the same rows and a replay after a restart is exact. With `controlFile` the
//! rows that exist are read from a file at every call ([`crate::control`]): rows trimmed before
//! they were read are data loss, reported through [`DataLossTracker`] under `failOnDataLoss`, and
//! malformed rows follow `mode`. An `availableNow` run reads the rows that existed when
//! [`Source::prepare_available_now`] was called, and no later ones.
//!
//! The source also streams (real-time mode): [`StreamingSource`] starts the reader of
//! [`crate::stream`], and [`StreamingSource::end_offset`] turns its delivered row position back
//! into a [`RowsOffset`]. A replayed real-time batch is read again through
//! [`Source::read_stream`].

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tributary_sdk::{
    batch_stream, BatchStream, ChunkSender, ConnectorContext, DataLossEvent, DataLossKind,
    DataLossTracker, Error, ErrorCode, Offset, OptionSpec, ParsedOptions, ReadLimit,
    RealTimeSupport, Result, Source, SourceConnector, SourceDescription, SourceIdentity,
    SourceMetrics, StreamingSource,
};

use crate::config::{generator_options, GeneratorConfig, RowSupply};
use crate::control::{bounds_of, Bounds};
use crate::rows::{build_batches, row_schema, Partitioning, RowsOffset};
use crate::stream::{ReaderSetup, RunningStream, STREAM_PARTITION};

/// Batches per trigger when the source is unbounded and no limit applies.
const UNBOUNDED_BATCHES_PER_TRIGGER: u64 = 10;

/// The `generator` connector.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeneratorSourceFactory;

impl SourceConnector for GeneratorSourceFactory {
    type Config = GeneratorConfig;

    fn name(&self) -> &str {
        if cfg!(feature = "shadow-builtin") {
            "files"
        } else {
            "generator"
        }
    }

    fn options(&self) -> Vec<OptionSpec> {
        generator_options()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<GeneratorConfig> {
        GeneratorConfig::parse(options)
    }

    fn describe(&self, config: &GeneratorConfig) -> SourceDescription {
        SourceDescription::new("generator", config.target())
            .with_real_time(RealTimeSupport::Supported)
    }

    fn build(
        &self,
        config: GeneratorConfig,
        _context: &ConnectorContext,
    ) -> Result<Box<dyn Source>> {
        Ok(Box::new(GeneratorSource::new(config)))
    }
}

/// A deterministic row generator.
#[derive(Debug)]
pub struct GeneratorSource {
    config: GeneratorConfig,
    identity: SourceIdentity,
    schema: SchemaRef,
    partitioning: Partitioning,
    /// The end of an `availableNow` run, fixed by `prepare_available_now`.
    available_now_end: Option<u64>,
    data_loss: DataLossTracker,
    /// Rows read, by `read` and by the streaming reader.
    rows_read: Arc<AtomicU64>,
    malformed_read: u64,
    last_planned_end: u64,
    last_latest: Option<u64>,
    committed: u64,
    stopped: bool,
    /// The running streaming read, if any.
    stream: Option<RunningStream>,
}

impl GeneratorSource {
    /// A source with the given settings.
    pub fn new(config: GeneratorConfig) -> Self {
        GeneratorSource {
            identity: SourceDescription::new("generator", config.target()).identity,
            schema: row_schema(),
            partitioning: Partitioning::new(config.partitions, &config.assigned),
            available_now_end: None,
            data_loss: DataLossTracker::new(config.fail_on_data_loss),
            rows_read: Arc::new(AtomicU64::new(0)),
            malformed_read: 0,
            last_planned_end: 0,
            last_latest: None,
            committed: 0,
            stopped: false,
            stream: None,
            config,
        }
    }

    fn check_running(&self) -> Result<()> {
        if self.stopped {
            return Err(Error::new(
                ErrorCode::SourceRead,
                "the generator source was stopped",
            ));
        }
        Ok(())
    }

    fn bounds(&self) -> Result<Bounds> {
        bounds_of(&self.config)
    }
}

#[async_trait]
impl Source for GeneratorSource {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn identity(&self) -> SourceIdentity {
        self.identity.clone()
    }

    fn default_read_limit(&self) -> ReadLimit {
        match self.config.max_rows_per_trigger {
            Some(n) => ReadLimit::MaxRows(n),
            None => ReadLimit::All,
        }
    }

    async fn initial_offset(&mut self) -> Result<Offset> {
        self.check_running()?;
        let bounds = self.bounds()?;
        match (self.config.start_at_latest, bounds.latest) {
            (true, Some(latest)) => RowsOffset::at(latest),
            // Refused when parsing; kept as an error rather than a panic.
            (true, None) => Err(Error::new(
                ErrorCode::ConflictingOptions,
                "startingOffsets=latest needs totalRows or controlFile",
            )
            .with_context("option", "startingOffsets")),
            (false, _) => RowsOffset::at(bounds.earliest),
        }
    }

    async fn prepare_available_now(&mut self) -> Result<()> {
        self.check_running()?;
        let latest = self.bounds()?.latest.ok_or_else(|| {
            Error::new(
                ErrorCode::ConflictingOptions,
                "an availableNow trigger needs a generator with an end: set totalRows or \
                 controlFile",
            )
            .with_context("option", "totalRows")
        })?;
        self.available_now_end = Some(latest);
        Ok(())
    }

    async fn latest_offset(&mut self, start: &Offset, limit: &ReadLimit) -> Result<Offset> {
        self.check_running()?;
        let at = RowsOffset::of(start)?;
        let bounds = self.bounds()?;
        let latest = match (bounds.latest, self.available_now_end) {
            (Some(now), Some(fixed)) => Some(now.min(fixed)),
            (latest, _) => latest,
        };
        self.last_latest = latest;
        // Rows below `earliest` were trimmed: count the limit from the first row that exists.
        let from = at.max(bounds.earliest);
        let cap = latest.unwrap_or_else(|| {
            let batches = self.config.rows_per_batch * UNBOUNDED_BATCHES_PER_TRIGGER;
            self.partitioning.end_after(from, batches)
        });
        let end = match limit.max_rows() {
            _ if cap <= at => at,
            Some(max) => cap.min(self.partitioning.end_after(from, max)).max(at),
            None => cap,
        };
        self.last_planned_end = end;
        RowsOffset::at(end)
    }

    /// The rows of `[start, end)`, built in batches of `rowsPerBatch`.
    async fn read_stream<'a>(
        &'a mut self,
        start: &Offset,
        end: &Offset,
    ) -> Result<BatchStream<'a>> {
        self.check_running()?;
        // The fault-injection build panics here (a test of the host's panic containment); the
        // condition keeps the code after it reachable, so that build compiles without warnings.
        if cfg!(feature = "panic-in-read") {
            panic!("generator built with feature panic-in-read");
        }
        let (mut from, to) = (RowsOffset::of(start)?, RowsOffset::of(end)?);
        if to < from {
            return Err(Error::new(
                ErrorCode::SourceRead,
                format!("end offset {to} is before start offset {from}"),
            ));
        }
        let bounds = self.bounds()?;
        if let Some(latest) = bounds.latest {
            if to > latest {
                return Err(Error::new(
                    ErrorCode::SourceRead,
                    format!("end offset {to} is past the last row ({latest})"),
                ));
            }
        }
        if from < bounds.earliest {
            let lost_to = bounds.earliest.min(to);
            self.data_loss.report(
                DataLossEvent::new(
                    DataLossKind::OffsetOutOfRange,
                    self.identity.target.clone(),
                    format!("rows {from}..{lost_to} were trimmed before they were read"),
                )
                .with_positions(from, bounds.earliest),
            )?;
            from = lost_to;
        }
        let built = build_batches(
            &self.schema,
            &self.partitioning,
            (from, to),
            self.config.rows_per_batch,
            &bounds.malformed,
            self.config.mode,
        )?;
        self.rows_read.fetch_add(built.rows, Ordering::Relaxed);
        self.malformed_read += built.malformed;
        Ok(batch_stream(built.batches))
    }

    async fn commit(&mut self, end: &Offset) -> Result<()> {
        self.committed = RowsOffset::of(end)?;
        Ok(())
    }

    fn metrics(&self) -> SourceMetrics {
        let mut m = SourceMetrics::new();
        m.insert(
            "rowsRead".into(),
            self.rows_read.load(Ordering::Relaxed).into(),
        );
        m.insert("committedRows".into(), self.committed.into());
        if let Some(latest) = self.last_latest {
            m.insert(
                "rowsBehindLatest".into(),
                latest.saturating_sub(self.last_planned_end).into(),
            );
        }
        if matches!(self.config.supply, RowSupply::Control(_)) {
            m.insert("malformedRecords".into(), self.malformed_read.into());
            self.data_loss.write_metrics(&mut m);
        }
        m
    }

    async fn stop(&mut self) -> Result<()> {
        if let Some(stream) = self.stream.take() {
            stream.stop().await;
        }
        self.stopped = true;
        Ok(())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSource> {
        Some(self)
    }
}

#[async_trait]
impl StreamingSource for GeneratorSource {
    async fn start_stream(&mut self, start: &Offset, queue: ChunkSender) -> Result<()> {
        self.check_running()?;
        if let Some(previous) = self.stream.take() {
            previous.stop().await;
        }
        let from = RowsOffset::of(start)?;
        let setup = ReaderSetup {
            config: self.config.clone(),
            target: self.identity.target.clone(),
            schema: self.schema.clone(),
            partitioning: self.partitioning.clone(),
            rows_read: self.rows_read.clone(),
        };
        self.stream = Some(RunningStream::start(setup, from, queue));
        Ok(())
    }

    async fn stop_stream(&mut self) -> Result<()> {
        if let Some(stream) = self.stream.take() {
            stream.stop().await;
        }
        Ok(())
    }

    fn end_offset(
        &self,
        start: &Offset,
        delivered: &BTreeMap<String, serde_json::Value>,
    ) -> Result<Offset> {
        match delivered.get(STREAM_PARTITION) {
            None => Ok(start.clone()),
            Some(position) => match position.as_u64() {
                Some(rows) => RowsOffset::at(rows.max(RowsOffset::of(start)?)),
                None => Err(Error::new(
                    ErrorCode::SourceRead,
                    format!("generator stream position {position} is not a row count"),
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Control;
    use arrow_array::{Array, StringArray};
    use tributary_sdk::{Options, SourceFactoryExt};

    fn source(opts: &[(&str, &str)]) -> Box<dyn Source> {
        let o: Options = opts.iter().copied().collect();
        GeneratorSourceFactory
            .create(&o, &ConnectorContext::default())
            .unwrap()
    }

    fn control_file(name: &str, control: &Control) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("generator-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.json");
        control.write(&path).unwrap();
        path
    }

    #[tokio::test]
    async fn limits_ranges_and_determinism() {
        let mut s = source(&[
            ("totalRows", "25"),
            ("rowsPerBatch", "10"),
            ("maxRowsPerTrigger", "12"),
        ]);
        let start = s.initial_offset().await.unwrap();
        let limit = s.default_read_limit();
        assert_eq!(limit, ReadLimit::MaxRows(12));
        let end = s.latest_offset(&start, &limit).await.unwrap();
        assert_eq!(end.to_json_string(), r#"{"rows":12}"#);
        let a = s.read(&start, &end).await.unwrap();
        let b = s.read(&start, &end).await.unwrap();
        assert_eq!(a, b);
        assert_eq!(a.iter().map(|b| b.num_rows()).sum::<usize>(), 12);
        let v = a[1]
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(v.value(1), "row-11");
        let e2 = s.latest_offset(&end, &limit).await.unwrap();
        let e3 = s.latest_offset(&e2, &limit).await.unwrap();
        assert_eq!(e3.to_json_string(), r#"{"rows":25}"#);
        assert_eq!(s.latest_offset(&e3, &limit).await.unwrap(), e3);
        let err = s
            .read(&e3, &Offset::parse(r#"{"rows":26}"#).unwrap())
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::SourceRead);
    }

    #[tokio::test]
    async fn the_description_and_the_source_agree_on_the_identity() {
        let o: Options = [("totalRows", "7"), ("partitions", "2"), ("assign", "[1]")]
            .into_iter()
            .collect();
        let d = SourceFactoryExt::describe(&GeneratorSourceFactory, &o).unwrap();
        assert_eq!(d.identity.target, "rows:7;partitions:2;assign:1");
        let s = GeneratorSourceFactory
            .create(&o, &ConnectorContext::default())
            .unwrap();
        assert_eq!(s.identity(), d.identity);
    }

    #[tokio::test]
    async fn assigned_partitions_only() {
        let mut s = source(&[("totalRows", "9"), ("partitions", "3"), ("assign", "[1]")]);
        let start = s.initial_offset().await.unwrap();
        let end = s
            .latest_offset(&start, &ReadLimit::MaxRows(2))
            .await
            .unwrap();
        assert_eq!(end.to_json_string(), r#"{"rows":5}"#);
        let ids: Vec<i64> = s.read(&start, &end).await.unwrap()[0]
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap()
            .values()
            .to_vec();
        assert_eq!(ids, vec![1, 4]);
    }

    #[tokio::test]
    async fn trimmed_rows_are_data_loss_and_available_now_is_bounded() {
        let path = control_file(
            "loss",
            &Control {
                earliest: 0,
                latest: 4,
                ..Default::default()
            },
        );
        let p = path.to_str().unwrap();
        let mut strict = source(&[("controlFile", p)]);
        let mut lenient = source(&[("controlFile", p), ("failOnDataLoss", "false")]);
        let start = strict.initial_offset().await.unwrap();
        let end = strict.latest_offset(&start, &ReadLimit::All).await.unwrap();
        lenient.prepare_available_now().await.unwrap();
        Control {
            earliest: 3,
            latest: 6,
            ..Default::default()
        }
        .write(&path)
        .unwrap();
        let e = strict.read(&start, &end).await.unwrap_err();
        assert_eq!(
            e.code(),
            ErrorCode::DataLoss(DataLossKind::OffsetOutOfRange)
        );
        let rows: usize = lenient
            .read(&start, &end)
            .await
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(rows, 1);
        assert_eq!(
            lenient.metrics()["dataLoss.DATA_LOSS.START_OFFSET_RESET"],
            1
        );
        // The availableNow run ends where the file said when it was prepared.
        assert_eq!(
            lenient.latest_offset(&end, &ReadLimit::All).await.unwrap(),
            end
        );
        assert_eq!(
            strict
                .latest_offset(&end, &ReadLimit::All)
                .await
                .unwrap()
                .to_json_string(),
            r#"{"rows":6}"#
        );
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[tokio::test]
    async fn the_stream_delivers_appended_rows_and_ends_where_delivered() {
        let path = control_file(
            "stream",
            &Control {
                latest: 5,
                ..Default::default()
            },
        );
        let mut s = source(&[
            ("controlFile", path.to_str().unwrap()),
            ("rowsPerBatch", "4"),
        ]);
        let start = RowsOffset::at(1).unwrap();
        let (tx, mut rx) = tributary_sdk::chunk_queue(8);
        s.as_streaming()
            .unwrap()
            .start_stream(&start, tx)
            .await
            .unwrap();
        let mut delivered = BTreeMap::new();
        let mut ids = Vec::new();
        for latest in [5, 9] {
            Control {
                latest,
                ..Default::default()
            }
            .write(&path)
            .unwrap();
            while ids.len() < latest as usize - 1 {
                let c = rx.recv().await.unwrap().unwrap();
                let col = c.batch.column(0);
                let a = col
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap();
                ids.extend(a.values().iter().copied());
                delivered.insert(c.partition, c.position);
            }
        }
        assert_eq!(ids, (1..9).collect::<Vec<_>>());
        let end = s
            .as_streaming()
            .unwrap()
            .end_offset(&start, &delivered)
            .unwrap();
        assert_eq!(end.to_json_string(), r#"{"rows":9}"#);
        s.as_streaming().unwrap().stop_stream().await.unwrap();
        assert!(rx.recv().await.is_none(), "the reader dropped its queue");
        assert_eq!(s.metrics()["rowsRead"], 8);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[tokio::test]
    async fn latest_needs_an_end() {
        let o: Options = [("startingOffsets", "latest")].into_iter().collect();
        let e = GeneratorSourceFactory.validate(&o).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        let mut s = source(&[("startingOffsets", "LATEST"), ("totalRows", "7")]);
        assert_eq!(
            s.initial_offset().await.unwrap().to_json_string(),
            r#"{"rows":7}"#
        );
    }
}
