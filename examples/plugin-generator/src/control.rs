//! The control file: the generator's stand-in for an external log.
//!
//! With `controlFile`, which rows exist is not fixed by the options but read from a small JSON
//! file at every call — `{"earliest": E, "latest": L, "malformed": [rows]}` — so another process
//! (a test fixture, a demo script) can append rows (raise `latest`), trim them the way retention
//! trims a Kafka partition (raise `earliest`: rows not yet read are lost), or mark rows malformed.
//! Writers replace the file atomically (write a temporary file, rename it over).

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Result};

use crate::config::{GeneratorConfig, RowSupply};

/// The rows a control file says exist.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// The first row that still exists; rows below it were trimmed.
    #[serde(default)]
    pub earliest: u64,
    /// One past the last row that exists.
    pub latest: u64,
    /// Rows whose payload is malformed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub malformed: BTreeSet<u64>,
}

impl Control {
    /// Reads and checks the file.
    pub fn read(path: &Path) -> Result<Control> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(
                ErrorCode::SourceRead,
                format!("cannot read the generator control file {}", path.display()),
            )
            .with_context("path", path.display())
            .with_cause(e)
        })?;
        let control: Control = serde_json::from_str(&text).map_err(|e| {
            Error::new(
                ErrorCode::SourceRead,
                format!(
                    "the generator control file {} is not {{\"earliest\": E, \"latest\": L, \
                     \"malformed\": [rows]}}",
                    path.display()
                ),
            )
            .with_context("path", path.display())
            .with_cause(e)
        })?;
        if control.earliest > control.latest {
            return Err(Error::new(
                ErrorCode::SourceRead,
                format!(
                    "the generator control file {} has earliest {} above latest {}",
                    path.display(),
                    control.earliest,
                    control.latest
                ),
            )
            .with_context("path", path.display()));
        }
        Ok(control)
    }

    /// Replaces the file atomically (a temporary file renamed over it).
    pub fn write(&self, path: &Path) -> Result<()> {
        let io = |what: &str, e: std::io::Error| {
            Error::new(
                ErrorCode::Io,
                format!(
                    "cannot {what} the generator control file {}",
                    path.display()
                ),
            )
            .with_cause(e)
        };
        let text = serde_json::to_string(self)
            .map_err(|e| Error::new(ErrorCode::Internal, "control file JSON").with_cause(e))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).map_err(|e| io("write", e))?;
        std::fs::rename(&tmp, path).map_err(|e| io("replace", e))
    }
}

/// The rows that exist now.
pub(crate) struct Bounds {
    pub(crate) earliest: u64,
    /// `None` for an unbounded generator.
    pub(crate) latest: Option<u64>,
    pub(crate) malformed: BTreeSet<u64>,
}

/// The rows that exist now (the control file is read at every call).
pub(crate) fn bounds_of(config: &GeneratorConfig) -> Result<Bounds> {
    Ok(match &config.supply {
        RowSupply::Fixed(total) => Bounds {
            earliest: 0,
            latest: Some(*total),
            malformed: BTreeSet::new(),
        },
        RowSupply::Control(path) => {
            let c = Control::read(path)?;
            Bounds {
                earliest: c.earliest,
                latest: Some(c.latest),
                malformed: c.malformed,
            }
        }
        RowSupply::Unbounded => Bounds {
            earliest: 0,
            latest: None,
            malformed: BTreeSet::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_nonsense() {
        let dir = std::env::temp_dir().join(format!("generator-control-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.json");
        let c = Control {
            earliest: 2,
            latest: 9,
            malformed: [4, 5].into_iter().collect(),
        };
        c.write(&path).unwrap();
        assert_eq!(Control::read(&path).unwrap(), c);
        std::fs::write(&path, r#"{"earliest": 5, "latest": 1}"#).unwrap();
        assert!(Control::read(&path)
            .unwrap_err()
            .message()
            .contains("above latest"));
        std::fs::write(&path, r#"{"latest": 1, "extra": 0}"#).unwrap();
        assert_eq!(
            Control::read(&path).unwrap_err().code(),
            ErrorCode::SourceRead
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
