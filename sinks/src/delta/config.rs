//! The options of the `delta` sink and their parsed form, [`DeltaConfig`].
//!
//! Parsing does no I/O and resolves no secret: the table location is only checked for a scheme
//! this build can open, and `storage.*` options (object-store settings such as
//! `storage.aws_endpoint`, passed to deltalake as they are) are refused for a local path, where
//! they would be ignored.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU64;

use tributary_sdk::options::conflicting;
use tributary_sdk::options::decl::{self, DeclaredOption, Defaulted, Flag, OneOf, OptionDecl};
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result};

use super::maintenance::options as maint;
use super::maintenance::MaintenanceConfig;
pub use super::s3_commit::ALLOW_UNSAFE_RENAME;
use super::s3_commit::{check_storage, is_s3};

/// `path`: the table location.
pub const PATH: &str = "path";
/// `partitionBy`: comma-separated partition columns.
pub const PARTITION_BY: &str = "partitionBy";
/// `mergeSchema`: add new columns of the batches to the table.
pub const MERGE_SCHEMA: &str = "mergeSchema";
/// `targetFileSize`: the size a data file is cut at.
pub const TARGET_FILE_SIZE: &str = "targetFileSize";
/// `checkpointInterval`: a Delta log checkpoint every N commits.
pub const CHECKPOINT_INTERVAL: &str = "checkpointInterval";
/// `compression`: Parquet page compression of the data files.
pub const COMPRESSION: &str = "compression";
/// `storage.`: object-store options passed through to deltalake.
pub const STORAGE_PREFIX: &str = "storage.";

/// The URL schemes this build opens (local paths and `file://` always).
pub fn supported_schemes() -> Vec<&'static str> {
    let mut schemes = vec!["file"];
    if cfg!(feature = "delta-s3") {
        schemes.extend(["s3", "s3a"]);
    }
    if cfg!(feature = "delta-gcs") {
        schemes.push("gs");
    }
    if cfg!(feature = "delta-azure") {
        schemes.extend(["az", "adl", "azure", "abfs", "abfss"]);
    }
    schemes
}

/// Parquet page compression of the data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaCompression {
    /// Snappy (Delta's and Spark's default).
    Snappy,
    /// Zstandard, default level.
    Zstd,
    /// Uncompressed.
    None,
}

/// The parsed options of a `delta` sink.
#[derive(Clone)]
pub struct DeltaConfig {
    /// Local path or object-store URL of the table.
    pub path: String,
    /// Partition columns for a new table (checked against an existing one).
    pub partition_by: Vec<String>,
    /// Add the batches' new columns to the table.
    pub merge_schema: bool,
    /// Data files are cut at about this size.
    pub target_file_size: Option<NonZeroU64>,
    /// A log checkpoint every this many commits (the table's `delta.checkpointInterval` when
    /// unset).
    pub checkpoint_interval: Option<u64>,
    /// Parquet compression.
    pub compression: DeltaCompression,
    /// `storage.*` options without the prefix; values may be `{{secrets/scope/key}}` references,
    /// resolved when the sink is built. Never printed.
    pub storage: BTreeMap<String, String>,
    /// S3 only: commit by unlocked rename (a single writer on a store without conditional put;
    /// see [`super::s3_commit`]).
    pub allow_unsafe_rename: bool,
    /// Table maintenance beside ingestion: auto-compaction, vacuum, log retention (see
    /// [`super::maintenance::options`]).
    pub maintenance: MaintenanceConfig,
}

impl fmt::Debug for DeltaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaConfig")
            .field("path", &self.path)
            .field("partition_by", &self.partition_by)
            .field("merge_schema", &self.merge_schema)
            .field("target_file_size", &self.target_file_size)
            .field("checkpoint_interval", &self.checkpoint_interval)
            .field("compression", &self.compression)
            .field("storage", &self.storage.keys().collect::<Vec<_>>())
            .field("allow_unsafe_rename", &self.allow_unsafe_rename)
            .field("maintenance", &self.maintenance)
            .finish()
    }
}

impl DeltaConfig {
    /// A config writing to `path` with every other option at its default.
    pub fn new(path: impl Into<String>) -> Self {
        DeltaConfig {
            path: path.into(),
            partition_by: Vec::new(),
            merge_schema: false,
            target_file_size: None,
            checkpoint_interval: None,
            compression: DeltaCompression::Snappy,
            storage: BTreeMap::new(),
            allow_unsafe_rename: false,
            maintenance: MaintenanceConfig::default(),
        }
    }
}

const MERGE_SCHEMA_DECL: OptionDecl<Flag, Defaulted> = decl::flag(
    MERGE_SCHEMA,
    "Add columns that the batches have and the table lacks (schema evolution). A column \
     whose type changed is always an error.",
)
.default(false);
const COMPRESSION_DECL: OptionDecl<OneOf, Defaulted> = decl::one_of(
    COMPRESSION,
    &["snappy", "zstd", "none"],
    "Compression of the Parquet data files.",
)
.default("snappy");
const ALLOW_UNSAFE_RENAME_DECL: OptionDecl<Flag, Defaulted> = decl::flag(
    ALLOW_UNSAFE_RENAME,
    "s3:// tables only: commit by unlocked rename instead of S3 conditional put. Two \
     writers can then overwrite each other's commit; only for a table with a single \
     writer on a store without conditional put.",
)
.default(false);

/// Every option of the `delta` sink.
pub fn option_specs() -> Vec<OptionSpec> {
    let mut specs = vec![
        OptionSpec::string(
            PATH,
            "Table location: a local directory or an object-store URL (file://, and s3://, gs://, \
             az:// or abfss:// when built with the matching feature). The table is created from \
             the first batch's schema when it does not exist.",
        )
        .required(),
        OptionSpec::string(
            PARTITION_BY,
            "Comma-separated partition columns of a new table; an existing table must have the \
             same ones.",
        ),
        MERGE_SCHEMA_DECL.spec(),
        OptionSpec::bytes(
            TARGET_FILE_SIZE,
            "Data files are cut at about this size (e.g. 128m); one file per partition and \
             batch when unset.",
        ),
        OptionSpec::int(
            CHECKPOINT_INTERVAL,
            1,
            i64::from(u32::MAX),
            "Write a Delta log checkpoint every N commits (expired log entries are deleted after \
             each); set as delta.checkpointInterval on a new table. Default: the table's \
             delta.checkpointInterval (100).",
        ),
        COMPRESSION_DECL.spec(),
        OptionSpec::prefix(
            STORAGE_PREFIX,
            "Object-store options passed to deltalake without the prefix, e.g. \
             storage.aws_endpoint, storage.aws_region, storage.aws_access_key_id, \
             storage.aws_secret_access_key (values may be {{secrets/scope/key}} references).",
        )
        .sensitive(),
        ALLOW_UNSAFE_RENAME_DECL.spec(),
    ];
    specs.extend(maint::option_specs());
    specs
}

/// Parses validated options (no I/O).
pub fn parse(p: &ParsedOptions) -> Result<DeltaConfig> {
    let path = p.required_string(PATH)?;
    if path.trim().is_empty() {
        return Err(invalid(PATH, "a table location", ""));
    }
    let scheme = url_scheme(&path);
    if let Some(scheme) = &scheme {
        let supported = supported_schemes();
        if !supported.contains(&scheme.as_str()) {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "option '{PATH}': this build cannot open '{scheme}://' tables; supported: \
                     local paths and {} (build tributary-sinks with the delta-s3, delta-gcs or \
                     delta-azure feature for cloud stores)",
                    supported
                        .iter()
                        .map(|s| format!("{s}://"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_context("option", PATH)
            .with_context("feature", format!("delta-{scheme}")));
        }
    }
    let storage: BTreeMap<String, String> = p.prefixed(STORAGE_PREFIX).into_iter().collect();
    if let Some(key) = storage.keys().next() {
        if scheme.as_deref().is_none_or(|s| s == "file") {
            return Err(conflicting(
                &format!("{STORAGE_PREFIX}{key}"),
                PATH,
                "only applies to object-store tables, and 'path' is a local directory",
            ));
        }
    }
    let allow_unsafe_rename = ALLOW_UNSAFE_RENAME_DECL.get(p)?;
    if allow_unsafe_rename && !is_s3(scheme.as_deref()) {
        return Err(conflicting(
            ALLOW_UNSAFE_RENAME,
            PATH,
            "only applies to s3:// tables",
        ));
    }
    check_storage(&storage, allow_unsafe_rename)?;
    let partition_by = match p.string(PARTITION_BY)? {
        None => Vec::new(),
        Some(list) => {
            let cols: Vec<String> = list.split(',').map(|c| c.trim().to_string()).collect();
            if cols.iter().any(String::is_empty) {
                return Err(invalid(
                    PARTITION_BY,
                    "a comma-separated list of column names without empty entries",
                    &list,
                ));
            }
            let mut seen = std::collections::BTreeSet::new();
            if let Some(dup) = cols.iter().find(|c| !seen.insert(c.to_ascii_lowercase())) {
                return Err(invalid(
                    PARTITION_BY,
                    &format!("each column once ('{dup}' is repeated)"),
                    &list,
                ));
            }
            cols
        }
    };
    let target_file_size = match p.bytes(TARGET_FILE_SIZE)? {
        None => None,
        Some(n) => Some(
            NonZeroU64::new(n).ok_or_else(|| invalid(TARGET_FILE_SIZE, "a size above 0", "0"))?,
        ),
    };
    let checkpoint_interval = maint::checkpoint_interval(p, CHECKPOINT_INTERVAL)?;
    let maintenance = maint::parse(p)?;
    let compression = match COMPRESSION_DECL.get(p)? {
        "zstd" => DeltaCompression::Zstd,
        "none" => DeltaCompression::None,
        _ => DeltaCompression::Snappy,
    };
    Ok(DeltaConfig {
        path,
        partition_by,
        merge_schema: MERGE_SCHEMA_DECL.get(p)?,
        target_file_size,
        checkpoint_interval,
        compression,
        storage,
        allow_unsafe_rename,
        maintenance,
    })
}

/// The lower-cased scheme of a URL location, `None` for a local path (Windows drive letters
/// included).
pub fn url_scheme(location: &str) -> Option<String> {
    let (scheme, _) = location.split_once("://")?;
    let valid = scheme.len() > 1
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

fn invalid(option: &str, expected: &str, value: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!("invalid value '{value}' for option '{option}': expected {expected}"),
    )
    .with_context("option", option)
    .with_context("allowed", expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tributary_sdk::{OptionSpec, Options};

    fn parse_opts(pairs: &[(&str, &str)]) -> Result<DeltaConfig> {
        let mut o = Options::new();
        for (k, v) in pairs {
            o.set(*k, *v);
        }
        parse(&OptionSpec::validate_all(&option_specs(), &o, "delta")?)
    }

    #[test]
    fn unsafe_rename_only_for_s3_tables() {
        let e = parse_opts(&[("path", "/t"), ("allowUnsafeRename", "true")]).unwrap_err();
        assert_eq!(e.context_value("option"), Some(ALLOW_UNSAFE_RENAME));
        assert!(
            e.to_string().contains("only applies to s3:// tables"),
            "{e}"
        );
    }

    #[test]
    fn defaults_and_lists() {
        let c = parse_opts(&[("path", "/t"), ("partitionBy", "a, b")]).unwrap();
        assert_eq!(c.partition_by, vec!["a", "b"]);
        assert!(!c.merge_schema);
        assert_eq!(c.compression, DeltaCompression::Snappy);
        assert!(c.target_file_size.is_none());
        let c = parse_opts(&[
            ("path", "file:///t"),
            ("targetFileSize", "64m"),
            ("checkpointInterval", "5"),
            ("mergeSchema", "true"),
        ])
        .unwrap();
        assert_eq!(c.target_file_size.map(|n| n.get()), Some(64 << 20));
        assert_eq!(c.checkpoint_interval, Some(5));
        assert!(c.merge_schema);
    }

    #[test]
    fn bad_values_are_refused_naming_the_option() {
        for (pairs, option) in [
            (
                &[("path", "/t"), ("partitionBy", "a,,b")][..],
                "partitionBy",
            ),
            (&[("path", "/t"), ("partitionBy", "a,A")][..], "partitionBy"),
            (
                &[("path", "/t"), ("targetFileSize", "0")][..],
                "targetFileSize",
            ),
            (
                &[("path", "/t"), ("checkpointInterval", "0")][..],
                "checkpointInterval",
            ),
            (&[("path", "/t"), ("compression", "lz4")][..], "compression"),
            (&[("path", "ftp://host/t")][..], "path"),
        ] {
            let e = parse_opts(pairs).unwrap_err();
            assert_eq!(e.context_value("option"), Some(option), "{e}");
        }
    }

    #[test]
    fn storage_options_for_a_local_path_are_refused() {
        let e = parse_opts(&[("path", "/t"), ("storage.aws_region", "x")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{e}");
        assert_eq!(e.context_value("option"), Some("storage.aws_region"));
    }

    #[test]
    fn storage_values_are_not_printed() {
        let mut c = DeltaConfig::new("s3://b/t");
        c.storage
            .insert("aws_secret_access_key".into(), "hunter2".into());
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn schemes() {
        assert_eq!(url_scheme("/a/b"), None);
        assert_eq!(url_scheme("C:\\a"), None);
        assert_eq!(url_scheme("S3://b/k").as_deref(), Some("s3"));
    }
}
