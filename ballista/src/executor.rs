//! `tributary executor`: a Ballista executor that runs Tributary tasks.
//!
//! The executor registers with the scheduler, receives tasks, and runs each with the host's
//! [`TaskHandler`] (which knows the connectors and plugins compiled into or loaded by this
//! process). Its id is reported with every task result, so progress events say where each
//! partition of a batch ran.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use tributary_sdk::Result;

use crate::codec::{TributaryLogicalCodec, TributaryPhysicalCodec};
use crate::handler::{ExecutorIdentity, TaskHandler};
use crate::scheduler::ballista_error;

/// How an executor runs.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// The executor's id, reported in progress events.
    pub id: String,
    /// Address it binds and advertises (tests: 127.0.0.1).
    pub host: IpAddr,
    /// Arrow Flight port (task results are fetched from it).
    pub flight_port: u16,
    /// gRPC port (the scheduler pushes tasks to it).
    pub grpc_port: u16,
    /// The scheduler's host and port.
    pub scheduler_host: String,
    /// The scheduler's port.
    pub scheduler_port: u16,
    /// Tasks run at once.
    pub slots: usize,
    /// Interval between heartbeats (shorter than the scheduler's executor timeout).
    pub heartbeat: Duration,
    /// Where shuffle files go (a temporary directory when `None`).
    pub work_dir: Option<String>,
    /// How long the executor tries to reach the scheduler at start before it gives up with an
    /// error (Ballista 55's own connect loop never times out: it measures its elapsed time as
    /// `Instant::now().elapsed()`, always zero, and retries every 0.5 s forever).
    pub connect_timeout: Duration,
}

/// Waits until something listens at the scheduler's address, at most `options.connect_timeout`;
/// an error names the address and what to do.
async fn reach_scheduler(options: &ExecutorOptions) -> Result<()> {
    let address = format!("{}:{}", options.scheduler_host, options.scheduler_port);
    let deadline = tokio::time::Instant::now() + options.connect_timeout;
    loop {
        let attempt = tokio::time::timeout(
            Duration::from_secs(2),
            tokio::net::TcpStream::connect(&address),
        )
        .await;
        let why = match attempt {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "the connection attempt timed out".to_string(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(tributary_sdk::Error::new(
                tributary_sdk::ErrorCode::Connection,
                format!(
                    "executor {} cannot reach the scheduler at {address} within {} s ({why}); \
                     start `tributary scheduler` there first, or fix --scheduler",
                    options.id,
                    options.connect_timeout.as_secs()
                ),
            )
            .with_context("scheduler", &address));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Runs the executor until the process is stopped.
pub async fn run_executor(options: ExecutorOptions, handler: Arc<dyn TaskHandler>) -> Result<()> {
    let me = ExecutorIdentity {
        id: options.id.clone(),
        host: options.host.to_string(),
    };
    let config = ExecutorProcessConfig {
        executor_id: options.id.clone(),
        bind_host: options.host.to_string(),
        external_host: Some(options.host.to_string()),
        port: options.flight_port,
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler_host.clone(),
        scheduler_port: options.scheduler_port,
        scheduler_connect_timeout_seconds: 10,
        vcores: options.slots.max(1),
        work_dir: options.work_dir.clone(),
        executor_heartbeat_interval_seconds: options.heartbeat.as_secs().max(1),
        print_thread_info: false,
        override_logical_codec: Some(Arc::new(TributaryLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(TributaryPhysicalCodec::for_executor(handler, me))),
        ..ExecutorProcessConfig::default()
    };
    tracing::info!(id = %options.id, host = %options.host, flight = options.flight_port, "tributary executor starting");
    reach_scheduler(&options).await?;
    start_executor_process(Arc::new(config)).await.map_err(|e| {
        ballista_error(
            &format!(
                "executor {} (scheduler {}:{}) stopped",
                options.id, options.scheduler_host, options.scheduler_port
            ),
            e,
        )
    })
}
