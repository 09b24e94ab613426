//! The options of the generator source and the JSON-lines sink, declared once.
//!
//! The same [`OptionSpec`] lists validate user options, produce the errors and travel in the
//! plugin manifest (so `tributary plugins inspect` documents them).

use std::path::PathBuf;

use tributary_sdk::{Error, ErrorCode, OptionSpec, Options, Result};

/// The generator source's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Rows available in total; `None` means unbounded.
    pub total_rows: Option<u64>,
    /// Rows per record batch returned by `read`.
    pub rows_per_batch: u64,
    /// The default per-trigger limit (`maxRowsPerTrigger`).
    pub max_rows_per_trigger: Option<u64>,
    /// True to start at the end (`startingOffsets = latest`).
    pub start_at_latest: bool,
}

impl GeneratorConfig {
    /// Every option of the `generator` source.
    pub fn specs() -> Vec<OptionSpec> {
        vec![
            OptionSpec::int(
                "totalRows",
                0,
                i64::MAX,
                "Rows available in total. Without it the source is unbounded and each trigger \
                 without a limit takes 10 batches.",
            ),
            OptionSpec::int(
                "rowsPerBatch",
                1,
                100_000_000,
                "Rows per Arrow record batch.",
            )
            .default_value(1000),
            OptionSpec::int(
                "maxRowsPerTrigger",
                1,
                i64::MAX,
                "At most this many rows per micro-batch.",
            ),
            OptionSpec::one_of(
                "startingOffsets",
                &["earliest", "latest"],
                "Where a new query starts: at row 0 or after the last available row.",
            )
            .default_value("earliest"),
        ]
    }

    /// Validates and parses an option map (no I/O).
    pub fn parse(options: &Options) -> Result<Self> {
        let p = OptionSpec::validate_all(&Self::specs(), options, "generator")?;
        let nonneg = |name: &str, v: Option<i64>| -> Result<Option<u64>> {
            v.map(|n| {
                u64::try_from(n).map_err(|_| {
                    Error::new(
                        ErrorCode::InvalidOption,
                        format!("option '{name}' must not be negative"),
                    )
                    .with_context("option", name)
                })
            })
            .transpose()
        };
        Ok(GeneratorConfig {
            total_rows: nonneg("totalRows", p.i64("totalRows")?)?,
            rows_per_batch: nonneg("rowsPerBatch", p.i64("rowsPerBatch")?)?.unwrap_or(1000),
            max_rows_per_trigger: nonneg("maxRowsPerTrigger", p.i64("maxRowsPerTrigger")?)?,
            start_at_latest: p.word("startingOffsets")?.as_deref() == Some("latest"),
        })
    }
}

/// The JSON-lines sink's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonLinesConfig {
    /// The output directory.
    pub path: PathBuf,
}

impl JsonLinesConfig {
    /// Every option of the `jsonlines` sink.
    pub fn specs() -> Vec<OptionSpec> {
        vec![OptionSpec::string(
            "path",
            "Directory that receives one batch-<id>.jsonl file per micro-batch.",
        )
        .required()]
    }

    /// Validates and parses an option map (no I/O).
    pub fn parse(options: &Options) -> Result<Self> {
        let p = OptionSpec::validate_all(&Self::specs(), options, "jsonlines")?;
        let path = p.string("path")?.ok_or_else(|| {
            Error::new(ErrorCode::MissingOption, "option 'path' is required")
                .with_context("option", "path")
        })?;
        Ok(JsonLinesConfig { path: path.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_errors() {
        let c = GeneratorConfig::parse(&Options::new()).unwrap();
        assert_eq!(c.rows_per_batch, 1000);
        assert_eq!(c.total_rows, None);
        let o: Options = [("rowsPerBatch", "0")].into_iter().collect();
        assert_eq!(
            GeneratorConfig::parse(&o).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        let o: Options = [("totalRow", "5")].into_iter().collect();
        let e = GeneratorConfig::parse(&o).unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownOption);
        assert!(e.message().contains("did you mean 'totalRows'"));
        assert_eq!(
            JsonLinesConfig::parse(&Options::new()).unwrap_err().code(),
            ErrorCode::MissingOption
        );
    }
}
