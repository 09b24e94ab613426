//! # tributary-test-registry
//!
//! A small Confluent Schema Registry that tests start in-process, so that schema-registry code
//! talks real HTTP to a real server. No third-party registry installs on the build machines, so
//! the project serves the REST subset a client uses itself, with Confluent's JSON shapes and
//! error codes:
//!
//! - `POST /subjects/{subject}/versions` — register (`{"schema", "schemaType", "references"}`),
//!   answers `{"id"}`; the same schema registered again gets the same id.
//! - `POST /subjects/{subject}` — look a schema up under a subject.
//! - `GET /schemas/ids/{id}` — `{"schema", "schemaType", "references"}` (`schemaType` omitted for Avro).
//! - `GET /subjects/{subject}/versions/{version|latest}` — `{"subject", "id", "version", "schema", ...}`.
//! - `GET /subjects`, `GET /subjects/{subject}/versions`.
//! - HTTP basic auth when started with credentials (401 otherwise).
//!
//! Fault injection for tests: [`TestRegistry::set_unavailable`] makes every request answer 503,
//! and [`TestRegistry::request_count`] counts requests (to check retries).
//!
//! ```
//! let registry = tributary_test_registry::TestRegistry::start().unwrap();
//! let id = registry.register("orders-value", "AVRO", r#""string""#).unwrap();
//! assert_eq!(id, 1);
//! assert!(registry.url().starts_with("http://127.0.0.1:"));
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// A reference from one schema to another subject's version (protobuf imports, Avro named types).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaReference {
    /// The import name (`google/protobuf/timestamp.proto`) or the Avro type name.
    pub name: String,
    /// The subject holding the referenced schema.
    pub subject: String,
    /// The version of that subject.
    pub version: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct StoredSchema {
    schema_type: String,
    schema: String,
    references: Vec<SchemaReference>,
}

#[derive(Debug, Default)]
struct Store {
    schemas: Vec<StoredSchema>,
    /// subject -> ids, version n is element n-1.
    subjects: BTreeMap<String, Vec<u32>>,
}

impl Store {
    fn register(&mut self, subject: &str, s: StoredSchema) -> u32 {
        let id = match self.schemas.iter().position(|x| *x == s) {
            Some(i) => i as u32 + 1,
            None => {
                self.schemas.push(s);
                self.schemas.len() as u32
            }
        };
        let versions = self.subjects.entry(subject.to_string()).or_default();
        if !versions.contains(&id) {
            versions.push(id);
        }
        id
    }
}

struct Shared {
    store: Mutex<Store>,
    auth: Option<String>,
    unavailable: AtomicBool,
    requests: AtomicU64,
}

/// A running registry; stops when dropped.
pub struct TestRegistry {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for TestRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestRegistry")
            .field("addr", &self.addr)
            .finish()
    }
}

impl TestRegistry {
    /// Starts a registry without authentication on 127.0.0.1 and a free port.
    pub fn start() -> std::io::Result<TestRegistry> {
        Self::start_inner(None)
    }

    /// Starts a registry that requires HTTP basic auth with this user and password.
    pub fn start_with_auth(user: &str, password: &str) -> std::io::Result<TestRegistry> {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        Self::start_inner(Some(format!("Basic {token}")))
    }

    fn start_inner(auth: Option<String>) -> std::io::Result<TestRegistry> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            auth,
            unavailable: AtomicBool::new(false),
            requests: AtomicU64::new(0),
        });
        let app = router(shared.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("test-registry".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async move {
                            let _ = rx.await;
                        })
                        .await;
                })
            })?;
        Ok(TestRegistry {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Registers a schema directly (no HTTP), returning its id.
    pub fn register(&self, subject: &str, schema_type: &str, schema: &str) -> Result<u32, String> {
        self.register_with_references(subject, schema_type, schema, Vec::new())
    }

    /// Registers a schema with references directly (no HTTP), returning its id.
    pub fn register_with_references(
        &self,
        subject: &str,
        schema_type: &str,
        schema: &str,
        references: Vec<SchemaReference>,
    ) -> Result<u32, String> {
        let mut store = self.shared.store.lock().map_err(|e| e.to_string())?;
        Ok(store.register(
            subject,
            StoredSchema {
                schema_type: schema_type.to_ascii_uppercase(),
                schema: schema.to_string(),
                references,
            },
        ))
    }

    /// The schema text stored under an id (what a client registered over HTTP).
    pub fn schema_text(&self, id: u32) -> Option<String> {
        let store = self.shared.store.lock().ok()?;
        store
            .schemas
            .get((id as usize).checked_sub(1)?)
            .map(|s| s.schema.clone())
    }

    /// Makes every request answer 503 (an outage) until called with `false`.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.shared.unavailable.store(unavailable, Ordering::SeqCst);
    }

    /// Number of HTTP requests received so far.
    pub fn request_count(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/subjects", get(list_subjects))
        .route("/subjects/{subject}", post(lookup))
        .route(
            "/subjects/{subject}/versions",
            post(register).get(list_versions),
        )
        .route("/subjects/{subject}/versions/{version}", get(get_version))
        .route("/schemas/ids/{id}", get(get_by_id))
        .layer(middleware::from_fn_with_state(shared.clone(), gate))
        .with_state(shared)
}

fn reply(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        body.to_string(),
    )
        .into_response()
}

fn error(status: StatusCode, code: u32, message: String) -> Response {
    reply(status, json!({"error_code": code, "message": message}))
}

async fn gate(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    if shared.unavailable.load(Ordering::SeqCst) {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            50003,
            "Service unavailable (test fault injection)".into(),
        );
    }
    if let Some(expected) = &shared.auth {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if given != Some(expected.as_str()) {
            return error(StatusCode::UNAUTHORIZED, 401, "Unauthorized".into());
        }
    }
    next.run(req).await
}

#[derive(Deserialize)]
struct RegisterBody {
    schema: String,
    #[serde(default, rename = "schemaType")]
    schema_type: Option<String>,
    #[serde(default)]
    references: Vec<SchemaReference>,
}

fn parse_body(body: &str) -> Result<RegisterBody, Box<Response>> {
    serde_json::from_str(body).map_err(|e| {
        Box::new(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            42201,
            format!("Invalid schema: {e}"),
        ))
    })
}

fn stored(body: RegisterBody) -> StoredSchema {
    StoredSchema {
        schema_type: body
            .schema_type
            .unwrap_or_else(|| "AVRO".into())
            .to_ascii_uppercase(),
        schema: body.schema,
        references: body.references,
    }
}

fn schema_json(s: &StoredSchema) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), json!(s.schema));
    if s.schema_type != "AVRO" {
        m.insert("schemaType".into(), json!(s.schema_type));
    }
    if !s.references.is_empty() {
        m.insert("references".into(), json!(s.references));
    }
    m
}

async fn register(
    State(shared): State<Arc<Shared>>,
    Path(subject): Path<String>,
    body: String,
) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let Ok(mut store) = shared.store.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, 50001, "lock".into());
    };
    let id = store.register(&subject, stored(body));
    reply(StatusCode::OK, json!({ "id": id }))
}

async fn lookup(
    State(shared): State<Arc<Shared>>,
    Path(subject): Path<String>,
    body: String,
) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let wanted = stored(body);
    let Ok(store) = shared.store.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, 50001, "lock".into());
    };
    let Some(versions) = store.subjects.get(&subject) else {
        return error(
            StatusCode::NOT_FOUND,
            40401,
            format!("Subject '{subject}' not found."),
        );
    };
    for (i, id) in versions.iter().enumerate() {
        if store.schemas.get(*id as usize - 1) == Some(&wanted) {
            let mut m = schema_json(&wanted);
            m.insert("subject".into(), json!(subject));
            m.insert("id".into(), json!(id));
            m.insert("version".into(), json!(i + 1));
            return reply(StatusCode::OK, serde_json::Value::Object(m));
        }
    }
    error(StatusCode::NOT_FOUND, 40403, "Schema not found".into())
}

async fn list_subjects(State(shared): State<Arc<Shared>>) -> Response {
    let Ok(store) = shared.store.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, 50001, "lock".into());
    };
    let names: Vec<&String> = store.subjects.keys().collect();
    reply(StatusCode::OK, json!(names))
}

async fn list_versions(State(shared): State<Arc<Shared>>, Path(subject): Path<String>) -> Response {
    let Ok(store) = shared.store.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, 50001, "lock".into());
    };
    match store.subjects.get(&subject) {
        Some(v) => reply(StatusCode::OK, json!((1..=v.len()).collect::<Vec<_>>())),
        None => error(
            StatusCode::NOT_FOUND,
            40401,
            format!("Subject '{subject}' not found."),
        ),
    }
}

async fn get_version(
    State(shared): State<Arc<Shared>>,
    Path((subject, version)): Path<(String, String)>,
) -> Response {
    let Ok(store) = shared.store.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, 50001, "lock".into());
    };
    let Some(versions) = store.subjects.get(&subject) else {
        return error(
            StatusCode::NOT_FOUND,
            40401,
            format!("Subject '{subject}' not found."),
        );
    };
    let index = if version == "latest" || version == "-1" {
        versions.len()
    } else {
        match version.parse::<usize>() {
            Ok(v) if v >= 1 && v <= versions.len() => v,
            Ok(_) => {
                return error(
                    StatusCode::NOT_FOUND,
                    40402,
                    format!("Version {version} not found."),
                )
            }
            Err(_) => {
                return error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    42202,
                    format!("The specified version '{version}' is not a valid version id."),
                )
            }
        }
    };
    let id = versions[index - 1];
    let Some(s) = store.schemas.get(id as usize - 1) else {
        return error(StatusCode::NOT_FOUND, 40403, "Schema not found".into());
    };
    let mut m = schema_json(s);
    m.insert("subject".into(), json!(subject));
    m.insert("id".into(), json!(id));
    m.insert("version".into(), json!(index));
    reply(StatusCode::OK, serde_json::Value::Object(m))
}

async fn get_by_id(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let Ok(store) = shared.store.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, 50001, "lock".into());
    };
    let schema = id
        .parse::<usize>()
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| store.schemas.get(i));
    match schema {
        Some(s) => reply(StatusCode::OK, serde_json::Value::Object(schema_json(s))),
        None => error(
            StatusCode::NOT_FOUND,
            40403,
            format!("Schema {id} not found"),
        ),
    }
}
