//! The monitoring endpoint of `tributary run --http`, against the real binary: a files → Parquet
//! pipeline with a `processingTime` trigger picks up files while `/metrics` is scraped and
//! parsed with a Prometheus text-format parser (`prometheus-parse`); the counters grow and equal
//! the rows the Parquet sink wrote. `/api/progress`, `/api/status`, `/healthz`, `/readyz` and the
//! page answer, and a `[monitoring]` section that cannot serve is refused with its option.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use common::http::{get, scrape, value};
use common::{output_ids, tributary, write_json_files, Layout};

/// Starts `tributary run --http 127.0.0.1:0` and returns the child and the address it printed.
fn start(pipeline: &std::path::Path) -> (Child, std::net::SocketAddr) {
    let mut cmd = tributary();
    cmd.args(["run", "--quiet", "--http", "127.0.0.1:0"])
        .arg(pipeline);
    common::http::spawn_monitored(cmd)
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn interrupt(child: &mut Child) {
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the run did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn metrics_grow_with_the_batches_and_equal_the_rows_written() {
    let l = Layout::new();
    let next = write_json_files(&l.input(), "a", 2, 5, 0);
    let path = l.pipeline("", "processingTime");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "kind = \"processingTime\"",
        "kind = \"processingTime\"\ninterval = \"100ms\"",
    );
    std::fs::write(&path, text).unwrap();
    let (mut child, addr) = start(&path);

    assert_eq!(get(addr, "/healthz"), (200, "ok\n".to_string()));
    let out = l.output();
    wait_for("the first 10 rows", || output_ids(&out).len() == 10);
    wait_for("the first batch in the metrics", || {
        value(&scrape(addr), "tributary_sink_rows_total") == 10.0
    });
    let first = scrape(addr);
    assert_eq!(value(&first, "tributary_source_rows_total"), 10.0);
    let batches_before = value(&first, "tributary_batches_total");
    assert!(batches_before >= 1.0);

    write_json_files(&l.input(), "b", 3, 5, next);
    wait_for("25 rows", || output_ids(&out).len() == 25);
    wait_for("the new batch in the metrics", || {
        value(&scrape(addr), "tributary_sink_rows_total") == 25.0
    });
    let second = scrape(addr);
    assert_eq!(
        value(&second, "tributary_source_rows_total"),
        output_ids(&out).len() as f64,
        "rows in = the rows the sink wrote"
    );
    assert!(value(&second, "tributary_batches_total") > batches_before);
    assert!(value(&second, "tributary_batch_duration_seconds_count") >= 2.0);
    let labels = second
        .keys()
        .find(|(n, _)| n == "tributary_sink_rows_total")
        .map(|(_, l)| l.clone())
        .unwrap();
    assert!(
        labels.contains(&("pipeline".into(), "test".into())),
        "{labels:?}"
    );
    assert!(
        labels.contains(&("sink".into(), "parquet".into())),
        "{labels:?}"
    );

    let (status, progress) = get(addr, "/api/progress");
    assert_eq!(status, 200);
    let events: Vec<serde_json::Value> = serde_json::from_str(&progress).unwrap();
    let rows: u64 = events
        .iter()
        .map(|e| e["numInputRows"].as_u64().unwrap())
        .sum();
    assert_eq!(rows, 25, "{progress}");
    let (status, body) = get(addr, "/api/status");
    assert_eq!(status, 200);
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(s["ready"], true, "{body}");
    assert_eq!(s["pipelines"][0]["name"], "test", "{body}");
    assert_eq!(s["pipelines"][0]["state"], "running", "{body}");
    assert_eq!(s["pipelines"][0]["batches"], events.len(), "{body}");
    assert_eq!(get(addr, "/readyz").0, 200);
    let (status, page) = get(addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains("<svg"), "the live page is served");

    interrupt(&mut child);
}

#[test]
fn a_monitoring_section_that_cannot_serve_is_refused_by_option() {
    let l = Layout::new();
    let path = l.pipeline("", "availableNow");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{text}\n[monitoring]\nhttp = \"somewhere\"\n"),
    )
    .unwrap();
    let o = tributary().args(["check"]).arg(&path).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("monitoring.http"), "{err}");
    assert!(err.contains("host:port"), "{err}");
}

/// The live page in headless Chromium (Debian's `chromium`, driven by `playwright-core` from
/// `scripts/services/browser.sh`): while files keep arriving, the page must draw at least three
/// batches in its charts and table by itself, with no console error; its screenshot is saved to
/// `target/screenshots/live-page.png` (the one in `docs/` comes from this test).
#[test]
fn the_live_page_draws_the_batches_in_a_browser() {
    let Some(chromium) =
        tributary_skip_log::require_env("TRIBUTARY_CHROMIUM", "scripts/services/browser.sh")
    else {
        return;
    };
    let Some(playwright) =
        tributary_skip_log::require_env("TRIBUTARY_PLAYWRIGHT_DIR", "scripts/services/browser.sh")
    else {
        return;
    };
    let l = Layout::new();
    let mut next = write_json_files(&l.input(), "f0", 1, 50, 0);
    let path = l.pipeline("", "processingTime");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "kind = \"processingTime\"",
        "kind = \"processingTime\"\ninterval = \"200ms\"",
    );
    std::fs::write(&path, text).unwrap();
    let (mut child, addr) = start(&path);
    let input = l.input();
    let feeding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let feed = {
        let feeding = feeding.clone();
        std::thread::spawn(move || {
            let mut i = 1;
            while feeding.load(std::sync::atomic::Ordering::SeqCst) && i < 200 {
                std::thread::sleep(Duration::from_millis(400));
                next = write_json_files(&input, &format!("f{i}"), 1, 50 + i * 7, next);
                i += 1;
            }
        })
    };
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("live-page.png");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/live_page.mjs");
    let out = std::process::Command::new("node")
        .arg(&script)
        .arg(format!("http://{addr}/"))
        .arg(&shot)
        .arg("3")
        .env("TRIBUTARY_CHROMIUM", chromium)
        .env(
            "NODE_PATH",
            std::path::Path::new(&playwright).join("node_modules"),
        )
        .output()
        .unwrap();
    feeding.store(false, std::sync::atomic::Ordering::SeqCst);
    feed.join().unwrap();
    interrupt(&mut child);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser run failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(result["points"].as_u64().unwrap() >= 3, "{result}");
    assert!(result["rows"].as_u64().unwrap() >= 3, "{result}");
    assert_eq!(result["state"], "running", "{result}");
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "a real screenshot"
    );
}
