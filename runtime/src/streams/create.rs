//! Creating a stream: its spec checked against the registry (binding, secrets, the pipeline it
//! compiles to) before the catalog stores it. Kept apart from `catalog.rs` (storage only), which
//! the pipeline compiler reads, so neither imports the other in a circle.

use chrono::{DateTime, Utc};
use tributary_sdk::Result;

use super::catalog::{Catalog, StreamEntry};
use super::spec::StreamSpec;
use crate::registry::Registry;

impl Catalog {
    /// Validates a spec (names, schemas, and the connector's and stages' options, without I/O)
    /// and creates the stream, created now.
    pub fn create(&self, spec: StreamSpec) -> Result<StreamEntry> {
        self.create_at(spec, &super::stream_registry(), Utc::now())
    }

    /// [`Catalog::create`] with a registry and a creation time.
    pub fn create_at(
        &self,
        spec: StreamSpec,
        registry: &Registry,
        created_at: DateTime<Utc>,
    ) -> Result<StreamEntry> {
        super::binding::check(&spec, registry)?;
        let entry = self.new_entry(spec, created_at)?;
        super::pipeline::check_secrets(&entry.spec, registry)?;
        super::pipeline::validate(self, &entry, registry)?;
        self.insert(entry)
    }
}
