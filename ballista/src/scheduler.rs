//! `tributary scheduler`: Ballista's scheduler with Tributary's codecs.
//!
//! The scheduler turns each batch's logical plan ([`crate::table::JobTable`]) into tasks and
//! places them on executors; it never runs a task. Executors that stop heartbeating for
//! [`SchedulerOptions::executor_timeout`] are declared dead and their tasks run elsewhere.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use tributary_sdk::{Error, ErrorCode, Result};

use crate::codec::{TributaryLogicalCodec, TributaryPhysicalCodec};

/// How the scheduler runs.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Address the gRPC service binds (tests: 127.0.0.1 only).
    pub bind: SocketAddr,
    /// Silence after which an executor is declared dead and its tasks are re-run.
    pub executor_timeout: Duration,
    /// Attempts of one task before its batch fails.
    pub task_max_failures: usize,
}

impl SchedulerOptions {
    /// Defaults for `bind`: executors declared dead after 15 s, 4 attempts per task.
    pub fn new(bind: SocketAddr) -> Self {
        SchedulerOptions {
            bind,
            executor_timeout: Duration::from_secs(15),
            task_max_failures: 4,
        }
    }
}

/// Runs the scheduler until the process is stopped.
pub async fn run_scheduler(options: SchedulerOptions) -> Result<()> {
    let timeout = options.executor_timeout.as_secs().max(2);
    let mut config = SchedulerConfig::default()
        .with_hostname(options.bind.ip().to_string())
        .with_port(options.bind.port());
    config.bind_host = options.bind.ip().to_string();
    config.external_host = options.bind.ip().to_string();
    config.executor_timeout_seconds = timeout;
    config.expire_dead_executor_interval_seconds = (timeout / 3).max(1);
    config.no_executors_grace_period_seconds = timeout;
    config.task_max_failures = options.task_max_failures;
    config.override_logical_codec = Some(Arc::new(TributaryLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(TributaryPhysicalCodec::default()));
    let config = Arc::new(config);
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| ballista_error("cannot set up the scheduler's cluster state", e))?;
    tracing::info!(bind = %options.bind, "tributary scheduler listening");
    start_server(cluster, options.bind, config)
        .await
        .map_err(|e| ballista_error(&format!("scheduler on {} stopped", options.bind), e))
}

pub(crate) fn ballista_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Connection, format!("{what}: {e}"))
}
