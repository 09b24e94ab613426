//! The backfill check and MERGE of a stream (feature `delta`): reads the record-time bounds of
//! the backfill source and of the ingestion table's stream rows, applies the overlap rule
//! ([`super::backfill::decide`]) and runs `tributary_sinks::delta::merge_backfill_with` when it
//! says so, then stores the new state in the catalog.
//!
//! The MERGE carries the Delta transaction id `tributary-backfill-<stream id>`: a crash after its
//! commit and before the catalog update is followed by a re-run that finds the id in the table
//! and inserts nothing.

use std::collections::HashMap;

use arrow::array::{Array, TimestampMicrosecondArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, TimeUnit};
use chrono::{DateTime, SecondsFormat, Utc};
use tributary_sdk::{Error, ErrorCode, Result};
use tributary_sinks::delta::deltalake;
use tributary_sinks::delta::{merge_backfill_with, MergeOptions};

use deltalake::datafusion::functions_aggregate::expr_fn::{max, min};
use deltalake::datafusion::prelude::{col, lit, SessionContext};

use super::backfill::{decide, BackfillState, BackfillStatus, Clock, Decision};
use super::binding::{RECORD_SOURCE, STREAM_RECORD_TIMESTAMP};
use super::catalog::Catalog;

fn query_error(location: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(
        ErrorCode::SourceRead,
        format!("cannot read the stream_record_timestamp bounds of the Delta table at {location}"),
    )
    .with_context("path", location)
    .with_cause(e)
}

/// `min` (or `max`) of `stream_record_timestamp` in the table at `location`, of the stream rows
/// only when `stream_rows`; `Ok(None)` when there is no table or no row.
pub async fn timestamp_bound(
    location: &str,
    want_max: bool,
    stream_rows: bool,
) -> Result<Option<DateTime<Utc>>> {
    let url = tributary_sinks::delta::table::table_url(location)?;
    let table = tributary_sinks::delta::table::load_table(&url, &HashMap::new(), location).await?;
    if table.version().is_none() {
        return Ok(None);
    }
    let provider = table
        .table_provider()
        .await
        .map_err(|e| query_error(location, e))?;
    let ctx = SessionContext::new();
    let mut df = ctx
        .read_table(provider)
        .map_err(|e| query_error(location, e))?;
    if stream_rows {
        df = df
            .filter(col(RECORD_SOURCE).eq(lit("stream")))
            .map_err(|e| query_error(location, e))?;
    }
    let agg = if want_max {
        max(col(STREAM_RECORD_TIMESTAMP))
    } else {
        min(col(STREAM_RECORD_TIMESTAMP))
    };
    let batches = df
        .aggregate(vec![], vec![agg.alias("bound")])
        .map_err(|e| query_error(location, e))?
        .collect()
        .await
        .map_err(|e| query_error(location, e))?;
    let Some(batch) = batches.first().filter(|b| b.num_rows() > 0) else {
        return Ok(None);
    };
    let micros = cast(
        batch.column(0),
        &DataType::Timestamp(TimeUnit::Microsecond, None),
    )
    .map_err(|e| query_error(location, e))?;
    let Some(micros) = micros.as_any().downcast_ref::<TimestampMicrosecondArray>() else {
        return Ok(None);
    };
    if micros.is_null(0) {
        return Ok(None);
    }
    Ok(DateTime::<Utc>::from_timestamp_micros(micros.value(0)))
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Checks a stream's backfill once and runs the MERGE when the rule says so; returns the stored
/// status. A stream without backfill, or whose MERGE ran, is left as it is.
pub async fn advance(catalog: &Catalog, name: &str, clock: &dyn Clock) -> Result<BackfillStatus> {
    let mut entry = catalog.get(name)?;
    if entry.backfill.state.is_final() {
        return Ok(entry.backfill);
    }
    let Some(source) = entry.spec.ingestion.backfill_source.clone() else {
        return Ok(entry.backfill);
    };
    let backfill = catalog.backfill_location(&source)?;
    let table = catalog
        .table_path(&entry.spec.table_name()?)
        .display()
        .to_string();
    let now = clock.now();
    let backfill_max = timestamp_bound(&backfill, true, false).await?;
    let stream_min = timestamp_bound(&table, false, true).await?;
    let table_exists =
        stream_min.is_some() || timestamp_bound(&table, false, false).await?.is_some();
    let mut status = BackfillStatus {
        checked_at: Some(rfc3339(now)),
        backfill_max_timestamp: backfill_max.map(rfc3339),
        stream_min_timestamp: stream_min.map(rfc3339),
        ..entry.backfill.clone()
    };
    match decide(entry.created()?, now, backfill_max, stream_min) {
        Decision::Wait(why) => {
            status.state = BackfillState::WaitingForOverlap;
            status.message = Some(why);
        }
        Decision::Merge { .. } if !table_exists => {
            status.state = BackfillState::WaitingForOverlap;
            status.message = Some(
                "the MERGE is due but the ingestion table has no rows yet: it runs after the stream's first batch".into(),
            );
        }
        Decision::Merge { forced } => {
            let options = MergeOptions {
                app_id: Some(format!("tributary-backfill-{}", entry.id)),
                ..MergeOptions::default()
            };
            let report = merge_backfill_with(
                &table,
                &backfill,
                &entry.spec.ingestion.deduplication_columns,
                &options,
            )
            .await?;
            status.state = if forced {
                BackfillState::Forced
            } else {
                BackfillState::Done
            };
            status.message = Some(if forced {
                "merged without overlap: 2 days passed since the stream was created".into()
            } else {
                "merged: the backfill overlaps the stream rows by at least 1 hour".into()
            });
            status.merge = serde_json::to_value(&report).ok();
        }
    }
    entry.backfill = status.clone();
    catalog.update(&entry)?;
    Ok(status)
}
