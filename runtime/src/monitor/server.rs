//! The monitoring HTTP server (axum on the pipeline's tokio runtime).
//!
//! | path | answers |
//! |---|---|
//! | `/` | the live page (served from the binary) |
//! | `/metrics` | Prometheus metrics, OpenMetrics text format |
//! | `/api/progress[?pipeline=NAME]` | the recent progress events, oldest first (Spark's `recentProgress`), of every pipeline or of one |
//! | `/api/status` | `{"ready": bool, "pipelines": [...]}`: each pipeline's state, readiness and last batch |
//! | `/healthz` | 200 while the process serves |
//! | `/readyz` | 200 when every pipeline runs and committed a batch or completed a trigger within `readyWithin`; 503 with the reasons otherwise |

use std::net::SocketAddr;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tokio::sync::oneshot;
use tributary_sdk::{Error, ErrorCode, Result};

use super::state::Monitor;

/// The live page.
const PAGE: &str = include_str!("page.html");

/// A running server; dropping it stops it.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Server {
    /// The address it listens on (the port chosen when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn router(monitor: Monitor) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/metrics", get(metrics))
        .route("/api/progress", get(progress))
        .route("/api/status", get(status))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(monitor)
}

/// Serves `monitor` on `addr` from the current tokio runtime.
pub async fn serve(monitor: Monitor, addr: SocketAddr) -> Result<Server> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Error::new(
            ErrorCode::InvalidPipeline,
            format!("cannot listen on {addr} for monitoring: {e}"),
        )
        .with_context("option", "monitoring.http")
    })?;
    let addr = listener.local_addr().map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            "the monitoring listener has no address",
        )
        .with_cause(e)
    })?;
    let (stop, stopped) = oneshot::channel::<()>();
    let app = router(monitor);
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
        if let Err(e) = served {
            tracing::warn!("the monitoring server stopped: {e}");
        }
    });
    Ok(Server {
        addr,
        stop: Some(stop),
    })
}

async fn page() -> Html<&'static str> {
    Html(PAGE)
}

async fn metrics(State(m): State<Monitor>) -> Response {
    match m.metrics_text() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// `?pipeline=NAME`.
#[derive(Debug, serde::Deserialize)]
struct Which {
    pipeline: Option<String>,
}

async fn progress(State(m): State<Monitor>, Query(which): Query<Which>) -> Response {
    Json(m.recent(which.pipeline.as_deref())).into_response()
}

async fn status(State(m): State<Monitor>) -> Response {
    let (ready, _) = m.ready();
    Json(serde_json::json!({ "ready": ready, "pipelines": m.status() })).into_response()
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(m): State<Monitor>) -> Response {
    match m.ready() {
        (true, _) => (StatusCode::OK, "ready\n".to_string()).into_response(),
        (false, why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
    }
}
