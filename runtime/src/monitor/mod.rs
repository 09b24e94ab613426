//! Watching a running pipeline: Prometheus metrics, the recent progress events, health and
//! readiness, and a live page, served over HTTP.
//!
//! Off by default. `tributary run --http 127.0.0.1:4040` (or `tributary streams run --http ...`)
//! or a `[monitoring]` section in the pipeline file turns it on:
//!
//! ```toml
//! [monitoring]
//! http = "127.0.0.1:4040"    # a port alone ("4040") listens on loopback
//! readyWithin = "5 minutes"  # /readyz fails when nothing completed for this long
//! ```
//!
//! The server binds the address it is given: loopback unless told otherwise (a bare port is
//! `127.0.0.1`). It serves from the pipeline's own process and runtime; its state is fed by a
//! [`ProgressListener`](crate::progress::ProgressListener), so every driver (micro-batch,
//! real-time, distributed) reports the same way. See [`server`] for the endpoints and
//! [`metrics`] for the metric names.
//!
//! The page is one HTML file with its script, compiled into the binary: no network at run time.
//! Its charts are SVG drawn by hand (about 60 lines of script) rather than a charting library:
//! four line charts and a table need no more, and the page stays a few kilobytes.

pub mod metrics;
pub mod server;
pub mod state;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;
use tributary_sdk::{Error, ErrorCode, Result};

pub use server::{serve, Server};
pub use state::{Monitor, RunState, Status};

/// `readyWithin` when not given.
pub const DEFAULT_READY_WITHIN: Duration = Duration::from_secs(300);

/// The `[monitoring]` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitoringSection {
    /// `host:port` or a port.
    pub http: Option<String>,
    /// A duration (`30s`, `5 minutes`).
    #[serde(rename = "readyWithin")]
    pub ready_within: Option<String>,
}

/// Monitoring, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitoringSpec {
    /// Where to serve; `None`: off.
    pub http: Option<SocketAddr>,
    /// `/readyz` fails when no batch committed and no trigger completed for this long.
    pub ready_within: Duration,
}

impl Default for MonitoringSpec {
    fn default() -> Self {
        MonitoringSpec {
            http: None,
            ready_within: DEFAULT_READY_WITHIN,
        }
    }
}

/// An address for the server: `host:port` (IPv4 or `[IPv6]`) or a port alone (loopback).
pub fn parse_address(text: &str, option: &str) -> Result<SocketAddr> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let text = text
        .strip_prefix("localhost:")
        .map_or_else(|| text.to_string(), |port| format!("127.0.0.1:{port}"));
    text.parse::<SocketAddr>().map_err(|_| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "{option} = \"{text}\" is not an address to listen on: give host:port (127.0.0.1:4040, [::1]:4040, 0.0.0.0:4040) or a port (4040, on loopback)"
            ),
        )
        .with_context("option", option)
    })
}

impl MonitoringSection {
    /// Checks the section; `origin` names the file in errors.
    pub fn check(&self, origin: &str) -> Result<MonitoringSpec> {
        let http = self
            .http
            .as_deref()
            .map(|a| parse_address(a, "monitoring.http"))
            .transpose()
            .map_err(|e| e.with_context("file", origin))?;
        let ready_within = match self.ready_within.as_deref() {
            None => DEFAULT_READY_WITHIN,
            Some(text) => tributary_sdk::options::parse_duration(text).ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "{origin}: monitoring.readyWithin = \"{text}\" is not a duration (for example \"30s\" or \"5 minutes\")"
                    ),
                )
                .with_context("option", "monitoring.readyWithin")
            })?,
        };
        if self.http.is_none() && self.ready_within.is_some() {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "{origin}: monitoring.readyWithin is set but monitoring.http is not, so nothing would serve /readyz: set http (or pass --http) or remove readyWithin"
                ),
            )
            .with_context("option", "monitoring.readyWithin"));
        }
        Ok(MonitoringSpec { http, ready_within })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_address("4040", "x").unwrap(),
            "127.0.0.1:4040".parse().unwrap()
        );
        assert_eq!(
            parse_address("localhost:9", "x").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(
            parse_address("[::1]:4040", "x").unwrap(),
            "[::1]:4040".parse().unwrap()
        );
        let e = parse_address("nowhere", "monitoring.http").unwrap_err();
        assert!(e.to_string().contains("monitoring.http"), "{e}");
        assert!(e.to_string().contains("host:port"), "{e}");
    }

    #[test]
    fn ready_within_without_http_is_refused() {
        let s = MonitoringSection {
            http: None,
            ready_within: Some("30s".into()),
        };
        let e = s.check("p.toml").unwrap_err();
        assert!(e.to_string().contains("monitoring.http"), "{e}");
        let s = MonitoringSection {
            http: Some("0".into()),
            ready_within: Some("2 minutes".into()),
        };
        assert_eq!(
            s.check("p.toml").unwrap().ready_within,
            Duration::from_secs(120)
        );
    }
}
