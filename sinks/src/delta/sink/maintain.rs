//! The sink's auto-maintenance run after a commit ([`crate::delta::maintenance::schedule`]).

use super::DeltaSink;

impl DeltaSink {
    /// Runs compaction (and vacuum) when due. Never fails the batch, which is committed: a
    /// failure is logged and counted, and the table reloaded before the next write.
    pub(super) async fn maintain(&mut self) {
        let (Some(auto), Some(table)) = (self.auto_compact.as_mut(), self.table.as_ref()) else {
            return;
        };
        let Some(small) = auto.due(table) else {
            return;
        };
        let table = table.clone();
        match auto.run(table, self.writer_properties.clone(), small).await {
            Ok(ran) => {
                let c = &ran.compaction;
                tracing::info!(
                    path = %self.config.path,
                    version = ?c.version,
                    files_removed = c.files_removed,
                    files_added = c.files_added,
                    vacuumed = ran.vacuum.as_ref().map_or(0, |v| v.files_deleted),
                    took_ms = u64::try_from(ran.took.as_millis()).unwrap_or(u64::MAX),
                    "delta sink: auto-compaction"
                );
                if c.files_removed > 0 {
                    self.stats.compactions += 1;
                }
                self.stats.files_compacted += c.files_removed;
                self.stats.compacted_files_written += c.files_added;
                self.stats.files_vacuumed += ran.vacuum.as_ref().map_or(0, |v| v.files_deleted);
                self.stats.maintenance_time += ran.took;
                self.stats.longest_maintenance = self.stats.longest_maintenance.max(ran.took);
                let table = ran.table;
                if let Err(e) = self.after_commit(&table).await {
                    tracing::warn!(error = %e, "delta sink: checkpoint after compaction failed");
                }
                self.table = Some(table);
            }
            Err(e) => {
                tracing::warn!(
                    path = %self.config.path,
                    error = %e,
                    "delta sink: table maintenance failed (the batch is committed; retried \
                     after minNumFiles more small files)"
                );
                self.stats.maintenance_failures += 1;
                self.stale = true;
            }
        }
    }
}
