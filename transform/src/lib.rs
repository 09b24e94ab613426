//! Stateless SQL between a source and its sinks (`[transform] sql = "SELECT ... FROM source"`),
//! run with DataFusion: planned once at start, fed batch by batch.
//!
//! The stream is the table `source` (its schema is the source's, after decoding: a decoded
//! `value` struct is addressable as `value.field` or `value['field']`). Static tables declared
//! with `[[transform.table]]` (Parquet, CSV, Delta) are read once at start and joined as
//! broadcast tables. Stateless operators run on each part (see `allowlist`): projections,
//! casts, filters, UNNEST, UNION ALL of the stream with itself, and joins of the stream with
//! static tables that preserve the stream's rows. An aggregation at the top of the query
//! (`GROUP BY` with `count`, `sum`, `min`, `max`, `avg`, `bool_and`, `bool_or`, and `HAVING`)
//! keeps its groups as state across batches, saved with each batch's commit, and emits in
//! Spark's `update`, `complete` or (with a watermark and an event-time window) `append` output
//! mode (`[transform] outputMode`; see `stateful`); its keys may be tumbling or sliding
//! `window(ts, ...)` or a `session_window(ts, gap)`. `[transform] dropDuplicates` and
//! `dropDuplicatesWithinWatermark` deduplicate the stream before the query, keys kept as state.
//! Window functions, DISTINCT, ORDER BY, LIMIT, aggregations elsewhere in the query and
//! stream-stream joins are refused at start with the operator named.
//! For what SQL cannot say, [`processor`] runs a Rust `StatefulProcessor` per key with value,
//! list and map state and timers (Spark's `transformWithState`).
//! `CAST(binary AS STRING)` never fails, as in Spark: invalid UTF-8 becomes U+FFFD.
//! User-defined scalar functions ([`tributary_sdk::ScalarFunction`], from an embedding program
//! or a plugin) are added with [`SqlTransform::with_functions`] and called by name.
//!
//! ```no_run
//! # async fn demo(input: arrow_schema::SchemaRef, batch: arrow_array::RecordBatch) -> tributary_sdk::Result<()> {
//! use tributary_sdk::Stage;
//! use tributary_transform::{SqlTransform, TableFormat, TransformSpec};
//!
//! let spec = TransformSpec::new("SELECT CAST(key AS STRING) AS k, d.name FROM source JOIN dim d ON d.id = CAST(key AS STRING)")
//!     .with_table("dim", "dim.parquet", TableFormat::Parquet);
//! let mut transform = SqlTransform::new(spec)?; // no I/O: the SQL parses, tables are named
//! let output_schema = transform.open(input).await?; // planned once, dim loaded once
//! let out = transform.apply(&batch).await?; // per batch: the same plan executed again
//! # let _ = (output_schema, out); Ok(()) }
//! ```

mod allowlist;
mod error;
mod lossy_cast;
pub mod processor;
mod source_table;
mod spec;
mod stateful;
mod static_tables;
mod transform;
mod udf;

pub use spec::{
    StateStore, StateStoreProvider, StaticTable, TableFormat, TransformSpec, Watermark,
};
#[cfg(feature = "bench")]
#[doc(hidden)]
pub use stateful::aggregation::{bench_cold_partial, bench_regroup};
pub use stateful::store::{
    describe as describe_state, stored_versions, OperatorState, StoredVersion,
};
pub use transform::SqlTransform;

/// The name of the stream in the query.
pub const SOURCE_TABLE: &str = "source";
