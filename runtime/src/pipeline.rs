//! Pipeline files (TOML): one source, its decoding, one or more sinks, a trigger, a checkpoint.
//!
//! ```toml
//! name = "quickstart"
//! checkpoint = "examples/out/checkpoint"
//!
//! [source]
//! connector = "files"
//! options = { path = "examples/data", "cloudFiles.format" = "json", "cloudFiles.maxFilesPerTrigger" = 2 }
//!
//! [[sink]]
//! connector = "console"
//! options = { format = "table", numRows = 5 }
//!
//! [[sink]]
//! connector = "parquet"
//! options = { path = "examples/out/parquet" }
//!
//! [trigger]
//! kind = "availableNow"
//! ```
//!
//! An optional `[engine]` runs the batches on a Ballista cluster (`kind = "ballista"`,
//! `scheduler = "df://host:port"`; see `crate::distributed`).
//!
//! An optional `[monitoring]` serves metrics, progress, health and a live page over HTTP
//! (`http = "127.0.0.1:4040"`; see `crate::monitor`).
//!
//! An optional `[transform]` runs stateless SQL on every batch after decoding (`sql = "SELECT
//! ... FROM source"`, static tables in `[[transform.table]]`; cargo feature `sql`).
//!
//! A [`PipelineSpec`] holds one ordered stage list ([`StageSpec`]): `[source].decode`, then
//! `[transform]`, then whatever a product built on the engine adds (named streams' ingestion
//! stage). The spec is what executors of a distributed engine receive (serialised without the
//! checkpoint, trigger and engine, which only the driver uses).
//!
//! Unknown keys are refused. Option values may be strings, numbers or booleans; they reach the
//! connector as strings (Spark-style option maps). Relative paths are relative to the working
//! directory, as with Spark.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Options, Result};

use crate::distributed::{EngineSection, EngineSpec};
use crate::trigger::{Trigger, TriggerSpec};

/// A connector section: its name and options. Its `Debug` prints option names only: the raw
/// TOML values may hold secrets.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectorSection {
    /// Connector name (`files`, `kafka`, `console`, `parquet`, or a plugin's connector).
    pub connector: String,
    /// Options passed to the connector.
    #[serde(default)]
    pub options: BTreeMap<String, toml::Value>,
    /// Decoding of binary key/payload columns (schema options); sources only.
    #[serde(default)]
    pub decode: Option<BTreeMap<String, toml::Value>>,
}

impl std::fmt::Debug for ConnectorSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectorSection")
            .field("connector", &self.connector)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .field(
                "decode",
                &self.decode.as_ref().map(|d| d.keys().collect::<Vec<_>>()),
            )
            .finish()
    }
}

/// The parsed pipeline file (its `Debug` prints no option value).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineFile {
    /// Pipeline name (progress events, group ids).
    #[serde(default)]
    pub name: Option<String>,
    /// Checkpoint directory.
    pub checkpoint: PathBuf,
    /// Directories searched for connector plugins.
    #[serde(default)]
    pub plugin_path: Vec<PathBuf>,
    /// The source.
    pub source: ConnectorSection,
    /// The sinks (at least one).
    pub sink: Vec<ConnectorSection>,
    /// The trigger.
    #[serde(default)]
    pub trigger: TriggerSpec,
    /// Stateless SQL between the source (after decoding) and the sinks: `sql` and
    /// `[[transform.table]]` static tables (see `crate::transform`).
    #[serde(default)]
    pub transform: Option<toml::Value>,
    /// Where batches run (`[engine]`; default: this process).
    #[serde(default)]
    pub engine: Option<EngineSection>,
    /// The monitoring HTTP server (`[monitoring]`; default: off).
    #[serde(default)]
    pub monitoring: Option<crate::monitor::MonitoringSection>,
}

/// One stage of a pipeline's ordered stage list.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StageSpec {
    /// A stage registered by name in the registry (`decode`, `stream_ingestion`), with its
    /// options.
    Registered {
        /// The stage's name.
        name: String,
        /// Its options.
        #[serde(with = "crate::serde_options")]
        options: Options,
    },
    /// `[transform]`: SQL on DataFusion.
    Sql(crate::transform::TransformSection),
}

impl StageSpec {
    /// A registered stage.
    pub fn registered(name: impl Into<String>, options: Options) -> Self {
        StageSpec::Registered {
            name: name.into(),
            options,
        }
    }

    /// The stage's name (`transform` for SQL).
    pub fn name(&self) -> &str {
        match self {
            StageSpec::Registered { name, .. } => name,
            StageSpec::Sql(_) => "transform",
        }
    }

    /// The options of a registered stage.
    pub fn options(&self) -> Option<&Options> {
        match self {
            StageSpec::Registered { options, .. } => Some(options),
            StageSpec::Sql(_) => None,
        }
    }
}

/// A pipeline ready to build: options as Spark-style maps, trigger parsed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PipelineSpec {
    /// Pipeline name.
    pub name: String,
    /// Checkpoint directory (the driver's; not sent to executors).
    #[serde(skip)]
    pub checkpoint: PathBuf,
    /// Plugin directories.
    #[serde(skip)]
    pub plugin_path: Vec<PathBuf>,
    /// Source connector name.
    pub source: String,
    /// Source options.
    #[serde(with = "crate::serde_options")]
    pub source_options: Options,
    /// The stages applied to the source's batches, in order: `[source].decode` (the stage
    /// `decode`), `[transform]` ([`StageSpec::Sql`]), then any a product adds.
    pub stages: Vec<StageSpec>,
    /// Sinks: connector name and options.
    #[serde(with = "crate::serde_options::named")]
    pub sinks: Vec<(String, Options)>,
    /// Trigger (the driver's; executors receive `once`).
    #[serde(skip, default = "once")]
    pub trigger: Trigger,
    /// How long a `processingTime` query waits before asking the source again when a trigger
    /// found no new data (`[trigger] pollingDelay`).
    #[serde(skip, default = "polling_delay")]
    pub polling_delay: std::time::Duration,
    /// Where the pipeline came from (the file), for messages.
    pub origin: String,
    /// Where batches run (the driver's; executors receive `embedded`).
    #[serde(skip)]
    pub engine: EngineSpec,
    /// The monitoring server (the driver's; not sent to executors).
    #[serde(skip)]
    pub monitoring: crate::monitor::MonitoringSpec,
}

fn once() -> Trigger {
    Trigger::Once
}

fn polling_delay() -> std::time::Duration {
    crate::trigger::POLLING_DELAY
}

/// `e` with the pipeline file's name before its message, its context kept.
fn in_file(e: Error, origin: &str) -> Error {
    let mut out = Error::new(e.code(), format!("{origin}: {}", e.message()));
    for (k, v) in e.context() {
        out = out.with_context(k, v);
    }
    out.with_context("file", origin)
}

fn to_options(section: &str, table: &BTreeMap<String, toml::Value>) -> Result<Options> {
    let mut o = Options::new();
    for (k, v) in table {
        let text = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!(
                        "option '{k}' in [{section}] must be a string, number or boolean, not a {}",
                        other.type_str()
                    ),
                )
                .with_context("option", k))
            }
        };
        if o.contains(k) {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!("option '{k}' appears twice in [{section}] (option names ignore case)"),
            )
            .with_context("option", k));
        }
        o.set(k.clone(), text);
    }
    Ok(o)
}

impl PipelineSpec {
    /// Parses pipeline TOML text. `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<PipelineSpec> {
        let file: PipelineFile = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| toml_position(text, s.start))
                .map(|(l, c)| format!(", line {l}, column {c}"))
                .unwrap_or_default();
            Error::new(
                ErrorCode::InvalidPipeline,
                format!("{origin}{at}: {}", e.message().trim()),
            )
            .with_context("file", origin)
        })?;
        if file.sink.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!("{origin}: a pipeline needs at least one [[sink]]"),
            ));
        }
        let mut sinks = Vec::new();
        for (i, s) in file.sink.iter().enumerate() {
            if s.decode.is_some() {
                return Err(Error::new(
                    ErrorCode::InvalidPipeline,
                    format!("{origin}: 'decode' belongs to [source], not to sink {i}"),
                ));
            }
            sinks.push((s.connector.clone(), to_options("sink", &s.options)?));
        }
        let mut stages = Vec::new();
        if let Some(d) = &file.source.decode {
            stages.push(StageSpec::registered(
                "decode",
                to_options("source.decode", d)?,
            ));
        }
        if let Some(t) = &file.transform {
            stages.push(StageSpec::Sql(crate::transform::parse(t.clone(), origin)?));
        }
        let name = file.name.clone().unwrap_or_else(|| {
            Path::new(origin)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "pipeline".into())
        });
        if file.checkpoint.as_os_str().is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidPipeline,
                format!(
                    "{origin}: 'checkpoint' is empty; give the directory the pipeline keeps its checkpoint in (an empty path would write it into the working directory)"
                ),
            )
            .with_context("option", "checkpoint")
            .with_context("file", origin));
        }
        Ok(PipelineSpec {
            name,
            checkpoint: file.checkpoint.clone(),
            plugin_path: file.plugin_path.clone(),
            source: file.source.connector.clone(),
            source_options: to_options("source", &file.source.options)?,
            stages,
            sinks,
            trigger: file.trigger.parse().map_err(|e| in_file(e, origin))?,
            polling_delay: file
                .trigger
                .polling_delay()
                .map_err(|e| in_file(e, origin))?,
            origin: origin.to_string(),
            engine: file
                .engine
                .clone()
                .unwrap_or_default()
                .parse()
                .map_err(|e| {
                    Error::new(e.code(), format!("{origin}: {}", e.message()))
                        .with_context("file", origin)
                })?,
            monitoring: file.monitoring.clone().unwrap_or_default().check(origin)?,
        })
    }

    /// Reads and parses a pipeline file.
    pub fn load(path: &Path) -> Result<PipelineSpec> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(
                ErrorCode::InvalidPipeline,
                format!("cannot read pipeline file {}", path.display()),
            )
            .with_context("file", path.display())
            .with_cause(e)
        })?;
        Self::parse(&text, &path.display().to_string())
    }
}

/// The 1-based line and column (in characters) of byte offset `byte` of `text`, for TOML
/// syntax errors.
pub(crate) fn toml_position(text: &str, byte: usize) -> (usize, usize) {
    let bytes = &text.as_bytes()[..byte.min(text.len())];
    let line = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    let start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&bytes[start..]).chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
checkpoint = "/tmp/ck"
[source]
connector = "files"
options = { path = "data", "cloudFiles.format" = "json", "cloudFiles.maxFilesPerTrigger" = 2 }
[[sink]]
connector = "console"
[[sink]]
connector = "parquet"
options = { path = "out" }
[trigger]
kind = "availableNow"
"#;

    #[test]
    fn parses_a_pipeline_with_two_sinks() {
        let p = PipelineSpec::parse(GOOD, "quickstart.toml").unwrap();
        assert_eq!(p.name, "quickstart");
        assert_eq!(p.source, "files");
        assert_eq!(
            p.source_options.get("cloudfiles.maxfilespertrigger"),
            Some("2")
        );
        assert_eq!(p.sinks.len(), 2);
        assert_eq!(p.trigger, Trigger::AvailableNow);
        assert_eq!(p.polling_delay, crate::trigger::POLLING_DELAY);
    }

    #[test]
    fn polling_delay_reaches_the_spec() {
        let text = GOOD.replace(
            "kind = \"availableNow\"",
            "kind = \"processingTime\"\npollingDelay = \"10 milliseconds\"",
        );
        let p = PipelineSpec::parse(&text, "poll.toml").unwrap();
        assert_eq!(p.polling_delay, std::time::Duration::from_millis(10));
        let text = GOOD.replace(
            "kind = \"availableNow\"",
            "kind = \"availableNow\"\npollingDelay = \"10ms\"",
        );
        let e = PipelineSpec::parse(&text, "poll.toml").unwrap_err();
        assert_eq!(e.context_value("option"), Some("trigger.pollingDelay"));
        assert!(e.message().starts_with("poll.toml: "), "{e}");
    }

    #[test]
    fn unknown_key_is_refused_with_its_name() {
        let text = GOOD.replace("[trigger]", "colour = \"red\"\n[trigger]");
        let e = PipelineSpec::parse(&text, "p.toml").unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPipeline);
        assert!(e.message().contains("colour"), "{}", e.message());
    }

    #[test]
    fn missing_sink_and_bad_toml_are_refused() {
        let e = PipelineSpec::parse(
            "checkpoint = \"x\"\n[source]\nconnector = \"files\"\nsink = []\n",
            "p.toml",
        );
        assert!(e.is_err());
        let e = PipelineSpec::parse("checkpoint = ", "p.toml").unwrap_err();
        assert!(e.message().starts_with("p.toml"), "{}", e.message());
        // A syntax error names its line and column in the message itself.
        let e = PipelineSpec::parse(
            "name = \"x\"\ncheckpoint = \"ck\"\n[source]\nconnector = \"files\n",
            "p.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("p.toml, line 4, column "), "{e}");
        assert_eq!(toml_position("ab\ncdé f", 8), (2, 5));
    }

    #[test]
    fn debug_prints_no_option_value() {
        let text = GOOD.replace(
            "options = { path = \"out\" }",
            "options = { path = \"out\", token = \"hunter2\" }\ndecode = { schema_registry_secret = \"s3cr3t\" }",
        );
        let file: PipelineFile = toml::from_str(&text).unwrap();
        let shown = format!("{file:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("s3cr3t"),
            "{shown}"
        );
        assert!(shown.contains("token"), "{shown}");
    }

    #[test]
    fn nested_option_values_are_refused() {
        let text = GOOD.replace(
            "options = { path = \"out\" }",
            "options = { path = [\"a\"] }",
        );
        let e = PipelineSpec::parse(&text, "p.toml").unwrap_err();
        assert!(e.message().contains("must be a string, number or boolean"));
    }
}
