//! [`ProcessorStage`]: a [`StatefulProcessor`] as a pipeline stage with state, and
//! [`ProcessorStageFactory`], which registers one under a name.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::arrow::row::{RowConverter, SortField};
use tributary_sdk::{
    Error, ErrorCode, OptionSpec, Options, Result, SecretStore, SourceDescription, Stage,
    StageFactory, StageState, StateOperatorProgress,
};

use super::key_state::{Entry, KeyState};
use super::StatefulProcessor;
use crate::stateful::store::{self, changelog};

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transformWithState] {what}: {e}"),
    )
}

/// The clock processing-time timers fire by, in epoch milliseconds.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

fn wall_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    })
}

/// What [`ProcessorStage::open`] resolved.
struct Opened {
    key_columns: Vec<usize>,
    key_schema: SchemaRef,
    converter: RowConverter,
    output: SchemaRef,
}

/// A [`StatefulProcessor`] run per grouping key, its state saved with each batch's commit.
pub struct ProcessorStage {
    name: String,
    keys: Vec<String>,
    processor: Box<dyn StatefulProcessor>,
    clock: Clock,
    opened: Option<Opened>,
    /// Every key's state as of the last saved (or restored) batch and the batches since.
    held: HashMap<Box<[u8]>, Entry>,
    /// The saved size of `held` (keys and encoded entries), kept up to date by the keys that
    /// change, for `memoryUsedBytes`.
    held_bytes: u64,
    /// Keys changed or removed since the last save.
    changed: BTreeSet<Box<[u8]>>,
    /// The current batch's rows, one entry per part.
    pending: Vec<RecordBatch>,
    store: store::Store,
    progress: StateOperatorProgress,
}

impl std::fmt::Debug for ProcessorStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessorStage")
            .field("name", &self.name)
            .field("keys", &self.keys)
            .field("held", &self.held.len())
            .finish()
    }
}

/// What a key's state takes saved: its key and its encoded entry.
fn entry_bytes(key: &[u8], entry: &Entry) -> u64 {
    (key.len() + entry.encode().map_or(0, |b| b.len())) as u64
}

/// The schema the state is saved in: the key in Arrow's row format, the key's entry as JSON.
fn state_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, true),
        Field::new("entry", DataType::Binary, true),
    ]))
}

impl ProcessorStage {
    /// `processor` run for each value of the `keys` columns of the stage's input.
    pub fn new(
        name: impl Into<String>,
        keys: Vec<String>,
        processor: Box<dyn StatefulProcessor>,
    ) -> Self {
        ProcessorStage {
            name: name.into(),
            keys,
            processor,
            clock: wall_clock(),
            opened: None,
            held: HashMap::new(),
            held_bytes: 0,
            changed: BTreeSet::new(),
            pending: Vec::new(),
            store: store::Store::default(),
            progress: StateOperatorProgress {
                operator_name: "transformWithStateExec".into(),
                ..Default::default()
            },
        }
    }

    /// Timers fire by `clock` instead of the wall clock (tests).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    fn signature(&self) -> String {
        format!(
            "transformWithState {} BY [{}]",
            self.name,
            self.keys.join(", ")
        )
    }

    fn opened(&self) -> Result<&Opened> {
        self.opened
            .as_ref()
            .ok_or_else(|| internal("the stage", "used before open"))
    }

    /// The key columns of `bytes` (one key in row format) as a one-row batch.
    fn key_batch(&self, bytes: &[u8]) -> Result<RecordBatch> {
        let o = self.opened()?;
        let parser = o.converter.parser();
        let row = parser.parse(bytes);
        let columns = o
            .converter
            .convert_rows([row])
            .map_err(|e| internal("decoding a key", e))?;
        RecordBatch::try_new(Arc::clone(&o.key_schema), columns).map_err(|e| internal("a key", e))
    }

    /// Checks a handler's rows against the declared output schema.
    fn checked(&self, out: Option<RecordBatch>, into: &mut Vec<RecordBatch>) -> Result<()> {
        let Some(b) = out else { return Ok(()) };
        let want = &self.opened()?.output;
        if b.schema().fields() != want.fields() {
            return Err(Error::new(
                ErrorCode::Schema,
                format!(
                    "[transformWithState] processor '{}' emitted rows of schema {} where its output_schema is {}",
                    self.name,
                    b.schema(),
                    want
                ),
            ));
        }
        if b.num_rows() > 0 {
            into.push(
                b.with_schema(Arc::clone(want))
                    .map_err(|e| internal("the rows", e))?,
            );
        }
        Ok(())
    }

    /// Puts back a key's state after a handler ran: an empty one leaves the state.
    fn put_back(&mut self, key: Box<[u8]>, state: KeyState, before: Option<&Entry>) {
        if before == Some(&state.entry) || (before.is_none() && state.entry.is_empty()) {
            return;
        }
        self.changed.insert(key.clone());
        if let Some(b) = before {
            self.held_bytes = self.held_bytes.saturating_sub(entry_bytes(&key, b));
        }
        match state.entry.is_empty() {
            true => {
                self.held.remove(&key);
            }
            false => {
                self.held_bytes += entry_bytes(&key, &state.entry);
                self.held.insert(key, state.entry);
            }
        }
    }

    /// Runs the batch (or chunk): each key's rows in arrival order, then the timers due.
    async fn run(&mut self) -> Result<Option<RecordBatch>> {
        let changed_before = self.changed.len();
        let pending = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        if let Some(first) = pending.first() {
            let rows = concat_batches(&first.schema(), &pending)
                .map_err(|e| internal("the batch's rows", e))?;
            let o = self.opened()?;
            let columns: Vec<ArrayRef> = o
                .key_columns
                .iter()
                .map(|&i| Arc::clone(rows.column(i)))
                .collect();
            let encoded = o
                .converter
                .convert_columns(&columns)
                .map_err(|e| internal("encoding keys", e))?;
            // keys in order of their first row, each with its rows in order
            let mut order: Vec<Box<[u8]>> = Vec::new();
            let mut by_key: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
            for (i, row) in encoded.iter().enumerate() {
                let k: Box<[u8]> = row.as_ref().into();
                by_key
                    .entry(k.clone())
                    .or_insert_with(|| {
                        order.push(k);
                        Vec::new()
                    })
                    .push(i as u32);
            }
            for k in order {
                let idx = UInt32Array::from(by_key.remove(&k).unwrap_or_default());
                let key_rows =
                    take_record_batch(&rows, &idx).map_err(|e| internal("a key's rows", e))?;
                let key = self.key_batch(&k)?;
                let before = self.held.get(&k).cloned();
                let mut state = KeyState {
                    entry: before.clone().unwrap_or_default(),
                };
                let emitted = self
                    .processor
                    .handle_input_rows(&key, &key_rows, &mut state)?;
                self.checked(emitted, &mut out)?;
                self.put_back(k, state, before.as_ref());
            }
        }
        // processing-time timers due by now, earliest first per key
        let now = (self.clock)();
        let mut due: Vec<(i64, Box<[u8]>)> = self
            .held
            .iter()
            .flat_map(|(k, e)| e.timers.range(..=now).map(move |&t| (t, k.clone())))
            .collect();
        due.sort();
        for (t, k) in due {
            let before = self.held.get(&k).cloned();
            let Some(mut entry) = before.clone() else {
                continue;
            };
            if !entry.timers.remove(&t) {
                continue;
            }
            let mut state = KeyState { entry };
            let key = self.key_batch(&k)?;
            let emitted = self.processor.handle_expired_timer(&key, t, &mut state)?;
            self.checked(emitted, &mut out)?;
            self.put_back(k, state, before.as_ref());
        }
        self.progress.num_rows_total = self.held.len() as u64;
        self.progress.num_rows_updated += (self.changed.len() - changed_before) as u64;
        self.progress.memory_used_bytes = self.held_bytes;
        let output = Arc::clone(&self.opened()?.output);
        let out = concat_batches(&output, &out).map_err(|e| internal("the emitted rows", e))?;
        Ok((out.num_rows() > 0).then_some(out))
    }

    /// The whole state as a batch of [`state_schema`].
    fn snapshot(&self) -> Result<RecordBatch> {
        let mut keys: Vec<&[u8]> = self.held.keys().map(|k| k.as_ref()).collect();
        keys.sort();
        let entries = keys
            .iter()
            .map(|k| self.held[*k].encode())
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(
            state_schema(),
            vec![
                Arc::new(BinaryArray::from_iter_values(keys.iter().copied())),
                Arc::new(BinaryArray::from_iter_values(entries.iter())),
            ],
        )
        .map_err(|e| internal("the state", e))
    }
}

#[async_trait]
impl Stage for ProcessorStage {
    async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef> {
        let mut key_columns = Vec::new();
        for k in &self.keys {
            let Some((i, _)) = input.column_with_name(k) else {
                let names: Vec<&str> = input.fields().iter().map(|f| f.name().as_str()).collect();
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!(
                        "[transformWithState] processor '{}' groups by '{k}', which is not a column of its input (columns: {})",
                        self.name,
                        names.join(", ")
                    ),
                ));
            };
            key_columns.push(i);
        }
        if key_columns.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "[transformWithState] processor '{}' needs at least one grouping key column",
                    self.name
                ),
            ));
        }
        let key_schema = Arc::new(
            input
                .project(&key_columns)
                .map_err(|e| internal("keys", e))?,
        );
        let converter = RowConverter::new(
            key_schema
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )
        .map_err(|e| internal("the key columns", e))?;
        let output = self.processor.output_schema(&input)?;
        self.opened = Some(Opened {
            key_columns,
            key_schema,
            converter,
            output: Arc::clone(&output),
        });
        Ok(output)
    }

    async fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        if batch.num_rows() > 0 {
            self.pending.push(batch.clone());
        }
        Ok(RecordBatch::new_empty(Arc::clone(&self.opened()?.output)))
    }

    fn state(&mut self) -> Option<&mut dyn StageState> {
        Some(self)
    }
}

#[async_trait]
impl StageState for ProcessorStage {
    async fn restore(&mut self, dir: &Path, version: Option<u64>) -> Result<()> {
        self.store.reset(dir)?;
        self.pending.clear();
        self.changed.clear();
        self.held.clear();
        self.held_bytes = 0;
        self.progress.num_rows_updated = 0;
        if let Some(v) = version {
            let (state, _) = store::load(dir, v, &self.signature(), &state_schema())?;
            let col = |i: usize| {
                state
                    .column(i)
                    .as_any()
                    .downcast_ref::<BinaryArray>()
                    .cloned()
                    .ok_or_else(|| internal("the saved state", "is not binary"))
            };
            let (keys, entries) = (col(0)?, col(1)?);
            for i in 0..state.num_rows() {
                if keys.is_null(i) || entries.is_null(i) {
                    continue;
                }
                self.held_bytes += (keys.value(i).len() + entries.value(i).len()) as u64;
                self.held
                    .insert(keys.value(i).into(), Entry::decode(entries.value(i))?);
            }
        }
        self.progress.num_rows_total = self.held.len() as u64;
        Ok(())
    }

    async fn end_batch(&mut self) -> Result<Option<RecordBatch>> {
        self.run().await
    }

    async fn save(&mut self, dir: &Path, version: u64) -> Result<()> {
        let t = Instant::now();
        let changed = std::mem::take(&mut self.changed);
        let (mut up_keys, mut up_entries, mut gone) = (Vec::new(), Vec::new(), Vec::new());
        for k in &changed {
            match self.held.get(k) {
                Some(e) => {
                    up_keys.push(k.as_ref());
                    up_entries.push(e.encode()?);
                }
                None => gone.push(k.as_ref()),
            }
        }
        let upserts = RecordBatch::try_new(
            state_schema(),
            vec![
                Arc::new(BinaryArray::from_iter_values(up_keys)),
                Arc::new(BinaryArray::from_iter_values(up_entries.iter())),
            ],
        )
        .map_err(|e| internal("the changes", e))?;
        let deleted: Vec<ArrayRef> = vec![Arc::new(BinaryArray::from_iter_values(gone))];
        let changes = changelog::changes(&state_schema(), &upserts, &deleted)?;
        let signature = self.signature();
        let header = store::Header {
            signature: &signature,
            keys: 1,
            marks: (None, None),
        };
        let held = self.held.len();
        let mut disk = std::mem::take(&mut self.store);
        let saved = store::save(
            dir,
            version,
            &header,
            Some(changes),
            held,
            &mut disk,
            store::Full::Memory(Box::new(|| self.snapshot())),
        );
        self.store = disk;
        saved?;
        self.progress.commit_time_ms = t.elapsed().as_millis() as u64;
        self.progress.num_rows_removed = 0;
        self.progress.num_rows_updated = 0;
        Ok(())
    }

    fn progress(&self) -> Vec<StateOperatorProgress> {
        vec![self.progress.clone()]
    }

    /// Real-time mode runs each chunk as a batch: its keys' rows, then the timers due.
    fn real_time_refusal(&self) -> Option<String> {
        None
    }

    async fn end_chunk(&mut self) -> Result<Option<RecordBatch>> {
        self.run().await
    }

    /// Timers fire at batch ends, so a held timer asks for batches without input.
    fn needs_no_data_batch(&self) -> bool {
        let now = (self.clock)();
        self.held
            .values()
            .any(|e| e.timers.first().is_some_and(|&t| t <= now))
    }
}

/// Registers a [`StatefulProcessor`] as a stage named `name` (a `StageSpec::registered` of
/// that name in a pipeline's stage list runs it), a new processor per pipeline run.
pub struct ProcessorStageFactory {
    name: String,
    keys: Vec<String>,
    make: Arc<dyn Fn() -> Box<dyn StatefulProcessor> + Send + Sync>,
    clock: Option<Clock>,
}

impl std::fmt::Debug for ProcessorStageFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessorStageFactory")
            .field("name", &self.name)
            .field("keys", &self.keys)
            .finish()
    }
}

impl ProcessorStageFactory {
    /// Stages named `name`, grouping by `keys`, each with the processor `make` returns.
    pub fn new(
        name: impl Into<String>,
        keys: Vec<String>,
        make: impl Fn() -> Box<dyn StatefulProcessor> + Send + Sync + 'static,
    ) -> Self {
        ProcessorStageFactory {
            name: name.into(),
            keys,
            make: Arc::new(make),
            clock: None,
        }
    }

    /// Its stages' timers fire by `clock` instead of the wall clock (tests).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }
}

impl StageFactory for ProcessorStageFactory {
    fn name(&self) -> &str {
        &self.name
    }

    fn options(&self) -> Vec<OptionSpec> {
        Vec::new()
    }

    fn validate(&self, options: &Options, _source: &SourceDescription) -> Result<()> {
        match options.iter().next() {
            None => Ok(()),
            Some((k, _)) => Err(Error::new(
                ErrorCode::UnknownOption,
                format!(
                    "[transformWithState] processor '{}' takes no options; '{k}' was given",
                    self.name
                ),
            )
            .with_context("option", k)),
        }
    }

    fn create(
        &self,
        options: &Options,
        source: &SourceDescription,
        _secrets: &dyn SecretStore,
    ) -> Result<Box<dyn Stage>> {
        self.validate(options, source)?;
        let stage = ProcessorStage::new(self.name.clone(), self.keys.clone(), (self.make)());
        Ok(Box::new(match &self.clock {
            Some(c) => stage.with_clock(Arc::clone(c)),
            None => stage,
        }))
    }
}
