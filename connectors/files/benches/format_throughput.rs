//! The streaming JSON-lines decoder against `arrow-json` decoding the same bytes directly, both
//! from memory (no file system, no object store), side by side in one run: median of 5 each,
//! rows and an id checksum compared outside the timings.
//!
//! `cargo bench -p tributary-files --features bench --bench format_throughput`
//!
//! `FORMAT_BENCH_BYTES` sets the size (default 256 MiB; 1 MiB and one run under
//! `cargo test --benches`); the chunk size pushed is 1 MiB.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;
use std::time::Instant;

use tributary_files::bench_support::{decoder, DecodeContext, FileInfo, Format, BATCH_SIZE};
use tributary_files::config::{CsvOptions, Mode};

use common::{generate_in_memory, median, summary, DDL};

fn main() {
    let full = common::full_run();
    let bytes: usize = std::env::var("FORMAT_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 256 << 20 } else { 1 << 20 });
    let input = generate_in_memory(bytes);
    let schema = Arc::new(tributary_files::ddl::parse_ddl(DDL).unwrap());
    let ctx = DecodeContext::new(
        Format::Json,
        schema.clone(),
        "_rescued_data",
        Mode::Permissive,
        CsvOptions::default(),
    );
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..if full { 5 } else { 1 } {
        let t = Instant::now();
        let info = FileInfo {
            path: "mem.json",
            size: input.len() as u64,
            modification_time_ms: 0,
        };
        let mut d = decoder(Format::Json, info, &ctx).unwrap();
        let mut a = Vec::new();
        for chunk in input.chunks(1 << 20) {
            d.push(chunk, &mut a).unwrap();
        }
        d.finish(&mut a).unwrap();
        ours.push(t.elapsed());

        let t = Instant::now();
        let mut dec = arrow_json::ReaderBuilder::new(schema.clone())
            .with_batch_size(BATCH_SIZE)
            .build_decoder()
            .unwrap();
        let (mut b, mut rest) = (Vec::new(), input.as_slice());
        while !rest.is_empty() {
            let n = dec.decode(rest).unwrap();
            rest = &rest[n..];
            if let Some(batch) = dec.flush().unwrap() {
                b.push(batch);
            }
        }
        if let Some(batch) = dec.flush().unwrap() {
            b.push(batch);
        }
        theirs.push(t.elapsed());
        assert_eq!(summary(&a), summary(&b));
    }
    let (o, t) = (median(ours), median(theirs));
    let mb = bytes as f64 / (1 << 20) as f64;
    println!(
        "THROUGHPUT {mb:.0} MiB: streaming decoder {:.3}s ({:.0} MiB/s), arrow-json {:.3}s \
         ({:.0} MiB/s), time ratio {:.2}",
        o.as_secs_f64(),
        mb / o.as_secs_f64(),
        t.as_secs_f64(),
        mb / t.as_secs_f64(),
        o.as_secs_f64() / t.as_secs_f64()
    );
}
