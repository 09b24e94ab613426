//! One large JSON-lines file (about 256 MB, `FORMAT_BENCH_BYTES` to change) read through the
//! files source, whose decoder takes the file's byte stream window by window, against
//! `arrow-json`'s own reader over the same file. Runs alternate (page cache warm for both); the
//! median of each side and their ratio are printed. Row counts and an id checksum are compared
//! outside the timings.
//!
//! `cargo bench -p tributary-files --bench format_json_stream`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::BufReader;
use std::path::Path;
use std::time::Instant;

use arrow_array::RecordBatch;
use common::{generate, median, summary, DDL};
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ConnectorContext, Options, ReadLimit, SourceFactoryExt};

const RUNS: usize = 5;

fn through_source(rt: &tokio::runtime::Runtime, file: &Path) -> Vec<RecordBatch> {
    let options: Options = [
        ("path", file.display().to_string()),
        ("cloudFiles.format", "json".to_string()),
        ("schema", DDL.to_string()),
    ]
    .into_iter()
    .collect();
    rt.block_on(async {
        let mut src = FilesSourceFactory
            .create(&options, &ConnectorContext::default())
            .unwrap();
        let start = src.initial_offset().await.unwrap();
        let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
        src.read(&start, &end).await.unwrap()
    })
}

fn direct(file: &Path) -> Vec<RecordBatch> {
    let schema = std::sync::Arc::new(tributary_files::ddl::parse_ddl(DDL).unwrap());
    arrow_json::ReaderBuilder::new(schema)
        .with_batch_size(8192)
        .build(BufReader::new(std::fs::File::open(file).unwrap()))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this without it: stay quick.
    let full = common::full_run();
    let bytes: u64 = std::env::var("FORMAT_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 256 << 20 } else { 1 << 20 });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.json");
    generate(&file, bytes);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runs = if full { RUNS } else { 1 };
    let (mut source_t, mut direct_t) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let a = through_source(&rt, &file);
        source_t.push(t.elapsed());
        let t = Instant::now();
        let b = direct(&file);
        direct_t.push(t.elapsed());
        // Checked outside the timings.
        assert_eq!(summary(&a), summary(&b));
    }
    let (s, d) = (median(source_t), median(direct_t));
    let mb = bytes as f64 / (1 << 20) as f64;
    println!(
        "format_json_stream: {mb:.0} MiB, source {:.3}s ({:.0} MiB/s), arrow-json {:.3}s ({:.0} MiB/s), \
         source/arrow-json time ratio {:.2}",
        s.as_secs_f64(),
        mb / s.as_secs_f64(),
        d.as_secs_f64(),
        mb / d.as_secs_f64(),
        s.as_secs_f64() / d.as_secs_f64()
    );
}
