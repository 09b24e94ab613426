//! The `SinkFixture` trait: how the sink suite prepares a destination and reads it back.
//!
//! A sink fixture creates a fresh target (a directory, a topic), turns it into the sink's own
//! options, and reads back every row the sink has written so far, each row as text. Rows are
//! compared as unordered multisets of that text, so one case serves every sink whatever its
//! layout: the fixture renders the rows the case wrote ([`SinkFixture::render`]) the same way it
//! renders the rows it reads back ([`SinkFixture::read_back`]).

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::json::LineDelimitedWriter;
use async_trait::async_trait;
use tributary_sdk::{Error, ErrorCode, Options, Result};

/// The external system behind a sink under test.
#[async_trait]
pub trait SinkFixture: Send + Sync {
    /// The fixture's name (`parquet`, `jsonlines`).
    fn name(&self) -> &str;

    /// Creates an empty target (a directory, a topic); returns its name, unique per call and
    /// starting with `hint` (or containing it, for systems that prefix names).
    async fn create_target(&mut self, hint: &str) -> Result<String>;

    /// The sink options that write to `target`.
    fn sink_options(&self, target: &str) -> Result<Options>;

    /// Every row written to `target` so far, each as text (by default one JSON object per row,
    /// see [`rows_as_json`]), in any order. Rows of an interrupted, uncommitted write must not
    /// show (a reader of the destination would not see them either).
    async fn read_back(&self, target: &str) -> Result<Vec<String>>;

    /// The text [`SinkFixture::read_back`] would return for these rows once written. The default
    /// renders each row as a JSON object with [`rows_as_json`].
    fn render(&self, batches: &[RecordBatch]) -> Result<Vec<String>> {
        rows_as_json(batches)
    }

    /// The schema the sink is opened with for rows of `rows_schema` (default: the same). A
    /// sink that takes another shape (Kafka's `value` column) maps it here and in
    /// [`SinkFixture::input`].
    fn input_schema(&self, rows_schema: SchemaRef) -> SchemaRef {
        rows_schema
    }

    /// The batches given to the sink for these rows (default: the rows themselves).
    fn input(&self, rows: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
        Ok(rows.to_vec())
    }

    /// Releases everything the fixture created.
    async fn teardown(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Each row of `batches` as one JSON object (Arrow's line-delimited JSON writer: columns in
/// schema order, null values left out).
pub fn rows_as_json(batches: &[RecordBatch]) -> Result<Vec<String>> {
    let mut writer = LineDelimitedWriter::new(Vec::new());
    for b in batches {
        writer.write(b).map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot render rows as JSON").with_cause(e)
        })?;
    }
    writer
        .finish()
        .map_err(|e| Error::new(ErrorCode::Internal, "cannot render rows as JSON").with_cause(e))?;
    let text = String::from_utf8(writer.into_inner()).map_err(|e| {
        Error::new(ErrorCode::Internal, "rows rendered as JSON are not UTF-8").with_cause(e)
    })?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}
