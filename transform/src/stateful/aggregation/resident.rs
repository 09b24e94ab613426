//! An [`Aggregation`]'s batch when its groups are held in a [`GroupTable`]: the batch's
//! partials are merged into the table in place, and only the groups it touched (and, under a
//! watermark, the ones it finalised) are read back to emit and to log.

use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use tributary_sdk::{OutputMode, Result};

use super::{internal, Aggregation};
use crate::stateful::clock::format_ms;
use crate::stateful::groups::GroupTable;
use crate::stateful::store::changelog;

impl Aggregation {
    pub(super) fn table(&mut self) -> Result<&mut GroupTable> {
        self.groups
            .as_mut()
            .ok_or_else(|| internal("the group table", "is missing"))
    }

    fn held(&self) -> Result<&GroupTable> {
        self.groups
            .as_ref()
            .ok_or_else(|| internal("the group table", "is missing"))
    }

    /// `rows` (of the state's schema) with every group flagged to be emitted.
    fn flagged(&self, rows: RecordBatch) -> Result<RecordBatch> {
        let mut columns = rows.columns().to_vec();
        columns.push(Arc::new(BooleanArray::from(vec![true; rows.num_rows()])));
        RecordBatch::try_new(Arc::clone(&self.merged_schema), columns)
            .map_err(|e| internal("the groups to emit", e))
    }

    /// [`tributary_sdk::StageState::end_batch`] with the groups in a [`GroupTable`]; what the
    /// batch changed in it is undone unless the state is saved (or the chunk ends).
    pub(super) async fn end_batch_resident(&mut self) -> Result<Option<RecordBatch>> {
        // a batch ended but never saved: its state is dropped
        self.table()?.rollback();
        // the parts' partials are merged one after the other, not concatenated first
        let parts = std::mem::take(&mut self.pending);
        let touched = self.table()?.merge(&parts)?;
        let wm = self
            .watermark
            .is_some()
            .then(|| self.clock.end_batch())
            .flatten();
        let finalises = self.watermark.as_ref().and_then(|w| w.expiry).is_some();
        let expired = match self.clock.eviction() {
            Some(e) if finalises => self.table()?.expired(e),
            _ => Vec::new(),
        };
        let table = self.held()?;
        let touched_rows = table.touched_rows(&parts, &touched)?;
        let emit = match self.mode {
            OutputMode::Update => self.flagged(touched_rows.clone())?,
            OutputMode::Append => self.flagged(table.rows(&expired)?)?,
            OutputMode::Complete => self.flagged(table.all()?)?,
        };
        // the changelog: touched groups upserted unless final, final ones deleted
        let (upserts, deleted) = match expired.is_empty() {
            true => (touched_rows, Vec::new()),
            false => {
                let kept: BooleanArray = touched
                    .ids
                    .iter()
                    .map(|id| Some(expired.binary_search(id).is_err()))
                    .collect();
                let upserts = datafusion::arrow::compute::filter_record_batch(&touched_rows, &kept)
                    .map_err(|e| internal("the changelog", e))?;
                (upserts, table.keys(&expired)?)
            }
        };
        self.changes = Some(changelog::changes(&self.state_schema, &upserts, &deleted)?);
        let out = self.output(emit).await?;
        self.table()?.evict(&expired);
        self.progress.num_rows_dropped_by_watermark = std::mem::take(&mut self.late);
        self.progress.num_rows_removed = expired.len() as u64;
        self.progress.watermark = wm.map(format_ms);
        let (total, memory) = (self.held()?.len() as u64, self.held()?.memory());
        self.progress.num_rows_total = total;
        self.progress.num_rows_updated = touched.ids.len() as u64;
        self.progress.memory_used_bytes = memory + self.warm_memory();
        self.ended = true;
        Ok((out.num_rows() > 0).then_some(out))
    }
}
