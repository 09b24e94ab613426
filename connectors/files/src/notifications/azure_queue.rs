//! Azure notification mode: Blob events delivered by an Event Grid subscription to a Storage
//! queue (`cloudFiles.queueName`, on the account of `cloudFiles.connectionString`).
//!
//! A queue message is the base64 of one Event Grid event (or an array of them), in the Event
//! Grid schema (`eventType: Microsoft.Storage.BlobCreated`, `eventTime`, `subject:
//! /blobServices/default/containers/<c>/blobs/<key>`, `data.url`, `data.contentLength`) or the
//! CloudEvents schema (`type`, `time`, the same `subject` and `data`). Other event types and
//! other containers are acknowledged and skipped.
//!
//! The Queue service's REST API is called here directly (Get Messages, Delete Message, Get
//! Queue Metadata) with a Shared Key or SAS from the connection string: three calls do not
//! justify the Azure SDK's client stack, and object_store does not expose its signer. The
//! Shared Key signature (HMAC-SHA256 over the canonical request, with `ring`, which
//! object_store already links) is written here by hand for that reason.

use std::time::Duration;

use base64::Engine as _;
use object_store::path::Path as ObjectPath;
use object_store::ObjectMeta;
use serde_json::Value;
use tributary_sdk::{Error, ErrorCode, Result, Secret};

use super::Polled;
use crate::config::names;
use crate::discovery::{now_ms, Discovery};
use crate::error::error_text;
use crate::store::{ConnectionString, StoreSpec};

/// Messages taken per poll at most (32 per request, the service's maximum).
const MAX_PER_POLL: usize = 1024;
/// The Queue service API version the requests are signed for.
const API_VERSION: &str = "2021-12-02";
/// How long a received message stays invisible before it is delivered again.
const VISIBILITY_SECONDS: u32 = 300;

/// A Storage queue of Blob events.
#[derive(Debug)]
pub(crate) struct AzureQueueNotifier {
    http: reqwest::Client,
    /// `<queue endpoint>/<queue name>`.
    queue_url: url::Url,
    account: String,
    key: Option<Secret>,
    sas: Option<Secret>,
    container: String,
    approximate: u64,
}

fn queue_error(queue: &str, what: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::SourceRead,
        format!(
            "Azure queue '{queue}' ({}): cannot {what}: {detail}",
            names::QUEUE_NAME
        ),
    )
    .with_context("option", names::QUEUE_NAME)
}

impl AzureQueueNotifier {
    /// A client for the queue `name` of the connection string's account.
    pub fn open(name: &str, d: &Discovery) -> Result<AzureQueueNotifier> {
        let StoreSpec::Cloud(spec) = d.spec() else {
            return Err(Error::new(
                ErrorCode::Internal,
                "Azure queue on a local path",
            ));
        };
        let cs: ConnectionString = spec.options.connection_string.clone().ok_or_else(|| {
            Error::new(
                ErrorCode::MissingOption,
                format!(
                    "option '{}' is required with {}: the queue is read with the storage \
                     account's connection string",
                    names::CONNECTION_STRING,
                    names::QUEUE_NAME
                ),
            )
            .with_context("option", names::CONNECTION_STRING)
        })?;
        let account = cs
            .account
            .clone()
            .or(spec.path.account.clone())
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!("option '{}' names no AccountName", names::CONNECTION_STRING),
                )
                .with_context("option", names::CONNECTION_STRING)
            })?;
        let endpoint = cs
            .queue_endpoint
            .clone()
            .unwrap_or_else(|| format!("https://{account}.queue.core.windows.net"));
        let queue_url = url::Url::parse(&format!("{}/{name}", endpoint.trim_end_matches('/')))
            .map_err(|e| queue_error(name, "make the queue's URL", e))?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| queue_error(name, "make an HTTP client", e))?;
        Ok(AzureQueueNotifier {
            http,
            queue_url,
            account,
            key: cs.key.clone(),
            sas: cs.sas.clone(),
            container: spec.path.bucket.clone(),
            approximate: 0,
        })
    }

    fn name(&self) -> &str {
        self.queue_url
            .path_segments()
            .and_then(|mut s| s.next_back())
            .unwrap_or_default()
    }

    /// The queue's approximate number of messages at the last poll.
    pub fn approximate_size(&self) -> u64 {
        self.approximate
    }

    /// Sends a signed request for `url` (the queue's URL plus a path and query).
    async fn send(&self, method: reqwest::Method, mut url: url::Url) -> Result<reqwest::Response> {
        if let Some(sas) = &self.sas {
            let extra = sas.expose().trim_start_matches('?');
            let query = match url.query() {
                Some(q) if !q.is_empty() => format!("{q}&{extra}"),
                _ => extra.to_string(),
            };
            url.set_query(Some(&query));
        }
        let date = httpdate::fmt_http_date(std::time::SystemTime::now());
        let mut request = self
            .http
            .request(method.clone(), url.clone())
            .header("x-ms-date", &date)
            .header("x-ms-version", API_VERSION);
        if let (Some(key), None) = (&self.key, &self.sas) {
            let signature = shared_key_signature(&self.account, key, &method, &url, &date)
                .map_err(|e| queue_error(self.name(), "sign the request", e))?;
            request = request.header(
                "Authorization",
                format!("SharedKey {}:{signature}", self.account),
            );
        }
        let response = request
            .send()
            .await
            .map_err(|e| queue_error(self.name(), "reach the Queue service", error_text(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        let code = between(&body, "<Code>", "</Code>").unwrap_or(status.as_str());
        Err(queue_error(
            self.name(),
            &format!("{method} {}", url.path()),
            format!("HTTP {status}: {code}"),
        ))
    }

    /// Receives what is in the queue now.
    pub async fn poll(&mut self, d: &Discovery) -> Result<Polled> {
        let mut out = Polled::default();
        let oldest = d.max_file_age_ms().map(|age| now_ms() - age);
        while out.receipts.len() < MAX_PER_POLL {
            let mut url = self.queue_url.clone();
            url.path_segments_mut()
                .map_err(|_| queue_error(self.name(), "make the URL", "not a base URL"))?
                .push("messages");
            url.set_query(Some(&format!(
                "numofmessages=32&visibilitytimeout={VISIBILITY_SECONDS}"
            )));
            let body = self
                .send(reqwest::Method::GET, url)
                .await?
                .text()
                .await
                .map_err(|e| queue_error(self.name(), "read messages", e))?;
            let messages = messages(&body);
            if messages.is_empty() {
                break;
            }
            for m in messages {
                for object in objects(&m.text, &self.container) {
                    if let Some(file) = d.eligible(&object, oldest)? {
                        out.files.push(file);
                    }
                }
                out.receipts.push(format!("{}\n{}", m.id, m.pop_receipt));
            }
        }
        let mut url = self.queue_url.clone();
        url.set_query(Some("comp=metadata"));
        let r = self.send(reqwest::Method::GET, url).await?;
        self.approximate = r
            .headers()
            .get("x-ms-approximate-messages-count")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(out)
    }

    /// Deletes handled messages.
    pub async fn ack(&mut self, receipts: Vec<String>) -> Result<()> {
        for receipt in receipts {
            let Some((id, pop)) = receipt.split_once('\n') else {
                continue;
            };
            let mut url = self.queue_url.clone();
            url.path_segments_mut()
                .map_err(|_| queue_error(self.name(), "make the URL", "not a base URL"))?
                .push("messages")
                .push(id);
            url.query_pairs_mut().append_pair("popreceipt", pop);
            self.send(reqwest::Method::DELETE, url).await?;
        }
        Ok(())
    }
}

/// The Shared Key signature of a request without a body (Azure Storage's canonical form:
/// empty standard headers, `x-ms-*` headers, `/<account><path>` and the sorted query).
fn shared_key_signature(
    account: &str,
    key: &Secret,
    method: &reqwest::Method,
    url: &url::Url,
    date: &str,
) -> std::result::Result<String, base64::DecodeError> {
    let mut resource = format!("/{account}{}", url.path());
    let mut query: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.to_lowercase(), v.into_owned()))
        .collect();
    query.sort();
    for (k, v) in query {
        resource.push_str(&format!("\n{k}:{v}"));
    }
    let to_sign = format!(
        "{method}\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{API_VERSION}\n{resource}"
    );
    let engine = base64::engine::general_purpose::STANDARD;
    let secret = engine.decode(key.expose())?;
    let tag = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
        to_sign.as_bytes(),
    );
    Ok(engine.encode(tag.as_ref()))
}

/// One received queue message.
#[derive(Debug, PartialEq, Eq)]
struct Message {
    id: String,
    pop_receipt: String,
    /// The decoded message text.
    text: String,
}

/// The text between `open` and `close`, first occurrence.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len])
}

/// The messages of a Get Messages answer (`<QueueMessagesList><QueueMessage>...`). Message
/// texts are base64 (as Event Grid writes them); a text that is not is taken as it is.
fn messages(xml: &str) -> Vec<Message> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(m) = between(rest, "<QueueMessage>", "</QueueMessage>") {
        rest = &rest[rest.find("</QueueMessage>").map_or(rest.len(), |i| i + 15)..];
        let unescape = |s: &str| {
            s.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&")
        };
        let (Some(id), Some(pop)) = (
            between(m, "<MessageId>", "</MessageId>"),
            between(m, "<PopReceipt>", "</PopReceipt>"),
        ) else {
            continue;
        };
        let raw = unescape(between(m, "<MessageText>", "</MessageText>").unwrap_or_default());
        let text = base64::engine::general_purpose::STANDARD
            .decode(raw.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or(raw);
        out.push(Message {
            id: unescape(id),
            pop_receipt: unescape(pop),
            text,
        });
    }
    out
}

/// The created blobs of `container` an Event Grid message names.
fn objects(text: &str, container: &str) -> Vec<ObjectMeta> {
    let events = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(events)) => events,
        Ok(event) => vec![event],
        Err(_) => return Vec::new(),
    };
    events
        .iter()
        .filter_map(|e| {
            let kind = e.get("eventType").or_else(|| e.get("type"))?.as_str()?;
            if kind != "Microsoft.Storage.BlobCreated" {
                return None;
            }
            let (c, key) = blob_of(e)?;
            if c != container {
                return None;
            }
            let time = e.get("eventTime").or_else(|| e.get("time"))?.as_str()?;
            let time = chrono::DateTime::parse_from_rfc3339(time)
                .ok()?
                .with_timezone(&chrono::Utc);
            let size = e
                .pointer("/data/contentLength")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            Some(ObjectMeta {
                location: ObjectPath::parse(key).ok()?,
                last_modified: time,
                size,
                e_tag: None,
                version: None,
            })
        })
        .collect()
}

/// (container, key) of an event: from `subject`
/// (`/blobServices/default/containers/<c>/blobs/<key>`), else from `data.url`
/// (`https://<account>.blob.core.windows.net/<c>/<key>`; path-style emulator URLs carry the
/// account first).
fn blob_of(e: &Value) -> Option<(String, String)> {
    if let Some(subject) = e.get("subject").and_then(Value::as_str) {
        if let Some(rest) = subject.strip_prefix("/blobServices/default/containers/") {
            let (c, key) = rest.split_once("/blobs/")?;
            return Some((c.to_string(), key.to_string()));
        }
    }
    let url = url::Url::parse(e.pointer("/data/url")?.as_str()?).ok()?;
    let mut segments: Vec<String> = url.path_segments()?.map(percent_decode).collect();
    let host = url.host_str().unwrap_or_default();
    if !host.contains(".blob.") && !host.contains(".dfs.") && segments.len() > 2 {
        segments.remove(0); // path-style: the account comes first
    }
    let c = segments.first()?.clone();
    Some((c, segments[1..].join("/")))
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("k={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_grid_messages_become_objects() {
        let event = serde_json::json!({
            "topic": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/acct",
            "subject": "/blobServices/default/containers/landing/blobs/in/a b.json",
            "eventType": "Microsoft.Storage.BlobCreated",
            "eventTime": "2026-11-30T07:00:00.5Z",
            "data": {"url": "https://acct.blob.core.windows.net/landing/in/a%20b.json", "contentLength": 12}
        });
        let o = objects(&event.to_string(), "landing");
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].location.as_ref(), "in/a b.json");
        assert_eq!(o[0].size, 12);
        assert!(objects(&event.to_string(), "other").is_empty());
        let deleted = serde_json::json!([{"eventType": "Microsoft.Storage.BlobDeleted",
            "subject": "/blobServices/default/containers/landing/blobs/x", "eventTime": "2026-11-30T07:00:00Z"}]);
        assert!(objects(&deleted.to_string(), "landing").is_empty());
        // CloudEvents schema, blob from data.url (path-style emulator URL).
        let cloud = serde_json::json!({"type": "Microsoft.Storage.BlobCreated", "time": "2026-11-30T07:00:00Z",
            "data": {"url": "http://127.0.0.1:10000/devstoreaccount1/landing/in/c.json", "contentLength": 3}});
        let o = objects(&cloud.to_string(), "landing");
        assert_eq!(o[0].location.as_ref(), "in/c.json");
    }

    #[test]
    fn get_messages_answers_are_split_and_decoded() {
        let text = base64::engine::general_purpose::STANDARD.encode("{\"a\":1}");
        let xml = format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessagesList><QueueMessage>\
             <MessageId>m1</MessageId><PopReceipt>p&amp;1</PopReceipt><MessageText>{text}</MessageText>\
             </QueueMessage><QueueMessage><MessageId>m2</MessageId><PopReceipt>p2</PopReceipt>\
             <MessageText>plain</MessageText></QueueMessage></QueueMessagesList>"
        );
        let m = messages(&xml);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].id.as_str(), m[0].pop_receipt.as_str()), ("m1", "p&1"));
        assert_eq!(m[0].text, "{\"a\":1}");
        assert_eq!(m[1].text, "plain");
        assert!(messages("<QueueMessagesList />").is_empty());
    }
}
