//! The driver's side: submits one batch's tasks to a Ballista scheduler and collects results.
//!
//! The pipeline's own process stays the driver (it plans the batch, writes `offsets/N`, and
//! after [`BallistaDriver::run`] returns commits the sinks and writes `commits/N`). A batch is
//! one Ballista job whose only stage is [`crate::exec::TaskExec`]; the scheduler retries a task
//! whose executor died, and the driver receives exactly one result per input partition.
//!
//! An unreachable scheduler is one clear error naming its address; a job that does not finish
//! within the batch timeout fails the batch instead of hanging it.

use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use tributary_sdk::{Error, ErrorCode, Result};

use crate::codec::{TributaryLogicalCodec, TributaryPhysicalCodec};
use crate::job::{decode_results, JobSpec, TaskResult};
use crate::table::JobTable;

/// A connection to a scheduler, for one pipeline.
pub struct BallistaDriver {
    url: String,
    ctx: SessionContext,
}

impl std::fmt::Debug for BallistaDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BallistaDriver")
            .field("url", &self.url)
            .finish()
    }
}

/// `host:port` of a `df://host:port` URL, or an error naming the option.
pub fn scheduler_address(url: &str) -> Result<(String, u16)> {
    let bad = |why: &str| {
        Error::new(
            ErrorCode::InvalidOption,
            format!("engine.scheduler '{url}' {why}; expected df://host:port"),
        )
        .with_context("option", "engine.scheduler")
    };
    let rest = url
        .strip_prefix("df://")
        .ok_or_else(|| bad("does not start with df://"))?;
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("has no port"))?;
    if host.is_empty() {
        return Err(bad("has no host"));
    }
    let port: u16 = port.parse().map_err(|_| bad("has no valid port"))?;
    Ok((host.to_string(), port))
}

impl BallistaDriver {
    /// Connects to the scheduler at `url` (`df://host:port`). Fails at once, naming the
    /// address, when nothing listens there.
    pub async fn connect(url: &str, job_name: &str) -> Result<Self> {
        let (host, port) = scheduler_address(url)?;
        let unreachable = |why: String| {
            Error::new(
                ErrorCode::Connection,
                format!(
                    "cannot reach the Ballista scheduler at {url}: {why} (is `tributary scheduler` running there?)"
                ),
            )
            .with_context("option", "engine.scheduler")
        };
        match tokio::time::timeout(
            Duration::from_secs(10),
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => return Err(unreachable("no answer within 10 s".into())),
        }
        let config = SessionConfig::new_with_ballista()
            .with_target_partitions(1)
            .with_ballista_job_name(job_name)
            // One task per input partition, each run once: no adaptive re-planning and no
            // coalescing of "small" partitions into one task.
            .with_ballista_adaptive_query_planner(false)
            .with_ballista_coalesce_enabled(false)
            .with_ballista_logical_extension_codec(Arc::new(TributaryLogicalCodec::default()))
            .with_ballista_physical_extension_codec(Arc::new(TributaryPhysicalCodec::default()));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build();
        let ctx = SessionContext::remote_with_state(url, state)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(BallistaDriver {
            url: url.to_string(),
            ctx,
        })
    }

    /// Runs the job's tasks and returns one result per input partition, in partition order.
    pub async fn run(&self, job: JobSpec, timeout: Duration) -> Result<Vec<TaskResult>> {
        let n = job.partitions.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let name = job.name.clone();
        let failed = |why: String| {
            if let Some(lost) = connection_lost(&why) {
                return Error::new(
                    ErrorCode::Connection,
                    format!(
                        "{name}: the connection to the Ballista scheduler at {} was lost during the batch ({lost}); nothing of the batch was committed, it runs again when the pipeline restarts",
                        self.url
                    ),
                )
                .with_context("option", "engine.scheduler");
            }
            Error::new(
                ErrorCode::SourceRead,
                format!(
                    "{name} failed on the Ballista cluster at {}: {}",
                    self.url,
                    tributary_sdk::one_line::one_line(&why)
                ),
            )
        };
        let frame = self
            .ctx
            .read_table(Arc::new(JobTable::new(Arc::new(job))))
            .map_err(|e| failed(e.to_string()))?;
        let batches = match tokio::time::timeout(timeout, frame.collect()).await {
            Ok(r) => r.map_err(|e| failed(e.to_string()))?,
            Err(_) => {
                return Err(failed(format!(
                    "not finished after {} s (no executor? see `tributary executor`)",
                    timeout.as_secs()
                )))
            }
        };
        let results = decode_results(&batches)?;
        let got: Vec<usize> = results.iter().map(|r| r.partition).collect();
        if got != (0..n).collect::<Vec<_>>() {
            return Err(Error::new(
                ErrorCode::Internal,
                format!("{name}: expected one result for each of {n} partitions, got {got:?}"),
            ));
        }
        Ok(results)
    }
}

/// When a failure's text says the scheduler's gRPC connection broke (the scheduler died or
/// restarted), what to print of it: the transport's own words without the gRPC status dump.
fn connection_lost(text: &str) -> Option<String> {
    const SIGNS: [&str; 7] = [
        "status: Unavailable",
        "h2 protocol error",
        "transport error",
        "tcp connect error",
        "Connection refused",
        "connection reset",
        "broken pipe",
    ];
    let lower = text.to_ascii_lowercase();
    if !SIGNS
        .iter()
        .any(|s| lower.contains(&s.to_ascii_lowercase()))
    {
        return None;
    }
    // tonic prints `status: Unavailable, message: "...", details: [], metadata: MetadataMap {..}`.
    let said = text
        .split_once("message: \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(m, _)| m.to_string());
    let said = said.unwrap_or_else(|| {
        SIGNS
            .iter()
            .find(|s| lower.contains(&s.to_ascii_lowercase()))
            .map(|s| s.to_string())
            .unwrap_or_default()
    });
    let said = said.replace("h2 protocol error: ", "");
    Some(tributary_sdk::one_line::one_line(&said))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_urls_are_checked() {
        assert_eq!(
            scheduler_address("df://127.0.0.1:50050").unwrap(),
            ("127.0.0.1".to_string(), 50050)
        );
        for bad in ["127.0.0.1:50050", "df://127.0.0.1", "df://:5", "df://h:x"] {
            let e = scheduler_address(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad}");
            assert!(e.message().contains("df://host:port"), "{}", e.message());
        }
    }

    #[tokio::test]
    async fn an_unreachable_scheduler_is_one_clear_error() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("df://127.0.0.1:{port}");
        let e = BallistaDriver::connect(&url, "p").await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Connection);
        assert!(e.message().contains(&url), "{}", e.message());
    }
}
