//! The small enums and structs of the files config that the format readers use too
//! (`mode`, `cloudFiles.schemaEvolutionMode`, CSV `header` / `sep`). A leaf module.

/// What columns that are not in the schema do (`cloudFiles.schemaEvolutionMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaEvolution {
    /// Add them to the stored schema and stop; a restart reads them.
    AddNewColumns,
    /// Put their values in the rescued data column.
    Rescue,
    /// Stop without changing the schema.
    FailOnNewColumns,
    /// Drop their values.
    None,
}

/// What to do with a malformed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nulls + rescued text + a counter.
    Permissive,
    /// Stop with `MALFORMED_RECORD`.
    FailFast,
}

/// CSV parsing options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvOptions {
    /// The first line holds column names.
    pub header: bool,
    /// Field separator.
    pub delimiter: u8,
}
