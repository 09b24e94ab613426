//! The monitoring endpoint as the tests see it: plain HTTP/1.1 GETs, `/metrics` parsed with a
//! Prometheus text-format parser (`prometheus-parse`), and a `tributary` child started with
//! `--http 127.0.0.1:0` whose printed address is read from its stderr.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// A GET over plain HTTP/1.1: (status, body).
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

/// A scrape's samples: (name, sorted labels) → value.
pub type Samples = HashMap<(String, Vec<(String, String)>), f64>;

/// The samples of a metrics text.
pub fn parse(body: &str) -> Samples {
    let lines = body.lines().map(|l| Ok(l.to_string()));
    let parsed =
        prometheus_parse::Scrape::parse(lines).expect("the Prometheus parser reads /metrics");
    parsed
        .samples
        .into_iter()
        .map(|s| {
            let mut labels: Vec<(String, String)> = s
                .labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            labels.sort();
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            };
            ((s.metric, labels), value)
        })
        .collect()
}

/// The samples of a scrape of `/metrics`.
pub fn scrape(addr: SocketAddr) -> Samples {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    parse(&body)
}

/// The sum of a metric's samples.
pub fn value(samples: &Samples, name: &str) -> f64 {
    labelled(samples, name, None)
}

/// The sum of a metric's samples that carry `label` (all of them when `None`).
pub fn labelled(samples: &Samples, name: &str, label: Option<(&str, &str)>) -> f64 {
    samples
        .iter()
        .filter(|((n, labels), _)| {
            n == name && label.is_none_or(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, v)| *v)
        .sum()
}

/// Spawns `cmd` (a `tributary` command with `--http 127.0.0.1:0`) and returns the child and the
/// address it printed ("monitoring on http://..."); its stderr is echoed with a prefix.
pub fn spawn_monitored(cmd: Command) -> (Child, SocketAddr) {
    let (child, addr, _) = spawn_monitored_with_log(cmd);
    (child, addr)
}

/// [`spawn_monitored`], keeping every stderr line the child printed.
pub fn spawn_monitored_with_log(mut cmd: Command) -> (Child, SocketAddr, Arc<Mutex<Vec<String>>>) {
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let log = Arc::new(Mutex::new(Vec::new()));
    let keep = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("monitoring on http://") {
                let _ = tx.send(rest.trim_end_matches('/').to_string());
            }
            eprintln!("tributary: {line}");
            keep.lock().unwrap().push(line);
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the run prints its monitoring address");
    (child, addr.parse().unwrap(), log)
}
