//! The console sink: prints micro-batches to standard output.
//!
//! Options (Spark's console sink names): `format` = `json` (JSON lines, default) or `table`;
//! `numRows` = rows printed per batch (default 20); `truncate` = cut table cells to 20 characters
//! (default true). A replayed batch is printed again: at-least-once. In real-time mode records
//! are printed as they arrive.

use std::io::Write;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use tributary_sdk::options::decl::{self, Defaulted, Flag, Int, OneOf, OptionDecl};
use tributary_sdk::options::Conflict;
use tributary_sdk::{
    Ack, ConnectorContext, Delivery, Error, ErrorCode, OptionSpec, ParsedOptions, PartWriter,
    Result, Sink, SinkConnector, StreamingSink,
};

/// Output layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleFormat {
    /// One JSON object per row.
    Json,
    /// A pretty table per batch, with a batch header as Spark prints it.
    Table,
}

/// Prints batches to stdout (or any writer).
pub struct ConsoleSink {
    format: ConsoleFormat,
    num_rows: usize,
    truncate: bool,
    out: Box<dyn Write + Send>,
    pending: Option<Pending>,
}

impl std::fmt::Debug for ConsoleSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSink")
            .field("format", &self.format)
            .field("num_rows", &self.num_rows)
            .finish()
    }
}

impl ConsoleSink {
    /// A sink writing to stdout.
    pub fn new(format: ConsoleFormat, num_rows: usize) -> Self {
        Self::to_writer(format, num_rows, Box::new(std::io::stdout()))
    }

    /// A sink writing to any writer (tests capture output this way).
    pub fn to_writer(format: ConsoleFormat, num_rows: usize, out: Box<dyn Write + Send>) -> Self {
        ConsoleSink {
            format,
            num_rows,
            truncate: true,
            out,
            pending: None,
        }
    }

    /// Keeps the rows of `part` that are still to be shown (`numRows` per batch).
    fn keep(&self, shown: &mut Vec<RecordBatch>, part: &RecordBatch) {
        let have: usize = shown.iter().map(|b| b.num_rows()).sum();
        let n = part.num_rows().min(self.num_rows.saturating_sub(have));
        if n > 0 {
            shown.push(part.slice(0, n));
        }
    }

    fn render(&self, batch_id: u64, batches: &[RecordBatch]) -> Result<Vec<u8>> {
        let mut shown = Vec::new();
        for b in batches {
            self.keep(&mut shown, b);
        }
        let total: usize = batches.iter().map(|b| b.num_rows()).sum();
        self.render_shown(batch_id, shown, total)
    }

    fn render_shown(
        &self,
        batch_id: u64,
        shown: Vec<RecordBatch>,
        total: usize,
    ) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        match self.format {
            ConsoleFormat::Json => {
                let mut w = arrow::json::LineDelimitedWriter::new(&mut buf);
                let refs: Vec<&RecordBatch> = shown.iter().collect();
                w.write_batches(&refs).map_err(write_err)?;
                w.finish().map_err(write_err)?;
            }
            ConsoleFormat::Table => {
                let shown = if self.truncate {
                    shown
                        .iter()
                        .map(truncate_cells)
                        .collect::<Result<Vec<_>>>()?
                } else {
                    shown
                };
                let table =
                    arrow::util::pretty::pretty_format_batches(&shown).map_err(write_err)?;
                let dashes = "-".repeat(44);
                buf.extend_from_slice(
                    format!("{dashes}\nBatch: {batch_id}\n{dashes}\n{table}\n").as_bytes(),
                );
                if total > self.num_rows {
                    buf.extend_from_slice(
                        format!("only showing top {} rows\n", self.num_rows).as_bytes(),
                    );
                }
            }
        }
        Ok(buf)
    }
}

/// Renders every column as text and cuts cells longer than 20 characters, as Spark's
/// `show(truncate = true)` does.
fn truncate_cells(batch: &RecordBatch) -> Result<RecordBatch> {
    use arrow::array::{Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    use std::sync::Arc;
    let opts = FormatOptions::default().with_null("null");
    let mut cols = Vec::with_capacity(batch.num_columns());
    for col in batch.columns() {
        let f = ArrayFormatter::try_new(col.as_ref(), &opts)?;
        let cut: StringArray = (0..col.len())
            .map(|i| {
                if col.is_null(i) {
                    return None;
                }
                let v = f.value(i).to_string();
                Some(if v.chars().count() > 20 {
                    format!("{}...", v.chars().take(17).collect::<String>())
                } else {
                    v
                })
            })
            .collect();
        cols.push(Arc::new(cut) as Arc<dyn Array>);
    }
    let schema = Schema::new(
        batch
            .schema()
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), DataType::Utf8, true))
            .collect::<Vec<_>>(),
    );
    Ok(RecordBatch::try_new(Arc::new(schema), cols)?)
}

fn write_err(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(ErrorCode::SinkWrite, "console sink cannot format the batch").with_cause(e)
}

#[async_trait]
impl Sink for ConsoleSink {
    fn delivery(&self) -> Delivery {
        Delivery::AtLeastOnce
    }

    async fn write(&mut self, batch_id: u64, batches: &[RecordBatch]) -> Result<()> {
        let buf = self.render(batch_id, batches)?;
        self.out.write_all(&buf)?;
        self.out.flush()?;
        Ok(())
    }

    async fn open(&mut self, _schema: SchemaRef) -> Result<()> {
        Ok(())
    }

    async fn stop(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }

    fn as_streaming(&mut self) -> Option<&mut dyn StreamingSink> {
        Some(self)
    }

    fn as_part_writer(&mut self) -> Option<&mut dyn PartWriter> {
        Some(self)
    }
}

/// A micro-batch arrives in parts: only the rows to show are kept, and the batch is printed at
/// its commit.
#[async_trait]
impl PartWriter for ConsoleSink {
    async fn begin_batch(&mut self, batch_id: u64, _schema: SchemaRef) -> Result<()> {
        self.pending = Some(Pending {
            batch_id,
            shown: Vec::new(),
            total: 0,
        });
        Ok(())
    }

    async fn write_part(&mut self, part: &RecordBatch) -> Result<()> {
        let Some(mut p) = self.pending.take() else {
            return Err(Error::new(
                ErrorCode::SinkWrite,
                "console sink got a part outside a batch (no begin_batch)",
            ));
        };
        self.keep(&mut p.shown, part);
        p.total += part.num_rows();
        self.pending = Some(p);
        Ok(())
    }

    async fn commit_batch(&mut self) -> Result<()> {
        if let Some(p) = self.pending.take() {
            let buf = self.render_shown(p.batch_id, p.shown, p.total)?;
            self.out.write_all(&buf)?;
            self.out.flush()?;
        }
        Ok(())
    }
}

/// The batch being received in parts.
struct Pending {
    batch_id: u64,
    shown: Vec<RecordBatch>,
    total: usize,
}

/// Real-time mode: each chunk of records is printed as it arrives (`numRows` per chunk).
#[async_trait]
impl StreamingSink for ConsoleSink {
    async fn write_records(&mut self, batch_id: u64, batch: &RecordBatch) -> Result<Ack> {
        self.write(batch_id, std::slice::from_ref(batch)).await?;
        Ok(Box::pin(std::future::ready(Ok(()))))
    }

    async fn end_batch(&mut self, _batch_id: u64) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}

/// Factory for the `console` sink.
#[derive(Debug, Default, Clone, Copy)]
pub struct ConsoleSinkFactory;

/// The parsed options of a `console` sink.
#[derive(Debug, Clone, Copy)]
pub struct ConsoleConfig {
    /// JSON lines or a table.
    pub format: ConsoleFormat,
    /// Rows printed per batch.
    pub num_rows: usize,
    /// Cut long table cells.
    pub truncate: bool,
}

/// `format`.
const FORMAT: OptionDecl<OneOf, Defaulted> = decl::one_of(
    "format",
    &["json", "table"],
    "How rows are printed: JSON lines or a table.",
)
.default("json");
/// `numRows`.
const NUM_ROWS: OptionDecl<Int, Defaulted> =
    decl::int("numRows", 1, i64::MAX, "Rows printed per batch.").default(20);
/// `truncate`: only shortens table cells, so refused with JSON output, where it would be ignored.
const TRUNCATE: OptionDecl<Flag, Defaulted> =
    decl::flag("truncate", "Cut table cells longer than 20 characters.")
        .default(true)
        .conflicts(&[Conflict::only_when(
            "format",
            &["table"],
            "only applies when 'format' is table",
        )]);

impl SinkConnector for ConsoleSinkFactory {
    type Config = ConsoleConfig;

    fn name(&self) -> &str {
        "console"
    }

    /// Every mode, as Spark's console sink: each batch's rows are printed as they come.
    fn output_modes(&self) -> &'static [tributary_sdk::OutputMode] {
        &tributary_sdk::OutputMode::ALL
    }

    fn options(&self) -> Vec<OptionSpec> {
        decl::specs(&[&FORMAT, &NUM_ROWS, &TRUNCATE])
    }

    fn parse(&self, p: &ParsedOptions) -> Result<ConsoleConfig> {
        let format = match FORMAT.get(p)? {
            "table" => ConsoleFormat::Table,
            _ => ConsoleFormat::Json,
        };
        Ok(ConsoleConfig {
            format,
            num_rows: NUM_ROWS.get(p)? as usize,
            truncate: TRUNCATE.get(p)?,
        })
    }

    fn build(&self, config: ConsoleConfig, _context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        let mut sink = ConsoleSink::new(config.format, config.num_rows);
        sink.truncate = config.truncate;
        Ok(Box::new(sink))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::{Arc, Mutex};
    use tributary_sdk::{Options, SinkFactoryExt};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    None,
                    Some("a very long name that goes on"),
                ])),
            ],
        )
        .unwrap()
    }

    #[tokio::test]
    async fn json_lines_respect_num_rows() {
        let out = Shared::default();
        let mut s = ConsoleSink::to_writer(ConsoleFormat::Json, 2, Box::new(out.clone()));
        s.write(0, &[batch()]).await.unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "{\"id\":1,\"name\":\"a\"}\n{\"id\":2}\n");
    }

    #[tokio::test]
    async fn table_has_batch_header_and_truncates() {
        let out = Shared::default();
        let mut s = ConsoleSink::to_writer(ConsoleFormat::Table, 20, Box::new(out.clone()));
        s.write(7, &[batch()]).await.unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("Batch: 7"), "{text}");
        assert!(text.contains("a very long name ..."), "{text}");
    }

    #[test]
    fn bad_format_is_refused_with_allowed_values() {
        let o: Options = [("format", "xml")].into_iter().collect();
        let e = ConsoleSinkFactory
            .create(&o, &ConnectorContext::default())
            .unwrap_err();
        assert!(e.to_string().contains("one of json, table"), "{e}");
    }

    #[test]
    fn truncate_without_table_is_refused() {
        let o: Options = [("truncate", "false")].into_iter().collect();
        let e = ConsoleSinkFactory.validate(&o).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert!(e.to_string().contains("'truncate'"), "{e}");
        let o: Options = [("truncate", "false"), ("format", "table")]
            .into_iter()
            .collect();
        ConsoleSinkFactory.validate(&o).unwrap();
    }
}
