//! An [`Aggregation`]'s batch when its groups are on disk ([`SpilledGroups`]): only the held
//! groups of the batch's keys are read, merged with the batch's partials and written back; the
//! groups a watermark finalised are one range scan of the store.

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use datafusion::common::HashSet;
use tributary_sdk::{OutputMode, Result};

use super::{concat, internal, Aggregation};
use crate::stateful::clock::format_ms;
use crate::stateful::spill::SpilledGroups;
use crate::stateful::store::changelog;

impl Aggregation {
    fn spilled(&mut self) -> Result<&mut SpilledGroups> {
        self.spill
            .as_mut()
            .ok_or_else(|| internal("the spilled groups", "are missing"))
    }

    /// [`tributary_sdk::StageState::end_batch`] with the groups on disk; the batch's changes
    /// are staged in the store until the state is saved (or the chunk ends).
    pub(super) async fn end_batch_spilled(&mut self) -> Result<Option<RecordBatch>> {
        self.spilled()?.discard();
        let delta = concat(&self.state_schema, &std::mem::take(&mut self.pending))?;
        let held = self.spilled()?.held(&delta)?;
        // every merged group is one of the batch's: all touched
        let merged = self.merge(held.rows, delta).await?;
        let width = self.state_schema.fields().len();
        let next = RecordBatch::try_new(
            Arc::clone(&self.state_schema),
            merged.columns()[..width].to_vec(),
        )
        .map_err(|e| internal("the merged groups", e))?;
        let spill = self
            .spill
            .as_ref()
            .ok_or_else(|| internal("the spilled groups", "are missing"))?;
        let keys = spill.encode_keys(&next)?;
        let wm = self
            .watermark
            .is_some()
            .then(|| self.clock.end_batch())
            .flatten();
        let eviction = self.clock.eviction();
        let expired = self.expired(&next, eviction)?;
        let batch_keys: HashSet<Vec<u8>> = keys.iter().cloned().collect();
        // held groups the batch did not touch that the watermark finalised
        let finalises = self.watermark.as_ref().and_then(|w| w.expiry).is_some();
        let (old_final, old_final_keys) = match eviction {
            Some(wm) if finalises => spill.finalised(wm, &batch_keys)?,
            _ => (
                RecordBatch::new_empty(Arc::clone(&self.state_schema)),
                Vec::new(),
            ),
        };
        let flagged = |rows: &RecordBatch, flag: BooleanArray| {
            let mut columns = rows.columns().to_vec();
            columns.push(Arc::new(flag));
            RecordBatch::try_new(Arc::clone(&self.merged_schema), columns)
                .map_err(|e| internal("the groups to emit", e))
        };
        let emit = match self.mode {
            OutputMode::Update => merged,
            OutputMode::Append => {
                let batch_final = match &expired {
                    Some(e) => e.clone(),
                    None => BooleanArray::from(vec![false; next.num_rows()]),
                };
                concat(
                    &self.merged_schema,
                    &[
                        flagged(&next, batch_final)?,
                        flagged(
                            &old_final,
                            BooleanArray::from(vec![true; old_final.num_rows()]),
                        )?,
                    ],
                )?
            }
            OutputMode::Complete => {
                let rest = spill.all_but(&batch_keys)?;
                concat(
                    &self.merged_schema,
                    &[
                        merged,
                        flagged(&rest, BooleanArray::from(vec![false; rest.num_rows()]))?,
                    ],
                )?
            }
        };
        let out = self.output(emit).await?;

        // the changelog and the store: the batch's groups upserted unless final, final ones
        // (the batch's and the held ones the watermark passed) deleted
        let put = match &expired {
            Some(e) => {
                datafusion::arrow::compute::not(e).map_err(|e| internal("the changelog", e))?
            }
            None => BooleanArray::from(vec![true; next.num_rows()]),
        };
        let mut deleted: Vec<ArrayRef> = Vec::new();
        let mut removes = old_final_keys;
        let mut rows = self.spilled()?.rows();
        let mut removed = old_final.num_rows() as u64;
        rows = rows.saturating_sub(removed);
        for (i, k) in keys.iter().enumerate() {
            let was_held = held.found.contains(k);
            match put.value(i) {
                true if !was_held => rows += 1,
                false => {
                    removed += 1;
                    if was_held {
                        rows = rows.saturating_sub(1);
                    }
                    removes.push(k.clone());
                }
                true => {}
            }
        }
        let n_keys = self.split.groups.len();
        if let Some(e) = &expired {
            for c in 0..n_keys {
                let batch = datafusion::arrow::compute::filter(next.column(c), e)
                    .map_err(|e| internal("the changelog", e))?;
                deleted.push(
                    datafusion::arrow::compute::concat(&[
                        batch.as_ref(),
                        old_final.column(c).as_ref(),
                    ])
                    .map_err(|e| internal("the changelog", e))?,
                );
            }
        } else if old_final.num_rows() > 0 {
            deleted = old_final.columns()[..n_keys].to_vec();
        }
        let upserts = datafusion::arrow::compute::filter_record_batch(&next, &put)
            .map_err(|e| internal("the changelog", e))?;
        self.changes = Some(changelog::changes(&self.state_schema, &upserts, &deleted)?);
        let updated = next.num_rows() as u64;
        self.spilled()?.stage(&next, keys, &put, removes, rows)?;

        self.progress.num_rows_dropped_by_watermark = std::mem::take(&mut self.late);
        self.progress.num_rows_removed = removed;
        self.progress.watermark = wm.map(format_ms);
        self.progress.num_rows_total = rows;
        self.progress.num_rows_updated = updated;
        self.progress.memory_used_bytes = self.spilled()?.memory() + self.warm_memory();
        Ok((out.num_rows() > 0).then_some(out))
    }
}
