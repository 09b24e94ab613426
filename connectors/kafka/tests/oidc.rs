//! Generic OAUTHBEARER with OIDC client credentials against a real HTTP token endpoint served by
//! the test itself (axum on 127.0.0.1): what the client sends (grant type, client id and secret
//! as basic authentication, scope), the token and principal it gets, and the refresh before
//! expiry that librdkafka asks for through the client context (a token of 2 s is replaced after
//! about 1.6 s, before it expires). No Kafka broker here speaks OAUTHBEARER (tansu has no
//! SASL OAUTHBEARER), so the SASL handshake itself is not exercised; the bootstrap address is
//! closed and only the token flow is observed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use base64::Engine;
use tributary_kafka::auth::{oidc_token, OidcAuthenticator, OidcSettings};
use tributary_kafka::{KafkaSink, KafkaSource};
use tributary_sdk::{
    ConnectorContext, ErrorCode, Options, Result, Secret, SecretRef, SecretStore, Sink, Source,
};

const CLIENT_ID: &str = "tributary-client";
const CLIENT_SECRET: &str = "oidc-Cl13nt-s3cret";

/// One request the endpoint received.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
    grant_type: Option<String>,
    scope: Option<String>,
    basic: Option<(String, String)>,
}

#[derive(Clone)]
struct Endpoint {
    seen: Arc<Mutex<Vec<Seen>>>,
    expires_in: u64,
    status: StatusCode,
}

fn jwt(sub: &str, n: usize) -> String {
    let enc = |v: String| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    format!(
        "{}.{}.signature",
        enc(r#"{"alg":"RS256","typ":"JWT"}"#.to_string()),
        enc(format!(r#"{{"sub":"{sub}","n":{n}}}"#))
    )
}

async fn token(
    State(e): State<Endpoint>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, String) {
    let form: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let basic = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| {
            s.split_once(':')
                .map(|(u, p)| (u.to_string(), p.to_string()))
        });
    let n = {
        let mut seen = e.seen.lock().unwrap();
        seen.push(Seen {
            at: Instant::now(),
            grant_type: get("grant_type"),
            scope: get("scope"),
            basic,
        });
        seen.len()
    };
    if e.status != StatusCode::OK {
        return (
            e.status,
            r#"{"error":"invalid_client","error_description":"client authentication failed"}"#
                .to_string(),
        );
    }
    (
        StatusCode::OK,
        serde_json::json!({
            "access_token": jwt("svc-tributary", n),
            "token_type": "Bearer",
            "expires_in": e.expires_in,
        })
        .to_string(),
    )
}

/// Serves the token endpoint on a free port; its URL and what it saw.
async fn serve(expires_in: u64, status: StatusCode) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route("/oauth2/token", post(token))
        .with_state(Endpoint {
            seen: seen.clone(),
            expires_in,
            status,
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/oauth2/token"), seen)
}

fn settings(url: &str) -> OidcSettings {
    OidcSettings {
        token_endpoint: url.to_string(),
        client_id: CLIENT_ID.to_string(),
        client_secret: Secret::new(CLIENT_SECRET),
        scope: Some("kafka.read kafka.write".to_string()),
    }
}

#[tokio::test]
async fn the_client_credentials_request_and_its_token() {
    let (url, seen) = serve(3600, StatusCode::OK).await;
    let t = oidc_token(&settings(&url)).await.unwrap();
    assert_eq!(t.token.expose(), jwt("svc-tributary", 1));
    assert_eq!(t.principal, "svc-tributary", "the sub claim");
    let lifetime = t.expires_at.duration_since(t.fetched_at).unwrap();
    assert_eq!(lifetime, Duration::from_secs(3600));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].grant_type.as_deref(), Some("client_credentials"));
    assert_eq!(seen[0].scope.as_deref(), Some("kafka.read kafka.write"));
    assert_eq!(
        seen[0].basic,
        Some((CLIENT_ID.to_string(), CLIENT_SECRET.to_string()))
    );
    assert!(
        !format!("{t:?}").contains(&jwt("svc-tributary", 1)),
        "Debug hides the token"
    );
}

#[tokio::test]
async fn a_refused_client_is_an_authentication_error_without_the_secret() {
    let (url, _) = serve(3600, StatusCode::UNAUTHORIZED).await;
    let e = oidc_token(&settings(&url)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authentication);
    let text = format!("{e} {e:?}");
    assert!(
        text.contains("401") && text.contains("invalid_client"),
        "{text}"
    );
    assert!(!text.contains(CLIENT_SECRET), "{text}");
    // Nothing listening: still no secret, and the endpoint is named.
    let e = oidc_token(&settings("http://127.0.0.1:1/token"))
        .await
        .unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(
        text.contains("127.0.0.1:1") && !text.contains(CLIENT_SECRET),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_reused_for_half_its_lifetime_then_fetched_again() {
    let (url, seen) = serve(2, StatusCode::OK).await;
    let auth = OidcAuthenticator::new(settings(&url));
    let a = tokio::task::spawn_blocking({
        let auth = Arc::new(auth);
        move || {
            let first = auth.token_blocking().unwrap();
            let again = auth.token_blocking().unwrap();
            std::thread::sleep(Duration::from_millis(1100));
            let later = auth.token_blocking().unwrap();
            (first, again, later)
        }
    })
    .await
    .unwrap();
    assert_eq!(a.0.token.expose(), a.1.token.expose(), "reused at once");
    assert_ne!(
        a.0.token.expose(),
        a.2.token.expose(),
        "fetched again past half"
    );
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// Resolves `{{secrets/oidc/secret}}`.
#[derive(Debug)]
struct Store;

impl SecretStore for Store {
    fn resolve(&self, r: &SecretRef) -> Result<Secret> {
        match (r.scope.as_str(), r.key.as_str()) {
            ("oidc", "secret") => Ok(Secret::new(CLIENT_SECRET)),
            _ => Err(tributary_sdk::Error::new(
                ErrorCode::SecretNotFound,
                format!("no {r}"),
            )),
        }
    }
}

fn oidc_options(url: &str) -> Options {
    [
        ("kafka.bootstrap.servers", "127.0.0.1:1"),
        ("subscribe", "t"),
        ("kafka.sasl.mechanism", "OAUTHBEARER"),
        ("kafka.security.protocol", "SASL_PLAINTEXT"),
        ("kafka.sasl.oauthbearer.method", "oidc"),
        ("kafka.sasl.oauthbearer.token.endpoint.url", url),
        ("kafka.sasl.oauthbearer.client.id", CLIENT_ID),
        (
            "kafka.sasl.oauthbearer.client.secret",
            "{{secrets/oidc/secret}}",
        ),
        ("kafka.sasl.oauthbearer.scope", "kafka"),
        ("fetchOffset.timeoutMs", "1000"),
        ("fetchOffset.numRetries", "1"),
    ]
    .into_iter()
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_asks_for_a_fresh_token_before_the_old_one_expires() {
    // librdkafka schedules the refresh at 80 % of the token's lifetime and checks that schedule
    // once a second: a 6 s token is replaced after 4.8 to 5.8 s, before it expires. The sink's
    // producer serves librdkafka's callbacks on its own polling thread.
    let (url, seen) = serve(6, StatusCode::OK).await;
    let ctx = ConnectorContext {
        secrets: Arc::new(Store),
        ..ConnectorContext::default()
    };
    let mut o = oidc_options(&url);
    for k in [
        "subscribe",
        "fetchOffset.timeoutMs",
        "fetchOffset.numRetries",
    ] {
        o.remove(k);
    }
    o.set("topic", "t");
    let mut sink = KafkaSink::new(&o, &ctx).unwrap();
    let shown = format!("{sink:?}");
    assert!(!shown.contains(CLIENT_SECRET), "{shown}");
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "value",
        arrow_schema::DataType::Binary,
        true,
    )]));
    sink.open(schema).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(12);
    while seen.lock().unwrap().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "a refresh was asked for: {seen:?}");
    for s in &seen {
        assert_eq!(s.grant_type.as_deref(), Some("client_credentials"));
        assert_eq!(s.scope.as_deref(), Some("kafka"));
        assert_eq!(
            s.basic.as_ref().map(|(u, p)| (u.as_str(), p.as_str())),
            Some((CLIENT_ID, CLIENT_SECRET))
        );
    }
    let gap = seen[1].at - seen[0].at;
    eprintln!(
        "token requests: {}, first refresh after {gap:?}",
        seen.len()
    );
    assert!(
        gap >= Duration::from_millis(4500) && gap < Duration::from_secs(6),
        "refreshed at about 80 % of a 6 s lifetime, before expiry: {gap:?}"
    );
    drop(sink);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_consumer_asks_for_a_token_when_it_is_created() {
    let (url, seen) = serve(3600, StatusCode::OK).await;
    let ctx = ConnectorContext {
        secrets: Arc::new(Store),
        ..ConnectorContext::default()
    };
    let mut source = KafkaSource::new(&oidc_options(&url), &ctx).unwrap();
    let shown = format!("{source:?}");
    assert!(!shown.contains(CLIENT_SECRET), "{shown}");
    // The first request builds a consumer, which serves librdkafka's token refresh while it
    // waits for the (closed) bootstrap address; the request itself then fails.
    let _ = source.initial_offset().await;
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "one token, cached for its lifetime"
    );
    let _ = source.stop().await;
}

fn refused(pairs: &[(&str, &str)], option: &str, says: &str) {
    let url = "https://idp.example/oauth2/token";
    let mut o = oidc_options(url);
    for (k, v) in pairs {
        if v.is_empty() {
            o.remove(k);
        } else {
            o.set(*k, *v);
        }
    }
    let e = KafkaSource::new(
        &o,
        &ConnectorContext {
            secrets: Arc::new(Store),
            ..ConnectorContext::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.context_value("option"), Some(option), "{pairs:?}: {e}");
    assert!(e.message().contains(says), "{pairs:?}: {e}");
    assert!(!format!("{e:?}").contains(CLIENT_SECRET), "{e:?}");
}

#[test]
fn oidc_options_are_checked_before_anything_connects() {
    refused(
        &[("kafka.sasl.oauthbearer.token.endpoint.url", "")],
        "kafka.sasl.oauthbearer.token.endpoint.url",
        "needs",
    );
    refused(
        &[("kafka.sasl.oauthbearer.client.secret", "")],
        "kafka.sasl.oauthbearer.client.secret",
        "needs",
    );
    refused(
        &[(
            "kafka.sasl.oauthbearer.token.endpoint.url",
            "idp.example/token",
        )],
        "kafka.sasl.oauthbearer.token.endpoint.url",
        "https://",
    );
    // OIDC options without method=oidc would be ignored (OAUTHBEARER would mean MSK IAM).
    refused(
        &[
            ("kafka.sasl.oauthbearer.method", ""),
            ("kafka.security.protocol", "SASL_SSL"),
        ],
        "kafka.sasl.oauthbearer.token.endpoint.url",
        "kafka.sasl.oauthbearer.method=oidc",
    );
    refused(
        &[("kafka.sasl.mechanism", "PLAIN")],
        "kafka.sasl.oauthbearer.method",
        "OAUTHBEARER",
    );
    refused(
        &[("kafka.sasl.oauthbearer.extensions", "logicalCluster=lkc-1")],
        "kafka.sasl.oauthbearer.extensions",
        "SASL extensions",
    );
    refused(
        &[(
            "kafka.sasl.jaas.config",
            r#"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="x" clientSecret="y";"#,
        )],
        "kafka.sasl.jaas.config",
        "kafka.sasl.oauthbearer.client.id",
    );
    // The Java handler of OIDC and an empty OAuthBearerLoginModule line are what this does.
    let mut o = oidc_options("https://idp.example/oauth2/token");
    o.set(
        "kafka.sasl.login.callback.handler.class",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    );
    o.set(
        "kafka.sasl.jaas.config",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
    );
    KafkaSource::new(
        &o,
        &ConnectorContext {
            secrets: Arc::new(Store),
            ..ConnectorContext::default()
        },
    )
    .unwrap();
}
