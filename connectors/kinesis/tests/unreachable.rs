//! kinesis-mock unreachable for 30 s mid-read: a stalling TCP proxy (the TLS passes through it
//! untouched) sits between the source and the server; while it holds every byte, the source's
//! calls return within a bound, with one-line errors (no `Debug` dumps, the endpoint named);
//! when it resets every held connection and forwards again, the source resumes from the last
//! committed position and delivers every record exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use tributary_sdk::{Offset, ReadLimit, Source};

/// One plan-and-read step; `Ok(None)` when there was nothing new.
async fn step(
    s: &mut dyn Source,
    at: &Offset,
) -> tributary_sdk::Result<Option<(Vec<String>, Offset)>> {
    let end = s.latest_offset(at, &ReadLimit::All).await?;
    if &end == at {
        return Ok(None);
    }
    let batches = s.read(at, &end).await?;
    s.commit(&end).await?;
    Ok(Some((data(&batches), end)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_30_second_stall_fails_calls_clearly_and_loses_or_duplicates_nothing() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "stall", 2).await;
    let sent = values("s", 60);
    put(&client, &stream, "k1", &sent[..20]).await;

    let real = endpoint(Server::Mock);
    let port: u16 = real
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let proxy = tributary_stall_proxy::StallProxy::start(([127, 0, 0, 1], port).into()).unwrap();
    let proxied = format!("https://localhost:{}", proxy.addr().port());
    let mut opts = source_options(Server::Mock, &stream, &[]);
    opts.set("endpoint", proxied.clone());
    let mut s = source(&opts);
    let mut at = s.initial_offset().await.unwrap();
    let mut got = Vec::new();
    let t0 = Instant::now();
    while got.len() < 20 {
        if let Some((rows, end)) = step(s.as_mut(), &at).await.unwrap() {
            got.extend(rows);
            at = end;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "first 20 rows");
    }

    // More records arrive while the server is unreachable for the source.
    put(&client, &stream, "k2", &sent[20..40]).await;
    proxy.stall();
    let stalled = Instant::now();
    let (mut errors, mut calls) = (Vec::new(), 0);
    while stalled.elapsed() < Duration::from_secs(30) {
        calls += 1;
        let call = Instant::now();
        match tokio::time::timeout(Duration::from_secs(150), step(s.as_mut(), &at)).await {
            Err(_) => panic!("a call hung for 150 s while the server was unreachable"),
            Ok(Ok(Some((rows, end)))) => {
                // Only what was fetched before the stall can arrive; it still counts once.
                got.extend(rows);
                at = end;
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => {
                let text = e.to_string();
                assert!(!text.contains('\n'), "a one-line error: {text}");
                assert!(
                    !text.contains("DispatchFailure") && !text.contains("ConnectorError"),
                    "no Debug dump: {text}"
                );
                eprintln!("call {calls} failed after {:?}: {text}", call.elapsed());
                errors.push(text);
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    proxy.reset();
    proxy.resume();
    put(&client, &stream, "k1", &sent[40..]).await;

    let back = Instant::now();
    while got.len() < sent.len() {
        match step(s.as_mut(), &at).await {
            Ok(Some((rows, end))) => {
                got.extend(rows);
                at = end;
            }
            Ok(None) => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(e) => {
                eprintln!("after the stall: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        assert!(
            back.elapsed() < Duration::from_secs(120),
            "{} of {} rows within 120 s of the server's return",
            got.len(),
            sent.len()
        );
    }
    got.sort();
    let mut want = sent.clone();
    want.sort();
    assert_eq!(got, want, "every record exactly once");
    eprintln!(
        "{calls} calls during the 30 s stall, {} failed; {} records exactly once",
        errors.len(),
        got.len()
    );
    s.stop().await.unwrap();
}
