//! Peak memory reading a large JSON-lines file (default 2 GB, `FORMAT_RSS_BYTES` to change),
//! generated in the system temp directory and deleted afterwards. Run it with
//!
//! `cargo bench -p tributary-files --features bench --bench format_rss`
//!
//! (`cargo test --benches --features bench` runs it on 1 MiB.) Each way of reading runs in its
//! own child process (this program again, `FORMAT_RSS_MODE` set), which reports its
//! peak resident set (`VmHWM`), so one measurement cannot inflate the next:
//!
//! - `stream`: the file's bytes as the source's fetch streams them (4 MiB local reads) through
//!   the streaming decoder, each batch dropped when it is out (memory bounded by the batch size);
//! - `stream8k`: the same with `object_store`'s own local stream (8 KiB reads, the former path),
//!   for the read-size comparison;
//! - `arrow`: `arrow-json`'s own reader over a buffered file, batches dropped (the library's
//!   floor);
//! - `source`: the files source's `read_stream` of the one-file micro-batch, parts dropped as
//!   they come (what the engine does with a part-writing sink);
//! - `source_read`: the files source's `read`, which returns every batch of the range (bounded
//!   by the decoded size of the micro-batch);
//! - `whole`: the whole file in memory, then decoded.
//!
//! `FORMAT_RSS_MODES=stream,arrow` picks modes (default: all).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::Path;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::ObjectStoreExt;
use tributary_files::bench_support::{
    decode, decoder, fetch_stream, DecodeContext, FileInfo, Format, BATCH_SIZE,
};
use tributary_files::config::{CsvOptions, Mode};

use common::{generate, DDL};

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn ctx() -> DecodeContext {
    let schema = Arc::new(tributary_files::ddl::parse_ddl(DDL).unwrap());
    DecodeContext::new(
        Format::Json,
        schema,
        "_rescued_data",
        Mode::Permissive,
        CsvOptions::default(),
    )
}

/// Reads `file` the way `mode` says; returns the rows.
fn run(mode: &str, file: &Path) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = file.parent().unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let path = file.display().to_string();
    match mode {
        "stream" | "stream8k" => rt.block_on(async {
            let store: Arc<dyn object_store::ObjectStore> =
                Arc::new(LocalFileSystem::new_with_prefix(dir).unwrap());
            let location = object_store::path::Path::from(name.as_str());
            let meta = store.head(&location).await.unwrap();
            let mut chunks = if mode == "stream" {
                fetch_stream(&store, &location, &path)
                    .await
                    .unwrap()
                    .unwrap()
            } else {
                store
                    .get(&location)
                    .await
                    .unwrap()
                    .into_stream()
                    .map_err(|e| {
                        tributary_sdk::Error::new(
                            tributary_sdk::ErrorCode::SourceRead,
                            e.to_string(),
                        )
                    })
                    .boxed()
            };
            let info = FileInfo {
                path: &path,
                size: meta.size,
                modification_time_ms: 0,
            };
            let mut decoder = decoder(Format::Json, info, &ctx()).unwrap();
            let (mut out, mut rows) = (Vec::new(), 0u64);
            while let Some(chunk) = chunks.try_next().await.unwrap() {
                decoder.push(&chunk, &mut out).unwrap();
                rows += out.drain(..).map(|b| b.num_rows() as u64).sum::<u64>();
            }
            let end = decoder.finish(&mut out).unwrap();
            assert_eq!(end.malformed, 0);
            rows + out.iter().map(|b| b.num_rows() as u64).sum::<u64>()
        }),
        "arrow" => {
            let f = std::io::BufReader::new(std::fs::File::open(file).unwrap());
            let reader = arrow_json::ReaderBuilder::new(ctx().file_schema)
                .with_batch_size(BATCH_SIZE)
                .build(f)
                .unwrap();
            reader.map(|b| b.unwrap().num_rows() as u64).sum()
        }
        "whole" => rt.block_on(async {
            let store = LocalFileSystem::new_with_prefix(dir).unwrap();
            let location = object_store::path::Path::from(name.as_str());
            let bytes = store.get(&location).await.unwrap().bytes().await.unwrap();
            let d = decode(Format::Json, bytes, &path, &ctx()).unwrap();
            d.batches.iter().map(|b| b.num_rows() as u64).sum()
        }),
        "source" | "source_read" => rt.block_on(async {
            use tributary_sdk::{ConnectorContext, Options, ReadLimit, SourceFactoryExt};
            let options: Options = [
                ("path", path.as_str()),
                ("cloudFiles.format", "json"),
                ("schema", DDL),
            ]
            .into_iter()
            .collect();
            let mut src = tributary_files::FilesSourceFactory
                .create(&options, &ConnectorContext::default())
                .unwrap();
            let start = src.initial_offset().await.unwrap();
            let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
            if mode == "source_read" {
                let batches = src.read(&start, &end).await.unwrap();
                return batches.iter().map(|b| b.num_rows() as u64).sum();
            }
            let mut parts = src.read_stream(&start, &end).await.unwrap();
            let mut rows = 0;
            while let Some(part) = parts.try_next().await.unwrap() {
                rows += part.num_rows() as u64;
            }
            rows
        }),
        other => panic!("unknown mode {other}"),
    }
}

/// The child: reads the file one way and prints its peak.
fn child(mode: &str, file: &str) {
    let started = std::time::Instant::now();
    let rows = run(mode, Path::new(file));
    println!(
        "RSS {mode} rows={rows} peak_kb={} secs={:.1}",
        peak_rss_kb(),
        started.elapsed().as_secs_f64()
    );
}

fn main() {
    if let (Ok(mode), Ok(file)) = (
        std::env::var("FORMAT_RSS_MODE"),
        std::env::var("FORMAT_RSS_FILE"),
    ) {
        child(&mode, &file);
        return;
    }
    let bytes: u64 = std::env::var("FORMAT_RSS_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if common::full_run() { 2 << 30 } else { 1 << 20 });
    let dir = tempfile::Builder::new()
        .prefix("tributary-rss")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let file = dir.path().join("big.json");
    let rows = generate(&file, bytes);
    let size = std::fs::metadata(&file).unwrap().len();
    println!("file {} bytes, {rows} rows", size);
    let exe = std::env::current_exe().unwrap();
    let mut peaks = std::collections::BTreeMap::new();
    let modes: Vec<String> = std::env::var("FORMAT_RSS_MODES")
        .map(|m| m.split(',').map(str::to_string).collect())
        .unwrap_or_else(|_| {
            [
                "stream",
                "stream8k",
                "arrow",
                "source",
                "source_read",
                "whole",
            ]
            .map(String::from)
            .to_vec()
        });
    for mode in &modes {
        let out = std::process::Command::new(&exe)
            .env("FORMAT_RSS_MODE", mode)
            .env("FORMAT_RSS_FILE", &file)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("RSS "))
            .unwrap_or_else(|| panic!("{mode}: {text}{}", String::from_utf8_lossy(&out.stderr)));
        println!("{line} file_ratio={:.3}", {
            let kb: f64 = line
                .split("peak_kb=")
                .nth(1)
                .and_then(|v| v.split(' ').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            peaks.insert(mode.clone(), kb);
            kb * 1024.0 / size as f64
        });
        assert!(line.contains(&format!("rows={rows}")), "{line}");
    }
    for mode in ["stream", "source"] {
        if let Some(peak) = peaks.get(mode) {
            assert!(
                peak * 1024.0 < 256.0 * 1024.0 * 1024.0,
                "{mode}: peak {peak} kB is not bounded by the batch size"
            );
        }
    }
    drop(dir);
}
