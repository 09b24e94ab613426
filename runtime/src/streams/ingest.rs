//! The `stream_ingestion` stage: shapes a (decoded) batch of a stream's source into the columns
//! of the stream's ingestion table. Where each column comes from is the source's: its
//! description names the key and payload columns, its [`StreamBinding`] the time and metadata
//! columns.
//!
//! | column | from |
//! |---|---|
//! | `key` | the source's key column (decoded, else a string; null when it has none) |
//! | `value` | the source's payload column (decoded, else a string) |
//! | `stream_record_timestamp` (timestamp µs, UTC) | [`StreamBinding::time_column`] |
//! | `record_source` | `"stream"` |
//! | metadata (a `kafka_offset`, say) | [`StreamBinding::metadata_columns`], cast to their types |
//!
//! A key or value without a schema is a plain string: bytes that are not UTF-8 become null and
//! are counted as `malformed.invalidUtf8` (permissive, as the decoders are).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BinaryArray, LargeBinaryArray, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use async_trait::async_trait;
use tributary_sdk::{
    Error, ErrorCode, IngestionColumn, OptionSpec, Options, Result, SecretStore, SourceDescription,
    SourceMetrics, Stage, StageFactory, StreamBinding,
};

use super::binding::{or_list, stream_sources};
pub use super::binding::{RECORD_SOURCE, STREAM_RECORD_TIMESTAMP};
use crate::registry::Registry;

/// The stage name in a pipeline's stage list.
pub const STAGE_NAME: &str = "stream_ingestion";
/// The type of `stream_record_timestamp`: Delta's TIMESTAMP (microseconds, UTC).
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Where each ingestion column comes from in one connector's records.
#[derive(Debug, Clone)]
struct Layout {
    time: String,
    metadata: Vec<IngestionColumn>,
}

/// Builds [`IngestionStage`]s (registered by [`super::stream_registry`], not by pipeline
/// files), for the sources of a registry that can back a stream.
#[derive(Debug, Clone, Default)]
pub struct IngestionStageFactory {
    /// Stream bindings by source connector name (lower case).
    bindings: BTreeMap<String, Arc<dyn StreamBinding>>,
}

impl IngestionStageFactory {
    /// A factory for the sources of `registry` that have a stream binding.
    pub fn new(registry: &Registry) -> Self {
        let bindings = stream_sources(registry)
            .into_iter()
            .filter_map(|n| {
                let b = registry.source(&n).ok()?.stream_binding()?;
                Some((n.to_ascii_lowercase(), b))
            })
            .collect();
        IngestionStageFactory { bindings }
    }

    fn bind(&self, source: &SourceDescription) -> Result<Binding> {
        let connector = source.identity.connector.as_str();
        let binding = self
            .bindings
            .get(&connector.to_ascii_lowercase())
            .ok_or_else(|| {
                let known: Vec<String> = self.bindings.keys().cloned().collect();
                Error::new(
                    ErrorCode::InvalidPipeline,
                    format!("a stream reads {}, not '{connector}'", or_list(&known)),
                )
                .with_context("connector", connector)
            })?;
        bind(source, binding.as_ref())
    }
}

struct Binding {
    layout: Layout,
    key: Option<String>,
    value: String,
}

fn bind(source: &SourceDescription, binding: &dyn StreamBinding) -> Result<Binding> {
    let connector = source.identity.connector.as_str();
    let layout = Layout {
        time: binding.time_column().to_string(),
        metadata: binding.metadata_columns(),
    };
    let value = source.payload_column.clone().ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidPipeline,
            format!("source '{connector}' names no payload column"),
        )
    })?;
    Ok(Binding {
        layout,
        key: source.key_column.clone(),
        value,
    })
}

impl StageFactory for IngestionStageFactory {
    fn name(&self) -> &str {
        STAGE_NAME
    }

    fn options(&self) -> Vec<OptionSpec> {
        Vec::new()
    }

    fn validate(&self, options: &Options, source: &SourceDescription) -> Result<()> {
        OptionSpec::validate_all(&self.options(), options, STAGE_NAME)?;
        self.bind(source).map(|_| ())
    }

    fn create(
        &self,
        options: &Options,
        source: &SourceDescription,
        _secrets: &dyn SecretStore,
    ) -> Result<Box<dyn Stage>> {
        self.validate(options, source)?;
        let b = self.bind(source)?;
        Ok(Box::new(IngestionStage {
            layout: b.layout,
            key: b.key,
            value: b.value,
            output: None,
            invalid_utf8: 0,
        }))
    }
}

/// Shapes batches into the ingestion table's columns.
#[derive(Debug)]
pub struct IngestionStage {
    layout: Layout,
    key: Option<String>,
    value: String,
    output: Option<SchemaRef>,
    invalid_utf8: u64,
}

fn is_bytes(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

/// The ingestion type of a key/value column: strings for raw bytes, else as decoded.
fn shaped_type(t: &DataType) -> DataType {
    if is_bytes(t) {
        DataType::Utf8
    } else {
        t.clone()
    }
}

fn missing(column: &str, input: &Schema) -> Error {
    Error::new(
        ErrorCode::Schema,
        format!(
            "the stream's source batch has no column '{column}' (columns: {})",
            input
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .with_context("field", column)
}

impl IngestionStage {
    fn text_of(&mut self, array: &ArrayRef) -> Result<ArrayRef> {
        let strings: Vec<Option<&str>> = match array.data_type() {
            DataType::Binary => collect(
                array.as_any().downcast_ref::<BinaryArray>(),
                &mut self.invalid_utf8,
            ),
            DataType::LargeBinary => collect(
                array.as_any().downcast_ref::<LargeBinaryArray>(),
                &mut self.invalid_utf8,
            ),
            _ => {
                let cast_to = cast(array, &DataType::Binary).map_err(schema_error)?;
                let text = self.text_of(&cast_to)?;
                return Ok(text);
            }
        };
        Ok(Arc::new(StringArray::from(strings)))
    }
}

/// The values of a binary array as UTF-8 text; invalid text is null and counted.
fn collect<'a, T>(array: Option<&'a T>, invalid: &mut u64) -> Vec<Option<&'a str>>
where
    &'a T: IntoIterator<Item = Option<&'a [u8]>>,
{
    let Some(array) = array else {
        return Vec::new();
    };
    array
        .into_iter()
        .map(|v| {
            v.and_then(|b| match std::str::from_utf8(b) {
                Ok(s) => Some(s),
                Err(_) => {
                    *invalid += 1;
                    None
                }
            })
        })
        .collect()
}

fn schema_error(e: arrow::error::ArrowError) -> Error {
    Error::new(
        ErrorCode::Schema,
        "cannot shape the stream's batch into the ingestion table's columns",
    )
    .with_cause(e)
}

#[async_trait]
impl Stage for IngestionStage {
    async fn open(&mut self, input: SchemaRef) -> Result<SchemaRef> {
        let mut fields = Vec::new();
        match &self.key {
            Some(k) => {
                let f = input.field_with_name(k).map_err(|_| missing(k, &input))?;
                fields.push(Field::new("key", shaped_type(f.data_type()), true));
            }
            None => fields.push(Field::new("key", DataType::Utf8, true)),
        }
        let f = input
            .field_with_name(&self.value)
            .map_err(|_| missing(&self.value, &input))?;
        fields.push(Field::new("value", shaped_type(f.data_type()), true));
        input
            .field_with_name(&self.layout.time)
            .map_err(|_| missing(&self.layout.time, &input))?;
        fields.push(Field::new(STREAM_RECORD_TIMESTAMP, timestamp_type(), true));
        fields.push(Field::new(RECORD_SOURCE, DataType::Utf8, false));
        for c in &self.layout.metadata {
            input
                .field_with_name(&c.source)
                .map_err(|_| missing(&c.source, &input))?;
            fields.push(Field::new(&c.column, c.data_type.clone(), true));
        }
        let schema = Arc::new(Schema::new(fields));
        self.output = Some(schema.clone());
        Ok(schema)
    }

    async fn apply(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let schema = self.output.clone().ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "the stream_ingestion stage was applied before it was opened",
            )
        })?;
        let input = batch.schema();
        let column = |name: &str| -> Result<ArrayRef> {
            batch
                .column_by_name(name)
                .cloned()
                .ok_or_else(|| missing(name, &input))
        };
        let rows = batch.num_rows();
        let shape = |this: &mut Self, array: ArrayRef| -> Result<ArrayRef> {
            if is_bytes(array.data_type()) {
                this.text_of(&array)
            } else {
                Ok(array)
            }
        };
        let key = match self.key.clone() {
            Some(k) => {
                let a = column(&k)?;
                shape(self, a)?
            }
            None => arrow::array::new_null_array(&DataType::Utf8, rows),
        };
        let value = {
            let a = column(&self.value.clone())?;
            shape(self, a)?
        };
        let time = cast(&column(&self.layout.time)?, &timestamp_type()).map_err(schema_error)?;
        let record_source: ArrayRef = Arc::new(StringArray::from(vec!["stream"; rows]));
        let mut columns = vec![key, value, time, record_source];
        for c in &self.layout.metadata {
            columns.push(cast(&column(&c.source)?, &c.data_type).map_err(schema_error)?);
        }
        // A decoded column's type may gain fields mid-run (a new registry version): keep the
        // batch's own types for key and value.
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| {
                Field::new(
                    f.name(),
                    c.data_type().clone(),
                    f.is_nullable() || c.null_count() > 0,
                )
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(schema_error)
    }

    fn metrics(&self) -> SourceMetrics {
        let mut m = SourceMetrics::new();
        if self.invalid_utf8 > 0 {
            m.insert(
                "malformed.invalidUtf8".to_string(),
                self.invalid_utf8.into(),
            );
        }
        m
    }
}
