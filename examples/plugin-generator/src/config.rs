//! The options of the generator source and the JSON-lines sink: each declared once, parsed once
//! into a typed config.
//!
//! The same [`OptionSpec`] lists validate user options, produce the errors and travel in the
//! plugin manifest (so `tributary plugins inspect` documents them). The SDK checks names, types
//! and ranges before [`GeneratorConfig::parse`] runs; `parse` refuses what the declarations cannot
//! express: options that conflict, and options that would be silently ignored.

use std::path::PathBuf;

use tributary_sdk::options::conflicting;
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result};

/// The most partitions a generator may have.
pub const MAX_PARTITIONS: u32 = 1024;

/// Where the rows come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowSupply {
    /// Rows `0..total` exist from the start (`totalRows`).
    Fixed(u64),
    /// A control file says which rows exist, read at every call (`controlFile`).
    Control(PathBuf),
    /// Rows never end (neither option given).
    Unbounded,
}

/// What a malformed row becomes (Spark's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedMode {
    /// The row's `value` is null and `malformedRecords` counts it.
    Permissive,
    /// The read fails with `MALFORMED_RECORD`.
    FailFast,
}

/// The generator source's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Where the rows come from.
    pub supply: RowSupply,
    /// Rows per record batch returned by `read`.
    pub rows_per_batch: u64,
    /// The default per-trigger limit (`maxRowsPerTrigger`).
    pub max_rows_per_trigger: Option<u64>,
    /// True to start at the end (`startingOffsets = latest`).
    pub start_at_latest: bool,
    /// Row `i` belongs to partition `i % partitions`.
    pub partitions: u32,
    /// The partitions read (sorted, distinct); every partition when `assign` is not given.
    pub assigned: Vec<u32>,
    /// `failOnDataLoss`: trimmed rows fail the read (true) or are counted and skipped.
    pub fail_on_data_loss: bool,
    /// What a malformed row becomes.
    pub mode: MalformedMode,
}

/// Every option of the `generator` source.
pub fn generator_options() -> Vec<OptionSpec> {
    vec![
        OptionSpec::int(
            "totalRows",
            0,
            i64::MAX,
            "Rows available in total. Without it (and without controlFile) the source is \
             unbounded and each trigger without a limit takes 10 batches.",
        ),
        OptionSpec::string(
            "controlFile",
            "A JSON file saying which rows exist: {\"earliest\": E, \"latest\": L, \"malformed\": \
             [rows]}. Read at every call, so another process can append rows (raise latest), \
             trim them (raise earliest: data loss) or mark rows malformed.",
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
            "Where a new query starts: at the first available row or after the last one.",
        )
        .default_value("earliest"),
        OptionSpec::int(
            "partitions",
            1,
            i64::from(MAX_PARTITIONS),
            "Partitions; row i belongs to partition i % partitions.",
        )
        .default_value(1),
        OptionSpec::json(
            "assign",
            "Read only these partitions, as a JSON array of partition numbers ([0, 2]), like \
             Kafka's assign.",
        ),
        OptionSpec::bool(
            "failOnDataLoss",
            "With controlFile: fail when rows were trimmed before they were read (true), or \
             count them in dataLoss.* metrics and go on (false).",
        )
        .default_value(true),
        OptionSpec::one_of(
            "mode",
            &["PERMISSIVE", "FAILFAST"],
            "With controlFile: a malformed row becomes a null value counted in \
             malformedRecords (PERMISSIVE), or fails the read with MALFORMED_RECORD (FAILFAST).",
        )
        .default_value("PERMISSIVE"),
    ]
}

/// Every option of the `jsonlines` sink.
pub fn jsonlines_options() -> Vec<OptionSpec> {
    vec![OptionSpec::string(
        "path",
        "Directory that receives one batch-<id>.jsonl file per micro-batch.",
    )
    .required()]
}

fn non_negative(name: &str, value: Option<i64>) -> Result<Option<u64>> {
    value
        .map(|n| {
            u64::try_from(n).map_err(|_| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!("option '{name}' must not be negative, got {n}"),
                )
                .with_context("option", name)
            })
        })
        .transpose()
}

fn assigned(value: Option<serde_json::Value>, partitions: u32) -> Result<Vec<u32>> {
    let Some(value) = value else {
        return Ok((0..partitions).collect());
    };
    let invalid = |why: String| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option 'assign' {why}; expected a non-empty JSON array of partition numbers \
                 from 0 to {} (partitions={partitions}), e.g. [0, 2]",
                partitions - 1
            ),
        )
        .with_context("option", "assign")
    };
    let items = value
        .as_array()
        .ok_or_else(|| invalid(format!("is {value}, not an array")))?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let p = item
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p < partitions)
            .ok_or_else(|| invalid(format!("holds {item}")))?;
        out.push(p);
    }
    if out.is_empty() {
        return Err(invalid("is empty".into()));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

impl GeneratorConfig {
    /// Parses validated options (no I/O): refuses conflicting and ignored options.
    pub fn parse(p: &ParsedOptions) -> Result<Self> {
        let total = non_negative("totalRows", p.i64("totalRows")?)?;
        let control = p.string("controlFile")?;
        let supply = match (total, control) {
            (Some(_), Some(_)) => {
                return Err(conflicting(
                    "totalRows",
                    "controlFile",
                    "cannot be combined with 'controlFile', which says how many rows exist",
                ))
            }
            (Some(n), None) => RowSupply::Fixed(n),
            (None, Some(path)) => RowSupply::Control(path.into()),
            (None, None) => RowSupply::Unbounded,
        };
        let start_at_latest = p.word("startingOffsets")?.as_deref() == Some("latest");
        if start_at_latest && supply == RowSupply::Unbounded {
            return Err(conflicting(
                "startingOffsets",
                "totalRows",
                "is 'latest', which needs 'totalRows' or 'controlFile' (an unbounded generator \
                 has no end)",
            ));
        }
        let controlled = matches!(supply, RowSupply::Control(_));
        let why = "only applies with 'controlFile' (without it no row is trimmed or malformed)";
        p.refuse_ignored("failOnDataLoss", controlled, "controlFile", why)?;
        p.refuse_ignored("mode", controlled, "controlFile", why)?;
        let partitions = non_negative("partitions", p.i64("partitions")?)?
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1)
            .clamp(1, MAX_PARTITIONS);
        let mode = match p.word("mode")?.as_deref() {
            Some("failfast") => MalformedMode::FailFast,
            _ => MalformedMode::Permissive,
        };
        Ok(GeneratorConfig {
            supply,
            rows_per_batch: non_negative("rowsPerBatch", p.i64("rowsPerBatch")?)?.unwrap_or(1000),
            max_rows_per_trigger: non_negative("maxRowsPerTrigger", p.i64("maxRowsPerTrigger")?)?,
            start_at_latest,
            partitions,
            assigned: assigned(p.json("assign")?, partitions)?,
            fail_on_data_loss: p.bool("failOnDataLoss")?.unwrap_or(true),
            mode,
        })
    }

    /// The canonical text of what this config reads (the checkpoint identity's target).
    pub fn target(&self) -> String {
        let mut t = match &self.supply {
            RowSupply::Fixed(n) => format!("rows:{n}"),
            RowSupply::Control(path) => format!("control:{}", path.display()),
            RowSupply::Unbounded => "rows:unbounded".to_string(),
        };
        if self.partitions > 1 {
            t.push_str(&format!(";partitions:{}", self.partitions));
            if self.assigned.len() < self.partitions as usize {
                let list: Vec<String> = self.assigned.iter().map(u32::to_string).collect();
                t.push_str(&format!(";assign:{}", list.join(",")));
            }
        }
        t
    }
}

/// The JSON-lines sink's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonLinesConfig {
    /// The output directory.
    pub path: PathBuf,
}

impl JsonLinesConfig {
    /// Parses validated options (no I/O).
    pub fn parse(p: &ParsedOptions) -> Result<Self> {
        Ok(JsonLinesConfig {
            path: p.required_string("path")?.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tributary_sdk::Options;

    fn parse(pairs: &[(&str, &str)]) -> Result<GeneratorConfig> {
        let o: Options = pairs.iter().copied().collect();
        GeneratorConfig::parse(&OptionSpec::validate_all(
            &generator_options(),
            &o,
            "generator",
        )?)
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.rows_per_batch, 1000);
        assert_eq!(c.supply, RowSupply::Unbounded);
        assert_eq!(c.assigned, vec![0]);
        assert!(c.fail_on_data_loss);
        assert_eq!(c.target(), "rows:unbounded");
    }

    #[test]
    fn unknown_and_out_of_range_options_are_refused() {
        assert_eq!(
            parse(&[("rowsPerBatch", "0")]).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        let e = parse(&[("totalRow", "5")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownOption);
        assert!(e.message().contains("did you mean 'totalRows'"), "{e}");
    }

    #[test]
    fn conflicting_and_ignored_options_are_refused() {
        let e = parse(&[("totalRows", "5"), ("controlFile", "/c.json")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert_eq!(e.context_value("conflicts_with"), Some("controlFile"));
        let e = parse(&[("startingOffsets", "latest")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        let e = parse(&[("totalRows", "5"), ("failOnDataLoss", "false")]).unwrap_err();
        assert_eq!(e.context_value("option"), Some("failOnDataLoss"));
        let e = parse(&[("mode", "FAILFAST")]).unwrap_err();
        assert_eq!(e.context_value("option"), Some("mode"));
        let c = parse(&[("controlFile", "/c.json"), ("mode", "failfast")]).unwrap();
        assert_eq!(c.mode, MalformedMode::FailFast);
    }

    #[test]
    fn assign_names_partitions_that_exist() {
        let c = parse(&[("partitions", "3"), ("assign", "[2, 0, 2]")]).unwrap();
        assert_eq!(c.assigned, vec![0, 2]);
        assert_eq!(c.target(), "rows:unbounded;partitions:3;assign:0,2");
        for bad in ["[3]", "[]", "{\"a\": 1}", "[-1]"] {
            let e = parse(&[("partitions", "3"), ("assign", bad)]).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad}");
            assert!(e.message().contains("from 0 to 2"), "{e}");
        }
    }

    #[test]
    fn the_sink_needs_a_path() {
        let e = OptionSpec::validate_all(&jsonlines_options(), &Options::new(), "jsonlines")
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
    }
}
