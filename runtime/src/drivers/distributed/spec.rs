//! The `[engine]` section: where a pipeline's batches run.
//!
//! ```toml
//! [engine]
//! kind = "ballista"                  # default "embedded": this process reads and writes
//! scheduler = "df://127.0.0.1:50050" # the `tributary scheduler` to submit batches to
//! parallelism = 8                    # task slots a batch aims for (Spark's defaultParallelism)
//! batchTimeout = "10m"               # a batch whose tasks are not done by then fails
//! ```
//!
//! Options that do not apply to the chosen kind are refused, not ignored.

use std::time::Duration;

use serde::Deserialize;
use tributary_sdk::{Error, ErrorCode, Result};

/// The section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSection {
    /// `embedded` (default) or `ballista`.
    pub kind: Option<String>,
    /// `df://host:port` of the scheduler (ballista only).
    pub scheduler: Option<String>,
    /// Task slots a batch aims for (ballista only).
    pub parallelism: Option<i64>,
    /// How long a batch's tasks may take (ballista only), e.g. `10m`.
    #[serde(rename = "batchTimeout")]
    pub batch_timeout: Option<String>,
}

/// Where a pipeline's batches run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EngineSpec {
    /// Read and write in the pipeline's own process.
    #[default]
    Embedded,
    /// Read and stage on a Ballista cluster's executors; commit in this process.
    Ballista {
        /// `df://host:port`.
        scheduler: String,
        /// Task slots a batch aims for.
        parallelism: usize,
        /// How long a batch's tasks may take.
        batch_timeout: Duration,
    },
}

const KINDS: &str = "embedded, ballista";

impl EngineSection {
    /// Checks the section and returns the engine.
    pub fn parse(&self) -> Result<EngineSpec> {
        let kind = self.kind.as_deref().unwrap_or("embedded");
        match kind {
            "embedded" => {
                for (name, given) in [
                    ("engine.scheduler", self.scheduler.is_some()),
                    ("engine.parallelism", self.parallelism.is_some()),
                    ("engine.batchTimeout", self.batch_timeout.is_some()),
                ] {
                    if given {
                        return Err(Error::new(
                            ErrorCode::ConflictingOptions,
                            format!("{name} applies only to engine kind \"ballista\"; the embedded engine would ignore it"),
                        )
                        .with_context("option", name));
                    }
                }
                Ok(EngineSpec::Embedded)
            }
            "ballista" => {
                let scheduler = self.scheduler.clone().ok_or_else(|| {
                    Error::new(
                        ErrorCode::MissingOption,
                        "engine kind \"ballista\" needs engine.scheduler = \"df://host:port\"",
                    )
                    .with_context("option", "engine.scheduler")
                })?;
                tributary_ballista_address(&scheduler)?;
                let parallelism = match self.parallelism {
                    None => 8,
                    Some(p) if (1..=10_000).contains(&p) => p as usize,
                    Some(p) => {
                        return Err(Error::new(
                            ErrorCode::InvalidOption,
                            format!("engine.parallelism must be between 1 and 10000, got {p}"),
                        )
                        .with_context("option", "engine.parallelism"))
                    }
                };
                let batch_timeout = match &self.batch_timeout {
                    None => Duration::from_secs(600),
                    Some(t) => humantime::parse_duration(t).map_err(|e| {
                        Error::new(
                            ErrorCode::InvalidOption,
                            format!(
                                "engine.batchTimeout '{t}' is not a duration (e.g. 10m, 90s): {e}"
                            ),
                        )
                        .with_context("option", "engine.batchTimeout")
                    })?,
                };
                Ok(EngineSpec::Ballista {
                    scheduler,
                    parallelism,
                    batch_timeout,
                })
            }
            other => Err(Error::new(
                ErrorCode::InvalidOption,
                format!("engine.kind '{other}' is not known; allowed values: {KINDS}"),
            )
            .with_context("option", "engine.kind")),
        }
    }
}

#[cfg(feature = "ballista")]
fn tributary_ballista_address(url: &str) -> Result<()> {
    tributary_ballista::scheduler_address(url).map(|_| ())
}

#[cfg(not(feature = "ballista"))]
fn tributary_ballista_address(_url: &str) -> Result<()> {
    Err(Error::new(
        ErrorCode::InvalidPipeline,
        "engine kind \"ballista\" needs a tributary built with the `ballista` feature",
    )
    .with_context("option", "engine.kind"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml_text: &str) -> EngineSection {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn embedded_is_the_default_and_refuses_ballista_options() {
        assert_eq!(section("").parse().unwrap(), EngineSpec::Embedded);
        let e = section("scheduler = \"df://h:1\"").parse().unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions);
        assert!(e.message().contains("engine.scheduler"), "{}", e.message());
    }

    #[test]
    fn unknown_kinds_list_the_allowed_ones() {
        let e = section("kind = \"spark\"").parse().unwrap_err();
        assert!(
            e.message().contains("embedded, ballista"),
            "{}",
            e.message()
        );
    }

    #[cfg(feature = "ballista")]
    #[test]
    fn ballista_needs_a_scheduler_url() {
        let e = section("kind = \"ballista\"").parse().unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
        let e = section("kind = \"ballista\"\nscheduler = \"127.0.0.1:1\"")
            .parse()
            .unwrap_err();
        assert!(e.message().contains("df://host:port"), "{}", e.message());
        let ok = section("kind = \"ballista\"\nscheduler = \"df://127.0.0.1:1\"\nparallelism = 4\nbatchTimeout = \"90s\"")
            .parse()
            .unwrap();
        assert_eq!(
            ok,
            EngineSpec::Ballista {
                scheduler: "df://127.0.0.1:1".into(),
                parallelism: 4,
                batch_timeout: Duration::from_secs(90)
            }
        );
        let e = section("kind = \"ballista\"\nscheduler = \"df://h:1\"\nparallelism = 0")
            .parse()
            .unwrap_err();
        assert!(
            e.message().contains("engine.parallelism"),
            "{}",
            e.message()
        );
    }
}
