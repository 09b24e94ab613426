//! A `transformWithState`-style processor embedded in a pipeline: the coffee orders of
//! `examples/data` → per store, a running revenue (value state), its last three items (list
//! state) and a count per item (map state) → console. A store without an order for 30 s of
//! processing time gets a `closed` row and is forgotten (a timer).
//!
//! ```text
//! cargo run -p tributary-runtime --example transform_with_state
//! ```
//!
//! The state lives in the checkpoint (`examples/out/transform-with-state`): run it again and
//! every store continues where it was, with no new rows until new files arrive.

use std::sync::Arc;

use arrow::array::{Array, AsArray, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, SchemaRef};
use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::{PipelineSpec, StageSpec};
use tributary_runtime::registry::Registry;
use tributary_sdk::{EnvSecretStore, Error, ErrorCode, Options, Result};
use tributary_transform::processor::{KeyState, ProcessorStageFactory, StatefulProcessor};

const PIPELINE: &str = r#"
name = "store-activity"
checkpoint = "examples/out/transform-with-state"
[source]
connector = "files"
options = { path = "examples/data", "cloudFiles.format" = "json", "cloudFiles.maxFilesPerTrigger" = 2, schema = "order_id BIGINT, store STRING, item STRING, quantity BIGINT, price DOUBLE, ordered_at TIMESTAMP" }
[[sink]]
connector = "console"
options = { format = "table", numRows = 20, truncate = false }
[trigger]
kind = "availableNow"
"#;

const IDLE_MS: i64 = 30_000;

/// Per store: revenue, last three items, orders per item; `closed` after 30 s idle.
struct StoreActivity;

fn arrow_err(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, e.to_string())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl StoreActivity {
    fn emit(
        &self,
        store: &RecordBatch,
        revenue: f64,
        detail: String,
    ) -> Result<Option<RecordBatch>> {
        let schema = self.output_schema(&store.schema())?;
        let store = arrow::compute::cast(store.column(0), &DataType::Utf8).map_err(arrow_err)?;
        RecordBatch::try_new(
            schema,
            vec![
                store,
                Arc::new(Float64Array::from(vec![revenue])),
                Arc::new(StringArray::from(vec![detail])),
            ],
        )
        .map(Some)
        .map_err(arrow_err)
    }
}

impl StatefulProcessor for StoreActivity {
    fn output_schema(&self, _input: &SchemaRef) -> Result<SchemaRef> {
        Ok(Arc::new(Schema::new(vec![
            Field::new("store", DataType::Utf8, true),
            Field::new("revenue", DataType::Float64, false),
            Field::new("detail", DataType::Utf8, false),
        ])))
    }

    fn handle_input_rows(
        &mut self,
        key: &RecordBatch,
        rows: &RecordBatch,
        state: &mut KeyState,
    ) -> Result<Option<RecordBatch>> {
        let column = |name: &str| {
            rows.column_by_name(name)
                .cloned()
                .ok_or_else(|| Error::new(ErrorCode::Schema, format!("no column {name}")))
        };
        let items = arrow::compute::cast(&column("item")?, &DataType::Utf8).map_err(arrow_err)?;
        let quantity = column("quantity")?;
        let price = column("price")?;
        let (items, quantity, price) = (
            items.as_string::<i32>(),
            quantity.as_primitive::<Int64Type>(),
            price.as_primitive::<Float64Type>(),
        );
        let mut revenue: f64 = state.get_value("revenue")?.unwrap_or(0.0);
        let mut recent: Vec<String> = state.get_list("recent")?;
        for i in 0..rows.num_rows() {
            if items.is_null(i) || quantity.is_null(i) || price.is_null(i) {
                continue;
            }
            revenue += quantity.value(i) as f64 * price.value(i);
            let item = items.value(i);
            let n: u64 = state.get_map("orders", &item)?.unwrap_or(0);
            state.put_map("orders", &item, &(n + 1))?;
            recent.push(item.to_string());
        }
        let keep = recent.len().saturating_sub(3);
        state.put_list("recent", &recent[keep..])?;
        revenue = (revenue * 100.0).round() / 100.0;
        state.set_value("revenue", &revenue)?;
        for t in state.list_timers() {
            state.delete_timer(t);
        }
        state.register_timer(now_ms() + IDLE_MS);
        let orders: Vec<(String, u64)> = state.map_entries("orders")?;
        let orders: Vec<String> = orders.iter().map(|(i, n)| format!("{i}×{n}")).collect();
        self.emit(
            key,
            revenue,
            format!("last: {}; {}", recent[keep..].join(", "), orders.join(" ")),
        )
    }

    fn handle_expired_timer(
        &mut self,
        key: &RecordBatch,
        _expiry_ms: i64,
        state: &mut KeyState,
    ) -> Result<Option<RecordBatch>> {
        let revenue: f64 = state.get_value("revenue")?.unwrap_or(0.0);
        state.clear();
        self.emit(key, revenue, "closed".into())
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut spec = PipelineSpec::parse(PIPELINE, "transform_with_state example")?;
    spec.stages
        .push(StageSpec::registered("store_activity", Options::new()));
    let mut registry = Registry::builtin();
    registry.add_stage(Arc::new(ProcessorStageFactory::new(
        "store_activity",
        vec!["store".into()],
        || Box::new(StoreActivity),
    )));
    let mut pipeline = Pipeline::build(&spec, &registry, Arc::new(EnvSecretStore))?;
    let summary = pipeline.run().await?;
    println!("{} rows in {} batches", summary.rows, summary.batches);
    Ok(())
}
